"""The model layer: chat models resolved from spec strings, once per process.

Specs (the ``llm`` field of every graph's Context):

- ``local``               the embedded Qwen2.5-Coder-1.5B-Instruct GGUF (offline default)
- ``local-small``         the embedded 0.5B variant
- ``llamacpp:<path>``     any GGUF file
- ``openai:<model>``      langchain-openai ``ChatOpenAI``; ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``
                          from the environment, so OpenAI, vLLM and Ollama all work
- ``fake:<name>``         a scripted model registered with :func:`register_chat_model` (tests)

Nodes never construct models: they call :func:`chat_text`, :func:`structured` or
:func:`yes_probability` with the spec string from their Context.
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import math
import os
import re
import threading
import time
from typing import Any, Callable, Iterator, NamedTuple, Sequence, TypeVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt

from citegraph.errors import ModelError, ModelReplyError
from citegraph.tools import failures

_log = logging.getLogger("citegraph")

T = TypeVar("T", bound=BaseModel)
Messages = Sequence[BaseMessage] | str

_registry: dict[str, BaseChatModel] = {}
_registry_lock = threading.Lock()


class LocalChatModel(BaseChatModel):
    """A chat model evaluated in this process (llama.cpp, the scripted test model of
    :mod:`citegraph.testing`): it is called with ``max_tokens`` and takes a ``grammar`` (GBNF text that
    constrains its reply, as :func:`cited_sentences` passes), its failures are not a server's (no retry
    for a network fault), and it answers Yes/No judgements itself (``yes_probability``,
    ``yes_no_log_odds``; with ``<method>_counted`` returning the prompt tokens too)."""

    @property
    def endpoint(self) -> str:
        """What a failure message names."""
        return f"model {type(self).__name__}"


# --------------------------------------------------------------------------- llama.cpp backend
_llamas: dict[tuple, Any] = {}
_llama_locks: dict[int, threading.Lock] = {}
LOAD_TIMES: dict[str, float] = {}


def _load_llama(path: str, n_ctx: int, n_threads: int | None):
    key = (path, n_ctx, n_threads)
    with _registry_lock:
        if key in _llamas:
            return _llamas[key]
        if not os.path.exists(path):
            raise ModelError(f"GGUF model file not found: {path}")
        try:
            from llama_cpp import Llama
        except ImportError as e:  # pragma: no cover - depends on install
            raise ModelError("llama-cpp-python is not installed; run: pip install 'citegraph[local]'") from e
        t0 = time.perf_counter()
        llm = Llama(
            model_path=path, n_ctx=n_ctx, n_threads=n_threads or os.cpu_count(), n_batch=512,
            verbose=False, seed=0,
        )
        LOAD_TIMES[path] = time.perf_counter() - t0
        _llamas[key] = llm
        _llama_locks[id(llm)] = threading.Lock()
        return llm


_grammars: dict[str, Any] = {}


def _llama_grammar(gbnf: str):
    """A GBNF grammar compiled by llama.cpp (cached per text: compiling a 300-repetition rule takes a
    while, and the same grammar serves every call with the same number of documents)."""
    with _registry_lock:
        if gbnf in _grammars:
            return _grammars[gbnf]
    from llama_cpp import LlamaGrammar

    try:
        g = LlamaGrammar.from_string(gbnf, verbose=False)
    except ValueError as e:
        raise ModelError(f"llama.cpp could not parse the grammar: {e}") from e
    with _registry_lock:
        return _grammars.setdefault(gbnf, g)


def _close_llamas() -> None:
    """Free every loaded llama.cpp model while the interpreter is still whole. Left to the garbage
    collector at shutdown, ``Llama.__del__`` may run after llama_cpp's module globals are gone and
    print "Exception ignored in: Llama.__del__ ... 'NoneType' object is not callable"."""
    with _registry_lock:
        loaded = list(_llamas.values())
        _llamas.clear()
    for llm in loaded:
        with _llama_locks[id(llm)]:  # set beside every _llamas entry by _load_llama
            try:
                llm.close()
            except Exception:  # noqa: BLE001 - shutting down; nothing left to report to
                pass


atexit.register(_close_llamas)


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
    with _registry_lock:
        loaded = list(_llamas.values())
        chats = [m for m in _registry.values() if isinstance(m, LlamaCppChat)]
    for llm in loaded:
        with _llama_locks[id(llm)]:
            llm.reset()
    for chat in chats:
        chat._calls = itertools.count()


def _to_openai(m: BaseMessage) -> dict:
    role = {"human": "user", "ai": "assistant", "system": "system"}.get(m.type, "user")
    return {"role": role, "content": m.content if isinstance(m.content, str) else str(m.content)}


class LlamaCppChat(LocalChatModel):
    """A llama.cpp GGUF chat model (thread-safe: one call at a time per loaded model).

    Extra call kwargs: ``temperature``, ``max_tokens``, ``json_schema`` (grammar-constrained JSON),
    ``grammar`` (a GBNF grammar as text, e.g. :func:`citation_grammar`; parsed once per process).
    """

    model_path: str
    n_ctx: int = 8192
    n_threads: int | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    _calls: itertools.count = PrivateAttr(default_factory=itertools.count)

    @property
    def _llm_type(self) -> str:
        return "citegraph-llamacpp"

    @property
    def _identifying_params(self) -> dict:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx}

    @property
    def endpoint(self) -> str:
        return f"llama.cpp model {os.path.basename(self.model_path)}"

    @property
    def llama(self):
        return _load_llama(self.model_path, self.n_ctx, self.n_threads)

    def _params(self, stop: list[str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        temperature = kwargs.get("temperature", self.temperature)
        params: dict[str, Any] = {
            "temperature": temperature,
            "max_tokens": kwargs.get("max_tokens") or self.max_tokens,
            "stop": stop or kwargs.get("stop"),
        }
        if temperature and temperature > 0:
            params["seed"] = next(self._calls)  # reproducible yet distinct samples
        if kwargs.get("json_schema"):
            params["response_format"] = {"type": "json_object", "schema": kwargs["json_schema"]}
        elif kwargs.get("grammar"):
            params["grammar"] = _llama_grammar(kwargs["grammar"])
        return params

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        llm = self.llama
        params = self._params(stop, kwargs)
        msgs = [_to_openai(m) for m in messages]
        with _llama_locks[id(llm)]:
            try:
                out = llm.create_chat_completion(messages=msgs, **params)
            except ValueError as e:  # prompt longer than the context window
                raise ModelReplyError(f"llama.cpp rejected the prompt: {e}") from e
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        msg = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata={
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            },
            response_metadata={"finish_reason": choice.get("finish_reason"), "model_name": os.path.basename(self.model_path)},
        )
        return ChatResult(generations=[ChatGeneration(message=msg)], llm_output={"token_usage": usage})

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Tokens as llama.cpp decodes them (LangChain uses this under ``stream()`` and LangGraph's
        ``stream_mode="messages"``, i.e. in Studio). The last chunk carries the usage (prompt tokens
        counted on the chat-formatted prompt, one completion token per decoded token) and the finish
        reason, so the aggregated message equals what :meth:`_generate` returns."""
        llm = self.llama
        params = self._params(stop, kwargs)
        msgs = [_to_openai(m) for m in messages]
        n_prompt = len(llm.tokenize(_chat_formatter(llm)(messages=msgs).prompt.encode(), add_bos=False, special=True))
        n_out, finish = 0, None
        with _llama_locks[id(llm)]:
            try:
                stream = llm.create_chat_completion(messages=msgs, stream=True, **params)
                for part in stream:
                    choice = (part.get("choices") or [{}])[0]
                    finish = choice.get("finish_reason") or finish
                    delta = (choice.get("delta") or {}).get("content") or ""
                    if not delta:
                        continue
                    n_out += 1
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=delta))
                    if run_manager is not None:
                        run_manager.on_llm_new_token(delta, chunk=chunk)
                    yield chunk
            except ValueError as e:  # prompt longer than the context window
                raise ModelReplyError(f"llama.cpp rejected the prompt: {e}") from e
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="",
            usage_metadata={"input_tokens": n_prompt, "output_tokens": n_out, "total_tokens": n_prompt + n_out},
            response_metadata={"finish_reason": finish, "model_name": os.path.basename(self.model_path)},
        ))

    # -- Yes/No judge: eval the prompt, read the last token's logits (no logits_all needed)
    def _next_token_logits(self, messages: list[BaseMessage]):
        """The next-token logits after the chat-templated prompt (with its generation prompt), the
        Yes/No token ids, and the prompt's length in tokens."""
        import numpy as np

        llm = self.llama
        fmt = _chat_formatter(llm)
        prompt = fmt(messages=[_to_openai(m) for m in messages]).prompt
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        with _llama_locks[id(llm)]:
            # re-use the KV cache of the longest common prefix with what was evaluated last (a
            # judge asked about several claims on one passage reads the passage once); at least
            # one token is evaluated so the logits are this prompt's
            keep = llm.longest_token_prefix(llm._input_ids.tolist(), tokens[:-1])
            llm.n_tokens = keep
            llm.eval(tokens[keep:])
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
        return logits, _yes_no_ids(llm), len(tokens)

    def yes_probability(self, messages: list[BaseMessage]) -> float:
        return self.yes_probability_counted(messages)[0]

    def yes_probability_counted(self, messages: list[BaseMessage]) -> tuple[float, int]:
        """(P(Yes), prompt tokens)."""
        logits, (yes, no), n = self._next_token_logits(messages)
        return _two_way(logits, yes, no), n

    def yes_no_log_odds(self, messages: list[BaseMessage]) -> float:
        """log p(Yes) − log p(No) of the next token after the chat-templated prompt (same template
        and generation prompt as :meth:`yes_probability`; each side sums its case/space variants)."""
        return self.yes_no_log_odds_counted(messages)[0]

    def yes_no_log_odds_counted(self, messages: list[BaseMessage]) -> tuple[float, int]:
        """(log-odds, prompt tokens)."""
        logits, (yes, no), n = self._next_token_logits(messages)
        return _log_odds(logits, yes, no), n


