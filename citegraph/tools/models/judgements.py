"""Yes/No judgements from the model's next-token distribution: :func:`yes_probability` (P(Yes)) and
:func:`yes_no_log_odds` (log p(Yes) − log p(No))."""

from __future__ import annotations

import math
from typing import Any

from langchain_core.messages import BaseMessage

from citegraph.errors import ModelError
from citegraph.tools.models.base import Messages, as_messages
from citegraph.tools.models.calls import _invoke
from citegraph.tools.models.registry import get_chat_model


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

