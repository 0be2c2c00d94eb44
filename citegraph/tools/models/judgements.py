"""Yes/No judgements from the model's next-token distribution: :func:`yes_probability` (P(Yes)) and
:func:`yes_no_log_odds` (log p(Yes) − log p(No)); :func:`judge_many` asks a list of them at once."""

from __future__ import annotations

import contextvars
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from langchain_core.messages import BaseMessage

from citegraph.errors import ModelError
from citegraph.settings import setting
from citegraph.tools.models.base import Messages, _lse, as_messages
from citegraph.tools.models.calls import _invoke
from citegraph.tools.models.registry import get_chat_model
from citegraph.tools.usage import record_llm_call


_JUDGE_METHODS = ("yes_probability", "yes_no_log_odds")


def _judges_in_process(model: Any) -> bool:
    """Whether ``model`` evaluates Yes/No judgements itself, in this process (llama.cpp with
    ``<method>_counted``, the scripted test model with ``<method>``), rather than behind an endpoint."""
    return any(hasattr(model, m) or hasattr(model, f"{m}_counted") for m in _JUDGE_METHODS)


def _in_process_judgement(model: Any, msgs: list[BaseMessage], method: str) -> float | None:
    """A Yes/No judgement (``method``: ``yes_probability`` or ``yes_no_log_odds``) by a model that
    evaluates it in this process -- one with ``<method>_counted`` (llama.cpp: its prompt tokens
    counted) or with ``<method>`` alone (the scripted test model: its words counted) -- recorded as
    one LLM call, since no LangChain callback sees it; ``None`` for a model behind an endpoint (an
    OpenAI-compatible server, the managed llama-server: its call goes through LangChain, whose
    callbacks count it)."""
    counted = getattr(model, f"{method}_counted", None)
    if counted is not None:
        value, n_tokens, cached = counted(msgs)  # cached: prompt tokens taken from the KV cache
        record_llm_call(n_tokens, 1, cached)
        return float(value)
    if hasattr(model, method):
        value = float(getattr(model, method)(msgs))
        record_llm_call(sum(len(str(m.content).split()) for m in msgs), 1)
        return value
    return None


class NoLogprobsError(ModelError):
    """The model returned no token log-probabilities (callers may fall back to a verbal judgement)."""


def _judgement(spec: str, prompt: Messages, system: str | None, method: str,
               from_top: Callable[[list[tuple[str, float]]], float | None]) -> float:
    """What both Yes/No judges do: a model evaluated in this process answers ``method`` itself; a
    model behind an endpoint is asked for one token with its 20 most likely tokens' log-probabilities,
    which ``from_top`` turns into the judgement (it gets ``(token stripped and lower-cased, logprob)``
    pairs and returns None when they cannot judge). Raises :class:`NoLogprobsError` when the server
    returns no logprobs."""
    model = get_chat_model(spec)
    msgs = as_messages(prompt, system)
    local = _in_process_judgement(model, msgs, method)
    if local is not None:
        return local
    bound = model.bind(logprobs=True, top_logprobs=20, max_completion_tokens=1, temperature=0)
    msg = _invoke(bound, msgs, expect_text=False)  # a LangChain call: the UsageTracker's callbacks count it
    try:
        top = msg.response_metadata["logprobs"]["content"][0]["top_logprobs"]
        pairs = [(str(t["token"]).strip().lower(), float(t["logprob"])) for t in top]
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise NoLogprobsError(f"{spec} returned no logprobs; a Yes/No judge needs a server with logprobs support") from e
    value = from_top(pairs)
    if value is None:
        raise NoLogprobsError(f"{spec} returned no logprobs")
    return value


def _yes_share(pairs: list[tuple[str, float]]) -> float:
    """P(Yes) / (P(Yes) + P(No)) over the listed tokens; 0.5 when neither is listed."""
    y = sum(math.exp(lp) for t, lp in pairs if t == "yes")
    n = sum(math.exp(lp) for t, lp in pairs if t == "no")
    return y / (y + n) if y + n else 0.5