def _log_odds(logits, yes: list[int], no: list[int]) -> float:
    """log Σ_yes exp(l) − log Σ_no exp(l): the softmax normaliser cancels, so raw logits suffice."""
    ly = [float(logits[i]) for i in yes]
    ln = [float(logits[i]) for i in no]

    def lse(xs: list[float]) -> float:
        m = max(xs)
        return m + math.log(sum(math.exp(x - m) for x in xs))

    return lse(ly) - lse(ln)


_formatters: dict[int, Any] = {}
_yesno: dict[int, tuple[list[int], list[int]]] = {}


def _chat_formatter(llm):
    if id(llm) not in _formatters:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        meta = llm.metadata
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise ModelError("this GGUF has no chat template; the Yes/No judge needs one")
        eos = llm._model.token_get_text(llm.token_eos()) if hasattr(llm._model, "token_get_text") else ""
        bos = llm._model.token_get_text(llm.token_bos()) if hasattr(llm._model, "token_get_text") else ""
        _formatters[id(llm)] = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, add_generation_prompt=True)
    return _formatters[id(llm)]


def _yes_no_ids(llm) -> tuple[list[int], list[int]]:
    if id(llm) not in _yesno:
        def first(words):
            ids = {llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in words}
            return sorted(ids)
        _yesno[id(llm)] = (first(["Yes", " Yes", "yes", " yes", "YES"]), first(["No", " No", "no", " no", "NO"]))
    return _yesno[id(llm)]


