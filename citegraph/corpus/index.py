"""The corpus index: chunks in Chroma (dense) and bm25s (sparse), searched alone or fused.

Layout of an index folder ``idx/``::

    idx/chroma/        Chroma PersistentClient (collection "citegraph"): every chunk's embedding,
                       text and metadata; the index settings and a change stamp in the collection
                       metadata. This is the one source of truth.
    idx/bm25/          current.json (the collection stamp the sparse side was built from, the chunk
                       count, the documents left out as incomplete, and the version folder) and that
                       version folder: the bm25s index (loaded memory-mapped) and ids.json (row -> chunk
                       id, in (doc id, order) order). A stale or missing one is rebuilt from Chroma.
    idx/.citegraph.lock  the writers' lock (see below)

Crash safety (a writer may be SIGKILLed at any moment; the next run or open must see no stale,
duplicated or half-written document):

* Writers are serialised by a file lock (``filelock``) on the index folder: two ``index add`` on one
  folder run one after the other. A Chroma server's collection is locked in the local cache folder,
  so only writers on the same machine are serialised.
* Before its first change a writer sets the stamp to a "writing" value (``w-...``) and after its last
  one to a fresh stamp: a sparse side saved under any earlier stamp never matches again, whatever
  point the writer was killed at (a changed document may keep its chunk count, so the count alone
  proves nothing).
* A document is written as: delete all its chunks, write chunks 1..n-1, then chunk 0 last. Chunk 0
  carries the content hash and the chunk count (``doc_chunks``): it is the document's completion
  marker. A document counts as unchanged only when chunk 0 has the same hash and exactly
  ``doc_chunks`` chunks are stored; otherwise it is written again (a killed run is finished by running
  it again): the chunks the killed run wrote for the same content (same hash and count) are kept, the
  rest, chunk 0 included, deleted and written. Searches leave out a document that is incomplete (no chunk 0, or too few chunks), so
  a reader sees each document whole or not at all.
* Before it deletes or writes a batch's chunks, a writer saves the batch's documents (their new text)
  to ``pending.jsonl`` in the index folder (written whole, fsynced, renamed into place) and removes it
  once the batch's last chunk 0 is written. A killed writer leaves it behind, and the next process that
  opens the index (a search or a writer) finishes the batch from it under the lock, so a killed
  ``index add`` that replaced documents heals on the next open instead of leaving them missing.
* The sparse side is saved into a fresh version folder and made current by replacing
  ``current.json`` (an atomic rename), only by a process holding the lock.

A spec ``chroma+http://HOST:PORT/COLLECTION`` keeps the chunks in a Chroma server instead
(``chromadb.HttpClient``); the bm25s side then lives in a local cache folder
(``$CITEGRAPH_INDEX_CACHE`` or ``~/.cache/citegraph/index``, one sub-folder per host/port/collection, or
``local_dir=``), rebuilt from the server's chunks when the server's stamp changes. So a second machine
can open an index that another one built.

Documents are matched on their id and a content hash (title, text, extra fields): re-adding an
unchanged document is a no-op, a changed one replaces its chunks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import uuid
import weakref
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence
from urllib.parse import urlparse

import numpy as np

from citegraph.corpus.chunking import Chunk, Chunker, Hit, doc_hash
from citegraph.corpus.fusion import fuse
from citegraph.corpus.retrievers import CorpusRetriever
from citegraph.corpus.sources import BadLine, SourceDoc, iter_corpus, record_to_doc
from citegraph.errors import InputError
from citegraph.settings import setting
from citegraph.state.base import RETRIEVAL_MODES
from citegraph.tools import tracing
from citegraph.tools.progress import emit

FORMAT = 1
COLLECTION = "citegraph"
MODES = RETRIEVAL_MODES  # bm25, dense, hybrid, rrf: what a retrieval_mode knob may name
DEFAULT_CANDIDATES = 100
_STAMP_KEY = "citegraph_stamp"
_WRITING = "w-"  # a stamp starting with this: a write began and did not finish (or is running)
WRITE_BATCH = 256  # chunks embedded and written per Chroma call (the progress bar moves this often)
_SETTING_KEYS = ("embedder", "chunk_tokens", "overlap_tokens", "splitter", "title_in_index")


@dataclass
class IndexReport:
    """What a build or add did."""

    docs_seen: int = 0
    docs_added: int = 0
    docs_updated: int = 0
    docs_unchanged: int = 0
    docs_resumed: int = 0  # documents a killed run left incomplete, written again
    chunks_added: int = 0
    chunks_kept: int = 0  # chunks an interrupted run had written for the same content, not written again
    docs_healed: int = 0  # documents of a killed writer's last batch, finished from its journal first
    chunks_deleted: int = 0
    total_chunks: int = 0
    seconds: float = 0.0
    bytes_done: float = 0.0  # source bytes of the documents finished (a document being written counts by its chunks)
    started: float = field(default_factory=time.perf_counter)  # when the run began (after the embedder loaded, for a build)
    bad_lines: list[BadLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what reading left out of a document (a PDF's pages without text)

    def summary(self) -> str:
        return (f"{self.docs_seen} docs read: {self.docs_added} added, {self.docs_updated} updated, "
                f"{self.docs_unchanged} unchanged"
                + (f", {self.docs_resumed} resumed (left incomplete by an interrupted run; {self.chunks_kept} of their "
                   "chunks kept)" if self.docs_resumed else "")
                + (f", {self.docs_healed} finished from a killed run's journal" if self.docs_healed else "")
                + f"; {self.chunks_added} chunks added, {self.chunks_deleted} "
                f"removed; index holds {self.total_chunks} chunks; {self.seconds:.1f} s"
                + (f"; {len(self.bad_lines)} bad line(s)" if self.bad_lines else ""))


# ----------------------------------------------------------------------------------- the stores
def _chroma_settings():
    import chromadb

    return chromadb.Settings(anonymized_telemetry=False, allow_reset=False)


_HTTP = re.compile(r"^chroma\+(https?)://")


def is_http_spec(spec: str) -> bool:
    return bool(_HTTP.match(str(spec)))


def _cache_root() -> Path:
    return setting("index_cache") or Path.home() / ".cache" / "citegraph" / "index"


def _parse(spec: str | os.PathLike, local_dir: str | os.PathLike | None):
    """(chroma client factory, collection name, local folder, display name)."""
    import chromadb

    spec = str(spec)
    if is_http_spec(spec):
        u = urlparse(spec.split("+", 1)[1])
        name = u.path.strip("/") or COLLECTION
        if not u.hostname:
            raise InputError(f"bad Chroma spec {spec!r}; use chroma+http://HOST:PORT/COLLECTION")
        port = u.port or (443 if u.scheme == "https" else 8000)
        local = Path(local_dir) if local_dir else _cache_root() / re.sub(r"[^A-Za-z0-9._-]", "_", f"{u.hostname}_{port}_{name}")

        def client():
            try:
                return chromadb.HttpClient(host=u.hostname, port=port, ssl=u.scheme == "https", settings=_chroma_settings())
            except Exception as e:  # noqa: BLE001 - chromadb raises several types for a dead server
                raise InputError(f"cannot reach the Chroma server at {u.hostname}:{port}: {str(e).splitlines()[0]}") from e

        return client, name, local, spec
    folder = Path(spec)
    return (lambda: chromadb.PersistentClient(path=str(folder / "chroma"), settings=_chroma_settings())), \
        COLLECTION, Path(local_dir) if local_dir else folder, str(folder)


def _meta_for_chroma(c: Chunk, h: str, n: int, added: str = "") -> dict[str, Any]:
    return {"doc_id": c.doc_id, "title": c.title, "order": c.order, "start": c.start, "end": c.end,
            "prev_id": c.prev_id or "", "next_id": c.next_id or "", "doc_hash": h, "doc_chunks": n,
            "added": added or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "meta_json": json.dumps(c.metadata, ensure_ascii=False, default=str)}


def _doc_of(chunk_id: str) -> str:
    return chunk_id.rsplit("#", 1)[0]  # ids are "{doc_id}#{order}"


# ----------------------------------------------------------------------------------- the lock
_locks: dict[str, Any] = {}
_locks_guard = threading.Lock()


def _lock_for(folder: Path):
    """The writers' lock of an index folder (one object per folder and process, so it is re-entrant)."""
    from filelock import FileLock

    key = str(Path(folder).resolve())
    with _locks_guard:
        if key not in _locks:
            _locks[key] = FileLock(str(Path(key) / ".citegraph.lock"))
        return _locks[key]


