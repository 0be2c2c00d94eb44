"""VANILLA (ALCE, Gao et al. 2023): generate → attribute."""

from __future__ import annotations


from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.vanilla import attribute, generate
from citegraph.state.base import InputState, OutputState
from citegraph.state.vanilla import VanillaContext, VanillaState


def build(checkpointer=None):
    g = MethodGraph(VanillaState, context_schema=VanillaContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("generate", generate)
    g.add_node("attribute", attribute)
    start_with_retrieval(g, "generate")
    g.add_edge("generate", "attribute")
    end_with_attribution(g, "attribute")
    return g.compile(checkpointer=checkpointer, name="vanilla")


graph = build()
