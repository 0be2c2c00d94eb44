"""The one StateGraph every method builds on, and all it adds to LangGraph, through LangGraph's public
extension points only: node wrappers added at build time (``StateGraph.add_node``/
``add_conditional_edges``), the ``Runtime`` a node runs with (``Runtime.override``, ``get_runtime``),
``Send`` payloads, and the run's config (``get_config``). The compiled graph is LangGraph's own.

- **Node errors are named.** LangGraph's API server (Studio, the SDK) shows the message of
  ValueError/RuntimeError-family errors and replaces every other error's with "An internal error
  occurred". Our own errors (``InputError``, ``ModelError``) are readable and pass through unchanged,
  as do LangGraph's control-flow exceptions (interrupts, ``Command`` bubbling); anything else raised
  inside a node becomes a :class:`citegraph.errors.NodeError` naming the node, the original class and
  its first line (the original is chained as ``__cause__``).
- **A run is checked before its first node's work.** A graph's entry nodes (those ``START`` leads to)
  check the run, each failure one ``InputError`` line (:func:`check_run`): the model and verifier
  specs resolve, a new input has something to answer from, and (through the API server, whose own
  filter drops unknown Context keys) the Context keys the client sent are all knobs. A key sent from
  Python is refused where LangGraph builds the Context (``BaseContext.__new__``).
- **A run keeps its Context across an interrupt.** The first node records the Context it ran with in
  the state's ``run_context`` (:class:`citegraph.state.base.RunContextState`). A later node that runs
  with none (``None``, or a Context with every knob at its default, which is what LangGraph builds
  from the ``{}`` the API server sends when the client sent none) runs with the recorded one; a
  ``Send`` payload carries the record too (:class:`citegraph.state.base.RunRecord`), filled in by the
  route that sends it. A Context sent with the continuation wins and is recorded in its place. A new
  input on the thread is a new run: its entry nodes never read the record, so without a Context it
  gets the defaults. (A continuation that re-runs an entry node itself, after a failure there, needs
  its Context sent again.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import logging
from collections.abc import Mapping
from typing import Any, Callable

from langchain_core.runnables import Runnable
from langgraph.errors import GraphBubbleUp
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Command, Send
from pydantic.dataclasses import is_pydantic_dataclass

from citegraph.errors import InputError, ModelError, NodeError
from citegraph.state.base import BaseContext, knob_names, unknown_settings
from citegraph.tools import tracing, usage
from citegraph.tools.models import check_chat_spec
from citegraph.tools.verifier import check_verifier_spec

_PASS_THROUGH = (InputError, ModelError, NodeError, GraphBubbleUp)
RUN_CONTEXT = "run_context"  # the state field of citegraph.state.base.RunContextState
NODE_CALLS = "node_calls"  # each node run's model and verifier calls (RunContextState)
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
    names = knob_names(cls)
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
    names = knob_names(cls)
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
    known = knob_names(cls)
    bad = sorted(set(context) - known)
    if bad:
        raise InputError(unknown_settings(graph or cls.__name__, bad, known))
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
    server) checks, in the graph's entry nodes before their work (``as_tool`` when it makes the tool),
    each failure one ``InputError`` line: the model and
    verifier specs resolve (nothing is loaded), and a new input has a question or something to answer
    from (documents, or a corpus to retrieve them)."""
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


def _stamped(sends: Any, record: dict[str, Any]) -> Any:
    """``sends`` (a ``Send``, a list of them, or a ``Command`` whose ``goto`` holds them) with the
    run's Context ``record`` in every payload that has a ``run_context`` field left empty
    (:class:`citegraph.state.base.RunRecord`); anything else is returned as it is."""
    if isinstance(sends, Send):
        arg = sends.arg
        if getattr(arg, RUN_CONTEXT, record) is None and hasattr(arg, "model_copy"):
            return Send(sends.node, arg.model_copy(update={RUN_CONTEXT: record}))
        return sends
    if isinstance(sends, list) and any(isinstance(x, Send) for x in sends):
        return [_stamped(x, record) for x in sends]
    if isinstance(sends, Command) and sends.goto and not isinstance(sends.goto, str):
        goto = sends.goto if isinstance(sends.goto, Send) else list(sends.goto)
        return dataclasses.replace(sends, goto=_stamped(goto, record))
    return sends


#: the request header that carries, through LangGraph's API server, the Context keys a client sent
#: (the server drops a key its schema lacks before the graph sees it; ``graphs/webapp.py`` adds this
#: header, and the server copies it into the run's ``configurable``, as langgraph.json's
#: ``http.configurable_headers`` asks)
CONTEXT_KEYS_HEADER = "x-citegraph-context-keys"


