"""The one StateGraph every method builds on: function nodes that fail say which node and why.

LangGraph's API server (Studio, the SDK) shows the message of ValueError/RuntimeError-family errors
and replaces every other error's with "An internal error occurred". Our own errors (``InputError``,
``ModelError``) are already readable and pass through unchanged, as do LangGraph's control-flow
exceptions (interrupts, ``Command`` bubbling); anything else raised inside a node becomes a
:class:`citegraph.errors.NodeError` naming the node, the original class and its first line (the
original is chained as ``__cause__``, so a traceback still shows it).

A run keeps its Context across an interrupt: the first node that runs with a Context of the graph's
class records it in the state's ``run_context`` (:class:`citegraph.state.base.RunContextState`), and
a continuation (``Command(resume=...)`` or ``None`` as input) that comes with no Context (``None``,
or ``{}`` as the LangGraph API server passes when the client sent none) runs with the recorded one
(:class:`MethodCompiledGraph`). The Context is restored for the whole continuation, so the nodes of
a ``Send`` fan-out, whose input is their task and not the state, get it too. A Context sent with the
continuation wins and is recorded in its place. A new input on the thread is a new run: without a
Context it gets the defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Mapping
from contextlib import aclosing
from typing import Any, Callable

from langchain_core.runnables import Runnable
from langgraph.errors import GraphBubbleUp
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from citegraph.errors import InputError, ModelError, NodeError

_PASS_THROUGH = (InputError, ModelError, NodeError, GraphBubbleUp)
RUN_CONTEXT = "run_context"  # the state field of citegraph.state.base.RunContextState
log = logging.getLogger(__name__)


def context_record(ctx: Any) -> dict[str, Any] | None:
    """A Context as the state keeps it: its class name and its knob values (JSON types only, so the
    checkpoint holds no new type); None for a Context that is not a dataclass."""
    if not dataclasses.is_dataclass(ctx) or isinstance(ctx, type):
        return None
    return {"context": type(ctx).__qualname__, "values": json.loads(json.dumps(dataclasses.asdict(ctx), default=str))}


def context_from_record(cls: Any, record: Any) -> Any:
    """``cls`` built from a record of :func:`context_record`; None when there is none, it is of another
    class, or its values no longer make a valid Context (then the defaults apply, with a warning)."""
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls) or not isinstance(record, Mapping) \
            or record.get("context") != cls.__qualname__:
        return None
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    try:
        return cls(**{k: v for k, v in (record.get("values") or {}).items() if k in names})
    except (InputError, TypeError, ValueError) as e:
        log.warning("the run's recorded %s is no longer valid (%s); resuming with the defaults", cls.__name__, e)
        return None


def _with_update(result: Any, update: dict[str, Any]) -> Any:
    """A node's result with ``update`` added to the state update it makes (a dict, nothing, or a
    Command with a dict update); any other result is returned as it is."""
    if result is None:
        return dict(update)
    if isinstance(result, dict):
        return {**result, **update}
    if isinstance(result, Command) and (result.update is None or isinstance(result.update, dict)):
        return dataclasses.replace(result, update={**(result.update or {}), **update})
    return result


def guard_node(name: str, fn: Callable, context_cls: type | None = None, record: bool = False) -> Callable:
    """``fn`` with unexpected exceptions re-raised as NodeError (signature and hints kept for LangGraph).

    With ``context_cls``, a node run with no Context (a plain ``invoke``, ``as_tool()``) or with
    another graph's Context (this graph as a subgraph of a user's app) gets ``context_cls()``: the
    method's defaults, never an ``AttributeError`` on a foreign object. With ``record`` too (a node,
    not a route), the Context the node ran with is written to the state's ``run_context`` when the
    node's input has that field and holds another one (so once per run, by its first node)."""

    @functools.wraps(fn)
    def node(*args: Any, **kwargs: Any) -> Any:
        runtime = kwargs.get("runtime")
        update = None
        if context_cls is not None and runtime is not None:
            ctx = runtime.context
            if not isinstance(ctx, context_cls):
                ctx = context_cls()
                kwargs["runtime"] = runtime.override(context=ctx)
            state = args[0] if args else kwargs.get("state")
            if record and hasattr(state, RUN_CONTEXT):
                rec = context_record(ctx)
                if rec is not None and getattr(state, RUN_CONTEXT) != rec:
                    update = {RUN_CONTEXT: rec}
        try:
            result = fn(*args, **kwargs)
        except _PASS_THROUGH:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, with the node's name
            raise NodeError(name, e) from e
        return result if update is None else _with_update(result, update)

    return node


def _no_context(context: Any) -> bool:
    return context is None or (isinstance(context, Mapping) and not context)


class MethodCompiledGraph(CompiledStateGraph):
    """A compiled :class:`MethodGraph`: a continuation of a checkpointed run (``Command`` or ``None``
    as input) that brings no Context runs with the Context the run recorded (``run_context``).
    Every way of running a graph (``invoke``, ``stream_events``, the API server) goes through
    ``stream``/``astream``."""

    def _continues_top_level(self, input: Any, config: Any, context: Any) -> bool:
        conf = (config or {}).get("configurable") or {}
        return (_no_context(context) and (input is None or isinstance(input, Command))
                and bool(conf.get("thread_id")) and not conf.get("checkpoint_ns")  # not as a subgraph
                and self.checkpointer not in (None, True, False))

    def _recorded(self, values: Any) -> Any:
        return context_from_record(self.context_schema, (values or {}).get(RUN_CONTEXT))

    def stream(self, input: Any, config: Any = None, **kwargs: Any):  # type: ignore[override]
        if self._continues_top_level(input, config, kwargs.get("context")):
            ctx = self._recorded(self.get_state(config).values)
            if ctx is not None:
                kwargs["context"] = ctx
        return super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any):  # type: ignore[override]
        if self._continues_top_level(input, config, kwargs.get("context")):
            ctx = self._recorded((await self.aget_state(config)).values)
            if ctx is not None:
                kwargs["context"] = ctx
        async with aclosing(super().astream(input, config, **kwargs)) as chunks:
            async for chunk in chunks:
                yield chunk


class MethodGraph(StateGraph):
    """``StateGraph`` whose plain-function nodes are wrapped by :func:`guard_node` with the graph's
    Context class (compiled subgraphs and other runnables are added as they are: their own nodes are
    guarded); it compiles to a :class:`MethodCompiledGraph`. A state with ``run_context``
    (:class:`citegraph.state.base.RunContextState`) keeps the run's Context for resumption."""

    def add_node(self, node: Any, action: Any = None, **kwargs: Any):  # type: ignore[override]
        ctx = self.context_schema if isinstance(self.context_schema, type) else None
        if isinstance(node, str) and callable(action) and not isinstance(action, Runnable):
            action = guard_node(node, action, ctx, record=True)
        elif not isinstance(node, str) and callable(node) and not isinstance(node, Runnable) and action is None:
            name = getattr(node, "__name__", "node")
            node, action = name, guard_node(name, node, ctx, record=True)
        return super().add_node(node, action, **kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> MethodCompiledGraph:  # type: ignore[override]
        compiled = super().compile(*args, **kwargs)
        # the same object with our class (Pregel.copy's way: every attribute is a constructor argument)
        return MethodCompiledGraph(**{k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"})

    def add_conditional_edges(self, source: str, path: Any, path_map: Any = None):  # type: ignore[override]
        ctx = self.context_schema if isinstance(self.context_schema, type) else None
        if callable(path) and not isinstance(path, Runnable):
            path = guard_node(f"{source} (route)", path, ctx)
        return super().add_conditional_edges(source, path, path_map)
