"""Contexts and states of the ALCE baselines SUMM, SNIPPET and RERANK (Gao et al., 2023)."""

from __future__ import annotations

import operator
from typing import Annotated

from pydantic import BaseModel, Field

from citegraph.state.answer import Document
from citegraph.state.vanilla import VanillaContext, VanillaState
from citegraph.state.base import RunRecord, context_dataclass, knob


@context_dataclass
class SummContext(VanillaContext):
    """Knobs of SUMM: one query-focused summary per document, then ALCE's answer prompt."""

    note_max_tokens: int = knob(120, "Maximum tokens of each per-document summary.", ge=1)
    note_doc_words: int = knob(0, "Truncate each document to this many words in the per-document prompt (0 = no limit).")


@context_dataclass
class SnippetContext(VanillaContext):
    """Knobs of SNIPPET: one extracted span per document, then ALCE's answer prompt."""

    note_max_tokens: int = knob(120, "Maximum tokens of each per-document snippet.", ge=1)
    note_doc_words: int = knob(0, "Truncate each document to this many words in the per-document prompt (0 = no limit).")


@context_dataclass
class RerankContext(VanillaContext):
    """Knobs of RERANK: sample several VANILLA answers, keep the best by ALCE citation recall."""

    n_samples: int = knob(4, "Number of sampled answers.", ge=1)
    temperature: float = knob(0.7, "Sampling temperature of the candidates (0 makes every candidate the greedy answer).", ge=0.0)
    at_most_citations: int = knob(3, "ALCE's cap on citations per sentence when scoring candidates.", ge=1)


class DocTask(RunRecord):
    """What the per-document fan-out (LangGraph ``Send``) hands one worker."""

    question: str
    index: int = Field(description="1-based position of the document in the caller's list.")
    document: Document


class DocNote(BaseModel):
    """A per-document summary or snippet."""

    index: int = Field(description="1-based position of the document in the caller's list.")
    text: str = Field(description="The summary / extracted span ('' when irrelevant).")
    relevant: bool = True
    raw: str = Field(default="", description="The model's raw reply.")


class ShorterState(VanillaState):
    """Working state of SUMM / SNIPPET."""

    notes: Annotated[list[DocNote], operator.add] = Field(default_factory=list, description="One note per document (reducer: concatenation).")
    kept: list[int] = Field(default_factory=list, description="Original 1-based positions of the documents shown to the answer prompt, in prompt order.")


class SummState(ShorterState):
    pass


class SnippetState(ShorterState):
    pass


class Candidate(BaseModel):
    text: str = Field(description="Raw cited text of the sample.")
    recall: float = 0.0
    precision: float = 0.0
    n_sentences: int = 0


class RerankState(VanillaState):
    """Working state of RERANK: every candidate with its scores, and which one was kept."""

    candidates: list[Candidate] = Field(default_factory=list)
    chosen: int = Field(default=-1, description="Index of the kept candidate.")
