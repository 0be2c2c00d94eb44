"""SQuAI's retrieval from the corpus the corpus layer opens (``citegraph.corpus.open_corpus``: an index,
or the documents given with the question as an in-memory one, shared by the parallel sub-questions)."""

from __future__ import annotations

from citegraph.state.squai import Candidate


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