def _sent_context_keys() -> list[str]:
    """The Context keys a client sent through the API server (:data:`CONTEXT_KEYS_HEADER`), else []."""
    try:
        raw = (get_config().get("configurable") or {}).get(CONTEXT_KEYS_HEADER)
        keys = json.loads(raw) if isinstance(raw, str) else []
    except (RuntimeError, ValueError):  # outside a run, or a header no one here wrote
        return []
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


class _Seam:
    """What the wrapped nodes of one :class:`MethodGraph` share: its Context class, its entry nodes
    (known when it compiles) and its name (for one-line errors)."""

    def __init__(self, context_cls: type | None) -> None:
        if isinstance(context_cls, type) and issubclass(context_cls, BaseContext) \
                and not is_pydantic_dataclass(context_cls):
            raise TypeError(f"{context_cls.__name__} derives from BaseContext: decorate it with "
                            "@context_dataclass (citegraph.state.base), not @dataclass")
        ok = isinstance(context_cls, type) and dataclasses.is_dataclass(context_cls)
        self.context_cls = context_cls if ok else None
        self.entries: frozenset[str] = frozenset()
        self.records_calls = False  # the graph's state has NODE_CALLS (known when it compiles)
        self.name = "LangGraph"

    def context(self, given: Any, state: Any, *, entry: bool, top: bool) -> Any:
        """The Context a node runs with: the one it was given; a foreign one's ``llm``/``verifier``
        (:func:`adopt_context`); when given none, the run's recorded one (not at a top-level entry
        node, where a run starts) or the defaults."""
        cls = self.context_cls
        if isinstance(given, cls) and not _at_defaults(given):
            return given
        if not _no_context(given) and not isinstance(given, cls):
            return adopt_context(cls, given)
        if not (entry and top):
            restored = context_from_record(cls, getattr(state, RUN_CONTEXT, None))
            if restored is not None:
                return restored
        return given if isinstance(given, cls) else cls()

    def check(self, ctx: Any, state: Any) -> None:
        """A top-level run's checks, at its entry nodes (see the module's docstring)."""
        known = knob_names(self.context_cls)
        bad = sorted(set(_sent_context_keys()) - known)
        if bad:
            raise InputError(unknown_settings(self.name, bad, known))
        check_run(self.context_cls, {k: getattr(state, k) for k in ("question", "documents", "corpus")
                                     if hasattr(state, k)}, ctx)


def _at_defaults(ctx: Any) -> bool:
    """A Context whose knobs all hold their defaults: what LangGraph builds from an empty dict."""
    try:
        return ctx == type(ctx)()
    except InputError:  # a default (an environment variable) that is not valid now
        return False


def _runtime(kwargs: dict[str, Any]) -> Any:
    """The node's ``Runtime``: the one LangGraph passed, else the run's (a node that takes none)."""
    if kwargs.get("runtime") is not None:
        return kwargs["runtime"]
    try:
        return get_runtime()
    except RuntimeError:  # called outside a run (a test calling the function itself)
        return None


def _top_level(runtime: Any) -> bool:
    """True unless the graph runs as a subgraph (a node of another graph, or called inside one)."""
    info = getattr(runtime, "execution_info", None)
    return "|" not in (getattr(info, "checkpoint_ns", "") or "")


