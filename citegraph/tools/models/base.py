"""What the model modules share: the prompt type, the in-process chat model, messages from a prompt."""

from __future__ import annotations

import math
from typing import ClassVar, Sequence

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

Messages = Sequence[BaseMessage] | str


class LocalChatModel(BaseChatModel):
    """A chat model evaluated on this machine (llama.cpp in process or behind the managed llama-server,
    the scripted test model of :mod:`citegraph.testing`): it is called with ``max_tokens`` and takes a
    ``grammar`` (GBNF text that constrains its reply, as :func:`cited_sentences` passes), its failures
    are not a remote server's (no retry for a network fault), and an in-process one answers Yes/No
    judgements itself (``yes_probability``, ``yes_no_log_odds``; with ``<method>_counted`` returning
    the prompt tokens and those taken from the KV cache too)."""

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
