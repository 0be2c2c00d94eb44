"""One chat call under the failure policy: :func:`chat_text`, :func:`chat_reply` (text and finish reason)."""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage

from citegraph.tools import failures
from citegraph.tools.models.base import LocalChatModel, Messages, as_messages
from citegraph.tools.models.registry import get_chat_model

_log = logging.getLogger("citegraph")


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

