"""Post-hoc GenerationPrograms attribution: given ``{"question", "documents", "answer_text"}``, the
planner writes a program reconstructing each answer sentence from source sentences S1..Sn; the
program's leaves are the sentence's attributions. Output: the AttributedAnswer of the given sentences."""

from __future__ import annotations


from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.genprog import attribute_posthoc, plan_posthoc, prepare_posthoc, review_posthoc
from citegraph.state.base import OutputState
from citegraph.state.genprog import GenProgPosthocContext, GenProgPosthocInput, GenProgPosthocState


def build(checkpointer=None):
    g = MethodGraph(GenProgPosthocState, context_schema=GenProgPosthocContext, input_schema=GenProgPosthocInput,
                   output_schema=OutputState)
    g.add_node("prepare_sources", prepare_posthoc)
    g.add_node("plan", plan_posthoc)
    g.add_node("review", review_posthoc)
    g.add_node("attribute", attribute_posthoc)
    start_with_retrieval(g, "prepare_sources")
    g.add_edge("prepare_sources", "plan")
    g.add_edge("plan", "review")
    g.add_edge("review", "attribute")
    end_with_attribution(g, "attribute")
    return g.compile(checkpointer=checkpointer, name="genprog-posthoc")


graph = build()
