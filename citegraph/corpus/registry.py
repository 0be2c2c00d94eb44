"""The one door to a corpus: what a ``corpus`` knob names, or the documents a method retrieves among,
opened once per process and kept in one cache.

* :func:`open_corpus` ``(spec, documents=None, *, chunk_tokens=256)``: with documents, an in-memory
  index over them (``Corpus.from_documents``; one per distinct content and chunk size, the last few
  kept); otherwise the corpus ``spec`` names: a registered one (below), an index folder or
  ``chroma+http://HOST:PORT/COLLECTION`` (opened once and kept).
* :func:`register_corpus` ``(spec, corpus)``: any object with the corpus ``search()`` interface (and
  ``chunks()`` for a method that reads the whole corpus) becomes the corpus ``spec`` names.
* :func:`register_retriever` ``(name, retriever)``: any LangChain retriever becomes the corpus
  ``retriever:<name>`` (a Context stays serialisable: the object lives here, not in the Context).
* :func:`forget_opened`: drop what was opened (an index rebuilt on disk; tests). Registrations stay.

Every node, the CLI and ``as_tool`` open their corpus here; how a method then searches it (SQuAI's
candidate pools, ODMDS's chunk graph) stays in the method's own modules.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any, Sequence

from langchain_core.retrievers import BaseRetriever

from citegraph.corpus.index import Corpus
from citegraph.corpus.retrievers import RetrieverCorpus
from citegraph.errors import InputError

RETRIEVER_PREFIX = "retriever:"
MAX_DOCUMENT_CORPORA = 4  # in-memory indexes kept (the sub-questions of one question share one)

_registered: dict[str, Any] = {}
_opened: OrderedDict[str, Any] = OrderedDict()  # the one cache: "spec:<spec>" and "docs:<content hash>" entries
_lock = threading.Lock()  # guards the two tables
# one open or build at a time: a method's parallel branches (Send) would otherwise index the same
# documents twice, concurrently (chromadb's client set-up is not safe for that)
_open_lock = threading.Lock()


def register_corpus(spec: str, corpus: Any) -> str:
    """Make ``corpus`` (anything with ``search(query, k=, mode=, alpha=)``) the corpus ``spec`` names
    in this process, for every graph; returns ``spec``."""
    spec = str(spec).strip()
    if not spec:
        raise InputError("register_corpus needs a non-empty spec")
    if not callable(getattr(corpus, "search", None)):
        raise InputError(f"register_corpus needs an object with search(), got {type(corpus).__name__}")
    with _lock:
        _registered[spec] = corpus
        _opened.pop(f"spec:{spec}", None)
    return spec


def unregister_corpus(spec: str) -> None:
    with _lock:
        _registered.pop(str(spec).strip(), None)
        _opened.pop(f"spec:{str(spec).strip()}", None)


def register_retriever(name: str, retriever: BaseRetriever) -> str:
    """Make ``retriever`` available to every graph in this process as ``corpus="retriever:<name>"``;
    returns that spec."""
    if not isinstance(retriever, BaseRetriever):
        raise InputError(f"register_retriever needs a LangChain BaseRetriever, got {type(retriever).__name__}")
    return register_corpus(f"{RETRIEVER_PREFIX}{name}", RetrieverCorpus(retriever, name))


def unregister_retriever(name: str) -> None:
    unregister_corpus(f"{RETRIEVER_PREFIX}{name}")


def open_corpus(spec: str = "", documents: Sequence[Any] | None = None, *, chunk_tokens: int = 256) -> Any:
    """The corpus to search. ``documents`` given (``Document`` s, dicts ``{"id"?, "title"?, "text"}`` or
    ``SourceDoc`` s): an in-memory index over them, chunked at ``chunk_tokens`` (given documents win, as
    in every graph's open-domain mode). Otherwise ``spec``: a registered corpus (:func:`register_corpus`,
    ``retriever:<name>`` from :func:`register_retriever`), an index folder or
    ``chroma+http://HOST:PORT/COLLECTION``. Opened once per process and reused. An index holding no
    chunks is refused (InputError) rather than answering every question from nothing."""
    spec = str(spec or "").strip()
    if documents:
        documents = list(documents)
        key = _documents_key(documents, chunk_tokens)
    elif spec:
        key = f"spec:{spec}"
    else:
        raise InputError("no documents given and no corpus set (corpus=<an index folder, "
                         "chroma+http://HOST:PORT/COLLECTION or retriever:<name>>)")
    if (hit := _cached(key, spec if not documents else "")) is not None:
        return hit
    with _open_lock:
        if (hit := _cached(key, spec if not documents else "")) is not None:
            return hit
        corpus = Corpus.from_documents(documents, chunk_tokens=chunk_tokens) if documents else _open_spec(spec)
        with _lock:
            _opened[key] = corpus
            docs = [k for k in _opened if k.startswith("docs:")]
            for old in docs[:max(0, len(docs) - MAX_DOCUMENT_CORPORA)]:
                del _opened[old]
    return corpus


def _cached(key: str, spec: str) -> Any | None:
    with _lock:
        if spec and spec in _registered:
            return _registered[spec]
        if key in _opened:
            _opened.move_to_end(key)
            return _opened[key]
    return None


def _open_spec(spec: str) -> Any:
    if spec.startswith(RETRIEVER_PREFIX):
        known = sorted(s.removeprefix(RETRIEVER_PREFIX) for s in _registered if s.startswith(RETRIEVER_PREFIX))
        raise InputError(f"no retriever registered as {spec.removeprefix(RETRIEVER_PREFIX)!r} "
                         f"(known: {', '.join(known) or 'none'}); "
                         "call citegraph.corpus.register_retriever(name, retriever) first")
    c = Corpus.open(spec)
    if len(c) == 0:  # nothing to retrieve: every question would reach the model with no documents
        raise InputError(f"the index at {spec} is empty (0 chunks); add documents first with: "
                         f"citegraph index add --corpus FILE --index {spec}")
    return c


def _documents_key(documents: Sequence[Any], chunk_tokens: int) -> str:
    """The cache key of an in-memory index: the chunk size and every document's id, title, text and
    metadata (a method may read the metadata: ODMDS's link and collection fields)."""
    h = hashlib.sha1(f"{chunk_tokens}\x02".encode())
    for d in documents:
        get = d.get if isinstance(d, dict) else (lambda name, _d=d: getattr(_d, name, None))
        meta = json.dumps(get("metadata") or {}, sort_keys=True, default=str)
        h.update(f"{get('id')}\x00{get('title')}\x00{get('text')}\x00{meta}\x01".encode())
    return "docs:" + h.hexdigest()


def forget_opened(spec: str | None = None) -> None:
    """Drop opened corpora (all, or one spec): the next :func:`open_corpus` reads the index again
    (in-memory indexes over documents are dropped with ``spec=None`` only). Registrations stay."""
    with _lock:
        if spec is None:
            _opened.clear()
        else:
            _opened.pop(f"spec:{str(spec).strip()}", None)
