"""Reading a corpus as a stream: a JSONL file (``{"id"?, "title"?, "text", ...}`` per line, other fields
kept as metadata) or a folder of ``.txt`` / ``.md`` (one document per file, id = the path relative to
the folder, title = the file name without its suffix) and ``.jsonl`` files. Bad lines are yielded as
:class:`BadLine` (file and line number) so the caller reports them and indexes the rest."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from citegraph.errors import InputError

TEXT_SUFFIXES = (".txt", ".md")


@dataclass
class SourceDoc:
    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class BadLine:
    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def _default_id(title: str, text: str) -> str:
    # the same default as citegraph.state.answer.Document
    return hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]


def record_to_doc(rec: Any) -> SourceDoc:
    """A JSON record as a document; ValueError with the reason when it is not one."""
    if not isinstance(rec, dict):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    text = rec.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('missing or empty "text"')
    title = rec.get("title") or ""
    if not isinstance(title, str):
        title = str(title)
    doc_id = rec.get("id")
    doc_id = _default_id(title, text) if doc_id is None or doc_id == "" else str(doc_id)
    meta = {k: v for k, v in rec.items() if k not in ("id", "title", "text")}
    return SourceDoc(id=doc_id, title=title, text=text, metadata=meta)


def iter_jsonl(path: str | os.PathLike) -> Iterator[SourceDoc | BadLine]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield record_to_doc(json.loads(line))
            except (json.JSONDecodeError, ValueError) as e:
                yield BadLine(str(path), n, str(e).splitlines()[0])


def iter_corpus(path: str | os.PathLike) -> Iterator[SourceDoc | BadLine]:
    """Documents of a JSONL file or a folder, in a stable order (files sorted by path)."""
    p = Path(path)
    if p.is_file():
        yield from iter_jsonl(p)
        return
    if not p.is_dir():
        raise InputError(f"corpus not found: {path}")
    for f in sorted(x for x in p.rglob("*") if x.is_file()):
        rel = f.relative_to(p).as_posix()
        if f.suffix == ".jsonl":
            yield from iter_jsonl(f)
        elif f.suffix in TEXT_SUFFIXES:
            try:
                text = f.read_text(encoding="utf-8")
            except UnicodeDecodeError as e:
                yield BadLine(str(f), 0, f"not UTF-8 text ({e.reason})")
                continue
            if text.strip():
                yield SourceDoc(id=rel, title=f.stem, text=text, metadata={"path": rel})
            else:
                yield BadLine(str(f), 0, "empty file")