def _chunk_from_chroma(cid: str, text: str, m: dict[str, Any]) -> Chunk:
    return Chunk(id=cid, doc_id=m["doc_id"], title=m.get("title", ""), text=text, order=int(m["order"]),
                 start=int(m["start"]), end=int(m["end"]), prev_id=m.get("prev_id") or None,
                 next_id=m.get("next_id") or None, metadata=json.loads(m.get("meta_json") or "{}"))


def _bm25_tokenize(texts: Sequence[str], *, return_ids: bool = True):
    import bm25s

    try:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
    except ImportError:  # PyStemmer is a dependency; without it bm25s indexes unstemmed words
        stemmer = None
    return bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, return_ids=return_ids, show_progress=False)


class _Sparse:
    """A bm25s index, its row -> chunk id list, the collection's chunk count it was built from and the
    documents it leaves out as incomplete (``hidden``)."""

    def __init__(self, retriever, ids: list[str], total: int = 0, hidden: Iterable[str] = ()) -> None:
        self.retriever, self.ids, self.total, self.hidden = retriever, ids, total, frozenset(hidden)

    @classmethod
    def build(cls, ids: list[str], texts: list[str], total: int = 0, hidden: Iterable[str] = ()) -> "_Sparse":
        import bm25s

        r = bm25s.BM25()
        if texts:
            r.index(_bm25_tokenize(texts), show_progress=False)
        return cls(r, ids, total, hidden)

    def save(self, folder: Path, stamp: str) -> None:
        """Into a fresh version folder, then made current by an atomic rename of current.json; older
        versions (and the pre-versioned layout's files) are removed after."""
        folder.mkdir(parents=True, exist_ok=True)
        name = f"v-{uuid.uuid4().hex[:16]}"
        vdir = folder / name
        vdir.mkdir()
        if self.ids:
            self.retriever.save(str(vdir), show_progress=False)
        (vdir / "ids.json").write_text(json.dumps(self.ids))
        tmp = folder / f".current.{name}.json"
        tmp.write_text(json.dumps({"stamp": stamp, "chunks": self.total, "rows": len(self.ids), "dir": name,
                                   "hidden": sorted(self.hidden)}))
        os.replace(tmp, folder / "current.json")
        for old in folder.iterdir():
            if old.name in ("current.json", name):
                continue
            try:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
            except OSError:
                pass

    @classmethod
    def load(cls, folder: Path, stamp: str) -> "_Sparse | None":
        import bm25s

        try:
            ptr = json.loads((folder / "current.json").read_text())
            if ptr["stamp"] != stamp:
                return None
            vdir = folder / ptr["dir"]
            ids = json.loads((vdir / "ids.json").read_text())
            if len(ids) != ptr["rows"]:
                return None
            r = bm25s.BM25.load(str(vdir), mmap=True, show_progress=False) if ids else bm25s.BM25()
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cls(r, ids, int(ptr["chunks"]), ptr.get("hidden") or ())

    def search(self, query: str, n: int) -> dict[str, float]:
        if not self.ids or n <= 0:
            return {}
        toks = _bm25_tokenize([query], return_ids=False)
        if not toks or not toks[0]:
            return {}
        rows, scores = self.retriever.retrieve(toks, k=min(n, len(self.ids)), show_progress=False, n_threads=1)
        return {self.ids[int(r)]: float(s) for r, s in zip(rows[0], scores[0]) if s > 0}


