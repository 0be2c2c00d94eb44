"""One failure policy for every model call: what is retried, how often, how long a call may wait,
how large a reply may be, and which failures end a run rather than one item.

========================================================  =========  ==============================
failure                                                   retried    after the last attempt
========================================================  =========  ==============================
429 rate limit (``Retry-After`` honoured), 408, 409, 5xx  yes        the item fails, the run goes on
empty or null reply; malformed reply (HTML, invalid       yes        the item fails, the run goes on
JSON, ``choices: []``, non-UTF-8)
400/422 (e.g. the prompt is too long), a prompt over      no         the item fails, the run goes on
llama.cpp's context
connection refused, timeout (``timeout`` per call)        yes        the run stops: the endpoint is
                                                                     unreachable and every next item
                                                                     would wait the same
401/403, 404 (no such model), an unknown spec, a          no         the run stops
missing model file
========================================================  =========  ==============================

"Retried" means ``retries`` more attempts (default 2), waiting the ``Retry-After`` of an error reply
(capped at ``max_wait``) or else an exponential, jittered backoff. The item-level failures raise
:class:`~citegraph.errors.ModelReplyError`; the run-level ones :class:`~citegraph.errors.ModelError`
(``EndpointUnreachable`` for the unreachable endpoint). A reply longer than ``max_reply_chars`` (or
32 characters per requested token) is cut there and treated as cut at ``max_tokens``. The embedded
llama.cpp model is deterministic (greedy), so its empty replies are not retried.

Settings come from the environment (``CITEGRAPH_RETRIES``, ``CITEGRAPH_TIMEOUT``,
``CITEGRAPH_MAX_REPLY_CHARS``; the older ``CITEGRAPH_OPENAI_RETRIES``/``_TIMEOUT`` still count) and
from the CLI's ``--retries``/``--timeout`` (:func:`configure`).
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt

from citegraph.errors import EndpointUnreachable, ModelError, ModelReplyError
from citegraph.settings import setting

R = TypeVar("R")


@dataclass(frozen=True)
class Policy:
    retries: int = 2
    timeout: float = 60.0
    max_wait: float = 60.0
    backoff: float = 0.5
    max_reply_chars: int = 200_000

    @classmethod
    def from_env(cls) -> "Policy":
        def first(*names: str, default: Any) -> Any:  # the older CITEGRAPH_OPENAI_* names still count
            return next((v for v in map(setting, names) if v is not None), default)

        return cls(retries=first("retries", "openai_retries", default=2),
                   timeout=float(first("timeout", "openai_timeout", default=60.0)),
                   max_reply_chars=first("max_reply_chars", default=200_000))


_overrides: dict[str, Any] = {}
_lock = threading.Lock()
_abort = threading.Event()


def policy() -> Policy:
    """The policy now: the environment's settings with :func:`configure`'s on top."""
    with _lock:
        return replace(Policy.from_env(), **_overrides)


def configure(*, retries: int | None = None, timeout: float | None = None, max_reply_chars: int | None = None) -> Policy:
    """Set the process' policy (the CLI's ``--retries``/``--timeout``); ``None`` keeps a setting.
    OpenAI clients resolved afterwards get the timeout."""
    changes = {k: v for k, v in {"retries": retries, "timeout": timeout, "max_reply_chars": max_reply_chars}.items()
               if v is not None}
    if changes.get("retries", 0) < 0 or changes.get("timeout", 1) <= 0 or changes.get("max_reply_chars", 1) <= 0:
        raise ValueError("retries must be >= 0, timeout and max_reply_chars > 0")
    with _lock:
        _overrides.update(changes)
    return policy()


def reset_policy() -> None:
    """Forget :func:`configure`'s settings (tests)."""
    with _lock:
        _overrides.clear()


def abort_calls() -> None:
    """Stop retrying everywhere in this process (a run is ending: in-flight items give up at their
    next attempt instead of waiting out their own retries)."""
    _abort.set()


def allow_calls() -> None:
    _abort.clear()


class EmptyReply(Exception):
    """The model answered with no text."""


class MalformedReply(Exception):
    """The endpoint's reply was not a chat completion we could read."""


@dataclass(frozen=True)
class Verdict:
    retry: bool
    ends_run: bool
    reason: str


def _first_line(e: BaseException, n: int = 160) -> str:
    return (str(e).strip().splitlines() or [""])[0][:n]


