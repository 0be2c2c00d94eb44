"""The in-process llama.cpp adapter: :class:`LlamaCppChat`, models loaded once per (path, n_ctx,
threads) with one lock each, GBNF grammars compiled once per text, and the Yes/No judge read from the
last token's logits."""

from __future__ import annotations

import atexit
import itertools
import math
import os
import threading
import time
from typing import Any, Iterator

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from citegraph.errors import ModelError, ModelReplyError
from citegraph.settings import setting
from citegraph.tools.models.base import LocalChatModel, _lse

_lock = threading.Lock()  # guards the caches below (a model's calls have their own lock)
_llamas: dict[tuple, Any] = {}
_llama_locks: dict[int, threading.Lock] = {}
LOAD_TIMES: dict[str, float] = {}


def _load_llama(path: str, n_ctx: int, n_threads: int | None):
    key = (path, n_ctx, n_threads)
    with _lock:
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
    with _lock:
        if gbnf in _grammars:
            return _grammars[gbnf]
    from llama_cpp import LlamaGrammar

    try:
        g = LlamaGrammar.from_string(gbnf, verbose=False)
    except ValueError as e:
        raise ModelError(f"llama.cpp could not parse the grammar: {e}") from e
    with _lock:
        return _grammars.setdefault(gbnf, g)


def _close_llamas() -> None:
    """Free every loaded llama.cpp model while the interpreter is still whole. Left to the garbage
    collector at shutdown, ``Llama.__del__`` may run after llama_cpp's module globals are gone and
    print "Exception ignored in: Llama.__del__ ... 'NoneType' object is not callable"."""
    with _lock:
        loaded = list(_llamas.values())
        _llamas.clear()
    _prefix_states.clear()
    for llm in loaded:
        with _llama_locks[id(llm)]:  # set beside every _llamas entry by _load_llama
            try:
                llm.close()
            except Exception:  # noqa: BLE001 - shutting down; nothing left to report to
                pass


atexit.register(_close_llamas)


def prefix_states_capacity() -> int:
    """How many prompt states the in-process model keeps (``$CITEGRAPH_PREFIX_STATES``, default 32; 0
    keeps none, as before: only the last prompt's prefix is re-used)."""
    n = setting("prefix_states", ModelError)
    return 32 if n is None else n


class PrefixStates:
    """The KV states of the last prompts a llama.cpp model evaluated (sequence 0's cells, saved after each
    chat call; least recently used dropped past ``capacity`` states or ``max_bytes``).

    llama-cpp-python re-uses the KV cache only for the longest common prefix with the prompt it evaluated
    *last*. A graph whose parallel branches take turns on the model loses that: SQuAI answers every
    retrieved document (Agent 2) before it judges any (Agent 3), so each judgement found another
    document's prompt in the cache and read its own document again. With the states kept, a prompt
    resumes from the saved state that shares the longest opening with it (its document, after Agent 2),
    when that beats the live cache. Greedy outputs: the restored cells are the ones computed when that
    prompt was read, so a prompt is evaluated in the same two pieces whichever branch ran just before
    (the split point is the shared opening, fixed by the prompts, not by the order of the branches).
    """

    def __init__(self, capacity: int, max_bytes: int = 1 << 30) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._states: list[tuple[tuple[int, ...], bytes]] = []  # oldest first

    def __len__(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        self._states.clear()

    def save(self, llm) -> None:
        """Keep the state of what ``llm`` holds now (its ``input_ids[:n_tokens]``)."""
        if self.capacity <= 0 or llm.n_tokens <= 0:
            return
        import ctypes

        import llama_cpp

        ids = tuple(int(t) for t in llm.input_ids[: llm.n_tokens])
        ctx = llm._ctx.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        n = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
        if n <= 0 or n > size:
            return
        # a saved prompt that this one extends is served as well by the new state
        self._states = [(k, v) for k, v in self._states if not (len(k) <= len(ids) and ids[: len(k)] == k)]
        self._states.append((ids, bytes(buf)[:n]))
        while self._states and (len(self._states) > self.capacity or sum(len(v) for _, v in self._states) > self.max_bytes):
            self._states.pop(0)

    def restore(self, llm, tokens: list[int]) -> int:
        """Load the saved state sharing the longest opening with ``tokens`` if it beats what ``llm``
        holds now; returns that shared length (0 if nothing was loaded). The caller's evaluation drops
        the restored cells past the shared opening and reads at least one token itself."""
        if not self._states:
            return 0
        live = int(llm.longest_token_prefix(llm._input_ids.tolist(), tokens))
        best, best_i = live, -1
        for i, (ids, _) in enumerate(self._states):
            k = int(llm.longest_token_prefix(list(ids), tokens))
            if k > best:
                best, best_i = k, i
        if best_i < 0:
            return 0
        import ctypes

        import llama_cpp

        ids, data = self._states.pop(best_i)
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if int(llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buf, len(data), 0)) != len(data):
            llm.reset()  # the cells are in an unknown state: read the prompt from scratch
            return 0
        self._states.append((ids, data))  # most recently used
        llm.input_ids[: len(ids)] = ids
        llm.n_tokens = len(ids)
        llm._requires_eval = True
        return best


