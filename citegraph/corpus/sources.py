"""Reading a corpus as a stream: a JSONL file (``{"id"?, "title"?, "text", ...}`` per line, other fields
kept as metadata), a PDF file, or a folder of ``.txt`` / ``.md`` (one document per file, id = the path
relative to the folder, title = the file name without its suffix), ``.pdf`` (one document per file, with
its page map: :mod:`citegraph.corpus.pdf`) and ``.jsonl`` files. Bad lines are yielded as
:class:`BadLine` (file and line number) so the caller reports them and indexes the rest: a line that
is not UTF-8, not JSON, nested too deeply, not an object, without a text, with a title or id that is
not a string or a number, or holding a lone surrogate escape (``\\ud800``, which no UTF-8 store takes).

Every document and bad line carries where it came from (``path``, ``line``) and its size in bytes
(``size``), so a progress bar can advance through a corpus by bytes and a duplicate id can name the
line it repeats."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

from citegraph.corpus.html import markdown_title_and_headings, read_html
from citegraph.corpus.pdf import read_pdf
from citegraph.corpus.records import BadLine, SourceDoc
from citegraph.errors import InputError

TEXT_SUFFIXES = (".txt", ".md")
PDF_SUFFIXES = (".pdf",)
HTML_SUFFIXES = (".html", ".htm")


def _default_id(title: str, text: str) -> str:
    # the same default as citegraph.state.answer.Document
    return hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]


def record_to_doc(rec: Any) -> SourceDoc:
    """A JSON record as a document; ValueError with the reason when it is not one."""
    if not isinstance(rec, dict):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    text = rec.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('missing or empty "text"' if text is None or isinstance(text, str)
                         else f'"text" must be a string, got {_kind(text)}')
    title = _scalar(rec.get("title"), "title")
    doc_id = _scalar(rec.get("id"), "id")
    doc_id = _default_id(title, text) if doc_id == "" else doc_id
    meta = {k: v for k, v in rec.items() if k not in ("id", "title", "text")}
    try:  # "\\ud800" is valid JSON but no UTF-8 text: every store (and the content hash) would fail on it
        json.dumps([doc_id, title, text, meta], ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"holds a lone surrogate escape (\\u{ord(e.object[e.start]):04x}), which is not text") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return SourceDoc(id=doc_id, title=title, text=text, metadata=meta)


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", bool: "true/false"}.get(type(v), type(v).__name__)


def _scalar(v: Any, name: str) -> str:
    """A title or id: a string, or a number written as one; absent/null is ""."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    raise ValueError(f'"{name}" must be a string, got {_kind(v)}')


def iter_jsonl(path: str | os.PathLike) -> Iterator[SourceDoc | BadLine]:
    """One document per line; a line that is not UTF-8 or not a document is a :class:`BadLine`."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield BadLine(str(path), n, f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})", len(raw))
                continue
            try:
                doc = record_to_doc(json.loads(line))
            except RecursionError:
                yield BadLine(str(path), n, "JSON nested too deeply", len(raw))
                continue
            except ValueError as e:  # json.JSONDecodeError and over-long integers are ValueErrors too
                yield BadLine(str(path), n, str(e).splitlines()[0][:200], len(raw))
                continue
            doc.path, doc.line, doc.size = str(path), n, len(raw)
            yield doc


def iter_corpus(path: str | os.PathLike) -> Iterator[SourceDoc | BadLine]:
    """Documents of a file (JSONL, PDF, HTML, text or Markdown) or a folder of them, in a stable order
    (files sorted by path)."""
    p = Path(path)
    if p.is_file():
        yield from _read_file(p, p.name)
        return
    if not p.is_dir():
        raise InputError(f"corpus not found: {path}")
    for f in sorted(x for x in p.rglob("*") if x.is_file()):
        yield from _read_file(f, f.relative_to(p).as_posix(), folder=True)


def _read_file(f: Path, rel: str, folder: bool = False) -> Iterator[SourceDoc | BadLine]:
    """One file's documents by its suffix (id: its path relative to the folder read); in a folder, a
    file of another kind is not ours to read and is passed over, and a single file of another kind is
    read as JSON lines (a corpus file of any name)."""
    suffix = f.suffix.lower()
    if suffix in PDF_SUFFIXES:
        yield read_pdf(f, doc_id=rel)
    elif suffix in HTML_SUFFIXES:
        yield read_html(f, doc_id=rel)
    elif suffix in TEXT_SUFFIXES:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            yield BadLine(str(f), 0, f"not UTF-8 text ({e.reason})", f.stat().st_size)
            return
        if not text.strip():
            yield BadLine(str(f), 0, "empty file", f.stat().st_size)
            return
        meta: dict[str, Any] = {"path": rel}
        title = f.stem
        if suffix == ".md":  # a Markdown file's first "# " heading is its title; its headings are kept
            heading, headings = markdown_title_and_headings(text)
            title, meta["headings"] = heading or f.stem, headings
        yield SourceDoc(id=rel, title=title, text=text, metadata=meta, path=str(f), size=f.stat().st_size)
    elif suffix == ".jsonl" or not folder:
        yield from iter_jsonl(f)


def corpus_bytes(path: str | os.PathLike) -> int:
    """Bytes :func:`iter_corpus` reads from ``path`` (what a progress bar counts to)."""
    p = Path(path)
    if p.is_file():
        return p.stat().st_size
    if not p.is_dir():
        return 0
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file() and f.suffix.lower() in (".jsonl", *TEXT_SUFFIXES, *PDF_SUFFIXES, *HTML_SUFFIXES))
