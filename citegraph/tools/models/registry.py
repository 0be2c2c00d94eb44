"""Chat models resolved from spec strings, once per process: :func:`get_chat_model`,
:func:`register_chat_model`, :func:`check_chat_spec`, and what a model reads (:func:`context_window`,
:func:`token_counter`)."""

from __future__ import annotations

import itertools
import os
import threading
from typing import Callable, NamedTuple

from langchain_core.language_models.chat_models import BaseChatModel

from citegraph.errors import InputError, ModelError
from citegraph.settings import setting
from citegraph.state.models import held
from citegraph.tools import failures
from citegraph.tools.local_model import embedded_model_path
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
              "openai:<model>, <provider>:<model> or init:<provider>:<model> (LangChain's init_chat_model: "
              "anthropic, ollama, bedrock, azure_openai, ...), or a name given to register_chat_model")

class ChatSpec(NamedTuple):
    """A chat-model spec string taken apart (:func:`parse_chat_spec`, the grammar's one reader).

    ``kind``: ``embedded`` (``local``/``local-small``; ``arg`` is that name), ``llamacpp`` (a GGUF
    path), ``server`` (llama-server for ``arg``: ``local``, ``local-small`` or a GGUF path), ``openai``
    (a model name), ``init`` (``provider:model`` for LangChain's ``init_chat_model``), ``fake`` /
    ``object`` (names that only a registration or a held model object gives meaning)."""

    kind: str
    arg: str
    text: str

    @property
    def in_process(self) -> bool:
        """A llama.cpp model evaluated in this process (one call at a time)."""
        return self.kind in ("embedded", "llamacpp")


_NEEDS = {"llamacpp": "llamacpp spec needs a path: llamacpp:/path/model.gguf",
          "openai": "openai spec needs a model name: openai:gpt-4o-mini",
          "server": "server spec needs a model: server:local, server:local-small or server:/path.gguf",
          "init": "init spec needs a provider and a model: init:anthropic:claude-sonnet-4-5, init:ollama:llama3.1"}


def parse_chat_spec(spec: str | None, error: type[Exception] = ModelError, where: str = "") -> ChatSpec:
    """``spec`` (empty: ``local``) as a :class:`ChatSpec`; a malformed or unknown one raises ``error``
    with one line (prefixed with ``where``). Registered names are not looked up here."""
    text = (spec or "local").strip()
    kind, _, arg = text.partition(":")
    kind = "llamacpp" if kind == "gguf" else kind
    prefix = f"{where}: " if where else ""
    if text in ("local", "local-small"):
        return ChatSpec("embedded", text, text)
    if kind in _NEEDS:
        provider, _, model = arg.partition(":")
        if not arg or (kind == "init" and not (provider and model)):
            raise error(prefix + _NEEDS[kind])
        return ChatSpec(kind, arg, text)
    if kind in ("fake", "object"):
        return ChatSpec(kind, arg, text)
    if arg and kind in langchain_providers():  # "anthropic:claude-...", "ollama:llama3.1": LangChain's own
        return ChatSpec("init", text, text)
    raise error(f"{prefix}unknown model spec {text!r}; use {CHAT_SPECS}")


def langchain_providers() -> frozenset[str]:
    """The providers LangChain's ``init_chat_model`` knows by name (``openai`` stays ours: ``openai:`` specs
    read ``OPENAI_BASE_URL`` and follow our failure policy)."""
    try:
        from langchain.chat_models.base import _BUILTIN_PROVIDERS  # its table; no public list exists

        names = set(_BUILTIN_PROVIDERS)
    except ImportError:  # pragma: no cover - langchain without the table: the common ones
        names = {"anthropic", "azure_openai", "bedrock", "bedrock_converse", "cohere", "fireworks", "google_genai",
                 "google_vertexai", "groq", "huggingface", "mistralai", "ollama", "together", "xai", "deepseek"}
    return frozenset(names - {"openai"})