def _two_way(logits, yes: list[int], no: list[int]) -> float:
    ly = [float(logits[i]) for i in yes]
    ln = [float(logits[i]) for i in no]
    m = max(ly + ln)
    sy = sum(math.exp(x - m) for x in ly)
    sn = sum(math.exp(x - m) for x in ln)
    return sy / (sy + sn)


# --------------------------------------------------------------------------- resolution
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


# --------------------------------------------------------------------------- helpers for nodes
def as_messages(prompt: Messages, system: str | None = None) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        msgs.insert(0, SystemMessage(system))
    return msgs


def _where(model: Any) -> str:
    """The endpoint a failure message names (a base URL, never a key)."""
    if isinstance(model, LocalChatModel):
        return model.endpoint
    inner = getattr(model, "bound", model)
    base = getattr(inner, "openai_api_base", None)
    if base or "openai" in type(inner).__name__.lower():
        return f"model endpoint {base or 'https://api.openai.com/v1'}"
    return f"model {type(inner).__name__}"


def _invoke(model: Any, msgs: list[BaseMessage], *, expect_text: bool = True, **kwargs: Any) -> AIMessage:
    """``model.invoke`` under the one failure policy (``citegraph.tools.failures``): retries, then a
    one-line ``ModelReplyError`` (the item fails) or ``ModelError`` (the run stops). An empty reply is
    a failure when text is expected."""
    remote = not isinstance(model, LocalChatModel)

    def once() -> AIMessage:
        msg = model.invoke(msgs, **kwargs)
        if expect_text:
            content = msg.content
            if not content or (isinstance(content, str) and not content.strip()):
                raise failures.EmptyReply()
        return msg

    return failures.call(once, remote=remote, where=_where(model))


