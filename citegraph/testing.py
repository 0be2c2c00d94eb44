"""Test doubles for code built on citegraph: a scripted chat model that stands in for the LLM, and a
stub verifier that stands in for the entailment model.

A graph resolves its models from spec strings, so a test registers a double under a spec and runs the
graph with that spec: ``spec, model = scripted_model(["An answer [1]."])`` (or
``register_chat_model("fake:demo", ScriptedChatModel(script=[...]))``) and
``verifier = stub_verifier(lambda premise, hypothesis: 1.0)``, then
``graph.invoke(inputs, context={"llm": spec, "verifier": verifier})``. Production code never imports
this module (``tests/test_layers.py`` checks it).
"""

from __future__ import annotations

import math
import re
import threading
import uuid
from typing import Any, Callable, Iterator

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from citegraph.tools.models import LocalChatModel, register_chat_model
from citegraph.tools.verifier import FunctionVerifier, register_verifier


class ScriptedChatModel(LocalChatModel):
    """A deterministic chat model for tests.

    ``script`` is either a list of replies (consumed in order, the last one repeats) or a function
    ``(messages, kwargs) -> str``. ``judge`` answers ``yes_probability`` (a float or a function
    of the prompt text). Every call is recorded in ``calls``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    script: Any = Field(default_factory=list)
    judge: Any = 0.5
    emulate_max_tokens: bool = Field(
        default=False, description="Cut a reply longer than max_tokens words there and report finish_reason 'length', as a server would.")
    calls: list = Field(default_factory=list)
    context_window: int | None = Field(default=None, description="Tokens the model reads at most (None: the default for remote models).")
    _i: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "citegraph-scripted"

    @property
    def endpoint(self) -> str:
        return "scripted model"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        with self._lock:
            self.calls.append({"messages": list(messages), "kwargs": dict(kwargs)})
            if callable(self.script):
                text = self.script(list(messages), dict(kwargs))
            else:
                if not self.script:
                    text = ""
                else:
                    text = self.script[min(self._i, len(self.script) - 1)]
                    self._i += 1
        prompt_tokens = sum(len(str(m.content).split()) for m in messages)
        finish = "stop"
        limit = kwargs.get("max_tokens")
        if self.emulate_max_tokens and limit and len(text.split()) > limit:
            text, finish = " ".join(text.split()[:limit]), "length"
        msg = AIMessage(
            content=text,
            usage_metadata={"input_tokens": prompt_tokens, "output_tokens": len(text.split()),
                            "total_tokens": prompt_tokens + len(text.split())},
            response_metadata={"finish_reason": finish},
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        """The scripted reply in word-sized pieces (whitespace kept), usage and finish reason last."""
        msg = self._generate(messages, stop=stop, **kwargs).generations[0].message
        for piece in re.findall(r"\S+\s*|\s+", msg.content):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="", usage_metadata=msg.usage_metadata, response_metadata=msg.response_metadata))

    def yes_probability(self, messages: list[BaseMessage]) -> float:
        text = "\n".join(str(m.content) for m in messages)
        return float(self.judge(text) if callable(self.judge) else self.judge)

    def yes_no_log_odds(self, messages: list[BaseMessage]) -> float:
        """The judge's P(Yes) as log-odds (clipped to [1e-6, 1 - 1e-6])."""
        p = min(max(self.yes_probability(messages), 1e-6), 1 - 1e-6)
        return math.log(p) - math.log(1 - p)


def scripted_model(script: Any = None, judge: Any = 0.5, *, spec: str | None = None) -> tuple[str, ScriptedChatModel]:
    """A :class:`ScriptedChatModel` registered under ``spec`` (default: a fresh ``fake:<id>``), so every
    graph resolves it; returns ``(spec, model)`` (the model records its ``calls``)."""
    spec = spec or f"fake:{uuid.uuid4().hex[:8]}"
    model = ScriptedChatModel(script=script or [], judge=judge)
    register_chat_model(spec, model)
    return spec, model


def stub_verifier(score: Callable[[str, str], float], *, spec: str | None = None, threshold: float = 0.5) -> str:
    """A verifier that scores a (premise, hypothesis) pair with ``score``, registered under ``spec``
    (default: a fresh ``stub:<id>``) with entailment at ``score >= threshold``; returns the spec."""
    spec = spec or f"stub:{uuid.uuid4().hex[:8]}"
    register_verifier(spec, FunctionVerifier(score, spec=spec, threshold=threshold))
    return spec
