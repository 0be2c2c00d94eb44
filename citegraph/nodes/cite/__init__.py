from citegraph.nodes.cite.nodes import rewrite, split

__all__ = ["rewrite", "split"]
