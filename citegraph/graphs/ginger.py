"""GINGER (Łajewska & Balog, 2025): nugget-based grounded response generation.

detect nuggets per passage (one Send each; only spans found verbatim or fuzzily in the passage stay,
with their offsets) → cluster by facet (BERTopic on our embeddings, or LSA) → rank the clusters
(pairwise, summed over all ordered pairs) → one ~35-word summary per cluster in rank order until the
budget, each citing the passages of its nuggets that the verifier says support it → optional fluency
rewrite, re-cited and re-verified (rejected when it loses a cited fact).
"""

from __future__ import annotations


from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.ginger import cluster, detect, fan_out, prepare, rank, rewrite, summarize
from citegraph.state.base import InputState, OutputState
from citegraph.state.ginger import GingerContext, GingerState, NuggetTask


def build(checkpointer=None):
    g = MethodGraph(GingerState, context_schema=GingerContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("prepare", prepare)
    g.add_node("detect", detect, input_schema=NuggetTask)
    g.add_node("cluster", cluster)
    g.add_node("rank", rank)
    g.add_node("summarize", summarize)
    g.add_node("rewrite", rewrite)
    start_with_retrieval(g, "prepare")  # open-domain: the corpus's top_k chunks are the passages
    g.add_conditional_edges("prepare", fan_out, ["detect", "cluster"])
    g.add_edge("detect", "cluster")
    g.add_edge("cluster", "rank")
    g.add_edge("rank", "summarize")
    g.add_edge("summarize", "rewrite")
    end_with_attribution(g, "rewrite")
    return g.compile(checkpointer=checkpointer, name="ginger")


graph = build()