_prefix_states: dict[int, PrefixStates] = {}


def prefix_states(llm) -> PrefixStates:
    """The saved prompt states of a loaded model (one set per model; guarded by the model's lock)."""
    with _lock:
        if id(llm) not in _prefix_states:
            _prefix_states[id(llm)] = PrefixStates(prefix_states_capacity())
        return _prefix_states[id(llm)]


def _to_openai(m: BaseMessage) -> dict:
    role = {"human": "user", "ai": "assistant", "system": "system"}.get(m.type, "user")
    return {"role": role, "content": m.content if isinstance(m.content, str) else str(m.content)}


class LlamaCppChat(LocalChatModel):
    """A llama.cpp GGUF chat model (thread-safe: one call at a time per loaded model).

    Extra call kwargs: ``temperature``, ``max_tokens``, ``json_schema`` (grammar-constrained JSON),
    ``grammar`` (a GBNF grammar as text, e.g. :func:`citation_grammar`; parsed once per process).
    """

    json_schema_support = True
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
            cached = self._cached_prefix(llm, msgs)
            try:
                out = llm.create_chat_completion(messages=msgs, **params)
            except ValueError as e:  # prompt longer than the context window
                raise ModelReplyError(f"llama.cpp rejected the prompt: {e}") from e
            prefix_states(llm).save(llm)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        msg = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata={
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            },
            response_metadata={"finish_reason": choice.get("finish_reason"), "model_name": os.path.basename(self.model_path),
                               "cache_n": cached},
        )
        return ChatResult(generations=[ChatGeneration(message=msg)], llm_output={"token_usage": usage})

    @staticmethod
    def _cached_prefix(llm, msgs: list[dict]) -> int:
        """Prompt tokens llama.cpp will take from its KV cache for this prompt: first the saved state
        that shares the longest opening with it is loaded if it beats the live cache
        (:class:`PrefixStates`), then the longest common prefix with what the model holds is what
        llama-cpp-python's ``generate`` re-uses (at least one token is evaluated). Called under the
        model's lock, just before the call."""
        try:
            prompt = _chat_formatter(llm)(messages=msgs).prompt
        except ModelError:
            return 0
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        prefix_states(llm).restore(llm, tokens)
        return min(int(llm.longest_token_prefix(llm._input_ids.tolist(), tokens)), max(len(tokens) - 1, 0))

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
            self._cached_prefix(llm, msgs)  # loads a saved state that serves this prompt better
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
            prefix_states(llm).save(llm)
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="",
            usage_metadata={"input_tokens": n_prompt, "output_tokens": n_out, "total_tokens": n_prompt + n_out},
            response_metadata={"finish_reason": finish, "model_name": os.path.basename(self.model_path)},
        ))

    # -- Yes/No judge: eval the prompt, read the last token's logits (no logits_all needed)
    def _next_token_logits(self, messages: list[BaseMessage]):
        """The next-token logits after the chat-templated prompt (with its generation prompt), the
        Yes/No token ids, the prompt's length in tokens and how many of them came from the KV cache."""
        import numpy as np

        llm = self.llama
        fmt = _chat_formatter(llm)
        prompt = fmt(messages=[_to_openai(m) for m in messages]).prompt
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        with _llama_locks[id(llm)]:
            # re-use the KV cache of the longest common prefix with what was evaluated last or with a
            # saved state (a judge asked about several claims on one passage reads the passage once;
            # SQuAI's judge finds its document where Agent 2 read it); at least one token is
            # evaluated so the logits are this prompt's. A judgement's own state is not saved: the
            # next judgement on the same opening finds it live.
            prefix_states(llm).restore(llm, tokens[:-1])
            keep = llm.longest_token_prefix(llm._input_ids.tolist(), tokens[:-1])
            llm.n_tokens = keep
            llm.eval(tokens[keep:])
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
        return logits, _yes_no_ids(llm), len(tokens), keep

    def yes_probability(self, messages: list[BaseMessage]) -> float:
        return self.yes_probability_counted(messages)[0]

    def yes_probability_counted(self, messages: list[BaseMessage]) -> tuple[float, int, int]:
        """(P(Yes), prompt tokens, prompt tokens taken from the KV cache)."""
        logits, (yes, no), n, keep = self._next_token_logits(messages)
        return _two_way(logits, yes, no), n, keep

    def yes_no_log_odds(self, messages: list[BaseMessage]) -> float:
        """log p(Yes) − log p(No) of the next token after the chat-templated prompt (same template
        and generation prompt as :meth:`yes_probability`; each side sums its case/space variants)."""
        return self.yes_no_log_odds_counted(messages)[0]

    def yes_no_log_odds_counted(self, messages: list[BaseMessage]) -> tuple[float, int, int]:
        """(log-odds, prompt tokens, prompt tokens taken from the KV cache)."""
        logits, (yes, no), n, keep = self._next_token_logits(messages)
        return _log_odds(logits, yes, no), n, keep


def _log_odds(logits, yes: list[int], no: list[int]) -> float:
    """log Σ_yes exp(l) − log Σ_no exp(l): the softmax normaliser cancels, so raw logits suffice."""
    return _lse([float(logits[i]) for i in yes]) - _lse([float(logits[i]) for i in no])


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