# ----------------------------------------------------------------------------------- the corpus
class Corpus:
    """A searchable chunk index. ``Corpus.open(path_or_spec)`` for a built index,
    ``Corpus.from_documents(docs)`` for an in-memory one."""

    def __init__(self, collection, local_dir: Path | None, settings: dict[str, Any], name: str,
                 candidates: int = DEFAULT_CANDIDATES, _ephemeral=None) -> None:
        self._col = collection
        self.local_dir = local_dir
        self.settings = settings
        self.name = name
        self.candidates = candidates
        self._sparse: _Sparse | None = None
        self._stamp: str | None = None
        self._ephemeral = _ephemeral
        self.healed = 0  # documents of a killed writer's batch this open finished (Corpus.open)
        self.heal_report: IndexReport | None = None  # what finishing them did

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, spec: str | os.PathLike, *, local_dir: str | os.PathLike | None = None,
             candidates: int = DEFAULT_CANDIDATES) -> "Corpus":
        """An index folder (built by ``citegraph index build``) or ``chroma+http://HOST:PORT/COLLECTION``."""
        client_fn, name, local, display = _parse(spec, local_dir)
        if not is_http_spec(str(spec)) and not (Path(spec) / "chroma").is_dir():
            raise InputError(f"no index at {spec} (build one with: citegraph index build --corpus FILE --index {spec})")
        col = _get_collection(client_fn(), name, create=False, display=display)
        c = cls(col, local, _settings_of(col, display), display, candidates)
        c.healed = c._heal()
        c._ensure_sparse()
        return c

    def _heal(self) -> int:
        """Finish a killed writer's last batch from its journal (see the module doc) when no writer is
        running; returns how many documents it held (0: nothing to finish, or a writer holds the lock
        and will finish it itself)."""
        from filelock import Timeout

        if self.local_dir is None or not (self.local_dir / PENDING).exists():
            return 0
        lock = _lock_for(self.local_dir)
        try:
            lock.acquire(timeout=0)
        except (Timeout, OSError):  # a writer is running, or the folder is read-only
            return 0
        try:
            self.heal_report = IndexReport()
            n = _finish_pending(self._col, self.settings, self.local_dir, self.heal_report)  # sets a fresh stamp
            if n:
                emit("index_heal", documents=n, index=self.name)
            return n
        finally:
            lock.release()

    @classmethod
    def from_documents(cls, docs: Iterable[Any], chunk_tokens: int = 256, *, overlap_tokens: int = 0,
                       embedder: str = "minilm", candidates: int = DEFAULT_CANDIDATES) -> "Corpus":
        """An in-memory index (ephemeral Chroma collection + bm25s) over ``docs``
        (:class:`~citegraph.state.answer.Document` s, dicts ``{"id"?, "title"?, "text"}`` or
        :class:`~citegraph.corpus.sources.SourceDoc` s), with the same ``search()``. A document's
        own ``metadata`` is kept as the chunks' metadata."""
        import chromadb

        client = chromadb.EphemeralClient(settings=_chroma_settings())
        name = f"mem-{uuid.uuid4().hex}"
        settings = _new_settings(embedder, chunk_tokens, overlap_tokens)
        col = _create_collection(client, name, settings)
        c = cls(col, None, settings, "memory", candidates, _ephemeral=client)
        weakref.finalize(c, _drop_collection, client, name)
        rep = IndexReport()
        _add_docs(col, settings, (_as_source(d) for d in docs), rep, None, batch_docs=256)
        c._rebuild_sparse()
        return c

    # ------------------------------------------------------------------ sparse side
    def _current_stamp(self) -> str:
        return str((self._col.metadata or {}).get(_STAMP_KEY, ""))

    def _ensure_sparse(self) -> _Sparse:
        stamp = self._current_stamp()
        if self._sparse is not None and self._stamp == stamp:
            return self._sparse
        sp = _Sparse.load(self.local_dir / "bm25", stamp) if self.local_dir else None
        if sp is None or sp.total != self._col.count():
            sp = self._rebuild_sparse()
        self._sparse, self._stamp = sp, stamp
        return sp

    def _rebuild_sparse(self) -> _Sparse:
        """The sparse side from Chroma's chunks, saved only by a process that holds the writers' lock
        (so no writer is half-way: a reader beside a running writer keeps its rebuild in memory)."""
        lock = None
        if self.local_dir is not None:
            try:
                self.local_dir.mkdir(parents=True, exist_ok=True)
                lock = _lock_for(self.local_dir)
                lock.acquire(timeout=0)
            except Exception:  # noqa: BLE001 - filelock.Timeout (a writer is running) or a read-only folder
                lock = None
        try:
            stamp = self._current_stamp()
            total = self._col.count()
            ids, texts, hidden = [], [], set()
            for ch, complete in _iter_complete(self._col):
                if not complete:
                    hidden.add(ch.doc_id)
                    continue
                ids.append(ch.id)
                texts.append(_index_text(ch, self.settings))
            sp = _Sparse.build(ids, texts, total, hidden)
            if lock is not None:
                sp.save(self.local_dir / "bm25", stamp)
        finally:
            if lock is not None:
                lock.release()
        self._sparse, self._stamp = sp, stamp
        return sp

    @property
    def incomplete_docs(self) -> frozenset[str]:
        """Documents an interrupted write left incomplete (left out of every search until the same
        ``index build``/``add`` is run again)."""
        return self._ensure_sparse().hidden

    @property
    def interrupted(self) -> bool:
        """Whether the last write to this index did not finish (or is still running)."""
        return self._current_stamp().startswith(_WRITING)

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return self._col.count()

    @property
    def stamp(self) -> str:
        """Changes whenever the index's content changes (a fresh uuid at every build or add that
        changed something): a cache keyed by it needs no pass over the chunks."""
        return self._current_stamp()

    def embeddings(self, ids: Sequence[str], batch: int = 2000) -> np.ndarray:
        """The stored embeddings of these chunks, in the order asked (of ``title\ntext`` when the
        index was built with titles, else of the text), so nothing is embedded twice."""
        ids = list(ids)
        table: dict[str, np.ndarray] = {}
        for off in range(0, len(ids), batch):
            res = self._col.get(ids=ids[off: off + batch], include=["embeddings"])
            table.update({i: np.asarray(v, dtype=np.float32) for i, v in zip(res["ids"], res["embeddings"])})
        missing = [i for i in ids if i not in table]
        if missing:
            raise InputError(f"no stored embedding for {len(missing)} chunk(s), e.g. {missing[0]!r}")
        return np.stack([table[i] for i in ids]) if ids else np.zeros((0, 0), dtype=np.float32)

    def chunks(self, batch: int = 1000) -> Iterator[Chunk]:
        """Every chunk, in (document id, order) order."""
        ids = self._ensure_sparse().ids
        for i in range(0, len(ids), batch):
            yield from self.get(ids[i: i + batch])

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked (unknown ids are left out)."""
        ids = list(ids)
        if not ids:
            return []
        res = self._col.get(ids=ids, include=["documents", "metadatas"])
        by_id = {i: _chunk_from_chroma(i, t, m) for i, t, m in zip(res["ids"], res["documents"], res["metadatas"])}
        return [by_id[i] for i in ids if i in by_id]

    # ------------------------------------------------------------------ searching
    def _dense(self, query: str, n: int) -> dict[str, float]:
        total = self._col.count()
        if not total or n <= 0:
            return {}
        from citegraph.tools.embeddings import embed  # deferred: it loads chromadb (0.4 s)

        hidden = self._ensure_sparse().hidden
        q = embed([query], self.settings["embedder"])[0]
        res = self._col.query(query_embeddings=[q.tolist()], n_results=min(n + (200 if hidden else 0), total),
                              include=["distances"])
        # cosine space: distance = 1 - cosine similarity
        out = {i: 1.0 - float(d) for i, d in zip(res["ids"][0], res["distances"][0]) if _doc_of(i) not in hidden}
        return dict(list(out.items())[:n])

    def candidates_for(self, query: str, n: int, *, sparse: bool = True, dense: bool = True) -> tuple[dict[str, float], dict[str, float]]:
        """The raw candidate lists ``({chunk id: BM25 score}, {chunk id: cosine similarity})``, top ``n``
        of each, before fusion (:func:`rank` fuses them; a benchmark sweeping alpha reuses them)."""
        return (self._ensure_sparse().search(query, n) if sparse else {},
                self._dense(query, n) if dense else {})

    def search(self, query: str, k: int = 10, mode: str = "hybrid", alpha: float = 0.5, *,
               candidates: int | None = None) -> list[Hit]:
        """The ``k`` best chunks for ``query``. ``mode``: bm25 | dense | hybrid | rrf. ``alpha`` is the
        weight of the DENSE score in hybrid mode (0 = pure BM25, 1 = pure dense); hybrid and rrf fuse
        the top ``candidates`` (default 100, at least k) of each retriever (see
        :mod:`citegraph.corpus.fusion`)."""
        if mode not in MODES:
            raise InputError(f"unknown search mode {mode!r}; one of {', '.join(MODES)}")
        if not 0.0 <= float(alpha) <= 1.0:
            raise InputError(f"alpha must be between 0 and 1, got {alpha}")
        if k <= 0 or not query.strip():
            return []
        alpha = float(alpha)
        if not tracing.enabled():
            return self._search(query, k, mode, alpha, candidates)
        with tracing.span("index search", "RETRIEVER") as s:  # under the node that searched
            hits = self._search(query, k, mode, alpha, candidates)
            tracing.set_attributes(s, tracing.retrieval_attributes(query, hits, mode, k))
            return hits

    def _search(self, query: str, k: int, mode: str, alpha: float, candidates: int | None) -> list[Hit]:
        n = max(k, candidates or self.candidates)
        sparse, dense = self.candidates_for(query, k if mode in ("bm25", "dense") else n,
                                            sparse=mode != "dense", dense=mode != "bm25")
        ranked = rank(sparse, dense, mode, alpha)[:k]
        chunks = {c.id: c for c in self.get([i for i, _ in ranked])}
        return [Hit(chunk=chunks[i], score=s, dense_score=dense.get(i), sparse_score=sparse.get(i), rank=r)
                for r, (i, s) in enumerate(((i, s) for i, s in ranked if i in chunks), 1)]

    def as_retriever(self, k: int = 5, mode: str = "hybrid", alpha: float = 0.5):
        """A LangChain ``BaseRetriever`` over this index (documents carry the chunk provenance)."""
        return CorpusRetriever(corpus=self, k=k, mode=mode, alpha=alpha)

    def close(self) -> None:
        """Drop an in-memory index's collection now (it is dropped when the object is collected too)."""
        if self._ephemeral is not None:
            _drop_collection(self._ephemeral, self._col.name)
            self._ephemeral = None