class Reply(NamedTuple):
    """A reply's text and why generation ended (``"length"``: cut at max_tokens; ``None``: unknown)."""

    text: str
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


TRUNCATED = "reply cut at max_tokens"


def chat_text(spec: str, prompt: Messages, *, system: str | None = None, **kwargs: Any) -> str:
    """One chat call; returns the reply text. kwargs: temperature, max_tokens, stop."""
    return chat_reply(spec, prompt, system=system, **kwargs).text


def chat_reply(spec: str, prompt: Messages, *, system: str | None = None, **kwargs: Any) -> Reply:
    """One chat call; returns the text and the finish reason (to tell a reply cut at max_tokens)."""
    model = get_chat_model(spec)
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if not isinstance(model, LocalChatModel) and "max_tokens" in kwargs:
        kwargs["max_completion_tokens"] = kwargs.pop("max_tokens")  # what an OpenAI-compatible server reads
    msg = _invoke(model, as_messages(prompt, system), **kwargs)
    text = failures.clean_text(msg.content if isinstance(msg.content, str) else str(msg.content))
    meta = getattr(msg, "response_metadata", None) or {}
    finish = meta.get("finish_reason")
    cap = failures.reply_cap(kwargs.get("max_tokens") or kwargs.get("max_completion_tokens"))
    if len(text) > cap:  # a misbehaving server ignored max_tokens: keep what a sane reply could hold
        _log.warning("%s: reply of %d characters cut to %d", _where(model), len(text), cap)
        text, finish = text[:cap], "length"
    return Reply(text, finish)


