"""SUMM (ALCE, Gao et al. 2023): prepare → per-document query-focused summary (fan-out) → answer → attribute."""

from __future__ import annotations


from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.alce_baselines import attribute_summ, fan_out_summarize, generate_from_summaries, prepare_notes, summarize
from citegraph.state.alce_baselines import DocTask, SummContext, SummState
from citegraph.state.base import InputState, OutputState


def build(checkpointer=None):
    g = MethodGraph(SummState, context_schema=SummContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("summarize", summarize, input_schema=DocTask)
    g.add_node("generate", generate_from_summaries)
    g.add_node("attribute", attribute_summ)
    g.add_node("prepare", prepare_notes)
    start_with_retrieval(g, "prepare")
    g.add_conditional_edges("prepare", fan_out_summarize, ["summarize", "generate"])
    g.add_edge("summarize", "generate")
    g.add_edge("generate", "attribute")
    end_with_attribution(g, "attribute")
    return g.compile(checkpointer=checkpointer, name="summ")


graph = build()