# ----------------------------------------------------------------------------------- helpers
def rank(sparse: dict[str, float], dense: dict[str, float], mode: str = "hybrid", alpha: float = 0.5) -> list[tuple[str, float]]:
    """(chunk id, score), best first: one retriever's own order (bm25, dense) or the fused one (hybrid, rrf)."""
    if mode == "bm25":
        return sorted(sparse.items(), key=lambda kv: (-kv[1], kv[0]))
    if mode == "dense":
        return sorted(dense.items(), key=lambda kv: (-kv[1], kv[0]))
    return fuse(sparse, dense, method=mode, alpha=alpha)


def _drop_collection(client, name: str) -> None:
    try:
        client.delete_collection(name)
    except Exception:  # noqa: BLE001 - already gone, or the interpreter is shutting down
        pass


def _new_settings(embedder: str, chunk_tokens: int, overlap_tokens: int, splitter: str = "blingfire",
                  title_in_index: bool = True) -> dict[str, Any]:
    return {"citegraph_format": FORMAT, "embedder": embedder, "chunk_tokens": int(chunk_tokens),
            "overlap_tokens": int(overlap_tokens), "splitter": splitter, "title_in_index": bool(title_in_index)}


def _settings_of(col, display: str) -> dict[str, Any]:
    meta = dict(col.metadata or {})
    if meta.get("citegraph_format") != FORMAT:
        raise InputError(f"{display} is not a citegraph index (format {meta.get('citegraph_format')!r})")
    return {k: v for k, v in meta.items() if k != _STAMP_KEY}


def _embedding_function(embedder: str):
    from citegraph.tools.embeddings import ChromaEmbedding  # deferred: it loads chromadb (0.4 s)

    return ChromaEmbedding(embedder)


def _create_collection(client, name: str, settings: dict[str, Any]):
    return client.create_collection(
        name, metadata={**settings, _STAMP_KEY: uuid.uuid4().hex},
        configuration={"hnsw": {"space": "cosine"}}, embedding_function=_embedding_function(settings["embedder"]))