_FENCE = re.compile(r"```(?:json|python)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """Best-effort JSON from LLM text: strips code fences and prose, repairs common defects
    (single quotes, trailing commas, unclosed brackets). Raises ValueError when nothing parses
    (also for JSON nested too deeply for Python's parser)."""
    try:
        return _extract_json(text)
    except RecursionError:
        raise ValueError("the JSON in the model output is nested too deeply") from None


def _extract_json(text: str) -> Any:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        cand = cand.strip()
        start = min([i for i in (cand.find("{"), cand.find("[")) if i >= 0], default=-1)
        if start < 0:
            continue
        body = cand[start:]
        for attempt in (body, _repair_json(body)):
            try:
                return json.loads(attempt)
            except json.JSONDecodeError:
                pass
        # a valid prefix followed by prose
        try:
            obj, _ = json.JSONDecoder().raw_decode(body)
            return obj
        except json.JSONDecodeError:
            pass
    raise ValueError("no JSON object found in the model output")


def _repair_json(s: str) -> str:
    s = re.sub(r",\s*([}\]])", r"\1", s)
    if "'" in s and '"' not in s:
        s = s.replace("'", '"')
    stack = []
    in_str = esc = False
    for ch in s:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    if in_str:
        s += '"'
    return s + "".join(reversed(stack))


class StructuredOutputError(ValueError):
    pass


def structured(
    spec: str,
    prompt: Messages,
    schema: type[T],
    *,
    system: str | None = None,
    retries: int = 2,
    fallback: T | Callable[[], T] | None = None,
    coerce: Callable[[Any], Any] | None = None,
    coerce_text: Callable[[str], Any] | None = None,
    **kwargs: Any,
) -> tuple[T, list[str]]:
    """Ask for JSON matching ``schema``; validate, repair, retry (tenacity), then fall back.

    Returns ``(value, problems)``: ``problems`` lists what went wrong on the way (empty on a clean
    first answer). On llama.cpp models the output is grammar-constrained to the schema. When every
    attempt fails and ``fallback`` is given, the fallback is returned (never an exception);
    otherwise :class:`StructuredOutputError` is raised. ``coerce`` reshapes parsed JSON before
    validation; ``coerce_text`` salvages a reply that holds no JSON at all (it returns data to
    validate, or None to retry).
    """
    model = get_chat_model(spec)
    msgs = as_messages(prompt, system)
    problems: list[str] = []
    if isinstance(model, LlamaCppChat):
        kwargs.setdefault("json_schema", schema.model_json_schema())

    last: dict[str, bool] = {}

    def attempt() -> T:
        reply = chat_reply(spec, msgs, **kwargs)
        text, last["truncated"] = reply.text, reply.truncated
        try:
            try:
                data = extract_json(text)
                if coerce is not None:
                    try:
                        data = coerce(data)
                    except (TypeError, AttributeError, KeyError, IndexError) as e:  # odd shapes: ask again
                        raise ValueError(f"unexpected JSON shape ({type(e).__name__}: {e})") from e
                return schema.model_validate(data)
            except (ValueError, ValidationError):
                # no usable JSON (or stray JSON such as a bare "[2]"): salvage the plain text if we can
                salvaged = coerce_text(text) if coerce_text is not None else None
                if salvaged is None:
                    raise
                value = schema.model_validate(salvaged)
                problems.append(f"{schema.__name__}: reply was not the JSON asked for; salvaged from plain text")
                return value
        except (ValueError, ValidationError) as e:
            err = str(e).splitlines()[0][:300]
            problems.append(f"{schema.__name__}: {err}")
            msgs.extend([AIMessage(text), HumanMessage(
                f"That reply was not valid ({err}). Reply again with only a JSON object that matches "
                f"this schema:\n{json.dumps(schema.model_json_schema())}"
            )])
            raise StructuredOutputError(err) from e

    try:
        for at in Retrying(stop=stop_after_attempt(retries + 1), retry=retry_if_exception_type(StructuredOutputError), reraise=True):
            with at:
                value = attempt()
                if last.get("truncated"):  # the accepted reply was cut (its JSON repaired): callers may care
                    problems.append(f"{schema.__name__}: {TRUNCATED}")
                return value, problems
    except (StructuredOutputError, RetryError):
        if fallback is None:
            raise StructuredOutputError("; ".join(problems))
        problems.append(f"{schema.__name__}: used fallback after {retries + 1} attempts")
        return (fallback() if callable(fallback) else fallback), problems
    raise AssertionError("unreachable")  # pragma: no cover


def _in_process_judgement(model: Any, msgs: list[BaseMessage], method: str) -> float | None:
    """A Yes/No judgement (``method``: ``yes_probability`` or ``yes_no_log_odds``) by a model that
    evaluates it in this process -- one with ``<method>_counted`` (llama.cpp: its prompt tokens
    counted) or with ``<method>`` alone (the scripted test model: its words counted) -- recorded as one LLM call, since no LangChain callback sees it; ``None`` for a
    model behind an endpoint (its call goes through LangChain, whose callbacks count it)."""
    from citegraph.tools.usage import record_llm_call

    counted = getattr(model, f"{method}_counted", None)
    if counted is not None:
        value, n_tokens = counted(msgs)
        record_llm_call(n_tokens, 1)
        return float(value)
    if hasattr(model, method):
        value = float(getattr(model, method)(msgs))
        record_llm_call(sum(len(str(m.content).split()) for m in msgs), 1)
        return value
    return None


def yes_probability(spec: str, prompt: Messages, *, system: str | None = None) -> float:
    """P(Yes) for a Yes/No question, from the model's next-token distribution.

    llama.cpp: last-token logits after evaluating the prompt; OpenAI-compatible servers: the
    ``top_logprobs`` of a 1-token completion; scripted fakes: their ``judge``. Each judgement is
    counted as one LLM call in the usage counters, as the log-odds judge's are (on an OpenAI server
    LangChain's callbacks count it).
    """
    model = get_chat_model(spec)
    msgs = as_messages(prompt, system)
    local = _in_process_judgement(model, msgs, "yes_probability")
    if local is not None:
        return local
    bound = model.bind(logprobs=True, top_logprobs=20, max_completion_tokens=1, temperature=0)
    msg = _invoke(bound, msgs, expect_text=False)
    try:
        top = msg.response_metadata["logprobs"]["content"][0]["top_logprobs"]
    except (KeyError, IndexError, TypeError) as e:
        raise ModelError(f"{spec} returned no logprobs; the llm-judge needs a server with logprobs support") from e
    y = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().lower() == "yes")
    n = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().lower() == "no")
    if y + n == 0:
        return 0.5
    return y / (y + n)


