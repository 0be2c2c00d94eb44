"""Open-domain mode for every graph: a ``retrieve`` node at START (a no-op when documents are given)."""

from __future__ import annotations

from langgraph.graph import START

from citegraph.nodes.retrieve import retrieve


def start_with_retrieval(g, first: str) -> None:
    """``START → retrieve → first`` instead of ``START → first``."""
    g.add_node("retrieve", retrieve)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", first)
