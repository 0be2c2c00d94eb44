"""Graph-augmented open-domain multi-document summarization (Shen & Chai).

retrieve (hybrid candidates, offline chunk-graph clusters, Eq. 8-10 re-rank, top K) → one
cluster-topic call per cluster among the K (Send) → one reflection per chunk (Send) → route
(combined score, tier) → one tiered refinement per chunk (Send) → summarize → attribute. With
``reflection=false`` retrieve goes straight to summarize.
"""

from __future__ import annotations

from langgraph.graph import START

from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.nodes.odmds import (
    attribute, cluster_topic, fan_out_refine, fan_out_reflect, fan_out_topics, refine, reflect, retrieve, route,
    summarize, topics_done,
)
from citegraph.state.base import OutputState
from citegraph.state.odmds import ChunkTask, ClusterTask, OdmdsContext, OdmdsInput, OdmdsState


def build(checkpointer=None):
    g = MethodGraph(OdmdsState, context_schema=OdmdsContext, input_schema=OdmdsInput, output_schema=OutputState)
    g.add_node("retrieve", retrieve)
    g.add_node("cluster_topic", cluster_topic, input_schema=ClusterTask)
    g.add_node("topics_done", topics_done)
    g.add_node("reflect", reflect, input_schema=ChunkTask)
    g.add_node("route", route)
    g.add_node("refine", refine, input_schema=ChunkTask)
    g.add_node("summarize", summarize)
    g.add_node("attribute", attribute)
    g.add_edge(START, "retrieve")
    g.add_conditional_edges("retrieve", fan_out_topics, ["cluster_topic", "topics_done", "summarize"])
    g.add_edge("cluster_topic", "topics_done")
    g.add_conditional_edges("topics_done", fan_out_reflect, ["reflect"])
    g.add_edge("reflect", "route")
    g.add_conditional_edges("route", fan_out_refine, ["refine"])
    g.add_edge("refine", "summarize")
    g.add_edge("summarize", "attribute")
    end_with_attribution(g, "attribute")
    return g.compile(checkpointer=checkpointer, name="odmds")


graph = build()