class NoLogprobsError(ModelError):
    """The model returned no token log-probabilities (callers may fall back to a verbal judgement)."""


def yes_no_log_odds(spec: str, prompt: Messages, *, system: str | None = None) -> float:
    """log p(Yes) − log p(No) for a Yes/No question (SQuAI's RelScore), from the next-token
    distribution after the chat-templated prompt.

    llama.cpp: the last-token logits (Yes/No each summed over their case and leading-space
    variants); OpenAI-compatible servers: the ``top_logprobs`` of the first generated token (a side
    missing from the top 20 is bounded by the lowest listed log-probability, an upper bound of its
    true value); scripted fakes: the log-odds of their ``judge``. Raises :class:`NoLogprobsError`
    when a server returns no logprobs.
    """
    model = get_chat_model(spec)
    msgs = as_messages(prompt, system)
    local = _in_process_judgement(model, msgs, "yes_no_log_odds")
    if local is not None:
        return local
    bound = model.bind(logprobs=True, top_logprobs=20, max_completion_tokens=1, temperature=0)
    msg = _invoke(bound, msgs, expect_text=False)  # a LangChain call: the UsageTracker's callbacks count it
    try:
        top = msg.response_metadata["logprobs"]["content"][0]["top_logprobs"]
        pairs = [(str(t["token"]), float(t["logprob"])) for t in top]
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise NoLogprobsError(f"{spec} returned no logprobs") from e
    if not pairs:
        raise NoLogprobsError(f"{spec} returned no logprobs")
    floor = min(lp for _, lp in pairs)
    y = [lp for t, lp in pairs if t.strip().lower() == "yes"]
    n = [lp for t, lp in pairs if t.strip().lower() == "no"]

    def lse(xs: list[float]) -> float:
        m = max(xs)
        return m + math.log(sum(math.exp(x - m) for x in xs))

    return (lse(y) if y else floor) - (lse(n) if n else floor)


# --------------------------------------------------------------------------- generation that cites by construction
_ANSWER_CUE = re.compile(r"\n([A-Z][^\n]{0,60}:)[ \t]*$")
_no_json_schema: set[str] = set()


class CitedReply(NamedTuple):
    """A reply whose sentences cite the numbered documents.

    ``sentences``: each with its citations (1-based, always within 1..n_docs); ``text``: the same as
    ``[n]``-cited text (what a node stores as its generation and parses like any reply); ``mode``:
    ``grammar`` (llama.cpp GBNF, or a scripted model given the grammar), ``json_schema`` (the server
    took the response format) or ``free`` (it refused it, or there was nothing to cite);
    ``notes``: what happened on the way (a refused schema, dropped citations, a sentence cut at
    max_tokens) for the answer's warnings."""

    sentences: list
    text: str
    mode: str
    notes: list[str]
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


