"""Time travel over a checkpoint store (``--checkpoint``): the threads it holds, one thread's steps in
order, and a re-run or a fork from a step, on LangGraph's public API (``get_state_history``,
``update_state``, ``invoke``).

A thread is one item under one configuration (``citegraph:<method>:<item id>:<digest>``, see
:func:`citegraph.run.runner.thread_id`). A step is a checkpoint: LangGraph writes one after every
super-step, so step ``k`` holds the state after the nodes that step ``k-1`` had next. A re-run or a fork
never touches the original thread: it writes a new thread, ``<thread>:fork:<id>``, whose first
checkpoint is the chosen step's state (with the ``--set`` fields changed, for a fork) as the node that
wrote it left it, then runs on from there under the run's recorded Context.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from citegraph.errors import InputError
from citegraph.graphs.base import NODE_CALLS
from citegraph.graphs.registry import entry, state_types
from citegraph.tools.checkpoints import open_checkpointer, redact


def calls_line(calls: list[dict[str, Any]]) -> str:
    """A step's model and verifier calls in a few words: ``2 LLM calls (1,310+96 tokens), 12 verifier pairs
    (4 from the cache)``."""
    llm = sum(c.get("llm_calls", 0) for c in calls)
    pairs = sum(c.get("verifier_pairs", 0) for c in calls)
    cached = sum(c.get("verifier_cached", 0) for c in calls)
    tokens = f"{sum(c.get('prompt_tokens', 0) for c in calls):,}+{sum(c.get('completion_tokens', 0) for c in calls):,}"
    parts = ([f"{llm} LLM call{'s' * (llm != 1)} ({tokens} tokens)"] if llm else []) + \
            ([f"{pairs} verifier pair{'s' * (pairs != 1)}" + (f" ({cached} from the cache)" if cached else "")]
             if pairs else [])
    return ", ".join(parts) or "-"


@dataclass
class ThreadInfo:
    thread_id: str
    method: str
    question: str
    updated: str  # ISO time of its latest checkpoint
    steps: int
    status: str  # "finished", or "stopped before <nodes>"


@dataclass
class Step:
    step: int
    checkpoint_id: str
    nodes: list[str]  # the nodes whose writes made this checkpoint (none for the input)
    seconds: float | None  # since the previous checkpoint
    changed: list[str]  # state fields whose value this step changed
    next: list[str]
    created: str
    calls: list[dict[str, Any]] = field(default_factory=list)  # its nodes' LLM and verifier calls (node_calls)
    values: dict[str, Any] = field(repr=False, default_factory=dict)


def method_of(thread_id: str) -> str:
    """The method in a citegraph thread id (``citegraph:<method>:...``); a bench variant's label
    (``method+knob=...``) gives its method."""
    parts = thread_id.split(":")
    if len(parts) < 3 or parts[0] != "citegraph":
        raise InputError(f"thread {thread_id!r} is not a citegraph thread (citegraph:<method>:<item>:<digest>); "
                         "give --method")
    return parts[1].split("+")[0]


class TraceStore:
    """A checkpoint store opened for reading and time travel."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        saver = open_checkpointer(spec)
        # citegraph's state types allowed by the store's serializer for every read, the raw listing too
        self.saver = saver.with_allowlist(state_types()) if hasattr(saver, "with_allowlist") else saver
        self._graphs: dict[str, Any] = {}

    def _graph(self, method: str):
        if method not in self._graphs:
            self._graphs[method] = entry(method).build(checkpointer=self.saver)
        return self._graphs[method]

    def thread_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for tup in self.saver.list(None):
            seen.setdefault(tup.config["configurable"]["thread_id"], None)
        return list(seen)

    def threads(self) -> list[ThreadInfo]:
        out = []
        for t in self.thread_ids():
            try:
                method = method_of(t)
                snap = self._graph(method).get_state(_cfg(t))
            except InputError:
                continue  # not one of ours: a store shared with another app
            steps = sum(1 for _ in self._graph(method).get_state_history(_cfg(t)))
            out.append(ThreadInfo(thread_id=t, method=method, question=str(snap.values.get("question") or ""),
                                  updated=str(snap.created_at or ""), steps=steps,
                                  status="finished" if not snap.next else f"stopped before {', '.join(snap.next)}"))
        return sorted(out, key=lambda x: x.updated, reverse=True)

    def steps(self, thread_id: str, method: str | None = None) -> list[Step]:
        method = method or method_of(thread_id)
        history = list(self._graph(method).get_state_history(_cfg(thread_id)))[::-1]  # oldest first
        if not history:
            raise InputError(f"{_redact(self.spec)} holds no thread {thread_id!r} (citegraph trace list shows them)")
        out: list[Step] = []
        prev = None
        for snap in history:
            values = dict(snap.values)
            changed = [k for k in values if k != NODE_CALLS and (prev is None or k not in prev.values
                                                                  or prev.values[k] != values[k])]
            before = len(prev.values.get(NODE_CALLS) or []) if prev is not None else 0
            seconds = None
            if prev is not None and prev.created_at and snap.created_at:
                seconds = (datetime.fromisoformat(snap.created_at) - datetime.fromisoformat(prev.created_at)).total_seconds()
            out.append(Step(step=int((snap.metadata or {}).get("step", len(out) - 1)),
                            checkpoint_id=snap.config["configurable"]["checkpoint_id"],
                            nodes=list(prev.next) if prev is not None else [], seconds=seconds,
                            changed=changed if prev is not None else sorted(set(values) - {NODE_CALLS}),
                            next=list(snap.next), created=str(snap.created_at or ""), values=values,
                            calls=list(values.get(NODE_CALLS) or [])[before:]))
            prev = snap
        return out

    def fork(self, thread_id: str, step: int, edits: dict[str, Any] | None = None, *, method: str | None = None,
             run: bool = True) -> tuple[str, Any]:
        """A new thread from ``step`` of ``thread_id`` with ``edits`` applied to its state (none: a re-run),
        run on to its end when ``run``; returns (new thread id, its final state values)."""
        method = method or method_of(thread_id)
        steps = self.steps(thread_id, method)
        at = next((s for s in steps if s.step == step), None)
        if at is None:
            raise InputError(f"thread {thread_id!r} has no step {step} (its steps: {steps[0].step}..{steps[-1].step})")
        if not at.nodes:
            raise InputError(f"step {step} is the input, before any node ran: fork from step {step + 1} instead")
        if len(at.nodes) != 1:
            raise InputError(f"step {step} was written by {len(at.nodes)} nodes at once ({', '.join(at.nodes)}): "
                             "fork from the step before or after it")
        graph = self._graph(method)
        bad = sorted(set(edits or {}) - set(at.values))
        if bad:
            raise InputError(f"--set: step {step} holds no field {', '.join(bad)} (its fields: {', '.join(sorted(at.values))})")
        new = f"{thread_id}:fork:{uuid.uuid4().hex[:8]}"
        values = {**at.values, **_coerce(at.values, edits or {})}
        graph.update_state(_cfg(new), values, as_node=at.nodes[0])
        if run:
            graph.invoke(None, config=_cfg(new))
        return new, graph.get_state(_cfg(new)).values


def _coerce(values: dict[str, Any], edits: dict[str, Any]) -> dict[str, Any]:
    """An edit given as text (``--set question="..."``) read as JSON where the field holds no string
    (a number, a list, a dict); a string field takes the text as it is."""
    out = {}
    for k, v in edits.items():
        if isinstance(v, str) and not isinstance(values.get(k), str) and values.get(k) is not None:
            try:
                v = json.loads(v)
            except ValueError:
                raise InputError(f"--set {k}: the field holds {type(values[k]).__name__}, and {v!r} is not JSON") from None
        out[k] = v
    return out


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _redact(spec: str) -> str:
    return redact(spec)
