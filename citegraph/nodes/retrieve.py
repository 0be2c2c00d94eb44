"""Open-domain mode, shared by every graph: retrieve the documents when none are given."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from citegraph.state.base import BaseContext


def retrieve(state: Any, runtime: Runtime[BaseContext]) -> dict:
    """With a ``corpus`` knob and no input documents: the ``top_k`` chunks retrieved for the question
    (``retrieval_mode``, ``retrieval_alpha``) become the documents, each with its provenance (document id,
    chunk id, order, character offsets) in ``Document.metadata``. Otherwise nothing changes."""
    ctx = runtime.context
    if state.documents or not getattr(ctx, "corpus", ""):
        return {}
    from citegraph.corpus import open_corpus

    hits = open_corpus(ctx.corpus).search(state.question, k=ctx.top_k, mode=ctx.retrieval_mode,
                                          alpha=ctx.retrieval_alpha)
    docs = []
    for h in hits:
        d = h.chunk.to_document()
        d.metadata.update({"retrieval_score": h.score, "retrieval_rank": h.rank, "corpus": ctx.corpus})
        docs.append(d)
    return {"documents": docs}