def _gbnf_literal(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _repeat(item: str, lo: int, hi: int) -> str:
    if hi <= 0:
        return ""
    return f" ({item}){{{lo}}}" if lo == hi else f" ({item}){{{lo},{hi}}}"


def citation_grammar(n_docs: int, *, min_sentences: int = 1, max_sentences: int = 5, max_citations: int = 2,
                     min_chars: int = 15, max_chars: int = 300) -> str:
    """A GBNF grammar for ``min_sentences``..``max_sentences`` sentences, each ending with 1 to
    ``max_citations`` markers ``[k]`` (k exactly one of 1..n_docs, multi-digit numbers included) and
    a period. Inside a sentence a period must be followed by a character other than a space, a
    period or a bracket ("3.5", "U.S", "a.m" pass; "end. Next" does not), and no bracket or line
    break is allowed, so the constraint follows sentence boundaries: the model cannot run several
    sentences into one and then cut a word to fit the marker. (Allowing only a digit after an inner
    period made the embedded model turn "3 A.M." into "3 A.1.0".)"""
    if n_docs < 1:
        raise ValueError("a citation grammar needs at least one document")
    lo, hi = max(1, min_sentences), max(1, max_sentences, min_sentences)
    k = max(1, max_citations)
    nums = " | ".join(_gbnf_literal(str(i)) for i in range(1, n_docs + 1))
    body_lo, body_hi = max(0, min_chars - 1), max(min_chars, max_chars) - 1
    return "\n".join([
        "root ::= sent" + _repeat('" " sent', lo - 1, hi - 1),
        'sent ::= [A-Z0-9"] body cite "."',
        f"body ::= ([^.\\[\\]\\n] | \".\" [^ .\\[\\]\\n]){{{body_lo},{body_hi}}}",
        'cite ::= " [" num "]"' + _repeat('" [" num "]"', 0, k - 1),
        f"num ::= {nums}",
    ]) + "\n"


def citation_schema(n_docs: int, *, min_sentences: int = 1, max_sentences: int = 5, max_citations: int = 2) -> dict:
    """The JSON schema of a list of ``{sentence, citations}``, citations from 1..n_docs."""
    return {
        "type": "object",
        "properties": {"sentences": {
            "type": "array", "minItems": max(1, min_sentences), "maxItems": max(1, max_sentences, min_sentences),
            "items": {
                "type": "object",
                "properties": {
                    "sentence": {"type": "string"},
                    "citations": {"type": "array", "minItems": 1, "maxItems": max(1, max_citations),
                                  "items": {"type": "integer", "enum": list(range(1, n_docs + 1))}},
                },
                "required": ["sentence", "citations"],
                "additionalProperties": False,
            },
        }},
        "required": ["sentences"],
        "additionalProperties": False,
    }


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        m = re.fullmatch(r"\s*\[?\s*(?:doc(?:ument)?\s*)?(\d{1,4})\s*\]?\s*", v, re.I)
        return int(m.group(1)) if m else None
    return None


def _checked_citations(raw: list[int], n_docs: int, max_citations: int | None, where: str, notes: list[str]) -> list[int]:
    """``raw`` within 1..n_docs, de-duplicated, at most ``max_citations`` (each drop noted)."""
    out: list[int] = []
    bad = [c for c in raw if not 1 <= c <= n_docs]
    for c in raw:
        if 1 <= c <= n_docs and c not in out:
            out.append(c)
    if bad:
        notes.append(f"{where}: dropped out-of-range citation(s) {bad} (documents: {n_docs})")
    if max_citations and len(out) > max_citations:
        notes.append(f"{where}: kept the first {max_citations} of {len(out)} citations")
        out = out[:max_citations]
    return out


def sentences_from_json(data: Any, n_docs: int, max_citations: int | None = None) -> tuple[list, list[str]]:
    """``[CitedSentence]`` from a ``{"sentences": [{"sentence", "citations"}]}`` reply (or a bare
    list; ``text``/``cites`` spellings, citations as numbers or ``"[2]"`` strings). Raises
    ValueError when the shape holds no sentence at all."""
    from citegraph.state.answer import CitedSentence

    items = data.get("sentences", data.get("answer")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("no list of sentences in the JSON reply")
    out, notes = [], []
    for i, item in enumerate(items, 1):
        if isinstance(item, str):
            text, raw = item, []
        elif isinstance(item, dict):
            text = item.get("sentence", item.get("text", ""))
            raw = item.get("citations", item.get("cites", []))
        else:
            continue
        text = " ".join(str(text or "").split())
        if not text:
            continue
        raw = raw if isinstance(raw, list) else [raw]
        nums = [n for n in (_as_int(r) for r in raw) if n is not None]
        s = CitedSentence(text=text, citations=_checked_citations(nums, n_docs, max_citations, f"sentence {i}", notes))
        if s.text.strip():
            out.append(s)
    if not out:
        raise ValueError("the JSON reply holds no sentence")
    return out, notes


def sentences_from_text(text: str, n_docs: int, *, truncated: bool = False, require_citation: bool = False) -> tuple[list, list[str]]:
    """``[CitedSentence]`` from ``[n]``-cited text (the project's citation parser: out-of-range ids
    dropped, with a note). With ``require_citation`` (a grammar reply) a last sentence left without
    its marker because the reply was cut at max_tokens is dropped, noted."""
    from citegraph.state.answer import CitedSentence
    from citegraph.tools.citations import parse_cited_text

    parsed = parse_cited_text(text, n_docs=n_docs)
    notes = list(parsed.warnings)
    out = [CitedSentence(text=s.text, citations=s.citations) for s in parsed.sentences if s.text.strip()]
    out = [s for s in out if s.text.strip()]
    if require_citation and truncated and out and not out[-1].citations:
        notes.append(f"dropped the last sentence, cut at max_tokens before its citation: {out[-1].text[:80]!r}")
        out = out[:-1]
    return out, notes


def _render(sentences: list) -> str:
    return " ".join(s.render() for s in sentences)


def cited_sentences(
    spec: str,
    prompt: Messages,
    n_docs: int,
    *,
    min_sentences: int = 1,
    max_sentences: int = 5,
    max_citations: int = 2,
    format_note: bool = True,
    **kwargs: Any,
) -> CitedReply:
    """One reply whose every sentence cites 1 to ``max_citations`` of the ``n_docs`` numbered
    documents, by construction where the model allows it:

    - llama.cpp models (``local``, ``llamacpp:``) and scripted fakes: decoding under
      :func:`citation_grammar` (``min_sentences``..``max_sentences`` sentences);
    - other chat models (``openai:``): the ``json_schema`` response format of
      :func:`citation_schema`; a server that refuses it (an HTTP 4xx) gets the same prompt as free
      text once per process, recorded in ``notes`` (a reply that is not the JSON asked for is read
      as ``[n]``-cited text, noted too).

    ``format_note`` appends the format to the prompt (the last user turn). kwargs: temperature,
    max_tokens, system. Never a citation outside 1..n_docs; with no document it is a plain reply.
    """
    from citegraph.prompts import cited as note

    system = kwargs.pop("system", None)
    msgs = as_messages(prompt, system)
    if n_docs < 1:
        reply = chat_reply(spec, msgs, **kwargs)
        sents, notes = sentences_from_text(reply.text, 0)
        return CitedReply(sents, _render(sents), "free", ["no documents to cite: free text"] + notes, reply.finish_reason)
    model = get_chat_model(spec)
    rng = dict(min_sentences=min_sentences, max_sentences=max_sentences, max_citations=max_citations)

    def with_note(text: str) -> list[BaseMessage]:
        if not format_note:
            return list(msgs)
        last = msgs[-1]
        content = str(last.content)
        cue = _ANSWER_CUE.search(content)  # "...\nAnswer:" stays the last line, after the note
        content = content[: cue.start()] + text + "\n" + cue.group(1) if cue else content + text
        return list(msgs[:-1]) + [type(last)(content)]

    if isinstance(model, LocalChatModel):  # it takes a grammar
        reply = chat_reply(spec, with_note(note.text_note(n_docs, **rng)), grammar=citation_grammar(n_docs, **rng), **kwargs)
        sents, notes = sentences_from_text(reply.text, n_docs, truncated=reply.truncated, require_citation=True)
        for s in sents:  # the grammar caps them; a scripted reply is held to the same bound
            s.citations = _checked_citations(s.citations, n_docs, max_citations, "reply", notes)
        return CitedReply(sents, _render(sents), "grammar", notes, reply.finish_reason)

    notes: list[str] = []
    with _registry_lock:
        refused = spec in _no_json_schema
    if not refused:
        fmt = {"type": "json_schema", "json_schema": {"name": "cited_sentences", "schema": citation_schema(n_docs, **rng)}}
        try:
            reply = chat_reply(spec, with_note(note.json_note(n_docs, **rng)), response_format=fmt, **kwargs)
        except ModelReplyError as e:
            if re.search(r"response.?format|json.?schema|schema|grammar|guided", str(e), re.I):
                with _registry_lock:  # the server has no such format: not asked again in this process
                    _no_json_schema.add(spec)
                _log.warning("%s refused the JSON-schema response format: citations fall back to free text", spec)
            notes.append(f"constrained citations: the server refused the JSON-schema response format ({e}); free text")
        else:
            try:
                sents, more = sentences_from_json(extract_json(reply.text), n_docs, max_citations)
                return CitedReply(sents, _render(sents), "json_schema", more, reply.finish_reason)
            except ValueError as e:
                sents, more = sentences_from_text(reply.text, n_docs, truncated=reply.truncated)
                notes.append(f"constrained citations: the reply was not the JSON asked for ({e}); read as cited text")
                return CitedReply(sents, _render(sents), "json_schema", notes + more, reply.finish_reason)
    else:
        notes.append("constrained citations: this server refuses the JSON-schema response format; free text")
    reply = chat_reply(spec, with_note(note.text_note(n_docs, **rng)), **kwargs)
    sents, more = sentences_from_text(reply.text, n_docs, truncated=reply.truncated)
    return CitedReply(sents, _render(sents), "free", notes + more, reply.finish_reason)
