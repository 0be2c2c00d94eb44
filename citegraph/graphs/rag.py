"""Standard RAG baseline (SQuAI's comparison): hybrid top-10 → one prompt with an [n] citation
instruction (the paper's baseline has none) → parse."""

from __future__ import annotations

from langgraph.graph import START

from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.nodes.squai.rag import attribute, generate, retrieve
from citegraph.state.base import InputState, OutputState
from citegraph.state.squai import RagContext, RagState


def build(checkpointer=None):
    g = MethodGraph(RagState, context_schema=RagContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("retrieve", retrieve)
    g.add_node("generate", generate)
    g.add_node("attribute", attribute)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "generate")
    g.add_edge("generate", "attribute")
    end_with_attribution(g, "attribute")
    return g.compile(checkpointer=checkpointer, name="rag")


graph = build()