def _get_collection(client, name: str, *, create: bool, display: str, settings: dict[str, Any] | None = None):
    try:
        existing = {c.name if hasattr(c, "name") else str(c) for c in client.list_collections()}
    except Exception as e:  # noqa: BLE001
        raise InputError(f"cannot read the Chroma store at {display}: {str(e).splitlines()[0]}") from e
    if name not in existing:
        if not create:
            raise InputError(f"no index at {display}")
        return _create_collection(client, name, settings or _new_settings("minilm", 256, 0))
    # the embedder recorded in the collection is ours ("citegraph"); hand it over so chromadb never
    # falls back to its own downloading default
    col = client.get_collection(name)
    emb = (col.metadata or {}).get("embedder", "minilm")
    return client.get_collection(name, embedding_function=_embedding_function(emb))


def _index_text(c: Chunk, settings: dict[str, Any]) -> str:
    """What is embedded and BM25-indexed for a chunk: its title line (when title_in_index) and text."""
    return f"{c.title}\n{c.text}" if settings.get("title_in_index") and c.title else c.text


def _iter_collection(col, page: int = 5000) -> Iterator[Chunk]:
    """Every chunk of a collection, sorted by (doc id, order)."""
    for ch, _ in _iter_complete(col, page):
        yield ch


def _iter_complete(col, page: int = 5000) -> Iterator[tuple[Chunk, bool]]:
    """Every chunk of a collection, sorted by (doc id, order), with whether its document is complete:
    its chunk 0 (written last) is there and so are as many chunks as chunk 0 says (an index written
    before ``doc_chunks`` existed: chunk 0 being there is all that is checked)."""
    metas: list[tuple[str, int, str]] = []
    count: dict[str, int] = defaultdict(int)
    want: dict[str, int] = {}
    for off in range(0, col.count(), page):
        res = col.get(include=["metadatas"], limit=page, offset=off)
        for i, m in zip(res["ids"], res["metadatas"]):
            metas.append((m["doc_id"], int(m["order"]), i))
            count[m["doc_id"]] += 1
            if int(m["order"]) == 0:
                dc = m.get("doc_chunks")
                want[m["doc_id"]] = int(dc) if dc is not None else -1
    metas.sort()
    complete = {d: d in want and (want[d] < 0 or want[d] == count[d]) for d in count}
    ids = [i for _, _, i in metas]
    for off in range(0, len(ids), page):
        part = ids[off: off + page]
        res = col.get(ids=part, include=["documents", "metadatas"])
        by_id = {i: _chunk_from_chroma(i, t, m) for i, t, m in zip(res["ids"], res["documents"], res["metadatas"])}
        yield from ((by_id[i], complete[by_id[i].doc_id]) for i in part if i in by_id)


def _as_source(d: Any) -> SourceDoc:
    if isinstance(d, SourceDoc):
        return d
    if hasattr(d, "model_dump"):  # citegraph Document
        rec = d.model_dump()
        meta = rec.pop("metadata", None) or {}
        return SourceDoc(id=rec["id"], title=rec.get("title") or "", text=rec["text"], metadata=dict(meta))
    if isinstance(d, dict):
        try:
            return record_to_doc(d)
        except ValueError as e:
            raise InputError(f"bad document {str(d)[:80]!r}: {e}") from e
    raise InputError(f"cannot index a {type(d).__name__} as a document")


_chunkers: dict[tuple, Chunker] = {}


def _chunker(settings: dict[str, Any]) -> Chunker:
    key = tuple(settings[k] for k in ("embedder", "chunk_tokens", "overlap_tokens", "splitter"))
    if key not in _chunkers:
        from citegraph.tools.embeddings import get_embedder  # deferred: it loads chromadb (0.4 s)

        _chunkers[key] = Chunker(get_embedder(settings["embedder"]).tokenizer, settings["chunk_tokens"],
                                 settings["overlap_tokens"], settings["splitter"])
    return _chunkers[key]


def _chunk_doc(d: SourceDoc, settings: dict[str, Any]) -> list[Chunk]:
    ch = _chunker(settings)
    # the title line is embedded with every chunk: the text gets the rest of the budget
    reserve = ch.title_reserve(d.title) if settings.get("title_in_index") else 0
    return ch.chunk(d.id, d.title, d.text, d.metadata, reserve=reserve)


def _set_stamp(col, stamp: str) -> None:
    meta = dict(col.metadata or {})
    meta[_STAMP_KEY] = stamp
    col.modify(metadata=meta)


def _add_docs(col, settings: dict[str, Any], docs: Iterable[SourceDoc | BadLine], rep: IndexReport,
              on_progress: Callable[[IndexReport], None] | None, batch_docs: int = 64,
              write_batch: int = WRITE_BATCH, journal: Path | None = None) -> bool:
    """Chunk, embed and write ``docs`` batch by batch with the crash-safe protocol of the module doc;
    returns whether anything changed. A second document with an id already read in this run is
    skipped and reported as a bad line (the first one is indexed). ``journal``: where each batch's
    documents are saved before its first change and removed after its last (see the module doc)."""
    adder = _Adder(col, settings, rep, on_progress, write_batch, journal)
    seen: dict[str, str] = {}
    batch: dict[str, SourceDoc] = {}
    for n, d in enumerate(docs, 1):
        if isinstance(d, BadLine):
            rep.bad_lines.append(d)
            rep.bytes_done += d.size
            continue
        if not d.path:
            d.path, d.line = "documents", n
        rep.docs_seen += 1
        rep.notes.extend(d.notes)
        if d.id in seen:
            rep.bad_lines.append(BadLine(d.path, d.line, f"duplicate id {d.id!r} (first at {seen[d.id]}); "
                                                         "this one is not indexed", d.size))
            rep.bytes_done += d.size
            continue
        seen[d.id] = d.where
        batch[d.id] = d
        if len(batch) >= batch_docs:
            adder.flush(batch)
            batch = {}
            _progress(rep, on_progress)
    adder.flush(batch)
    _progress(rep, on_progress)
    if adder.writing or adder.was_interrupted:  # committed last
        _set_stamp(col, uuid.uuid4().hex)
    return adder.writing


