"""Every ``CITEGRAPH_*`` environment variable in one place: its name, type, range, default and what it does
(:class:`Settings`, pydantic-settings). ``citegraph env`` prints them with their current values.

A variable is read when it is needed, not once at import (apps and tests change the environment while
they run), and on its own (:func:`setting`): a bad value is a one-line error naming the variable and what
it expects, and a bad value of one variable never stops another from being read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import Field, TypeAdapter, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from citegraph.errors import InputError

PREFIX = "CITEGRAPH_"


class Settings(BaseSettings):
    """The variables, each with its description; unset or blank means the default."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")

    llm: str = Field("", description="the default chat-model spec of every Context (unset: local)")
    verifier: str = Field("", description="the default verifier spec of every Context (unset: default)")
    judge: str = Field("", description="the evaluator's judge model spec (unset: CITEGRAPH_LLM, else local)")
    judge_workers: int | None = Field(None, ge=1, le=64,
                                      description="LLM-judge calls in flight at once (unset: the server's slots, else 1)")
    cache: Path | None = Field(None, description="where the embedded models are unpacked (unset: ~/.cache/citegraph)")
    index_cache: Path | None = Field(None, description="where a remote Chroma index's BM25 side is cached "
                                                      "(unset: ~/.cache/citegraph/index)")
    llama_server: str = Field("", description="the llama-server executable of server: specs (unset: the one make built)")
    server_args: str = Field("", description="extra llama-server arguments, shell-quoted")
    server_slots: int | None = Field(None, ge=1, le=64, description="sequences a server: model decodes at once "
                                                                     "(unset: --concurrency, else 1)")
    server_draft: str = Field("", description="speculative decoding for server: specs: local-small, a GGUF path, or ngram")
    prefix_states: int | None = Field(None, ge=0, description="prompt states the in-process model keeps (unset: 32; 0: none)")
    retries: int | None = Field(None, ge=0, description="extra attempts for a failed model call (unset: 2)")
    timeout: float | None = Field(None, gt=0, description="seconds one model call may take (unset: 60)")
    max_reply_chars: int | None = Field(None, ge=1, description="a longer model reply is cut (unset: 200000)")
    openai_retries: int | None = Field(None, ge=0, description="older name of CITEGRAPH_RETRIES")
    openai_timeout: float | None = Field(None, gt=0, description="older name of CITEGRAPH_TIMEOUT")
    mcp_token: str = Field("", description="the bearer token citegraph mcp --http requires off loopback")
    trace: str = Field("", description="an OTLP/HTTP collector every graph's runs are traced to (docs/operations.md#traces)")
    trace_project: str = Field("", description="the Phoenix project traces go to (unset: citegraph)")
    pdf_reader: Literal["pypdf", "pypdfium2"] = Field("pypdf", description="what reads a PDF's page text: pypdf, or "
                                                      "pypdfium2 (the pdfium extra; docs/corpus.md#pdfs-and-page-exact-citations)")


#: the variables whose values are secrets: ``citegraph env`` prints them as set or unset only
SECRET = frozenset({"mcp_token"})


def env_name(name: str) -> str:
    return PREFIX + name.upper()


def _expected(field: Any) -> str:
    """What a field takes, in words: "a whole number between 1 and 64", "a number above 0", "one of a, b"."""
    if get_origin(field.annotation) is Literal:
        return "one of " + ", ".join(map(str, get_args(field.annotation)))
    kinds = set(getattr(field.annotation, "__args__", ())) | {field.annotation}
    noun = "a whole number" if int in kinds else "a number" if float in kinds else "a path" if Path in kinds else "text"
    b = {k: getattr(m, k) for m in field.metadata for k in ("ge", "gt", "le", "lt") if getattr(m, k, None) is not None}
    if "ge" in b and "le" in b:
        return f"{noun} between {b['ge']} and {b['le']}"
    if "ge" in b:
        return f"{noun} of {b['ge']} or more"
    if "gt" in b:
        return f"{noun} above {b['gt']}"
    if "le" in b:
        return f"{noun} of at most {b['le']}"
    return noun


def setting(name: str, error: type[Exception] = InputError) -> Any:
    """``CITEGRAPH_<NAME>`` typed and checked, or the field's default when it is unset or blank. A bad
    value raises ``error`` with one line: ``CITEGRAPH_SERVER_SLOTS='99': expected a whole number between 1 and 64``."""
    field = Settings.model_fields[name]
    raw = os.environ.get(env_name(name))
    if raw is None or not raw.strip():
        return field.default
    try:
        kind = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
        return TypeAdapter(kind).validate_python(raw.strip())
    except ValidationError:
        raise error(f"{env_name(name)}={raw!r}: expected {_expected(field)}") from None


def describe() -> list[tuple[str, str, str]]:
    """``(variable, current value or error, description)`` for every variable, in declaration order."""
    rows = []
    for name, field in Settings.model_fields.items():
        raw = os.environ.get(env_name(name))
        if raw is None or not raw.strip():
            shown = "(unset)"
        elif name in SECRET:
            shown = "(set)"
        else:
            try:
                setting(name)
                shown = raw.strip()
            except InputError as e:
                shown = f"{raw.strip()}  ! {str(e).split(': ', 1)[1]}"
        rows.append((env_name(name), shown, field.description or ""))
    return rows
