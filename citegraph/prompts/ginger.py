"""GINGER's prompts, in our own words.

The paper (Łajewska & Balog, 2025) prints none of its prompts; it describes them (Sec. 3) and points to
an online appendix. What it says, and what we follow:
- detection: the LLM copies the passage and puts the nuggets between tags, changing nothing else
  (``tagged_prompt``); ``json_prompt`` asks for the same spans as a JSON list instead (our choice for small
  models, measured: docs/results/README.md);
- ranking: duoT5 on clusters joined as passages; our LLM judge asks duoT5's question (is passage A more
  relevant to the query than passage B?) as a Yes/No question;
- summary: one sentence per cluster with a word limit in the prompt, short, concise, only the given
  information (after the short-story summarization prompt it cites);
- fluency: rephrase without changing the information or adding any.
Shared blocks (question, passage) come first so llama.cpp re-uses the KV cache across calls.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

TAG_OPEN, TAG_CLOSE = "<IN>", "</IN>"


def _passage(title: str, text: str) -> str:
    return f"Title: {title}\n{text}" if title else text


class SpanList(BaseModel):
    """The reply :func:`json_prompt` asks for: the nugget spans copied from the passage."""

    nuggets: list[str] = Field(default_factory=list)


def json_prompt(question: str, title: str, text: str) -> str:
    return (
        f"Question: {question}\n\nPassage:\n{_passage(title, text)}\n\n"
        "Find the information nuggets in the passage: the short spans of the passage that help answer the question. "
        "Copy each span exactly as it is written in the passage (same words, same order); do not paraphrase, "
        "do not combine spans, do not add anything. If nothing in the passage helps answer the question, return an "
        'empty list.\nReply with only a JSON object: {"nuggets": ["span copied from the passage", ...]}'
    )


def tagged_prompt(question: str, title: str, text: str) -> str:
    return (
        f"Question: {question}\n\nPassage:\n{text}\n\n"
        f"Copy the passage above exactly, word for word, and put every part of it that helps answer the question "
        f"between {TAG_OPEN} and {TAG_CLOSE} tags. Do not change, add or remove any other text or symbols. If nothing "
        "helps answer the question, copy the passage without tags.\nAnnotated passage:"
    )


def pairwise_prompt(question: str, a: str, b: str) -> str:
    return (
        f"Question: {question}\n\nPassage A:\n{a}\n\nPassage B:\n{b}\n\n"
        "Is Passage A more relevant to the question than Passage B? Answer Yes or No."
    )


def summary_prompt(question: str, nuggets: list[str], words: int) -> str:
    facts = "\n".join(f"- {n}" for n in nuggets)
    return (
        f"Question: {question}\n\nInformation:\n{facts}\n\n"
        f"Write one sentence of at most {words} words that summarizes the information above as it answers the "
        "question. Be short and concise. Use only the information given; add nothing else. Reply with the sentence only."
    )


def rewrite_prompt(question: str, response: str) -> str:
    return (
        f"Question: {question}\n\nResponse:\n{response}\n\n"
        "Rewrite the response so that it reads fluently and coherently as one answer. Do not change, add or remove "
        "any information; keep every fact. Reply with the rewritten response only."
    )
