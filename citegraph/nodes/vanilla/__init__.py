"""VANILLA nodes: build ALCE's prompt, generate, parse the citations."""

from citegraph.nodes.vanilla.nodes import attribute, generate

__all__ = ["attribute", "generate"]
