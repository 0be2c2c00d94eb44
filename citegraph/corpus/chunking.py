"""Token-bounded, sentence-aligned chunks with character offsets and neighbours, and the search hit
that carries a chunk with its scores.

A document's text is split into sentences by the project's splitter
(:func:`citegraph.tools.sentences.split_sentences`), each sentence is located in the text (so every
chunk is the verbatim slice ``text[start:end]``), and sentences are packed greedily into chunks of at
most ``chunk_tokens`` word pieces of the embedder's own tokenizer, counting the ``[CLS]``/``[SEP]``
the model adds: a chunk is never truncated when it is embedded. A sentence longer than a chunk is cut
at word-piece boundaries. ``overlap_tokens`` > 0 starts each chunk with the last whole sentences of
the previous one (at most that many word pieces).

Chunk ids are ``"{doc_id}#{order}"``: the same document chunked with the same settings gets the same
ids in every build.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from citegraph.corpus.pdf import pages_within
from citegraph.state.answer import Document
from citegraph.tools.sentences import DEFAULT_SPLITTER, split_sentences


@dataclass
class Chunk:
    """A piece of a document: ``text == document_text[start:end]``."""

    id: str
    doc_id: str
    title: str
    text: str
    order: int
    start: int
    end: int
    prev_id: str | None = None
    next_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_document(self):
        """A :class:`citegraph.state.answer.Document` with the chunk's provenance in ``metadata``:
        ``doc_id``, ``chunk_id``, ``order``, ``start``, ``end`` (character offsets into the source
        document's text) and the source document's own extra fields under ``source``."""
        return Document(
            id=self.id, title=self.title, text=self.text,
            metadata={"doc_id": self.doc_id, "chunk_id": self.id, "order": self.order, "start": self.start,
                      "end": self.end, "prev_id": self.prev_id, "next_id": self.next_id,
                      "source": dict(self.metadata)},
        )


@dataclass
class Hit:
    """One search result. ``score`` is the fused score for hybrid/rrf and the retriever's own score for
    bm25/dense; ``dense_score`` (cosine similarity) and ``sparse_score`` (BM25) are the raw scores of
    each retriever, None where the chunk was not among that retriever's candidates. ``rank`` is 1-based."""

    chunk: Chunk
    score: float
    dense_score: float | None
    sparse_score: float | None
    rank: int


def chunk_id(doc_id: str, order: int) -> str:
    return f"{doc_id}#{order}"


def doc_hash(title: str, text: str, metadata: dict[str, Any]) -> str:
    """Content hash of a document (title, text and extra fields): a changed document is re-indexed."""
    payload = json.dumps([title, text, metadata], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha1(payload.encode()).hexdigest()


def sentence_spans(text: str, splitter: str = DEFAULT_SPLITTER) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text`` as the splitter finds them, located in the text."""
    spans: list[tuple[int, int]] = []
    cur = 0
    for sent in split_sentences(text, splitter):
        i = text.find(sent, cur)
        if i >= 0:
            j = i + len(sent)
        else:  # the splitter normalised whitespace: match its words with any whitespace between them
            words = sent.split()
            m = re.compile(r"\s+".join(re.escape(w) for w in words)).search(text, cur) if words else None
            if m is None:
                continue
            i, j = m.start(), m.end()
        if i < cur:  # never go backwards
            continue
        spans.append((i, j))
        cur = j
    return spans


class Chunker:
    """Splits documents into :class:`Chunk` s with the embedder's tokenizer (see the module doc)."""

    def __init__(self, tokenizer, chunk_tokens: int = 256, overlap_tokens: int = 0,
                 splitter: str = DEFAULT_SPLITTER, special_tokens: int = 2) -> None:
        if chunk_tokens <= special_tokens + 8:
            raise ValueError(f"chunk_tokens must be more than {special_tokens + 8}, got {chunk_tokens}")
        if not 0 <= overlap_tokens < chunk_tokens // 2:
            raise ValueError(f"overlap_tokens must be in [0, {chunk_tokens // 2}), got {overlap_tokens}")
        self.tok = tokenizer
        self.budget = chunk_tokens - special_tokens
        self.overlap = overlap_tokens
        self.splitter = splitter

    def _count(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        enc = self.tok(list(texts), add_special_tokens=False, truncation=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]

    def _cut_long(self, text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
        """A sentence over budget, cut at word-piece boundaries: (start, end, tokens) pieces."""
        enc = self.tok(text[start:end], add_special_tokens=False, return_offsets_mapping=True, truncation=False,
                       verbose=False)
        offs = enc["offset_mapping"]
        pieces = []
        for k in range(0, len(offs), budget):
            window = offs[k: k + budget]
            a = start + window[0][0]
            b = start + (offs[k + budget][0] if k + budget < len(offs) else end - start)
            pieces.append((a, b, len(window)))
        return pieces

    def spans(self, text: str, reserve: int = 0) -> list[tuple[int, int]]:
        """(start, end) character spans of the chunks of ``text``; ``reserve`` word pieces of each chunk's
        budget are kept for text embedded with it (its title line)."""
        budget = self.budget - reserve
        sents = sentence_spans(text, self.splitter)
        counts = self._count([text[a:b] for a, b in sents])
        units: list[tuple[int, int, int]] = []
        for (a, b), n in zip(sents, counts):
            units.extend(self._cut_long(text, a, b, budget) if n > budget else [(a, b, n)])
        chunks: list[list[tuple[int, int, int]]] = []
        cur: list[tuple[int, int, int]] = []
        used = 0
        for u in units:
            # +1: joining two sentences may cost a word piece at most for the space between them
            if cur and used + u[2] + 1 > budget:
                chunks.append(cur)
                carry: list[tuple[int, int, int]] = []
                if self.overlap:
                    t = 0
                    for prev in reversed(cur):
                        if t + prev[2] > self.overlap or t + prev[2] + u[2] + 1 > budget:
                            break
                        carry.insert(0, prev)
                        t += prev[2]
                cur, used = carry, sum(x[2] for x in carry)
            cur.append(u)
            used += u[2]
        if cur:
            chunks.append(cur)
        return [(c[0][0], c[-1][1]) for c in chunks]

    def title_reserve(self, title: str) -> int:
        """Word pieces a title line takes when it is embedded with each chunk (at most a quarter of the budget)."""
        if not title:
            return 0
        n = len(self.tok(title, add_special_tokens=False, verbose=False)["input_ids"]) + 1
        return min(n, self.budget // 4)

    def chunk(self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None,
              reserve: int = 0) -> list[Chunk]:
        """The chunks of a document. A page map in ``metadata["pages"]`` (``[[page, start, end], ...]``,
        a PDF's) is cut to each chunk's own pages, so a chunk carries where it sits, not the whole map."""
        spans = self.spans(text, reserve)
        ids = [chunk_id(doc_id, i) for i in range(len(spans))]
        pages = (metadata or {}).get("pages")

        def meta(a: int, b: int) -> dict[str, Any]:
            m = dict(metadata or {})
            if pages:
                m["pages"] = pages_within(pages, a, b)
            return m

        return [
            Chunk(id=ids[i], doc_id=doc_id, title=title, text=text[a:b], order=i, start=a, end=b,
                  prev_id=ids[i - 1] if i else None, next_id=ids[i + 1] if i + 1 < len(ids) else None,
                  metadata=meta(a, b))
            for i, (a, b) in enumerate(spans)
        ]
