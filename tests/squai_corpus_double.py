"""TEST DOUBLE of the corpus layer's ``Corpus`` for the SQuAI/RAG tests (never shipped): a tiny word-overlap index with
the corpus layer's ``open()`` / ``from_documents()`` / ``search()`` interface, put behind the real door
(``citegraph.corpus.open_corpus``, its cache included) by the ``fake_corpus`` fixture of tests/test_squai.py, so the
SQuAI/RAG graphs can be tested without the real index."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from citegraph.state.answer import Document


def _words(t: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", t.lower()))


@dataclass
class Chunk:
    id: str
    doc_id: str
    title: str
    text: str
    order: int = 0
    start: int = 0
    end: int = 0
    prev_id: str | None = None
    next_id: str | None = None
    metadata: dict = field(default_factory=dict)

    def to_document(self) -> Document:
        return Document(id=self.id, title=self.title, text=self.text)


@dataclass
class Hit:
    chunk: Chunk
    score: float
    dense_score: float
    sparse_score: float
    rank: int


class Corpus:
    """Scores = share of the query's words in the chunk; ``searches`` records every call."""

    searches: list[dict] = []

    def __init__(self, docs: list[Document]):
        self.chunks = [Chunk(id=d.id, doc_id=d.id, title=d.title, text=d.text, end=len(d.text)) for d in docs]

    built: list[int] = []

    @classmethod
    def from_documents(cls, docs: list[Document], chunk_tokens: int = 256) -> "Corpus":
        import time

        time.sleep(0.05)  # long enough for parallel sub-questions to overlap
        cls.built.append(len(docs))
        return cls(docs)

    opened: dict[str, "Corpus"] = {}

    @classmethod
    def open(cls, spec: str) -> "Corpus":
        if spec not in cls.opened:
            raise FileNotFoundError(spec)
        return cls.opened[spec]

    def __len__(self) -> int:
        return len(self.chunks)

    def search(self, query: str, k: int = 10, mode: str = "hybrid", alpha: float = 0.65,
               candidates: int | None = None) -> list[Hit]:
        Corpus.searches.append({"query": query, "k": k, "mode": mode, "alpha": alpha, "candidates": candidates})
        q = _words(query)
        scored = [(len(q & _words(c.title + " " + c.text)) / max(1, len(q)), i, c) for i, c in enumerate(self.chunks)]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [Hit(chunk=c, score=s, dense_score=s, sparse_score=s, rank=r) for r, (s, _, c) in enumerate(scored[:k])]