def guard_node(name: str, fn: Callable, seam: _Seam | None = None, record: bool = False) -> Callable:
    """``fn`` with unexpected exceptions re-raised as NodeError (signature and hints kept for LangGraph).

    With a ``seam`` that has a Context class, the node runs with the Context :meth:`_Seam.context`
    picks (the method's defaults, never an ``AttributeError`` on a foreign object), a top-level entry
    node checks the run first (:meth:`_Seam.check`), and the ``Send`` payloads it returns carry the
    run's Context. With ``record`` too (a node, not a route), the Context the node ran with is written
    to the state's ``run_context`` when the node's input has that field and holds another one, and the
    node run's LLM calls and verifier pairs are added to its ``node_calls``. A route that takes the
    runtime gets it from the wrapper, not from LangGraph, so that ``update_state`` can run it outside a
    run (a fork), with the recorded Context."""
    seam = seam if seam is not None and seam.context_cls is not None else None
    hidden_runtime = not record and seam is not None and "runtime" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def node(*args: Any, **kwargs: Any) -> Any:
        state = args[0] if args else kwargs.get("state")
        update, stamp = None, getattr(state, RUN_CONTEXT, None)
        runtime = _runtime(kwargs) if seam is not None else None
        if hidden_runtime:
            if runtime is None:  # update_state (a fork as a node) runs the route outside a run
                runtime = Runtime(context=seam.context(None, state, entry=False, top=False))
            kwargs["runtime"] = runtime
        if runtime is not None:
            entry, top = name in seam.entries, _top_level(runtime)
            ctx = seam.context(runtime.context, state, entry=entry, top=top)
            if "runtime" in kwargs and ctx is not runtime.context:
                kwargs["runtime"] = runtime.override(context=ctx)
            if entry and top and record:
                seam.check(ctx, state)
            stamp = context_record(ctx)
            if record and hasattr(state, RUN_CONTEXT) and stamp is not None and getattr(state, RUN_CONTEXT) != stamp:
                update = {RUN_CONTEXT: stamp}
        counting = record and seam is not None and seam.records_calls  # node_calls in the state (known at compile)
        try:
            with usage.node_calls() if counting else contextlib.nullcontext() as calls:
                result = fn(*args, **kwargs)
        except _PASS_THROUGH:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, with the node's name
            raise NodeError(name, e) from e
        if counting:
            done = _calls_record(name, calls)
            update = {**(update or {}), NODE_CALLS: [{**done, "new": True}]} if done else update
        if record:
            _carry_input_warnings(state, result)
        if stamp is not None:
            result = _stamped(result, stamp)
        return result if update is None else _with_update(result, update)

    if hidden_runtime:
        # LangGraph sees a route without the runtime parameter (update_state would demand one it has
        # not got); the wrapper passes it: the run's, or outside a run the recorded Context's
        sig = inspect.signature(fn)
        node.__signature__ = sig.replace(parameters=[q for q in sig.parameters.values() if q.name != "runtime"])
    return node


def _calls_record(name: str, calls: usage.UsageTracker) -> dict[str, Any] | None:
    """What one node run cost, for the state's ``node_calls`` (None when it called no model or verifier)."""
    t = calls.totals()
    pairs = t["verifier_pairs"] + t["verifier_cache_hits"]  # checked: scored now, or found in the score cache
    if not (t["llm_calls"] or pairs):
        return None
    return {"node": name, "llm_calls": t["llm_calls"], "prompt_tokens": t["prompt_tokens"],
            "completion_tokens": t["completion_tokens"], "verifier_pairs": pairs,
            "verifier_cached": t["verifier_cache_hits"]}


def _no_context(context: Any) -> bool:
    return context is None or (isinstance(context, Mapping) and not context)


class MethodGraph(StateGraph):
    """``StateGraph`` whose plain-function nodes and routes are wrapped by :func:`guard_node` with the
    graph's Context class (compiled subgraphs and other runnables are added as they are: their own
    nodes are guarded). It compiles to LangGraph's own compiled graph. A state with ``run_context``
    (:class:`citegraph.state.base.RunContextState`) keeps the run's Context for resumption."""

    def _seam(self) -> _Seam:
        if getattr(self, "_citegraph_seam", None) is None:
            self._citegraph_seam = _Seam(self.context_schema)
        return self._citegraph_seam

    def add_node(self, node: Any, action: Any = None, **kwargs: Any):  # type: ignore[override]
        if isinstance(node, str) and callable(action) and not isinstance(action, Runnable):
            action = guard_node(node, action, self._seam(), record=True)
        elif not isinstance(node, str) and callable(node) and not isinstance(node, Runnable) and action is None:
            name = getattr(node, "__name__", "node")
            node, action = name, guard_node(name, node, self._seam(), record=True)
        return super().add_node(node, action, **kwargs)

    def add_conditional_edges(self, source: str, path: Any, path_map: Any = None):  # type: ignore[override]
        if callable(path) and not isinstance(path, Runnable):
            path = guard_node(f"{source} (route)", path, self._seam())
        return super().add_conditional_edges(source, path, path_map)

    def compile(self, *args: Any, **kwargs: Any) -> CompiledStateGraph:  # type: ignore[override]
        tracing.enable_from_env()  # CITEGRAPH_TRACE=URL: an app's switch for OpenTelemetry traces
        seam = self._seam()
        seam.name = kwargs.get("name") or "LangGraph"
        seam.records_calls = NODE_CALLS in (getattr(self.state_schema, "model_fields", None) or {})
        seam.entries = frozenset(end for start, end in self.edges if start == START) | frozenset(
            end for branch in self.branches.get(START, {}).values() for end in (branch.ends or {}).values())
        return super().compile(*args, **kwargs)
