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
from citegraph.tools import tracing

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


#: the knobs a method takes, by name, from a foreign Context (a parent app's own class, a plain dict)
#: when it runs under one: the app's choice of model and verifier
ADOPTED_KNOBS = ("llm", "verifier")


def adopt_context(cls: type, foreign: Any) -> Any:
    """``cls()`` (the method's defaults, ``$CITEGRAPH_LLM``/``$CITEGRAPH_VERIFIER`` included) with the
    :data:`ADOPTED_KNOBS` that a foreign Context carries (an attribute or a key of that name holding a
    non-empty string): a method run as a subgraph of an app whose Context has ``llm`` uses the app's
    model. Every other knob keeps the method's default."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    take: dict[str, Any] = {}
    for key in ADOPTED_KNOBS:
        val = foreign.get(key) if isinstance(foreign, Mapping) else getattr(foreign, key, None)
        if key in names and isinstance(val, str) and val.strip():
            take[key] = val.strip()
    return cls(**take)


def coerce_context(cls: Any, context: Any, graph: str = "") -> Any:
    """A Context sent as a mapping (the SDK and Studio send a dict; a Python caller may too) as
    ``cls``: a key that is not one of its knobs is a one-line ``InputError`` naming it (never dropped),
    a bad value one from the Context's own checks. Anything else is returned as it is."""
    if not isinstance(context, Mapping) or not context or not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        return context
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    bad = sorted(set(context) - known)
    if bad:
        raise InputError(f"unknown setting(s) for {graph or cls.__name__}: {', '.join(map(str, bad))}; "
                         f"known: {', '.join(sorted(known))}")
    try:
        return cls(**context)
    except TypeError as e:  # pragma: no cover - the keys are checked above
        raise InputError(f"{cls.__name__}: {e}") from None


def effective_context(cls: Any, context: Any) -> Any:
    """The Context the nodes of a graph whose Context class is ``cls`` will run with (see
    :func:`guard_node`): ``context`` itself, the method's defaults, or those with a foreign Context's
    ``llm``/``verifier``."""
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        return context
    if isinstance(context, cls):
        return context
    return cls() if _no_context(context) else adopt_context(cls, context)


def check_run(cls: Any, input: Any, context: Any) -> None:
    """What every entry point (Python ``invoke``/``stream``, the CLI, the SDK and Studio through the API
    server) checks before the first node runs, each failure one ``InputError`` line: the model and
    verifier specs resolve (nothing is loaded), and a new input has a question or something to answer
    from (documents, or a corpus to retrieve them)."""
    from citegraph.tools.models import check_chat_spec
    from citegraph.tools.verifier import check_verifier_spec

    ctx = effective_context(cls, context)
    name = type(ctx).__name__
    if isinstance(getattr(ctx, "llm", None), str):
        check_chat_spec(ctx.llm, f"{name}.llm")
    if isinstance(getattr(ctx, "verifier", None), str):
        check_verifier_spec(ctx.verifier, f"{name}.verifier")
    if input is None or isinstance(input, Command):
        return
    values = input.model_dump() if hasattr(input, "model_dump") else input
    if not isinstance(values, Mapping) or "question" not in values and "documents" not in values:
        return
    question = values.get("question")
    if question is not None and not isinstance(question, str):
        raise InputError(f"question must be text, got {type(question).__name__}")
    if not (question or "").strip() and not values.get("documents") \
            and not (getattr(ctx, "corpus", "") or values.get("corpus")):
        raise InputError("the question is empty and there are no documents and no corpus to answer from")


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


def _carry_input_warnings(state: Any, result: Any) -> None:
    """An answer a node writes carries the warnings of the run's input (``input_warnings``: documents
    cut to the context window), first, once each."""
    pending = getattr(state, "input_warnings", None)
    answer = result.get("answer") if isinstance(result, dict) else None
    if pending and answer is not None and isinstance(getattr(answer, "warnings", None), list):
        answer.warnings[:0] = [w for w in pending if w not in answer.warnings]


def guard_node(name: str, fn: Callable, context_cls: type | None = None, record: bool = False) -> Callable:
    """``fn`` with unexpected exceptions re-raised as NodeError (signature and hints kept for LangGraph).

    With ``context_cls``, a node run with no Context (a plain ``invoke``, ``as_tool()``) or with
    another graph's Context (this graph as a subgraph of a user's app) gets ``context_cls()``: the
    method's defaults, never an ``AttributeError`` on a foreign object, with the foreign Context's
    ``llm``/``verifier`` when it has them (:func:`adopt_context`). With ``record`` too (a node,
    not a route), the Context the node ran with is written to the state's ``run_context`` when the
    node's input has that field and holds another one (so once per run, by its first node)."""

    @functools.wraps(fn)
    def node(*args: Any, **kwargs: Any) -> Any:
        runtime = kwargs.get("runtime")
        update = None
        if context_cls is not None and runtime is not None:
            ctx = runtime.context
            if not isinstance(ctx, context_cls):
                ctx = adopt_context(context_cls, ctx) if ctx is not None else context_cls()
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
        if record:
            _carry_input_warnings(args[0] if args else kwargs.get("state"), result)
        return result if update is None else _with_update(result, update)

    return node


