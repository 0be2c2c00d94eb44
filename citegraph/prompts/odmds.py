"""Prompts of graph-augmented ODMDS, in our own words.

- cluster topic + relevance: the paper's Fig. 9 (JSON with the cluster id, a topic, a 1-10 score);
- chunk reflection (a chunk's own 1-10 relevance): NOT printed in the paper (Sec. 3.2.2 only says
  the reflection "generates a relevance score for each candidate chunk"); ours;
- tiered refinement: the paper's Fig. 10 (7-10 minor edits, 4-6 refocus, 1-3 cut to the core or
  rewrite), one instruction per tier;
- final summary: NOT printed in the paper; ours, after ODSum's query-focused summary prompt, plus
  the ``[n]`` citation instruction.

Each prompt puts the block several calls of one question share (the question) first.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

TOPIC_SYSTEM = ("You are a specialist in document processing and summarization who is good at finding the "
                "one theme that unites a group of documents.")


def _clip(text: str, words: int) -> str:
    w = text.split()
    return text if not words or len(w) <= words else " ".join(w[:words]) + " ..."


def topic_prompt(question: str, cluster: int, chunks: list[str], words: int) -> str:
    docs = "\n\n".join(f"Document {i}: {_clip(t, words)}" for i, t in enumerate(chunks, 1))
    return (
        f"Query: {question}\n\nCluster {cluster} holds these documents:\n{docs}\n\n"
        "Write a short topic that sums up what the documents of this cluster are about, then rate how "
        "relevant that topic is to the query from 1 (unrelated) to 10 (exactly what the query asks).\n"
        "- The topic must represent the shared content of the documents.\n"
        "- The score says how well the topic addresses the query.\n"
        "- The clustering may be imperfect: describe what most documents share and ignore outliers.\n"
        f'Reply with JSON only: {{"cluster": {cluster}, "topic": "...", "relevance": <1-10>}}'
    )


class TopicReply(BaseModel):
    cluster: int | None = None
    topic: str = Field(default="")
    relevance: float = Field(ge=1, le=10)

    @field_validator("relevance", mode="before")
    @classmethod
    def _clamp(cls, v):
        return _clamp_score(v)


def reflect_prompt(question: str, text: str, topic: str, words: int) -> str:
    about = f"It belongs to a group of documents about: {topic}\n" if topic else ""
    return (
        f"Query: {question}\n\nDocument:\n{_clip(text, words)}\n\n{about}"
        "How relevant is this document to the query? A document that holds part of the information "
        "the query asks for is relevant, even if it does not answer all of it. Rate it from 1 "
        '(unrelated) to 10 (highly relevant).\nReply with JSON only: {"relevance": <1-10>}'
    )


class ReflectReply(BaseModel):
    relevance: float = Field(ge=1, le=10)

    @field_validator("relevance", mode="before")
    @classmethod
    def _clamp(cls, v):
        return _clamp_score(v)


def _clamp_score(v):
    """Scores outside 1-10 (a 0, an 11, '8/10') are read and clamped rather than refused."""
    if isinstance(v, str):
        v = v.strip().split("/")[0].strip()
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return min(10.0, max(1.0, f))


TIER_INSTRUCTIONS = {
    "high": ("This document is highly relevant. Make only minor edits that improve its accuracy and "
             "clarity; keep its content and length."),
    "medium": ("This document is partly relevant. Restructure it to keep only the information that "
               "bears directly on the query, in fewer words."),
    "low": ("This document is barely relevant. Cut it down to its core facts that could matter for the "
            "query, in one or two sentences, or rewrite it briefly to serve the query."),
}


_WORD = re.compile(r"[a-z0-9]+")


def grounding(rewrite: str, source: str) -> float:
    """Share of the rewrite's words (of 4+ letters) that occur in the source chunk: a rewrite that
    talks ABOUT the chunk ("the text does not provide ...") instead of condensing it scores low."""
    src = set(_WORD.findall(source.lower()))
    words = [w for w in _WORD.findall(rewrite.lower()) if len(w) >= 4]
    return sum(w in src for w in words) / len(words) if words else 0.0


def refine_prompt(question: str, text: str, tier: str, topic: str, words: int) -> str:
    about = f"Its group's topic: {topic}\n" if topic else ""
    return (
        f"Query: {question}\n\nDocument:\n{_clip(text, words)}\n\n{about}"
        f"{TIER_INSTRUCTIONS[tier]}\nUse only facts stated in the document. Reply with the rewritten "
        "document only."
    )


def summary_prompt(question: str, contexts: list[tuple[str, str]]) -> str:
    docs = "\n\n".join(f"Document [{i}] (title: {title})\n{text}" if title else f"Document [{i}]\n{text}"
                       for i, (title, text) in enumerate(contexts, 1))
    return (
        f"{docs}\n\nQuery: {question}\n\n"
        "Write a summary of the documents above that answers the query. Use only information from "
        "the documents. End EVERY sentence with the numbers of the documents that support it in "
        "square brackets, like this: \"First sentence of the summary [1]. Second sentence [2][3].\" "
        "Cite only documents listed above. Write one paragraph of plain sentences.\nSummary:"
    )
