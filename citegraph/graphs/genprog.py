"""GenerationPrograms (Wan et al., 2025): prepare sources → plan → review → execute trees → attribute.

The planner writes a program (one nested module call per answer sentence) over source sentences
S1..Sn; the program is parsed with ``ast`` only (never executed as Python), each tree is executed
post-order by LLM modules (one Send per tree), and each answer sentence is cited by the leaves of
its tree. ``review_program`` interrupts after planning (needs a checkpointer); ``refine`` checks
and resamples module outputs with the verifier.
"""

from __future__ import annotations


from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.genprog import attribute, execute_tree, fan_out, plan, prepare_sources, review
from citegraph.state.base import InputState, OutputState
from citegraph.state.genprog import GenProgContext, GenProgState, TreeTask


def build(checkpointer=None):
    g = MethodGraph(GenProgState, context_schema=GenProgContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("prepare_sources", prepare_sources)
    g.add_node("plan", plan)
    g.add_node("review", review)
    g.add_node("execute_tree", execute_tree, input_schema=TreeTask)
    g.add_node("attribute", attribute)
    start_with_retrieval(g, "prepare_sources")
    g.add_edge("prepare_sources", "plan")
    g.add_edge("plan", "review")
    g.add_conditional_edges("review", fan_out, ["execute_tree", "attribute"])
    g.add_edge("execute_tree", "attribute")
    end_with_attribution(g, "attribute")
    return g.compile(checkpointer=checkpointer, name="genprog")


graph = build()
