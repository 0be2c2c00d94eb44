"""Structured output: JSON from model text (fences, prose and common defects repaired) and
:func:`structured`, a reply validated against a pydantic schema with retries and a typed fallback."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, TypeVar

from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, ValidationError
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt

from citegraph.prompts.structured import retry_prompt
from citegraph.tools.models.base import Messages, as_messages
from citegraph.tools.models.calls import TRUNCATED, chat_reply
from citegraph.tools.models.registry import get_chat_model

T = TypeVar("T", bound=BaseModel)


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
    first answer). On llama.cpp models (in process or served) the output is grammar-constrained to the schema. When every
    attempt fails and ``fallback`` is given, the fallback is returned (never an exception);
    otherwise :class:`StructuredOutputError` is raised. ``coerce`` reshapes parsed JSON before
    validation; ``coerce_text`` salvages a reply that holds no JSON at all (it returns data to
    validate, or None to retry).
    """
    model = get_chat_model(spec)
    msgs = as_messages(prompt, system)
    problems: list[str] = []
    if getattr(model, "json_schema_support", False):
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
            msgs.extend([AIMessage(text), HumanMessage(retry_prompt(err, schema.model_json_schema()))])
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
