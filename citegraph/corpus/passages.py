"""Documents given as files (``ask``/``cite --docs paper.pdf`` or a folder), read the way an index reads
them and cut into the passages a method reads.

A document longer than one chunk (a PDF, a long text file) is chunked as ``index build`` would chunk it
(the embedder's tokenizer, 256 word pieces, sentence-aligned), each chunk keeping its document's id,
title, source path, character span and pages. When there are more passages than the method reads
(``k``), the question's top ``k`` by BM25 are kept, as a retriever over an index would give them, and a
note says so; nothing is cut at a context window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from citegraph.corpus.index import _Sparse, _chunker, _new_settings
from citegraph.corpus.sources import BadLine, SourceDoc, iter_corpus
from citegraph.errors import InputError
from citegraph.state.answer import Document

FILE_SUFFIXES = (".pdf", ".txt", ".md", ".html", ".htm")


@dataclass
class Passages:
    documents: list[Document]
    notes: list[str] = field(default_factory=list)  # one line each: pages skipped, passages selected, files skipped


def is_document_file(path: str | Path) -> bool:
    """Whether ``--docs`` names a folder or a PDF/text file (read as documents) rather than JSON lines."""
    p = Path(path)
    return p.is_dir() or p.suffix.lower() in FILE_SUFFIXES


def read_passages(path: str | Path, question: str = "", k: int = 0, chunk_tokens: int = 256,
                  embedder: str = "minilm") -> Passages:
    """The passages of the documents under ``path`` (see the module doc); ``k`` 0 keeps them all.
    InputError (one line) when nothing readable is there."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"--docs {path}: not found")
    docs: list[SourceDoc] = []
    notes: list[str] = []
    for d in iter_corpus(p):
        if isinstance(d, BadLine):
            notes.append(f"skipped {d}")
            continue
        docs.append(d)
        notes.extend(d.notes)
    if not docs:
        raise InputError(f"--docs {path}: no readable document" + (f" ({notes[0]})" if notes else ""))
    chunker = _chunker(_new_settings(embedder, chunk_tokens, 0, title_in_index=False))
    out: list[Document] = []
    for d in docs:
        meta = {**d.metadata, "path": d.metadata.get("path") or d.path}
        chunks = chunker.chunk(d.id, d.title, d.text, meta)
        if len(chunks) == 1:
            out.append(Document(id=d.id, title=d.title, text=d.text, metadata=meta))
        else:
            out.extend(c.to_document() for c in chunks)
    if k and len(out) > k and question.strip():
        rows = [str(i) for i in range(len(out))]
        hits = _Sparse.build(rows, [f"{x.title}\n{x.text}" for x in out]).search(question, k)  # the index's BM25
        ranked = [int(r) for r in hits] + [i for i in range(len(out)) if str(i) not in hits]  # no match: in order
        keep = sorted(ranked[:k])  # in document order: a passage's neighbours read in sequence
        notes.append(f"--docs {path}: {len(out)} passages in {len(docs)} document(s); the question's top {k} by BM25 "
                     "are given to the method")
        out = [out[i] for i in keep]
    return Passages(out, notes)
