"""One builder per method, plus the registry."""

from citegraph.graphs.registry import GRAPHS, build_graph, context_class, make_context

__all__ = ["GRAPHS", "build_graph", "context_class", "make_context"]
