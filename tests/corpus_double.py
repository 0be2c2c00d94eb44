"""TEST DOUBLE of the corpus layer's interface (``chunks()``, ``search()``, ``Chunk.to_document()``),
for the odmds tests only: never shipped in the package. Scores are word overlap with the query,
min-max normalised per query (what the real hybrid search returns is also in [0, 1])."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from citegraph.state import Document


@dataclass
class DoubleChunk:
    id: str
    doc_id: str
    text: str
    order: int = 0
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_document(self) -> Document:
        return Document(id=self.id, title=self.title, text=self.text)


@dataclass
class DoubleHit:
    chunk: DoubleChunk
    score: float
    rank: int
    dense_score: float | None = None
    sparse_score: float | None = None


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


class CorpusDouble:
    """In-memory corpus double: one chunk per (doc_id, text) given."""

    def __init__(self, chunks: list[DoubleChunk]):
        self._chunks = list(chunks)
        self.searches: list[dict] = []

    def chunks(self):
        return iter(self._chunks)

    def search(self, query: str, k: int = 10, mode: str = "hybrid", alpha: float = 0.4):
        self.searches.append({"query": query, "k": k, "mode": mode, "alpha": alpha})
        q = _words(query)
        raw = [len(q & _words(c.text)) for c in self._chunks]
        lo, hi = min(raw), max(raw)
        scores = [(r - lo) / (hi - lo) if hi > lo else 0.0 for r in raw]
        order = sorted(range(len(self._chunks)), key=lambda i: (-scores[i], i))[:k]
        return [DoubleHit(self._chunks[i], scores[i], r) for r, i in enumerate(order, 1)]
