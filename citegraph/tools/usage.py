"""Cost accounting: LLM calls, tokens, verifier pairs and wall time, per graph node.

Attach a :class:`UsageTracker` as a callback (``config={"callbacks": [tracker]}``) and activate it
with ``with tracker.active():`` so the verifier (which is not a LangChain runnable) can report the
pairs it scores through :func:`record_verifier`.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook

_current: contextvars.ContextVar["UsageTracker | None"] = contextvars.ContextVar("citegraph_usage", default=None)
#: the tracker of the node run in progress (:func:`node_calls`): LangChain's callback managers include it in
#: every model call made inside the node (``register_configure_hook``), and the verifier reports to it
_node: contextvars.ContextVar["UsageTracker | None"] = contextvars.ContextVar("citegraph_node_usage", default=None)
register_configure_hook(_node, inheritable=True)


def record_verifier(pairs: int, cache_hits: int = 0, seconds: float = 0.0) -> None:
    """Called by verifiers: count scored pairs (and the seconds the model spent on them) against the
    active tracker (if any)."""
    for t in {_current.get(), _node.get()} - {None}:
        t.add_verifier(pairs, cache_hits, seconds)


def record_llm_call(prompt_tokens: int, completion_tokens: int = 0, cached_tokens: int = 0) -> None:
    """Count an LLM call made outside LangChain's callbacks (the Yes/No log-odds judge evaluates
    the prompt on llama.cpp directly) against the active tracker, under the current graph node."""
    trackers = {_current.get(), _node.get()} - {None}
    if not trackers:
        return
    try:
        from langgraph.config import get_config

        node = (get_config().get("metadata") or {}).get("langgraph_node", "<outside graph>")
    except RuntimeError:  # not inside a runnable
        node = "<outside graph>"
    for t in trackers:
        t.add_call(node, prompt_tokens, completion_tokens, cached_tokens)


@contextmanager
def node_calls():
    """Count the LLM calls (with their tokens) and verifier pairs made inside this block, which is one
    node run (``graphs/base.py``): yields the tracker; its :meth:`UsageTracker.totals` after the block."""
    tracker = UsageTracker()
    token = _node.set(tracker)
    try:
        yield tracker
    finally:
        _node.reset(token)


class UsageTracker(BaseCallbackHandler):
    """Per-node counters: ``calls``, ``prompt_tokens``, ``completion_tokens``, ``cached_tokens`` (prompt
    tokens the model took from its KV cache instead of reading them, where it says), ``seconds``,
    plus ``verifier_pairs`` / ``verifier_cache_hits`` / ``verifier_seconds`` for the item as a whole."""

    raise_error = False
    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.nodes: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.verifier_pairs = 0
        self.verifier_cache_hits = 0
        self.verifier_seconds = 0.0
        self._llm_node: dict[UUID, str] = {}
        self._node_start: dict[UUID, tuple[str, float]] = {}

    # -- activation for non-runnable code (verifier)
    @contextmanager
    def active(self):
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def add_verifier(self, pairs: int, cache_hits: int, seconds: float = 0.0) -> None:
        with self._lock:
            self.verifier_pairs += pairs
            self.verifier_cache_hits += cache_hits
            self.verifier_seconds += seconds

    # -- LLM calls
    def on_chat_model_start(self, serialized, messages, *, run_id: UUID, metadata: dict | None = None, **kw: Any) -> None:
        self._llm_node[run_id] = (metadata or {}).get("langgraph_node", "<outside graph>")

    def on_llm_start(self, serialized, prompts, *, run_id: UUID, metadata: dict | None = None, **kw: Any) -> None:
        self._llm_node[run_id] = (metadata or {}).get("langgraph_node", "<outside graph>")

    def on_llm_end(self, response, *, run_id: UUID, **kw: Any) -> None:
        node = self._llm_node.pop(run_id, "<outside graph>")
        pt = ct = cached = 0
        for gens in response.generations:
            for g in gens:
                msg = getattr(g, "message", None)
                um = getattr(msg, "usage_metadata", None) or {}
                pt += um.get("input_tokens", 0)
                ct += um.get("output_tokens", 0)
                cached += int((getattr(msg, "response_metadata", None) or {}).get("cache_n") or 0)
        if not (pt or ct) and response.llm_output:
            tu = response.llm_output.get("token_usage") or {}
            pt, ct = tu.get("prompt_tokens", 0), tu.get("completion_tokens", 0)
        self.add_call(node, pt, ct, cached)

    def add_call(self, node: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> None:
        """One LLM call of ``node`` with its token counts."""
        with self._lock:
            d = self.nodes[node]
            d["calls"] += 1
            d["prompt_tokens"] += prompt_tokens
            d["completion_tokens"] += completion_tokens
            d["cached_tokens"] += cached_tokens

    # -- node wall time
    def on_chain_start(self, serialized, inputs, *, run_id: UUID, metadata: dict | None = None, name: str | None = None, **kw: Any) -> None:
        node = (metadata or {}).get("langgraph_node")
        if node and name == node:
            self._node_start[run_id] = (node, time.perf_counter())

    def on_chain_end(self, outputs, *, run_id: UUID, **kw: Any) -> None:
        self._close(run_id)

    def on_chain_error(self, error, *, run_id: UUID, **kw: Any) -> None:
        self._close(run_id)

    def _close(self, run_id: UUID) -> None:
        got = self._node_start.pop(run_id, None)
        if got:
            node, t0 = got
            with self._lock:
                self.nodes[node]["seconds"] += time.perf_counter() - t0
                self.nodes[node]["runs"] += 1

    # -- summaries
    def totals(self) -> dict[str, float]:
        with self._lock:
            out = {
                "llm_calls": int(sum(d.get("calls", 0) for d in self.nodes.values())),
                "prompt_tokens": int(sum(d.get("prompt_tokens", 0) for d in self.nodes.values())),
                "completion_tokens": int(sum(d.get("completion_tokens", 0) for d in self.nodes.values())),
                "cached_tokens": int(sum(d.get("cached_tokens", 0) for d in self.nodes.values())),
                "verifier_pairs": self.verifier_pairs,
                "verifier_cache_hits": self.verifier_cache_hits,
                "verifier_seconds": round(self.verifier_seconds, 3),
            }
        out["tokens"] = out["prompt_tokens"] + out["completion_tokens"]
        return out

    def per_node(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in self.nodes.items()}
