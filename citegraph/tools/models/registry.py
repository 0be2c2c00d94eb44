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
from citegraph.state.models import held
from citegraph.tools import failures
from citegraph.tools.models import llamacpp
from citegraph.tools.models.llamacpp import LlamaCppChat
from citegraph.tools.models.server import DEFAULT_SLOTS, LlamaServerChat

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
    obj = held(spec)  # a model object given to a Context
    if obj is not None:
        return obj
    model = _build(spec)
    with _registry_lock:
        return _registry.setdefault(spec, model)


CHAT_SPECS = ("local, local-small, llamacpp:<path>, server:<local|local-small|path> (llama-server, N slots), "
              "openai:<model>, init:<provider>:<model> (LangChain's init_chat_model: anthropic, ollama, "
              "bedrock, azure_openai, ...), or a name given to register_chat_model")

def check_chat_spec(spec: str, where: str = "llm") -> str:
    """``spec`` when it names a chat model this process can resolve, without loading anything; else
    one-line ``InputError`` naming ``where`` (a graph checks its Context's specs before its first node,
    so a typo fails before any model work)."""
    from citegraph.errors import InputError

    spec = (spec or "local").strip()
    with _registry_lock:
        if spec in _registry:
            return spec
    if held(spec) is not None:
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
    if kind == "server":  # the model it serves, checked as an in-process one
        if not arg:
            raise InputError(f"{where}: server spec needs a model: server:local, server:local-small or server:/path.gguf")
        check_chat_spec(arg if arg in ("local", "local-small") else f"llamacpp:{arg}", where)
        return spec
    if kind == "init":
        provider, _, model = arg.partition(":")
        if not provider or not model:
            raise InputError(f"{where}: init spec needs a provider and a model: init:anthropic:claude-sonnet-4-5, "
                             "init:ollama:llama3.1")
        return spec
    if kind == "fake":
        raise InputError(f"{where}: no scripted model registered as {spec!r} (use register_chat_model)")
    if kind == "object":
        raise InputError(f"{where}: no model object is held as {spec!r} in this process (give the Context the object)")
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
    if kind == "server":
        return _server_model(arg)
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
    if kind == "init":
        return _init_chat_model(arg)
    if kind == "fake":
        raise ModelError(f"no scripted model registered as {spec!r} (use register_chat_model)")
    if kind == "object":
        raise ModelError(f"no model object is held as {spec!r} in this process (give the Context the object)")
    raise ModelError(f"unknown model spec {spec!r}; use {CHAT_SPECS}")


def _init_chat_model(arg: str) -> BaseChatModel:
    """``init:<provider>:<model>``: LangChain's ``init_chat_model`` (its provider package must be
    installed: langchain-anthropic, langchain-ollama, ...), temperature 0."""
    from langchain.chat_models import init_chat_model

    provider, _, model = arg.partition(":")
    if not provider or not model:
        raise ModelError("init spec needs a provider and a model: init:anthropic:claude-sonnet-4-5")
    try:
        return init_chat_model(model, model_provider=provider, temperature=0)
    except ImportError as e:  # the provider's package is missing: its own one-line advice
        raise ModelError(str(e).splitlines()[0]) from None
    except ValueError as e:  # an unknown provider
        raise ModelError(f"init:{arg}: {str(e).splitlines()[0]}") from None


def _gguf_path(name: str) -> str:
    """A GGUF path from ``local``/``local-small`` (the embedded models) or a file path."""
    if name in ("local", "local-small"):
        from citegraph.tools.local_model import embedded_model_path

        return str(embedded_model_path(name))
    if not name:
        raise ModelError("server spec needs a model: server:local, server:local-small or server:/path.gguf")
    return os.path.expanduser(name)