class _Adder:
    """:func:`_add_docs`' writes, one batch of documents at a time (:meth:`flush`): which documents need
    writing (:meth:`todo`), their stale chunks deleted and a killed run's good ones kept (:meth:`clear`),
    then their chunks embedded and written, each document's chunk 0 last (:meth:`write_chunks`)."""

    def __init__(self, col, settings: dict[str, Any], rep: IndexReport,
                 on_progress: Callable[[IndexReport], None] | None, write_batch: int, journal: Path | None) -> None:
        self.col, self.settings, self.rep, self.on_progress, self.journal = col, settings, rep, on_progress, journal
        self.writing = False
        self.was_interrupted = str((col.metadata or {}).get(_STAMP_KEY, "")).startswith(_WRITING)
        self.write_batch = max(1, min(int(write_batch), int(getattr(col._client, "get_max_batch_size", lambda: 5000)())))

    def begin_write(self) -> None:
        if not self.writing:  # committed before the first change: no sparse side saved earlier matches any more
            _set_stamp(self.col, _WRITING + uuid.uuid4().hex)
            self.writing = True

    def write(self, rows: list[tuple[Chunk, str, int]], vecs) -> None:
        self.col.upsert(ids=[c.id for c, _, _ in rows], embeddings=np.asarray(vecs, dtype=np.float32),
                        documents=[c.text for c, _, _ in rows],
                        metadatas=[_meta_for_chroma(c, h, n) for c, h, n in rows])
        self.rep.chunks_added += len(rows)

    def flush(self, batch: dict[str, SourceDoc]) -> None:
        if not batch:
            return
        hashes = {i: doc_hash(d.title, d.text, d.metadata) for i, d in batch.items()}
        todo, stored = self.todo(batch, hashes)
        if not todo:
            return
        if self.journal is not None:
            _write_pending(self.journal, [batch[i] for i in todo])
        self.begin_write()
        chunked = {i: _chunk_doc(batch[i], self.settings) for i in todo}
        keep = self.clear(todo, stored, hashes, chunked)
        self.write_chunks(batch, todo, hashes, chunked, keep)
        if self.journal is not None:
            self.journal.unlink(missing_ok=True)

    def todo(self, batch: dict[str, SourceDoc], hashes: dict[str, str]) -> tuple[list[str], dict[str, list[str]]]:
        """The batch's documents that need writing (new, changed, or cut off by a killed run; counted in the
        report), and the chunk ids stored for each document."""
        col, rep, ids = self.col, self.rep, list(batch)
        heads = col.get(where={"$and": [{"doc_id": {"$in": ids}}, {"order": 0}]}, include=["metadatas"])
        head = {m["doc_id"]: m for m in heads["metadatas"]}
        stored: dict[str, list[str]] = defaultdict(list)
        for cid in col.get(where={"doc_id": {"$in": ids}}, include=[])["ids"]:
            stored[_doc_of(cid)].append(cid)
        todo: list[str] = []
        for i, d in batch.items():
            m = head.get(i)
            if m is not None and m.get("doc_hash") == hashes[i]:
                want = m.get("doc_chunks")
                if want is None:  # written before chunk counts were recorded: count its chunks again
                    want = len(_chunk_doc(d, self.settings))
                if len(stored[i]) == int(want):
                    rep.docs_unchanged += 1
                    rep.bytes_done += d.size
                    continue
                rep.docs_resumed += 1
            elif m is not None:
                rep.docs_updated += 1
            elif stored[i]:  # chunks without their chunk 0: a write that was cut off
                rep.docs_resumed += 1
            else:
                rep.docs_added += 1
            todo.append(i)
        return todo, stored

    def clear(self, todo: list[str], stored: dict[str, list[str]], hashes: dict[str, str],
              chunked: dict[str, list[Chunk]]) -> set[str]:
        """A killed run's chunks of the same content are kept (same hash and chunk count under the same
        settings: the same text under the same id), so a large document resumes where it was cut off;
        every other stored chunk of these documents goes, chunk 0 (the completion marker) always."""
        col = self.col
        keep: set[str] = set()
        again = [cid for i in todo for cid in stored[i]]
        for off in range(0, len(again), 5000):
            res = col.get(ids=again[off: off + 5000], include=["metadatas"])
            keep.update(cid for cid, m in zip(res["ids"], res["metadatas"])
                        if int(m["order"]) != 0 and m.get("doc_hash") == hashes[m["doc_id"]]
                        and m.get("doc_chunks") == len(chunked[m["doc_id"]]))
        gone = [cid for cid in again if cid not in keep]
        for off in range(0, len(gone), self.write_batch):
            col.delete(ids=gone[off: off + self.write_batch])
        self.rep.chunks_deleted += len(gone)
        self.rep.chunks_kept += len(keep)
        return keep

    def write_chunks(self, batch: dict[str, SourceDoc], todo: list[str], hashes: dict[str, str],
                     chunked: dict[str, list[Chunk]], keep: set[str]) -> None:
        """The chunks not kept, embedded and written ``write_batch`` at a time; every document's chunk 0
        after all the others (its presence marks the document complete)."""
        from citegraph.tools.embeddings import embed  # deferred: it loads chromadb (0.4 s)

        rep, settings, write_batch = self.rep, self.settings, self.write_batch
        firsts: list[tuple[Chunk, str, int]] = []
        first_vecs: list[np.ndarray] = []
        pending: list[tuple[Chunk, str, int]] = []
        credited: dict[str, float] = defaultdict(float)

        def credit(c: Chunk) -> None:  # the progress bar: a document's bytes, as far as its chunks are done
            d = batch[c.doc_id]
            share = d.size if c.next_id is None else d.size * c.end / max(1, len(d.text))
            rep.bytes_done += max(0.0, share - credited[c.doc_id])
            credited[c.doc_id] = max(share, credited[c.doc_id])

        def embed_and_write(rows: list[tuple[Chunk, str, int]]) -> None:
            vecs = embed([_index_text(c, settings) for c, _, _ in rows], settings["embedder"])
            rest = [k for k, (c, _, _) in enumerate(rows) if c.order != 0]
            for k, (c, _, _) in enumerate(rows):
                if c.order == 0:  # held back: chunk 0 is written after all the others of its document
                    firsts.append(rows[k])
                    first_vecs.append(vecs[k])
                credit(c)
            if rest:
                self.write([rows[k] for k in rest], vecs[rest])
            _progress(rep, self.on_progress)

        for i in todo:
            chunks = chunked.pop(i)
            for c in chunks:
                if c.id in keep:
                    credit(c)
                    continue
                pending.append((c, hashes[i], len(chunks)))
                if len(pending) >= write_batch:
                    embed_and_write(pending)
                    pending = []
        if pending:
            embed_and_write(pending)
        for off in range(0, len(firsts), write_batch):
            self.write(firsts[off: off + write_batch], np.stack(first_vecs[off: off + write_batch]))


