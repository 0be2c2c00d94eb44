"""The one output contract every graph ends with.

An :class:`AttributedAnswer` owns its document list; each :class:`CitedSentence` cites documents
by 1-based index into *that* list, and may carry the evidence (document index + span or sentence)
that supports it. ``render()`` produces ALCE-style ``[n]``-cited text, and
:func:`citegraph.tools.citations.parse_answer` parses such text back into the contract.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from citegraph.state.marks import strip_citations


# characters a model's output must not carry into an answer: the bidirectional embedding/override and
# isolate controls (U+202A-U+202E, U+2066-U+2069: "Trojan Source" text that reads differently than it
# is stored), Unicode noncharacters (U+FDD0-U+FDEF and U+xFFFE/U+xFFFF of every plane) and lone
# surrogates (not encodable as UTF-8). Marks that only hint direction (U+200E/U+200F) stay.
_UNSAFE = re.compile("[\u202a-\u202e\u2066-\u2069\ufdd0-\ufdef\ud800-\udfff]|[\ufffe\uffff]"
                     + "".join(f"|{chr(p * 0x10000 + 0xFFFE)}|{chr(p * 0x10000 + 0xFFFF)}" for p in range(1, 17)))


def clean_text(text: str) -> str:
    """``text`` without the characters an answer must not show (see ``_UNSAFE``)."""
    return _UNSAFE.sub("", text)


class Document(BaseModel):
    """A source document. ``id`` is the caller's identifier; citations use positions, not ids."""

    id: str = Field(default="", description="Caller's identifier of the document.")
    title: str = Field(default="", description="Title (may be empty).")
    text: str = Field(description="Full text of the document (or passage).")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra fields; for a retrieved chunk its provenance: doc_id, chunk_id, order, start, end.")

    @field_validator("id", mode="before")
    @classmethod
    def _id_to_str(cls, v: Any) -> str:
        return "" if v is None else str(v)

    @model_validator(mode="after")
    def _default_id(self) -> "Document":
        if not self.id:
            self.id = hashlib.sha1(f"{self.title}\n{self.text}".encode()).hexdigest()[:12]
        return self

    def as_premise(self) -> str:
        """How the document is shown to a verifier (ALCE uses ``Title: t\\ntext``)."""
        return f"Title: {self.title}\n{self.text}" if self.title else self.text

    @property
    def offset(self) -> int:
        """Where this text starts in its source document's text: a chunk's ``start``, else 0."""
        start = self.metadata.get("start") if "chunk_id" in self.metadata else None
        return int(start) if isinstance(start, int) and not isinstance(start, bool) else 0

    @property
    def pages(self) -> list[list[int]]:
        """The page map of this text, ``[[page, start, end], ...]`` in the source document's offsets: a
        PDF's (``metadata["pages"]``), or a PDF chunk's own pages (``metadata["source"]["pages"]``)."""
        src = self.metadata.get("source")
        pages = self.metadata.get("pages") or (src.get("pages") if isinstance(src, dict) else None)
        try:
            return [[int(p), int(a), int(b)] for p, a, b in pages] if pages else []
        except (TypeError, ValueError):
            return []  # metadata a caller filled otherwise: no page map

    def locate(self, quote: str) -> tuple[int, int, int | None] | None:
        """``(start, end, page)`` of ``quote`` in the source document: character offsets into its text
        (a chunk's source document's, not the chunk's) and the 1-based page where it starts (None
        without a page map); None when the quote is not in this text (whitespace may differ)."""
        quote = quote.strip()
        if not quote:
            return None
        i = self.text.find(quote)
        j = i + len(quote)
        if i < 0:
            words = quote.split()
            if len(words) > 400:
                return None
            m = re.search(r"\s+".join(re.escape(w) for w in words), self.text)
            if m is None:
                return None
            i, j = m.start(), m.end()
        start, end = self.offset + i, self.offset + j
        return start, end, page_of(self.pages, start)


def page_of(pages: list[list[int]], offset: int) -> int | None:
    """The 1-based page whose span (``[[page, start, end], ...]``, sorted) holds ``offset``; an offset
    between two pages belongs to the earlier one; None without pages."""
    if not pages:
        return None
    k = bisect.bisect_right([p[1] for p in pages], offset) - 1
    return int(pages[max(k, 0)][0])


class Evidence(BaseModel):
    """A piece of a cited document that supports a sentence, and where it is in the original."""

    doc: int = Field(description="1-based index into the answer's documents.")
    text: str = Field(description="The supporting span or sentence, verbatim from the document.")
    sentence_id: str | None = Field(default=None, description="Global source-sentence id, e.g. 'S12'.")
    score: float | None = Field(default=None, description="The verifier's P(this text entails the sentence), when checked.")
    start: int | None = Field(default=None, description="Character offset where the text starts in its source "
                              "document's text (for a chunk of an index: in the whole document, not the chunk).")
    end: int | None = Field(default=None, description="Character offset where the text ends (exclusive).")
    page: int | None = Field(default=None, description="1-based page of the source document (a PDF) where the text starts.")


SUPPORT_STATUSES = ("supported", "partial", "unsupported")
Support = Literal["supported", "partial", "unsupported"]