def server_slots() -> int:
    """``$CITEGRAPH_SERVER_SLOTS`` (sequences a ``server:`` model decodes at once), else
    :data:`~citegraph.tools.models.server.DEFAULT_SLOTS`."""
    raw = os.environ.get("CITEGRAPH_SERVER_SLOTS", "").strip()
    if not raw:
        return DEFAULT_SLOTS
    try:
        n = int(raw)
    except ValueError:
        raise ModelError(f"CITEGRAPH_SERVER_SLOTS must be a whole number, not {raw!r}") from None
    if not 1 <= n <= 64:
        raise ModelError(f"CITEGRAPH_SERVER_SLOTS must be between 1 and 64, not {n}")
    return n


def _server_model(arg: str) -> LlamaServerChat:
    """``server:<model>``: the GGUF behind a managed llama-server with ``server_slots()`` slots and,
    with ``$CITEGRAPH_SERVER_DRAFT``, speculative decoding: ``local-small`` or a GGUF path (a draft
    model), or ``ngram`` (drafts copied from where the reply's last tokens occur in the prompt)."""
    draft = os.environ.get("CITEGRAPH_SERVER_DRAFT", "").strip()
    return LlamaServerChat(model_path=_gguf_path(arg), slots=server_slots(),
                           draft_path=(draft if draft == "ngram" else _gguf_path(draft)) if draft else None)


#: the context window assumed for a model that does not declare one (OpenAI's current chat models: 128k)
DEFAULT_CONTEXT_WINDOW = 128_000


def context_window(spec: str) -> int:
    """Tokens the model of ``spec`` reads at most: ``n_ctx`` of a llama.cpp model, a registered model's
    ``context_window`` attribute, else :data:`DEFAULT_CONTEXT_WINDOW` (a Context's ``context_window``
    knob overrides this for a server with a smaller one)."""
    model = get_chat_model(spec)
    if isinstance(model, (LlamaCppChat, LlamaServerChat)):
        return int(model.n_ctx)
    return int(getattr(model, "context_window", None) or DEFAULT_CONTEXT_WINDOW)


def token_counter(spec: str) -> Callable[[str], int] | None:
    """The model's own token counter where its tokenizer is local (llama.cpp: loads the model), else
    None (the caller estimates; ``citegraph.prompts.budget``)."""
    model = get_chat_model(spec)
    if isinstance(model, LlamaCppChat):
        llama = model.llama
        return lambda text: len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    if isinstance(model, LlamaServerChat):
        return model.count_tokens
    return None


def reset_local_models() -> None:
    """Empty the KV cache of every loaded llama.cpp model, so the next call is evaluated from scratch.

    llama.cpp re-uses the cache of the longest prompt prefix it evaluated last (or of a saved prompt
    state: :class:`~citegraph.tools.models.llamacpp.PrefixStates`, emptied here too). That saves most of
    the prompt time inside one item (the same documents open every prompt), but the logits of a
    prompt evaluated in pieces differ from a whole-prompt evaluation by up to 0.39 (measured on the
    embedded model), which is enough to change a greedy token now and then. So an item's answer
    depended on which item ran before it; the benchmark runner calls this before every item. The
    sampling seeds (one per sampled call, counted per model) restart too, so a sampled method
    (RERANK, GenerationPrograms' refinement) draws the same samples for an item wherever it runs.
    A ``server:`` model restarts its sampling seeds only: its slots and host-memory prompt cache are
    what make it fast, so its replies may depend on the prompts it read before (as with several
    items in flight on the in-process model).
    """
    with llamacpp._lock:
        loaded = list(llamacpp._llamas.values())
    with _registry_lock:
        chats = [m for m in _registry.values() if isinstance(m, LlamaCppChat)]
    for llm in loaded:
        with llamacpp._llama_locks[id(llm)]:
            llm.reset()
            llamacpp.prefix_states(llm).clear()
    for chat in chats:
        chat._calls = itertools.count()
    with _registry_lock:
        served = [m for m in _registry.values() if isinstance(m, LlamaServerChat)]
    for chat in served:  # its KV cache stays: see LlamaServerChat
        chat._seed = 0

