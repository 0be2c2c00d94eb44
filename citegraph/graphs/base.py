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


def guard_node(name: str, fn: Callable, context_cls: type | None = None) -> Callable:
    """``fn`` with unexpected exceptions re-raised as NodeError (signature and hints kept for LangGraph).

    With ``context_cls``, a node run with no Context (a plain ``invoke``, ``as_tool()``) or with
    another graph's Context (this graph as a subgraph of a user's app) gets ``context_cls()``: the
    method's defaults, never an ``AttributeError`` on a foreign object."""

    @functools.wraps(fn)
    def node(*args: Any, **kwargs: Any) -> Any:
        runtime = kwargs.get("runtime")
        if context_cls is not None and runtime is not None and not isinstance(runtime.context, context_cls):
            kwargs["runtime"] = runtime.override(context=context_cls())
        try:
            return fn(*args, **kwargs)
        except _PASS_THROUGH:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, with the node's name
            raise NodeError(name, e) from e

    return node


class MethodGraph(StateGraph):
    """``StateGraph`` whose plain-function nodes are wrapped by :func:`guard_node` with the graph's
    Context class (compiled subgraphs and other runnables are added as they are: their own nodes are
    guarded)."""

    def add_node(self, node: Any, action: Any = None, **kwargs: Any):  # type: ignore[override]
        ctx = self.context_schema if isinstance(self.context_schema, type) else None
        if isinstance(node, str) and callable(action) and not isinstance(action, Runnable):
            action = guard_node(node, action, ctx)
        elif not isinstance(node, str) and callable(node) and not isinstance(node, Runnable) and action is None:
            name = getattr(node, "__name__", "node")
            node, action = name, guard_node(name, node, ctx)
        return super().add_node(node, action, **kwargs)

    def add_conditional_edges(self, source: str, path: Any, path_map: Any = None):  # type: ignore[override]
        ctx = self.context_schema if isinstance(self.context_schema, type) else None
        if callable(path) and not isinstance(path, Runnable):
            path = guard_node(f"{source} (route)", path, ctx)
        return super().add_conditional_edges(source, path, path_map)
