"""SNIPPET (ALCE, Gao et al. 2023): prepare → per-document extracted span (fan-out) → answer → attribute."""

from __future__ import annotations


from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.alce_baselines import attribute_snippet, extract, fan_out_extract, generate_from_snippets, prepare_notes
from citegraph.state.alce_baselines import DocTask, SnippetContext, SnippetState
from citegraph.state.base import InputState, OutputState


def build(checkpointer=None):
    g = MethodGraph(SnippetState, context_schema=SnippetContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("extract", extract, input_schema=DocTask)
    g.add_node("generate", generate_from_snippets)
    g.add_node("attribute", attribute_snippet)
    g.add_node("prepare", prepare_notes)
    start_with_retrieval(g, "prepare")
    g.add_conditional_edges("prepare", fan_out_extract, ["extract", "generate"])
    g.add_edge("extract", "generate")
    g.add_edge("generate", "attribute")
    end_with_attribution(g, "attribute")
    return g.compile(checkpointer=checkpointer, name="snippet")


graph = build()