def check_chat_spec(spec: str, where: str = "llm") -> str:
    """``spec`` when it names a chat model this process can resolve, without loading anything; else
    one-line ``InputError`` naming ``where`` (a graph checks its Context's specs before its first node,
    so a typo fails before any model work)."""
    spec = (spec or "local").strip()
    with _registry_lock:
        if spec in _registry:
            return spec
    if held(spec) is not None:
        return spec
    parsed = parse_chat_spec(spec, InputError, where)
    if parsed.kind == "llamacpp" and not os.path.exists(os.path.expanduser(parsed.arg)):
        raise InputError(f"{where}: GGUF model file not found: {parsed.arg}")
    if parsed.kind == "server":  # the model it serves, checked as an in-process one
        check_chat_spec(parsed.arg if parsed.arg in ("local", "local-small") else f"llamacpp:{parsed.arg}", where)
    if parsed.kind == "fake":
        raise InputError(f"{where}: no scripted model registered as {spec!r} (use register_chat_model)")
    if parsed.kind == "object":
        raise InputError(f"{where}: no model object is held as {spec!r} in this process (give the Context the object)")
    return spec


def _build(spec: str) -> BaseChatModel:
    parsed = parse_chat_spec(spec)
    if parsed.kind == "embedded":
        return LlamaCppChat(model_path=str(embedded_model_path(parsed.arg)))
    if parsed.kind == "llamacpp":
        return LlamaCppChat(model_path=os.path.expanduser(parsed.arg))
    if parsed.kind == "server":
        return _server_model(parsed.arg)
    if parsed.kind == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=parsed.arg,
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            api_key=os.environ.get("OPENAI_API_KEY") or "EMPTY",
            temperature=0,
            max_retries=0,  # retries follow citegraph.tools.failures (one policy for every model)
            timeout=failures.policy().timeout,
        )
    if parsed.kind == "init":
        return _init_chat_model(parsed.arg)
    if parsed.kind == "fake":
        raise ModelError(f"no scripted model registered as {spec!r} (use register_chat_model)")
    raise ModelError(f"no model object is held as {spec!r} in this process (give the Context the object)")


def _init_chat_model(arg: str) -> BaseChatModel:
    """``init:<provider>:<model>``: LangChain's ``init_chat_model`` (its provider package must be
    installed: langchain-anthropic, langchain-ollama, ...), temperature 0."""
    from langchain.chat_models import init_chat_model

    provider, _, model = arg.partition(":")
    try:
        return init_chat_model(model, model_provider=provider, temperature=0)
    except ImportError as e:  # the provider's package is missing: its own one-line advice
        raise ModelError(str(e).splitlines()[0]) from None
    except ValueError as e:  # an unknown provider
        raise ModelError(f"init:{arg}: {str(e).splitlines()[0]}") from None


def _gguf_path(name: str) -> str:
    """A GGUF path from ``local``/``local-small`` (the embedded models) or a file path."""
    if name in ("local", "local-small"):
        return str(embedded_model_path(name))
    if not name:
        raise ModelError("server spec needs a model: server:local, server:local-small or server:/path.gguf")
    return os.path.expanduser(name)


_slots_wanted: list[int] = []  # what a command with N items in flight asks for (want_server_slots)


def want_server_slots(n: int | None) -> None:
    """A ``server:`` model started from now on gets ``n`` slots (at most 64) unless
    ``$CITEGRAPH_SERVER_SLOTS`` says otherwise (``run``/``bench`` with ``--concurrency``); None: the
    default again (the CLI's ``main`` clears it when a command ends)."""
    _slots_wanted[:] = [] if n is None else [max(1, min(int(n), 64))]


def server_slots() -> int:
    """``$CITEGRAPH_SERVER_SLOTS`` (sequences a ``server:`` model decodes at once), else what
    :func:`want_server_slots` asked for, else :data:`~citegraph.tools.models.server.DEFAULT_SLOTS`."""
    n = setting("server_slots", ModelError)
    if n is not None:
        return n
    return _slots_wanted[0] if _slots_wanted else DEFAULT_SLOTS


def _server_model(arg: str) -> LlamaServerChat:
    """``server:<model>``: the GGUF behind a managed llama-server with ``server_slots()`` slots and,
    with ``$CITEGRAPH_SERVER_DRAFT``, speculative decoding: ``local-small`` or a GGUF path (a draft
    model), or ``ngram`` (drafts copied from where the reply's last tokens occur in the prompt)."""
    draft = setting("server_draft")
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