class CitedSentence(BaseModel):
    """One answer sentence and the documents that support it."""

    text: str = Field(description="The sentence without citation markers.")
    citations: list[int] = Field(default_factory=list, description="1-based indices into the answer's documents.")
    evidence: list[Evidence] = Field(default_factory=list)
    support: Support | None = Field(
        default=None,
        description="What the attribution stage's verifier found: 'supported' (the cited documents together entail "
                    "the sentence), 'partial' (the best documents come close but do not entail it), 'unsupported' "
                    "(no document set supports it: the sentence is flagged). None: not checked (attribution off).")
    support_score: float | None = Field(default=None, description="The verifier's score behind ``support`` (0-1).")

    @field_validator("text")
    @classmethod
    def _no_marks(cls, v: str) -> str:
        """A sentence's text holds no citation marks: its citations are ``citations``. Marks a model or a
        copied document left in the text ("[17]", "dopamine.[6] [4]", "[-1]") would otherwise reach
        ``render()`` and the ALCE ``output`` as citations nobody checked. Bidi controls, noncharacters and
        lone surrogates from a model's output are dropped (:func:`clean_text`)."""
        v = clean_text(v)
        return strip_citations(v) if "[" in v else v

    @field_validator("citations")
    @classmethod
    def _dedupe(cls, v: list[int]) -> list[int]:
        seen: list[int] = []
        for c in v:
            if c not in seen:
                seen.append(c)
        return seen

    def render(self) -> str:
        """``"text [1][2]."``: citations go before the sentence's final punctuation."""
        text = self.text.strip()
        if not self.citations:
            return text
        marks = "".join(f"[{c}]" for c in self.citations)
        m = re.search(r"[.!?]+$", text)
        if m is None:
            # no final punctuation of its own, or it sits inside quotes/brackets ('He said "Stop."'):
            # the marks follow, so the quoted text stays as written
            return f"{text} {marks}"
        body = text[: m.start()].rstrip()
        return f"{body} {marks}{m.group(0)}" if body else marks + m.group(0)


class AttributedAnswer(BaseModel):
    """The output of every citegraph method: sentences with citations into ``documents``."""

    question: str = ""
    documents: list[Document] = Field(default_factory=list)
    sentences: list[CitedSentence] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list, description="Parsing problems (e.g. dropped out-of-range citations).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Method name, counters, trace pointers.")

    @model_validator(mode="after")
    def _check_citations(self) -> "AttributedAnswer":
        n = len(self.documents)
        for s in self.sentences:
            bad = [c for c in s.citations if not 1 <= c <= n]
            if bad:
                s.citations = [c for c in s.citations if 1 <= c <= n]
                self.warnings.append(f"dropped out-of-range citation(s) {bad} (documents: {n})")
            s.evidence = [e for e in s.evidence if 1 <= e.doc <= n]
        return self

    def with_locations(self) -> "AttributedAnswer":
        """A copy whose every evidence carries where it is in its original document (``start``/``end``,
        and ``page`` for a PDF), found by :meth:`Document.locate`; evidence already located, or not
        found in its document, is left as it is. The attribution stage ends every graph with it. (Not a
        validator: a state read back from a checkpoint must equal the one written.)"""
        out = self.model_copy(deep=True)
        for s in out.sentences:
            for e in s.evidence:
                if e.start is None and 1 <= e.doc <= len(out.documents):
                    where = out.documents[e.doc - 1].locate(e.text)
                    if where is not None:
                        e.start, e.end, e.page = where
        return out

    def needs_locations(self) -> bool:
        """Whether some evidence has no location yet (see :meth:`with_locations`)."""
        return any(e.start is None for s in self.sentences for e in s.evidence)

    # ----------------------------------------------------------------- views
    def render(self) -> str:
        """The answer as ALCE-style text: ``"First sentence [1][2]. Second [3]."``"""
        return " ".join(s.render() for s in self.sentences)

    @property
    def text(self) -> str:
        """The answer without citation markers."""
        return " ".join(s.text.strip() for s in self.sentences)

    def cited_documents(self) -> list[int]:
        """Sorted 1-based indices of all documents cited anywhere in the answer."""
        return sorted({c for s in self.sentences for c in s.citations})

    def uncited_sentences(self) -> list[int]:
        return [i for i, s in enumerate(self.sentences) if not s.citations]

    def support_counts(self) -> dict[str, int]:
        """How many sentences are supported / partial / unsupported / unchecked (support None)."""
        out = {k: 0 for k in (*SUPPORT_STATUSES, "unchecked")}
        for s in self.sentences:
            out[s.support or "unchecked"] += 1
        return out

    def sentence_conflicts(self) -> list[list[str]]:
        """Per sentence, the attribution stage's ``conflicts`` (a verifier with structural checks says why
        the sentence conflicts with its documents); empty lists when there are none."""
        att = self.metadata.get("attribution") if isinstance(self.metadata, dict) else None
        recs = att.get("sentences") if isinstance(att, dict) else None
        why = {r.get("text"): list(r.get("conflicts") or []) for r in recs or [] if isinstance(r, dict)}
        return [why.get(s.text, []) for s in self.sentences]

    def remap(self, documents: list[Document], mapping: dict[int, int]) -> "AttributedAnswer":
        """Return a copy whose citations point into ``documents`` via ``mapping`` (old 1-based index →
        new 1-based index). Used when a method works on a subset of the caller's documents."""
        sentences = [
            CitedSentence(
                text=s.text,
                citations=[mapping[c] for c in s.citations if c in mapping],
                evidence=[e.model_copy(update={"doc": mapping[e.doc]}) for e in s.evidence if e.doc in mapping],
                support=s.support, support_score=s.support_score,
            )
            for s in self.sentences
        ]
        return AttributedAnswer(
            question=self.question, documents=documents, sentences=sentences,
            warnings=list(self.warnings), metadata=dict(self.metadata),
        )