# ----------------------------------------------------------------------------------- the journal
PENDING = "pending.jsonl"


def _write_pending(path: Path, docs: list[SourceDoc]) -> None:
    """The documents of the batch about to be written, saved whole before any of its changes."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"id": d.id, "title": d.title, "text": d.text, "metadata": d.metadata,
                                "path": d.path, "line": d.line}, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_pending(path: Path) -> list[SourceDoc]:
    """The documents a killed writer was writing (an unreadable journal: none, it is not ours to fix)."""
    docs = []
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            docs.append(SourceDoc(id=r["id"], title=r["title"], text=r["text"], metadata=r.get("metadata") or {},
                                  path=r.get("path") or "", line=int(r.get("line") or 0)))
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return docs


def _finish_pending(col, settings: dict[str, Any], local: Path, rep: IndexReport | None = None) -> int:
    """Finish the batch a killed writer left in ``local/pending.jsonl`` (the caller holds the lock);
    returns how many documents it held."""
    journal = local / PENDING
    if not journal.exists():
        return 0
    docs = _read_pending(journal)
    if docs:
        _add_docs(col, settings, docs, rep or IndexReport(), None, journal=journal)
    journal.unlink(missing_ok=True)
    return len(docs)


def _progress(rep: IndexReport, on_progress: Callable[[IndexReport], None] | None) -> None:
    """The caller's callback (the CLI's progress bar) and, inside a graph run, an ``index_build`` event
    on LangGraph's custom stream (citegraph.tools.progress)."""
    if on_progress:
        on_progress(rep)
    emit("index_build", docs_seen=rep.docs_seen, docs_added=rep.docs_added, docs_updated=rep.docs_updated,
         docs_unchanged=rep.docs_unchanged, chunks_added=rep.chunks_added)


def build_index(corpus: str | os.PathLike | Iterable[Any], index: str | os.PathLike, *, chunk_tokens: int = 256,
                overlap_tokens: int = 0, embedder: str = "minilm", title_in_index: bool = True,
                local_dir: str | os.PathLike | None = None, on_progress: Callable[[IndexReport], None] | None = None,
                batch_docs: int = 64, write_batch: int = WRITE_BATCH, lock_timeout: float | None = None,
                on_wait: Callable[[str], None] | None = None) -> IndexReport:
    """Create the index at ``index`` (a folder or a ``chroma+http://`` spec) if it does not exist, then
    add ``corpus`` (a JSONL file, a folder, or an iterable of documents). Building the same corpus again
    changes nothing; after an interrupted build it writes what the killed run left incomplete. An
    existing index built with other chunking settings is refused. Writers on one index run one at a
    time: a second one waits for the first (``on_wait`` is told, once, with a line to show; it gives up
    after ``lock_timeout`` seconds when one is set)."""
    settings = _new_settings(embedder, chunk_tokens, overlap_tokens, title_in_index=title_in_index)
    _chunker(settings)  # bad chunk sizes fail before anything is written
    return _index(corpus, index, settings, create=True, local_dir=local_dir, on_progress=on_progress,
                  batch_docs=batch_docs, write_batch=write_batch, lock_timeout=lock_timeout, on_wait=on_wait)


def add_to_index(corpus: str | os.PathLike | Iterable[Any], index: str | os.PathLike, *,
                 local_dir: str | os.PathLike | None = None, on_progress: Callable[[IndexReport], None] | None = None,
                 batch_docs: int = 64, write_batch: int = WRITE_BATCH, lock_timeout: float | None = None,
                 on_wait: Callable[[str], None] | None = None) -> IndexReport:
    """Add ``corpus`` to an existing index with the index's own settings; unchanged documents (same id,
    same content hash, all chunks stored) are skipped, changed ones replace their chunks."""
    return _index(corpus, index, None, create=False, local_dir=local_dir, on_progress=on_progress,
                  batch_docs=batch_docs, write_batch=write_batch, lock_timeout=lock_timeout, on_wait=on_wait)


def _acquire(local: Path, display: str, lock_timeout: float | None, on_wait: Callable[[str], None] | None):
    """The writers' lock of ``local``, taken (``on_wait`` told once when another writer holds it; an
    InputError after ``lock_timeout`` seconds when one is set)."""
    from filelock import Timeout

    lock = _lock_for(local)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_wait:
            on_wait(f"another process is writing to {display}; waiting for it to finish")
        try:
            lock.acquire(timeout=-1 if lock_timeout is None else lock_timeout)
        except Timeout:
            raise InputError(f"another process is still writing to {display} after {lock_timeout:g} s; try again later") from None
    return lock


