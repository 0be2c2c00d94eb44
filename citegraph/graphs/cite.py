"""cite: attribute a given text — split it into sentences (retrieving candidate evidence per sentence
from the corpus when no documents are given), run the shared attribution stage, and optionally
rewrite the sentences left unsupported from their evidence (``rewrite``)."""

from __future__ import annotations

from langgraph.graph import END, START

from citegraph.graphs.base import MethodGraph
from citegraph.nodes.attribution import attribution
from citegraph.nodes.cite import rewrite, split
from citegraph.state.base import OutputState
from citegraph.state.cite import CiteContext, CiteInput, CiteState


def build(checkpointer=None):
    g = MethodGraph(CiteState, context_schema=CiteContext, input_schema=CiteInput, output_schema=OutputState)
    g.add_node("split", split)
    g.add_node("attribution", attribution)
    g.add_node("rewrite", rewrite)
    g.add_edge(START, "split")
    g.add_edge("split", "attribution")
    g.add_edge("attribution", "rewrite")
    g.add_edge("rewrite", END)
    return g.compile(checkpointer=checkpointer, name="cite")


graph = build()
