"""LangChain interop, both ways.

* :class:`CorpusRetriever` (``Corpus.as_retriever()``): a LangChain ``BaseRetriever`` over an index;
  each LangChain document carries the chunk's provenance in its metadata (``chunk_id``, ``doc_id``,
  ``title``, ``order``, ``start``, ``end``, scores).
* :func:`register_retriever` + :class:`RetrieverCorpus`: any LangChain retriever becomes a corpus that a
  graph can search, named ``retriever:<name>`` in a Context's ``corpus`` knob (a Context stays
  serialisable: the object lives in this process-level registry, not in the Context).
* :func:`open_corpus`: what a ``corpus`` knob names, opened once per process.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever

from citegraph.corpus.chunking import Chunk
from citegraph.errors import InputError

_registry: dict[str, BaseRetriever] = {}
_opened: dict[str, Any] = {}
_lock = threading.Lock()


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

    def search(self, query: str, k: int = 10, mode: str = "hybrid", alpha: float = 0.5, **_: Any):
        from citegraph.corpus.index import Hit

        docs = self.retriever.invoke(query)[:k]
        hits = []
        for r, d in enumerate(docs, 1):
            s = (d.metadata or {}).get("score")
            hits.append(Hit(chunk=lc_to_chunk(d), score=float(s) if isinstance(s, (int, float)) else 1.0 / r,
                            dense_score=None, sparse_score=None, rank=r))
        return hits

    def as_retriever(self, **_: Any) -> BaseRetriever:
        return self.retriever


def register_retriever(name: str, retriever: BaseRetriever) -> str:
    """Make ``retriever`` available to every graph in this process as ``corpus="retriever:<name>"``;
    returns that spec."""
    if not isinstance(retriever, BaseRetriever):
        raise InputError(f"register_retriever needs a LangChain BaseRetriever, got {type(retriever).__name__}")
    with _lock:
        _registry[name] = retriever
        _opened.pop(f"retriever:{name}", None)
    return f"retriever:{name}"


def unregister_retriever(name: str) -> None:
    with _lock:
        _registry.pop(name, None)
        _opened.pop(f"retriever:{name}", None)


def open_corpus(spec: str):
    """The corpus a ``corpus`` knob names: ``retriever:<name>`` (see :func:`register_retriever`), an index
    folder or ``chroma+http://HOST:PORT/COLLECTION``; opened once per process and reused. An index
    holding no chunks is refused (InputError) rather than answering every question from nothing."""
    spec = str(spec).strip()
    if not spec:
        raise InputError("no corpus named")
    with _lock:
        if spec in _opened:
            return _opened[spec]
        if spec.startswith("retriever:"):
            name = spec.split(":", 1)[1]
            if name not in _registry:
                raise InputError(f"no retriever registered as {name!r} (known: {', '.join(sorted(_registry)) or 'none'}); "
                                 "call citegraph.corpus.register_retriever(name, retriever) first")
            c = RetrieverCorpus(_registry[name], name)
        else:
            from citegraph.corpus.index import Corpus

            c = Corpus.open(spec)
            if len(c) == 0:  # nothing to retrieve: every question would reach the model with no documents
                raise InputError(f"the index at {spec} is empty (0 chunks); add documents first with: "
                                 f"citegraph index add --corpus FILE --index {spec}")
        _opened[spec] = c
        return c


def forget_opened(spec: str | None = None) -> None:
    """Drop cached opened corpora (all, or one spec): the next open_corpus reads the index again."""
    with _lock:
        if spec is None:
            _opened.clear()
        else:
            _opened.pop(spec, None)
