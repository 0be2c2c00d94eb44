"""GINGER nodes."""

from citegraph.nodes.ginger.nodes import cluster, detect, fan_out, prepare, rank, rewrite, summarize

__all__ = ["cluster", "detect", "fan_out", "prepare", "rank", "rewrite", "summarize"]