def _index(corpus, index, settings, *, create: bool, local_dir, on_progress, batch_docs, write_batch,
           lock_timeout, on_wait) -> IndexReport:
    t0 = time.perf_counter()
    client_fn, name, local, display = _parse(index, local_dir)
    if not create and not is_http_spec(str(index)) and not (Path(index) / "chroma").is_dir():
        raise InputError(f"no index at {index} (build one first with: citegraph index build)")
    docs: Iterable[Any]
    if isinstance(corpus, (str, os.PathLike)):
        if not Path(corpus).exists():
            raise InputError(f"corpus not found: {corpus}")
        docs = iter_corpus(corpus)
    else:
        docs = (d if isinstance(d, BadLine) else _as_source(d) for d in corpus)
    try:
        local.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot write the index folder {local}: {e.strerror}") from e
    lock = _acquire(local, display, lock_timeout, on_wait)
    try:
        col = _get_collection(client_fn(), name, create=create, display=display, settings=settings)
        have = _settings_of(col, display)
        if settings is not None:
            diff = [k for k in _SETTING_KEYS if have.get(k) != settings[k]]
            if diff:
                raise InputError(f"{display} was built with other settings ({', '.join(f'{k}={have.get(k)!r}' for k in diff)}); "
                                 "use `citegraph index add` to add with its settings, or a new index")
        rep = IndexReport()
        journal = local / PENDING
        if journal.exists():  # a killed writer's batch first: its documents' old chunks may be gone already
            healed = IndexReport()
            _finish_pending(col, have, local, healed)
            rep.docs_healed = healed.docs_resumed + healed.docs_updated + healed.docs_added
            rep.chunks_added += healed.chunks_added
            rep.chunks_deleted += healed.chunks_deleted
        _add_docs(col, have, docs, rep, on_progress, batch_docs=batch_docs, write_batch=write_batch, journal=journal)
        c = Corpus(col, local, have, display)
        c._ensure_sparse()  # rebuilt from Chroma when the stamp moved (and saved: this process holds the lock)
        rep.total_chunks = len(c)
    finally:
        lock.release()
    rep.seconds = time.perf_counter() - t0
    return rep


# ------------------------------------------------------------------------------ what an index holds
@dataclass
class IndexedDoc:
    """One document of an index, as ``index list`` shows it."""

    id: str
    title: str
    chunks: int
    complete: bool  # chunk 0 and all its chunks are there (else a killed write left it: not searched)
    source: str = ""  # the file it was read from (its ``path`` field), when known
    pages: int | None = None  # a PDF's page count
    added: str = ""  # UTC time its chunks were written (empty for an index written before this was kept)


def list_documents(index: str | os.PathLike, *, local_dir: str | os.PathLike | None = None,
                   page: int = 5000) -> list[IndexedDoc]:
    """Every document of an index, sorted by id (reads chunk metadata only, no text)."""
    client_fn, name, _local, display = _parse(index, local_dir)
    if not is_http_spec(str(index)) and not (Path(index) / "chroma").is_dir():
        raise InputError(f"no index at {index} (build one first with: citegraph index build)")
    col = _get_collection(client_fn(), name, create=False, display=display)
    docs: dict[str, IndexedDoc] = {}
    want: dict[str, int] = {}
    for off in range(0, col.count(), page):
        res = col.get(include=["metadatas"], limit=page, offset=off)
        for m in res["metadatas"]:
            d = docs.get(m["doc_id"])
            if d is None:
                d = docs[m["doc_id"]] = IndexedDoc(id=m["doc_id"], title=str(m.get("title") or ""), chunks=0, complete=False)
            d.chunks += 1
            if int(m["order"]) == 0:
                want[d.id] = int(m["doc_chunks"]) if m.get("doc_chunks") is not None else -1
                d.added = str(m.get("added") or "")
                try:
                    meta = json.loads(m.get("meta_json") or "{}")
                except ValueError:
                    meta = {}
                src = meta.get("path") or meta.get("source") or ""
                d.source = src if isinstance(src, str) else ""
                d.pages = int(meta["page_count"]) if isinstance(meta.get("page_count"), int) else None
    for d in docs.values():
        d.complete = d.id in want and (want[d.id] < 0 or want[d.id] == d.chunks)
    return [docs[k] for k in sorted(docs)]


@dataclass
class RemoveReport:
    docs_removed: list[str] = field(default_factory=list)
    chunks_deleted: int = 0
    total_chunks: int = 0


def remove_from_index(index: str | os.PathLike, *, ids: Sequence[str] = (), sources: Sequence[str] = (),
                      local_dir: str | os.PathLike | None = None, lock_timeout: float | None = None,
                      on_wait: Callable[[str], None] | None = None, write_batch: int = WRITE_BATCH) -> RemoveReport:
    """Remove documents, named by id or by the file they were read from (``sources``: the path as given
    to ``index build`` or relative to its folder), under the writers' lock. Crash-safe as a write is:
    every document's chunk 0 (its completion marker) goes first, so a kill part-way leaves no removed
    document searchable, and running the same removal again finishes it. An id or source the index
    does not hold is an InputError, before anything changes."""
    client_fn, name, local, display = _parse(index, local_dir)
    if not is_http_spec(str(index)) and not (Path(index) / "chroma").is_dir():
        raise InputError(f"no index at {index} (build one first with: citegraph index build)")
    if not ids and not sources:
        raise InputError("name the documents to remove (--id ID or --source PATH)")
    lock = _acquire(local, display, lock_timeout, on_wait)
    try:
        col = _get_collection(client_fn(), name, create=False, display=display)
        settings = _settings_of(col, display)
        if (local / PENDING).exists():  # a killed writer's batch first, as every writer does
            _finish_pending(col, settings, local)
        held = {d.id: d for d in list_documents(index, local_dir=local_dir)}
        targets: list[str] = []
        for i in ids:
            if i not in held:
                raise InputError(f"{display} holds no document with id {i!r} (citegraph index list shows its ids)")
            targets.append(i)
        for src in sources:
            want = Path(src).as_posix()
            found = [d.id for d in held.values() if d.source and (want == d.source or want.endswith("/" + d.source))]
            if not found:
                raise InputError(f"{display} holds no document read from {src!r} (citegraph index list shows their sources)")
            targets.extend(found)
        targets = list(dict.fromkeys(targets))
        rep = RemoveReport(docs_removed=targets)
        _set_stamp(col, _WRITING + uuid.uuid4().hex)
        firsts = [f"{i}#0" for i in targets]
        for off in range(0, len(firsts), write_batch):  # completion markers first: hidden from search at once
            col.delete(ids=firsts[off: off + write_batch])
        rest = [cid for cid in col.get(where={"doc_id": {"$in": targets}}, include=[])["ids"]] if targets else []
        for off in range(0, len(rest), write_batch):
            col.delete(ids=rest[off: off + write_batch])
        rep.chunks_deleted = sum(held[i].chunks for i in targets)
        _set_stamp(col, uuid.uuid4().hex)
        c = Corpus(col, local, settings, display)
        c._ensure_sparse()
        rep.total_chunks = len(c)
    finally:
        lock.release()
    return rep
