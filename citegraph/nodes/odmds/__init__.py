from citegraph.nodes.odmds.nodes import (
    attribute, candidates_from_hits, cluster_topic, combine, corpus_clusters, fan_out_refine, fan_out_reflect, fan_out_topics,
    graph_settings, refine, reflect, retrieve, route, select, summarize, tier,
    topics_done,
)

__all__ = [
    "attribute", "candidates_from_hits", "cluster_topic", "combine", "corpus_clusters", "fan_out_refine", "fan_out_reflect",
    "fan_out_topics", "graph_settings", "refine", "reflect", "retrieve",
    "route", "select", "summarize", "tier", "topics_done",
]
