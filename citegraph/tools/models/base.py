"""What the model modules share: the prompt type, the in-process chat model, messages from a prompt."""

from __future__ import annotations

import math
from typing import ClassVar, Sequence

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

Messages = Sequence[BaseMessage] | str


class LocalChatModel(BaseChatModel):
    """A chat model evaluated in this process (llama.cpp, the scripted test model of
    :mod:`citegraph.testing`): it is called with ``max_tokens`` and takes a ``grammar`` (GBNF text that
    constrains its reply, as :func:`cited_sentences` passes), its failures are not a server's (no retry
    for a network fault), and it answers Yes/No judgements itself (``yes_probability``,
    ``yes_no_log_odds``; with ``<method>_counted`` returning the prompt tokens too)."""

    #: True where a ``json_schema`` call kwarg constrains the reply to the schema (llama.cpp)
    json_schema_support: ClassVar[bool] = False

    @property
    def endpoint(self) -> str:
        """What a failure message names."""
        return f"model {type(self).__name__}"


def as_messages(prompt: Messages, system: str | None = None) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        msgs.insert(0, SystemMessage(system))
    return msgs


def _lse(xs: list[float]) -> float:
    """log Σ exp(x), computed without overflow."""
    m = max(xs)
    return m + math.log(sum(math.exp(x - m) for x in xs))


def yes_share(pairs: list[tuple[str, float]]) -> float:
    """P(Yes) / (P(Yes) + P(No)) over listed ``(token stripped and lower-cased, logprob)`` pairs (a
    server's top log-probabilities of the first token); 0.5 when neither is listed."""
    y = sum(math.exp(lp) for t, lp in pairs if t == "yes")
    n = sum(math.exp(lp) for t, lp in pairs if t == "no")
    return y / (y + n) if y + n else 0.5


def yes_no_log_odds_from_top(pairs: list[tuple[str, float]]) -> float | None:
    """log p(Yes) − log p(No) over the listed tokens, a side not listed bounded by the lowest listed
    log-probability; None when nothing is listed."""
    if not pairs:
        return None
    floor = min(lp for _, lp in pairs)
    y = [lp for t, lp in pairs if t == "yes"]
    n = [lp for t, lp in pairs if t == "no"]
    return (_lse(y) if y else floor) - (_lse(n) if n else floor)


def yes_no_from_top(pairs: list[tuple[str, float]]) -> tuple[float, float]:
    """(P(Yes) share, log-odds) from a first token's top log-probabilities (log-odds 0 when none)."""
    lo = yes_no_log_odds_from_top(pairs)
    return yes_share(pairs), 0.0 if lo is None else lo
