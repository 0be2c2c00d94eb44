"""AutoNuggetizer prompts (Pradeep et al., 2024; castorini/nuggetizer), in our words but keeping the
protocol: nuggets of 1-12 words, updated window by window (at most N, in decreasing importance);
importance labels vital / okay; assignment labels support / partial_support / not_support. Replies are
JSON objects (grammar-constrained on llama.cpp) rather than the Pythonic lists nuggetizer parses."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field, conlist, create_model

CREATE_SYSTEM = ("You are NuggetizeLLM, an assistant that keeps a list of atomic information nuggets up to date so "
                 "that it holds all the information a search query requires.")
SCORE_SYSTEM = ("You are NuggetizeScoreLLM, an assistant that labels atomic nuggets by how important they are for "
                "a search query.")
ASSIGN_SYSTEM = ("You are NuggetizeAssignerLLM, an assistant that labels atomic nuggets by whether a passage "
                 "captures them.")


class NuggetList(BaseModel):
    """The reply :func:`create_prompt` asks for: the whole updated list."""

    nuggets: list[str] = Field(default_factory=list)


def labels_schema(n: int, labels: tuple[str, ...]) -> type[BaseModel]:
    """The reply :func:`importance_prompt` and :func:`assign_prompt` ask for: exactly ``n`` labels from ``labels``."""
    lit = Literal[labels]  # type: ignore[valid-type]
    return create_model("Labels", labels=(conlist(lit, min_length=n, max_length=n), ...))


def create_prompt(query: str, passages: list[str], nuggets: list[str], max_nuggets: int) -> str:
    ctx = "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
    return (
        f"Search Query: {query}\nContext:\n{ctx}\n\n"
        f"Search Query: {query}\nInitial Nugget List: {json.dumps(nuggets, ensure_ascii=False)}\n"
        f"Initial Nugget List Length: {len(nuggets)}\n\n"
        "Update the list of atomic nuggets of information (1-12 words each), if needed, so that together they "
        "provide the information the query requires. Use only the initial list (if any) and the context above; "
        "this is an iterative process. Leave out redundant information. Keep at most "
        f"{max_nuggets} nuggets (fewer is fine), only the most vital ones, ordered from most to least important; "
        "prefer nuggets with more interesting information. Write nuggets as short statements, not questions. "
        'Reply with only a JSON object: {"nuggets": ["...", "..."]} (the whole updated list, even if unchanged).'
    )


def importance_prompt(query: str, nuggets: list[str]) -> str:
    return (
        f"Search Query: {query}\nNugget List: {json.dumps(nuggets, ensure_ascii=False)}\n\n"
        f"Label each of the {len(nuggets)} nuggets as vital or okay for the query. Vital nuggets are concepts "
        "that must be in a good answer; okay nuggets add worthwhile information but are not essential. Give one "
        "label per nugget, in the same order. "
        'Reply with only a JSON object {"labels": [...]} whose list holds one label per nugget, each "vital" or "okay".'
    )


def assign_prompt(query: str, passage: str, nuggets: list[str]) -> str:
    return (
        f"Search Query: {query}\nPassage: {passage}\nNugget List: {json.dumps(nuggets, ensure_ascii=False)}\n\n"
        f"Label each of the {len(nuggets)} nuggets by whether the passage captures it: support if the passage "
        "captures the nugget fully, partial_support if it captures it partly, not_support if not at all. Give one "
        "label per nugget, in the same order. "
        'Reply with only a JSON object {"labels": [...]} whose list holds one label per nugget, each "support", '
        '"partial_support" or "not_support".'
    )


def yesno_prompt(query: str, passage: str, nugget: str, partial: bool) -> str:
    """Per-nugget assignment as Yes/No questions (our addition for small judges; see eval/nuggets.py)."""
    ask = ("Does the passage capture at least part of this nugget?" if partial
           else "Does the passage fully capture this nugget?")
    return f"Search Query: {query}\nPassage: {passage}\n\nNugget: {nugget}\n{ask} Answer Yes or No."
