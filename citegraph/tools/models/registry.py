"""Chat models resolved from spec strings, once per process: :func:`get_chat_model`,
:func:`register_chat_model`, :func:`check_chat_spec`, and what a model reads (:func:`context_window`,
:func:`token_counter`)."""

from __future__ import annotations

import itertools
import os
import threading
from typing import Callable

from langchain_core.language_models.chat_models import BaseChatModel

from citegraph.errors import ModelError
from citegraph.tools import failures
from citegraph.tools.models import llamacpp
from citegraph.tools.models.llamacpp import LlamaCppChat

_registry: dict[str, BaseChatModel] = {}
_registry_lock = threading.Lock()


def register_chat_model(spec: str, model: BaseChatModel) -> None:
    """Make ``model`` available under ``spec`` (e.g. ``fake:demo``) for every graph."""
    with _registry_lock:
        _registry[spec] = model


def get_chat_model(spec: str = "local") -> BaseChatModel:
    """Resolve a spec string to a chat model, cached per process (models load once)."""
    spec = (spec or "local").strip()
    with _registry_lock:
        if spec in _registry:
            return _registry[spec]
    model = _build(spec)
    with _registry_lock:
        return _registry.setdefault(spec, model)


CHAT_SPECS = "local, local-small, llamacpp:<path>, openai:<model>, or a name given to register_chat_model"


def check_chat_spec(spec: str, where: str = "llm") -> str:
    """``spec`` when it names a chat model this process can resolve, without loading anything; else
    one-line ``InputError`` naming ``where`` (a graph checks its Context's specs before its first node,
    so a typo fails before any model work)."""
    from citegraph.errors import InputError

    spec = (spec or "local").strip()
    with _registry_lock:
        if spec in _registry:
            return spec
    kind, _, arg = spec.partition(":")
    if spec in ("local", "local-small"):
        return spec
    if kind in ("llamacpp", "gguf"):
        if not arg:
            raise InputError(f"{where}: llamacpp spec needs a path: llamacpp:/path/model.gguf")
        if not os.path.exists(os.path.expanduser(arg)):
            raise InputError(f"{where}: GGUF model file not found: {arg}")
        return spec
    if kind == "openai":
        if not arg:
            raise InputError(f"{where}: openai spec needs a model name: openai:gpt-4o-mini")
        return spec
    if kind == "fake":
        raise InputError(f"{where}: no scripted model registered as {spec!r} (use register_chat_model)")
    raise InputError(f"{where}: unknown model spec {spec!r}; use {CHAT_SPECS}")


def _build(spec: str) -> BaseChatModel:
    kind, _, arg = spec.partition(":")
    if spec in ("local", "local-small"):
        from citegraph.tools.local_model import embedded_model_path

        return LlamaCppChat(model_path=str(embedded_model_path(spec)))
    if kind in ("llamacpp", "gguf"):
        if not arg:
            raise ModelError("llamacpp spec needs a path: llamacpp:/path/model.gguf")
        return LlamaCppChat(model_path=os.path.expanduser(arg))
    if kind == "openai":
        if not arg:
            raise ModelError("openai spec needs a model name: openai:gpt-4o-mini")
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=arg,
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            api_key=os.environ.get("OPENAI_API_KEY") or "EMPTY",
            temperature=0,
            max_retries=0,  # retries follow citegraph.tools.failures (one policy for every model)
            timeout=failures.policy().timeout,
        )
    if kind == "fake":
        raise ModelError(f"no scripted model registered as {spec!r} (use register_chat_model)")
    raise ModelError(f"unknown model spec {spec!r}; use local, local-small, llamacpp:<path>, openai:<model>")


#: the context window assumed for a model that does not declare one (OpenAI's current chat models: 128k)
DEFAULT_CONTEXT_WINDOW = 128_000


def context_window(spec: str) -> int:
    """Tokens the model of ``spec`` reads at most: ``n_ctx`` of a llama.cpp model, a registered model's
    ``context_window`` attribute, else :data:`DEFAULT_CONTEXT_WINDOW` (a Context's ``context_window``
    knob overrides this for a server with a smaller one)."""
    model = get_chat_model(spec)
    if isinstance(model, LlamaCppChat):
        return int(model.n_ctx)
    return int(getattr(model, "context_window", None) or DEFAULT_CONTEXT_WINDOW)


def token_counter(spec: str) -> Callable[[str], int] | None:
    """The model's own token counter where its tokenizer is local (llama.cpp: loads the model), else
    None (the caller estimates; ``citegraph.prompts.budget``)."""
    model = get_chat_model(spec)
    if isinstance(model, LlamaCppChat):
        llama = model.llama
        return lambda text: len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    return None


def reset_local_models() -> None:
    """Empty the KV cache of every loaded llama.cpp model, so the next call is evaluated from scratch.

    llama.cpp re-uses the cache of the longest prompt prefix it evaluated last. That saves most of
    the prompt time inside one item (the same documents open every prompt), but the logits of a
    prompt evaluated in pieces differ from a whole-prompt evaluation by up to 0.39 (measured on the
    embedded model), which is enough to change a greedy token now and then. So an item's answer
    depended on which item ran before it; the benchmark runner calls this before every item. The
    sampling seeds (one per sampled call, counted per model) restart too, so a sampled method
    (RERANK, GenerationPrograms' refinement) draws the same samples for an item wherever it runs.
    """
    with llamacpp._lock:
        loaded = list(llamacpp._llamas.values())
    with _registry_lock:
        chats = [m for m in _registry.values() if isinstance(m, LlamaCppChat)]
    for llm in loaded:
        with llamacpp._llama_locks[id(llm)]:
            llm.reset()
    for chat in chats:
        chat._calls = itertools.count()