def _yes_no_log_odds(pairs: list[tuple[str, float]]) -> float | None:
    """log p(Yes) − log p(No) over the listed tokens, a side not listed bounded by the lowest listed
    log-probability; None when nothing is listed."""
    if not pairs:
        return None
    floor = min(lp for _, lp in pairs)
    y = [lp for t, lp in pairs if t == "yes"]
    n = [lp for t, lp in pairs if t == "no"]
    return (_lse(y) if y else floor) - (_lse(n) if n else floor)


def yes_probability(spec: str, prompt: Messages, *, system: str | None = None) -> float:
    """P(Yes) for a Yes/No question, from the model's next-token distribution.

    llama.cpp: last-token logits after evaluating the prompt; OpenAI-compatible servers: the
    ``top_logprobs`` of a 1-token completion (0.5 when neither Yes nor No is among them); scripted
    fakes: their ``judge``. Each judgement is counted as one LLM call in the usage counters, as the
    log-odds judge's are (on an OpenAI server LangChain's callbacks count it). Raises
    :class:`NoLogprobsError` (a ``ModelError``) when a server returns no logprobs.
    """
    return _judgement(spec, prompt, system, "yes_probability", _yes_share)


def yes_no_log_odds(spec: str, prompt: Messages, *, system: str | None = None) -> float:
    """log p(Yes) − log p(No) for a Yes/No question (SQuAI's RelScore), from the next-token
    distribution after the chat-templated prompt.

    llama.cpp: the last-token logits (Yes/No each summed over their case and leading-space
    variants); OpenAI-compatible servers: the ``top_logprobs`` of the first generated token (a side
    missing from the top 20 is bounded by the lowest listed log-probability, an upper bound of its
    true value); scripted fakes: the log-odds of their ``judge``. Raises :class:`NoLogprobsError`
    when a server returns no logprobs.
    """
    return _judgement(spec, prompt, system, "yes_no_log_odds", _yes_no_log_odds)


#: Yes/No judgements in flight at once to a model behind a remote endpoint (``openai:``), unless
#: ``$CITEGRAPH_JUDGE_WORKERS`` says otherwise; a managed llama-server gets as many as it has slots
JUDGE_WORKERS = 8


def judge_workers(spec: str) -> int:
    """How many Yes/No judgements :func:`judge_many` keeps in flight for ``spec``: 1 for a model
    evaluated in this process (its calls share one context: in order, each prompt re-uses the prefix
    the one before left in the KV cache), the slots of a managed llama-server, else
    ``$CITEGRAPH_JUDGE_WORKERS`` (default :data:`JUDGE_WORKERS`)."""
    model = get_chat_model(spec)
    if _judges_in_process(model):
        return 1
    slots = getattr(model, "slots", None)
    if isinstance(slots, int) and slots > 0:
        return slots
    return setting("judge_workers") or JUDGE_WORKERS


def judge_many(spec: str, prompts: Sequence[Messages], *, system: str | None = None,
               kind: str = "yes_probability", workers: int | None = None) -> list[float]:
    """Many Yes/No judgements (``kind``: ``yes_probability`` or ``yes_no_log_odds``), in the order
    given. A model behind an endpoint gets up to :func:`judge_workers` of them in flight at once
    (continuous batching on a llama-server with several slots; round trips overlapped on a remote
    API); a model in this process answers them one after another in the given order, so callers
    should put prompts that share a prefix next to each other. Each judgement is counted as one LLM
    call, as the single-prompt functions count it; the first error is raised."""
    fn = {"yes_probability": yes_probability, "yes_no_log_odds": yes_no_log_odds}.get(kind)
    if fn is None:
        raise ValueError(f"judge kind {kind!r}: choose yes_probability or yes_no_log_odds")
    prompts = list(prompts)
    width = min(len(prompts), workers if workers is not None else judge_workers(spec))
    if width <= 1:
        return [fn(spec, p, system=system) for p in prompts]
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="citegraph-judge") as pool:
        # each call runs in a copy of the caller's context: the usage tracker and LangChain's
        # callbacks (context variables) count it as they count a call made here
        futures = [pool.submit(contextvars.copy_context().run, fn, spec, p, system=system) for p in prompts]
        return [f.result() for f in futures]
