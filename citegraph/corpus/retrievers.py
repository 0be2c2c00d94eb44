"""LangChain interop, both ways.

* :class:`CorpusRetriever` (``Corpus.as_retriever()``): a LangChain ``BaseRetriever`` over an index;
  each LangChain document carries the chunk's provenance in its metadata (``chunk_id``, ``doc_id``,
  ``title``, ``order``, ``start``, ``end``, scores).
* :class:`RetrieverCorpus`: any LangChain retriever behind the corpus ``search()`` interface; registered
  with :func:`citegraph.corpus.register_retriever`, it is the corpus a Context's ``corpus`` knob names
  as ``retriever:<name>`` (see :mod:`citegraph.corpus.registry`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever

from citegraph.corpus.chunking import Chunk, Hit


class CorpusRetriever(BaseRetriever):
    """A citegraph corpus as a LangChain retriever."""

    corpus: Any
    k: int = 5
    mode: str = "hybrid"
    alpha: float = 0.5

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        out = []
        for h in self.corpus.search(query, k=self.k, mode=self.mode, alpha=self.alpha):
            c = h.chunk
            out.append(LCDocument(
                id=c.id, page_content=c.text,
                metadata={**c.metadata, "chunk_id": c.id, "doc_id": c.doc_id, "title": c.title, "order": c.order,
                          "start": c.start, "end": c.end, "score": h.score, "dense_score": h.dense_score,
                          "sparse_score": h.sparse_score, "rank": h.rank},
            ))
        return out


def lc_to_chunk(doc: LCDocument, order: int = 0) -> Chunk:
    """A LangChain document as a chunk: ids, title and offsets from its metadata where present
    (``chunk_id``/``id``, ``doc_id``/``source``, ``title``, ``order``, ``start``, ``end``)."""
    m = dict(doc.metadata or {})
    text = doc.page_content
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    doc_id = str(m.pop("doc_id", None) or m.get("source") or doc.id or digest)
    cid = str(m.pop("chunk_id", None) or doc.id or m.get("id") or f"{doc_id}#{digest}")
    start = m.pop("start", None)
    end = m.pop("end", None)
    start = int(start) if isinstance(start, (int, float)) else 0
    end = int(end) if isinstance(end, (int, float)) else start + len(text)
    for key in ("score", "dense_score", "sparse_score", "rank"):
        m.pop(key, None)
    return Chunk(id=cid, doc_id=doc_id, title=str(m.pop("title", "") or ""), text=text,
                 order=int(m.pop("order", order) or 0), start=start, end=end, metadata=m)


class RetrieverCorpus:
    """Any LangChain retriever behind the corpus ``search()`` interface. The retriever decides how
    many documents it returns and how it ranks them: ``mode`` and ``alpha`` do not apply, ``k`` cuts
    its list; ``score`` is the retriever's metadata ``score`` when it gives one, else 1/rank."""

    def __init__(self, retriever: BaseRetriever, name: str = "") -> None:
        self.retriever = retriever
        self.name = name or type(retriever).__name__

    def search(self, query: str, k: int = 10, mode: str = "hybrid", alpha: float = 0.5, **_: Any) -> list[Hit]:
        docs = self.retriever.invoke(query)[:k]
        hits = []
        for r, d in enumerate(docs, 1):
            s = (d.metadata or {}).get("score")
            hits.append(Hit(chunk=lc_to_chunk(d), score=float(s) if isinstance(s, (int, float)) else 1.0 / r,
                            dense_score=None, sparse_score=None, rank=r))
        return hits

    def as_retriever(self, **_: Any) -> BaseRetriever:
        return self.retriever