def classify(exc: BaseException, *, remote: bool) -> Verdict | None:
    """How the policy treats ``exc`` raised by a model call; ``None``: not a model failure (a bug,
    re-raised as it is). ``remote``: the call went to a server (so a decoding or shape error is the
    reply's fault, not ours)."""
    if isinstance(exc, ModelError):
        return None  # already ours (a missing model file, a prompt too long for llama.cpp)
    if isinstance(exc, EmptyReply):
        return Verdict(remote, False, "the model returned an empty reply")
    if isinstance(exc, MalformedReply):
        return Verdict(True, False, f"malformed reply: {_first_line(exc)}")
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        openai = None
    if openai is not None:
        if isinstance(exc, openai.APITimeoutError):
            return Verdict(True, True, "the endpoint did not answer within the timeout")
        if isinstance(exc, openai.APIConnectionError):
            return Verdict(True, True, f"cannot connect to the endpoint ({_first_line(exc, 80)})")
        if isinstance(exc, openai.APIStatusError):
            code = exc.status_code
            msg = f"HTTP {code}: {_status_message(exc)}"
            if code in (401, 403):
                return Verdict(False, True, f"{msg} (check OPENAI_API_KEY)")
            if code == 404:
                return Verdict(False, True, f"{msg} (check the model name and OPENAI_BASE_URL)")
            if code == 429 or code in (408, 409) or code >= 500:
                return Verdict(True, False, msg)
            return Verdict(False, False, msg)
        if isinstance(exc, openai.APIResponseValidationError):
            return Verdict(True, False, f"malformed reply: {_first_line(exc)}")
    if remote and isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        what = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else "not JSON"
        return Verdict(True, False, f"malformed reply: the body is {what} ({_first_line(exc, 80)})")
    if remote and isinstance(exc, (IndexError, KeyError, TypeError, ValueError, AttributeError)):
        text = _first_line(exc)
        if "Unexpected response type" in text:
            text = "not a chat completion (" + text.split("got", 1)[-1].strip()[:60] + ")"
        elif isinstance(exc, IndexError):
            text = "no choices in the reply"
        return Verdict(True, False, f"malformed reply: {text}")
    return None


def _status_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"]).splitlines()[0][:160]
    response = getattr(exc, "response", None)
    ctype = (getattr(response, "headers", None) or {}).get("content-type", "")
    if "html" in ctype:
        return "an HTML page instead of JSON"
    return _first_line(exc).split(" - ", 1)[-1][:160]


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``retry-after`` seconds or HTTP date),
    read from an error reply only: langchain-openai attaches the HTTP response to a parse error of a
    200 reply too (an invalid JSON body), and a ``Retry-After`` there is no request to wait, so such a
    malformed reply gets the backoff like every other (an HTML page with status 200, ``choices: []``)."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and 200 <= status < 300:
        return None
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def call(fn: Callable[[], R], *, remote: bool, where: str) -> R:
    """``fn()`` under the policy: retried while the failure is retryable, then raised as
    ``ModelReplyError`` (the item fails) or ``ModelError``/``EndpointUnreachable`` (the run stops),
    with a one-line reason naming ``where`` (the endpoint). Other exceptions pass unchanged."""
    pol = policy()
    attempts = pol.retries + 1

    def retryable(e: BaseException) -> bool:
        v = classify(e, remote=remote)
        return bool(v and v.retry) and not _abort.is_set()

    def wait(state) -> float:
        exc = state.outcome.exception()
        ra = retry_after(exc) if exc is not None else None
        if ra is not None:
            return min(ra, pol.max_wait)
        base = min(pol.backoff * 2 ** (state.attempt_number - 1), pol.max_wait)
        return base * (0.5 + random.random() / 2)

    def stop(state) -> bool:
        return stop_after_attempt(attempts)(state) or _abort.is_set()

    tries = {"n": 0}

    def attempt() -> R:
        tries["n"] += 1
        return fn()

    try:
        return Retrying(stop=stop, wait=wait, retry=retry_if_exception(retryable), reraise=True)(attempt)
    except Exception as e:  # noqa: BLE001 - classified below; anything unknown is re-raised as it is
        v = classify(e, remote=remote)
        if v is None:
            raise
        n = tries["n"]
        tail = f" (after {n} attempts)" if n > 1 else ""
        msg = f"{where}: {v.reason}{tail}"
        if not v.ends_run:
            raise ModelReplyError(msg) from e
        if v.retry:
            raise EndpointUnreachable(msg + "; the run stops (--timeout / --retries change the policy)") from e
        raise ModelError(msg) from e


def reply_cap(max_tokens: int | None) -> int:
    """The most characters a reply may have: ``max_reply_chars``, or 32 per requested token."""
    cap = policy().max_reply_chars
    if max_tokens:
        cap = min(cap, max(2_000, 32 * int(max_tokens)))
    return cap


def clean_text(text: str) -> str:
    """A reply's text as valid Unicode (lone surrogates from ``\\ud800`` escapes become U+FFFD), so
    writing it as UTF-8 never fails."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