def _no_context(context: Any) -> bool:
    return context is None or (isinstance(context, Mapping) and not context)


class _EveryKey(dict):
    """The ``properties`` of a Context's JSON schema that say yes to ``key in properties`` for every key.
    The LangGraph API server filters a run's context by that test and drops the keys it does not know
    without a word (``langgraph_api.stream._filter_context_by_schema``); with this, every key the SDK or
    Studio sends reaches the graph, whose :func:`coerce_context` names an unknown one in a one-line
    error. It lists, iterates and serializes as the plain schema (Studio's form is unchanged)."""

    def __contains__(self, key: object) -> bool:
        return True


class MethodCompiledGraph(CompiledStateGraph):
    """A compiled :class:`MethodGraph`: a continuation of a checkpointed run (``Command`` or ``None``
    as input) that brings no Context runs with the Context the run recorded (``run_context``).
    Every way of running a graph (``invoke``, ``stream_events``, the API server) goes through
    ``stream``/``astream``. It holds no state of its own (``MethodGraph.compile`` gives LangGraph's
    compiled graph this class)."""

    __slots__ = ()

    def _continues_top_level(self, input: Any, config: Any, context: Any) -> bool:
        conf = (config or {}).get("configurable") or {}
        return (_no_context(context) and (input is None or isinstance(input, Command))
                and bool(conf.get("thread_id")) and not conf.get("checkpoint_ns")  # not as a subgraph
                and self.checkpointer not in (None, True, False))

    def _recorded(self, values: Any) -> Any:
        return context_from_record(self.context_schema, (values or {}).get(RUN_CONTEXT))

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        schema = super().get_context_jsonschema()
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            schema = {**schema, "properties": _EveryKey(schema["properties"])}
        return schema

    def as_tool(self, args_schema: Any = None, *, name: str | None = None, description: str | None = None,
                arg_types: Any = None, context: Any = None, **knobs: Any):  # type: ignore[override]
        """This method as an agent's tool (:func:`citegraph.graphs.tool.make_tool`): the calling model
        passes the question (documents optional when the Context has a ``corpus``); the tool returns the
        cited text with its sources, and the AttributedAnswer as the artifact. ``context`` (a Context or
        a dict) or ``knobs`` fix the method's knobs; an unknown one is an ``InputError`` here."""
        from citegraph.graphs.tool import make_tool

        if args_schema is not None or arg_types is not None:
            raise InputError("a citegraph graph's tool takes the question and optional documents; "
                             "args_schema/arg_types cannot change that")
        if context is not None and knobs:
            raise InputError("give the tool's knobs as context=... or as keywords, not both")
        ctx = coerce_context(self.context_schema, context if context is not None else knobs, self.name)
        check_run(self.context_schema, None, ctx)
        return make_tool(self, ctx or None, name=name, description=description)

    def _checked(self, input: Any, config: Any, kwargs: dict[str, Any]) -> None:
        """A top-level run's Context coerced (a dict's unknown key refused) and :func:`check_run`'d;
        as a subgraph the parent's Context is taken as it is (:func:`guard_node` adopts its models)."""
        if ((config or {}).get("configurable") or {}).get("checkpoint_ns"):
            return
        kwargs["context"] = coerce_context(self.context_schema, kwargs.get("context"), self.name)
        check_run(self.context_schema, input, kwargs["context"])

    def stream(self, input: Any, config: Any = None, **kwargs: Any):  # type: ignore[override]
        if self._continues_top_level(input, config, kwargs.get("context")):
            ctx = self._recorded(self.get_state(config).values)
            if ctx is not None:
                kwargs["context"] = ctx
        self._checked(input, config, kwargs)
        return super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any):  # type: ignore[override]
        if self._continues_top_level(input, config, kwargs.get("context")):
            ctx = self._recorded((await self.aget_state(config)).values)
            if ctx is not None:
                kwargs["context"] = ctx
        self._checked(input, config, kwargs)
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
        tracing.enable_from_env()  # CITEGRAPH_TRACE=URL: an app's switch for OpenTelemetry traces
        compiled = super().compile(*args, **kwargs)
        # the very object LangGraph's compile built, with every attribute it set (nothing rebuilt from
        # its __dict__, which lost the v2 output mappers set after construction); only its class
        # changes, to one that adds methods and no state (tests/test_method_graph.py checks both)
        compiled.__class__ = MethodCompiledGraph
        return compiled

    def add_conditional_edges(self, source: str, path: Any, path_map: Any = None):  # type: ignore[override]
        ctx = self.context_schema if isinstance(self.context_schema, type) else None
        if callable(path) and not isinstance(path, Runnable):
            path = guard_node(f"{source} (route)", path, ctx)
        return super().add_conditional_edges(source, path, path_map)
