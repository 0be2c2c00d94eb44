"""RERANK (ALCE, Gao et al. 2023): sample n VANILLA answers → keep the one with the highest
ALCE citation recall (by the Context's verifier)."""

from __future__ import annotations


from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.alce_baselines import rerank, sample
from citegraph.state.alce_baselines import RerankContext, RerankState
from citegraph.state.base import InputState, OutputState


def build(checkpointer=None):
    g = MethodGraph(RerankState, context_schema=RerankContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("sample", sample)
    g.add_node("rerank", rerank)
    start_with_retrieval(g, "sample")
    g.add_edge("sample", "rerank")
    end_with_attribution(g, "rerank")
    return g.compile(checkpointer=checkpointer, name="rerank")


graph = build()
