"""Retrieval through the corpus layer (an index, or the documents given with the question)."""

from __future__ import annotations

import hashlib
import threading

from citegraph.errors import InputError
from citegraph.state.answer import Document
from citegraph.state.squai import Candidate

_cache: dict[str, object] = {}
_lock = threading.Lock()
_build_lock = threading.Lock()
_MAX_CACHED = 4


def clear_cache() -> None:
    """Forget the opened corpora (tests; an index rebuilt on disk)."""
    with _lock:
        _cache.clear()


def _docs_key(documents: list[Document]) -> str:
    h = hashlib.sha1()
    for d in documents:
        h.update(f"{d.id}\x00{d.title}\x00{d.text}\x01".encode())
    return "docs:" + h.hexdigest()


def open_corpus(spec: str, documents: list[Document]):
    """An in-memory ``Corpus.from_documents(documents)`` when documents are given (as every graph's
    open-domain mode: given documents win), else the index ``spec`` names (``citegraph.corpus.open_corpus``).
    Cached per process (a few entries), so the sub-questions of one question share one index."""
    if not spec and not documents:
        raise InputError("no documents given and no corpus set (corpus=<index spec>)")
    key = _docs_key(documents) if documents else f"spec:{spec}"
    with _lock:
        if key in _cache:
            return _cache[key]
    # one build at a time: the sub-questions' retrievals run in parallel (Send) and would otherwise
    # index the same documents twice, concurrently (chromadb's client set-up is not safe for that)
    with _build_lock:
        with _lock:
            if key in _cache:
                return _cache[key]
        from citegraph.corpus import Corpus, open_corpus as open_index

        corpus = Corpus.from_documents(list(documents)) if documents else open_index(spec)
        with _lock:
            if len(_cache) >= _MAX_CACHED:
                _cache.pop(next(iter(_cache)))
            _cache[key] = corpus
    return corpus


def candidates_for(corpus, sub_q: int, question: str, *, k: int, mode: str, alpha: float,
                   candidate_factor: int) -> list[Candidate]:
    """The corpus layer's hybrid search for one (sub-)question; ``alpha`` is the DENSE weight (SQuAI:
    0.65, i.e. 0.35 on BM25), each retriever contributing ``candidate_factor * k`` candidates."""
    hits = corpus.search(question, k=k, mode=mode, alpha=alpha, candidates=max(k, candidate_factor * k))
    return [Candidate(sub_q=sub_q, sub_question=question, rank=rank, key=str(h.chunk.id), doc_id=str(h.chunk.doc_id),
                      document=h.chunk.to_document(), score=_f(h.score), dense_score=_f(h.dense_score),
                      sparse_score=_f(h.sparse_score))
            for rank, h in enumerate(hits[:k])]


def _f(x) -> float | None:
    return None if x is None else float(x)
