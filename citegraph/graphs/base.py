"""The one StateGraph every method builds on: function nodes that fail say which node and why.

LangGraph's API server (Studio, the SDK) shows the message of ValueError/RuntimeError-family errors
and replaces every other error's with "An internal error occurred". Our own errors (``InputError``,
``ModelError``) are already readable and pass through unchanged, as do LangGraph's control-flow
exceptions (interrupts, ``Command`` bubbling); anything else raised inside a node becomes a
:class:`citegraph.errors.NodeError` naming the node, the original class and its first line (the
original is chained as ``__cause__``, so a traceback still shows it).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from langchain_core.runnables import Runnable
from langgraph.errors import GraphBubbleUp
from langgraph.graph import StateGraph

from citegraph.errors import InputError, ModelError, NodeError

_PASS_THROUGH = (InputError, ModelError, NodeError, GraphBubbleUp)


def guard_node(name: str, fn: Callable) -> Callable:
    """``fn`` with unexpected exceptions re-raised as NodeError (signature and hints kept for LangGraph)."""

    @functools.wraps(fn)
    def node(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _PASS_THROUGH:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, with the node's name
            raise NodeError(name, e) from e

    return node


class MethodGraph(StateGraph):
    """``StateGraph`` whose plain-function nodes are wrapped by :func:`guard_node` (compiled
    subgraphs and other runnables are added as they are: their own nodes are guarded)."""

    def add_node(self, node: Any, action: Any = None, **kwargs: Any):  # type: ignore[override]
        if isinstance(node, str) and callable(action) and not isinstance(action, Runnable):
            action = guard_node(node, action)
        elif not isinstance(node, str) and callable(node) and not isinstance(node, Runnable) and action is None:
            node, action = getattr(node, "__name__", "node"), guard_node(getattr(node, "__name__", "node"), node)
        return super().add_node(node, action, **kwargs)
