"""Retrieval through the corpus layer (an index, or the documents given with the question)."""

from __future__ import annotations

import hashlib
import inspect
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


def _as_document(chunk) -> Document:
    to_doc = getattr(chunk, "to_document", None)
    doc = to_doc() if callable(to_doc) else None
    if isinstance(doc, Document):
        return doc
    return Document(id=str(chunk.id), title=getattr(chunk, "title", "") or "", text=chunk.text)


def search(corpus, query: str, *, k: int, mode: str, alpha: float, candidate_factor: int) -> list:
    """``corpus.search``; ``alpha`` is the DENSE weight (SQuAI: 0.65, i.e. 0.35 on BM25).
    ``candidates`` (per retriever: candidate_factor * k) is passed where the corpus accepts it."""
    kwargs = {"k": k, "mode": mode, "alpha": alpha}
    try:
        params = inspect.signature(corpus.search).parameters
    except (TypeError, ValueError):
        params = {}
    if "candidates" in params:
        kwargs["candidates"] = max(k, candidate_factor * k)
    return list(corpus.search(query, **kwargs))


def candidates_for(corpus, sub_q: int, question: str, *, k: int, mode: str, alpha: float,
                   candidate_factor: int) -> list[Candidate]:
    out = []
    for rank, hit in enumerate(search(corpus, question, k=k, mode=mode, alpha=alpha,
                                      candidate_factor=candidate_factor)[:k]):
        chunk = hit.chunk
        out.append(Candidate(
            sub_q=sub_q, sub_question=question, rank=rank, key=str(chunk.id),
            doc_id=str(getattr(chunk, "doc_id", "") or ""), document=_as_document(chunk),
            score=_f(getattr(hit, "score", None)), dense_score=_f(getattr(hit, "dense_score", None)),
            sparse_score=_f(getattr(hit, "sparse_score", None)),
        ))
    return out


def _f(x) -> float | None:
    return None if x is None else float(x)
