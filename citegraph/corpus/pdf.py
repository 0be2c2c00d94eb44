"""PDF documents: text per page with pypdf, cleaned the way a two-column paper needs, and the page map
that lets a citation name its page.

:func:`read_pdf` turns a file into one :class:`~citegraph.corpus.sources.SourceDoc`; :func:`pages_to_doc`
does the same for pages read by anything else (a LangChain document loader's page documents:
:func:`from_langchain`). The cleanup, in order:

- ligatures (ﬁ, ﬂ, ﬀ, ﬃ, ﬄ, ﬅ, ﬆ) become their letters;
- running headers and footers go: a line among the first or last two of a page that recurs (digits
  aside) on at least half of the pages, at least two, and lone page numbers ("7", "- 7 -", "Page 7 of 12");
- a word hyphenated across a line break (or a page break) is joined ("infor-" + "mation"); other line
  breaks inside a paragraph become spaces, so no header or page number is glued into a sentence;
- the reference list is kept apart: from a "References" / "Bibliography" heading in the second half of
  the document to its end, it is left out of the text (``metadata["references"]`` says from which page and
  how many characters), so its titles are not retrieved or cited as if they were the paper's claims;
- a page without a text layer (a scan) is skipped with a note naming it; a PDF with no text at all is a
  :class:`~citegraph.corpus.sources.BadLine`.

``metadata["pages"]`` is ``[[page, start, end], ...]``: each page's 1-based number and its character span
in the document's text (``text[start:end]``); :func:`page_at` finds the page of an offset.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from citegraph.corpus.records import BadLine, SourceDoc
from citegraph.state.answer import page_of

LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "ft",
             "\ufb06": "st"}
_LIG = re.compile("[" + "".join(LIGATURES) + "]")
_PAGE_NO = re.compile(r"^\s*(?:page\s+)?[-–—(\[]?\s*\d{1,4}\s*[-–—)\]]?\s*(?:(?:of|/)\s*\d{1,4})?\s*$", re.I)
_REFS = re.compile(r"^\s*(?:\d{1,2}\.?\s+|[IVX]{1,4}\.\s+)?(references|bibliography|works cited|literature cited)\s*$",
                   re.I)
_EDGE = 2  # lines at the top and the bottom of a page that may be a running header or footer
_MIN_PAGE_CHARS = 8  # a page with less extracted text has no text layer (a scan)


def _shape(line: str) -> str:
    return re.sub(r"\d+", "#", " ".join(line.lower().split()))


def _running_lines(pages: Sequence[list[str]]) -> set[str]:
    """Shapes of the lines that recur at a page's top or bottom on at least half of the pages (two at least)."""
    counts: dict[str, int] = {}
    for lines in pages:
        edge = {_shape(x) for x in lines[:_EDGE] + lines[-_EDGE:] if x.strip()}
        for s in edge:
            counts[s] = counts.get(s, 0) + 1
    need = max(2, (len(pages) + 1) // 2)
    return {s for s, n in counts.items() if n >= need and s.strip("# ")}


def _strip_edges(lines: list[str], running: set[str]) -> list[str]:
    def edge_junk(x: str) -> bool:
        return not x.strip() or _shape(x) in running or bool(_PAGE_NO.match(x))

    lines = list(lines)
    for _ in range(_EDGE + 1):
        if lines and edge_junk(lines[0]):
            lines.pop(0)
        if lines and edge_junk(lines[-1]):
            lines.pop()
    return lines


def _join(lines: list[str]) -> str:
    """One page's lines as paragraphs: a hyphenated word joined, other breaks a space; a blank line
    stays a paragraph break."""
    out = ""
    for raw in lines:
        line = " ".join(raw.split())
        if not line:
            if out and not out.endswith("\n\n"):
                out = out.rstrip() + "\n\n"
            continue
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and line[:1].islower():
            out = out[:-1] + line
        elif out and not out.endswith("\n\n"):
            out += " " + line
        else:
            out += line
    return out.strip()


def pages_to_doc(doc_id: str, title: str, pages: Sequence[tuple[int, str]], *, path: str = "",
                 metadata: dict[str, Any] | None = None, size: int = 0) -> SourceDoc | BadLine:
    """A document from ``(page number, extracted text)`` pairs (see the module doc for the cleanup)."""
    where = path or doc_id
    texts = [(n, _LIG.sub(lambda m: LIGATURES[m.group(0)], t or "")) for n, t in pages]
    empty = [n for n, t in texts if len(t.strip()) < _MIN_PAGE_CHARS]
    kept = [(n, t.splitlines()) for n, t in texts if len(t.strip()) >= _MIN_PAGE_CHARS]
    if not kept:
        return BadLine(where, 0, f"no text layer on any of its {len(texts)} page(s) (a scanned PDF?): nothing to read",
                       size)
    running = _running_lines([lines for _, lines in kept])
    text, spans = "", []
    refs: dict[str, Any] | None = None
    for k, (n, lines) in enumerate(kept):
        lines = _strip_edges(lines, running)
        if not title and k == 0 and lines and 3 <= len(lines[0].strip()) <= 150:
            title = " ".join(lines[0].split())  # a paper's first line is its title
        if k >= len(kept) // 2:  # a reference list starts in the document's second half
            at = next((j for j, x in enumerate(lines) if _REFS.match(x)), None)
            if at is not None:
                rest = [x for _, ls in kept[k + 1:] for x in ls]
                refs = {"page": n, "chars": sum(len(x) + 1 for x in lines[at:] + rest)}
                lines = lines[:at]
        body = _join(lines)
        if body:
            if text.endswith("-") and text[-2:-1].isalpha() and body[:1].islower():
                text = text[:-1]  # a word hyphenated across the page break: its end starts this page
                spans[-1][2] = len(text)
            elif text:
                text += "\n\n"
            spans.append([n, len(text), len(text) + len(body)])
            text += body
        if refs is not None:
            break
    meta = dict(metadata or {})
    meta.update(pages=spans, page_count=len(texts))
    notes = []
    if empty:
        notes.append(f"{where}: no text layer on page(s) {_ranges(empty)} (scanned?): skipped")
    if refs is not None:
        meta["references"] = refs
    return SourceDoc(id=doc_id, title=title, text=text, metadata=meta, path=path, size=size, notes=notes)


def _ranges(nums: Iterable[int]) -> str:
    nums = sorted(nums)
    out, k = [], 0
    while k < len(nums):
        j = k
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[k]) if j == k else f"{nums[k]}-{nums[j]}")
        k = j + 1
    return ", ".join(out)


def read_pdf(path: str | Path, doc_id: str | None = None) -> SourceDoc | BadLine:
    """A PDF file as one document (id: ``doc_id`` or the file name; title: the PDF's own title, else its
    first line, else the file name); a file pypdf cannot read, an encrypted one or one with no text is a
    :class:`BadLine` with the reason."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    p = Path(path)
    size = p.stat().st_size
    try:
        reader = PdfReader(str(p))
        if reader.is_encrypted and not reader.decrypt(""):
            return BadLine(str(p), 0, "encrypted PDF (a password is needed to read it)", size)
        pages = [(n, page.extract_text() or "") for n, page in enumerate(reader.pages, 1)]
        info = reader.metadata or {}
        title = str(info.get("/Title") or "").strip()
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as e:
        return BadLine(str(p), 0, f"not a readable PDF ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else 'no detail'})", size)
    doc = pages_to_doc(doc_id or p.name, title, pages, path=str(p), size=size, metadata={"path": doc_id or p.name})
    if isinstance(doc, SourceDoc) and not doc.title:
        doc.title = p.stem
    return doc


def from_langchain(documents: Iterable[Any]) -> list[SourceDoc | BadLine]:
    """LangChain page documents (any loader that sets ``metadata["source"]`` and a 0-based
    ``metadata["page"]``, as the PDF loaders do) grouped into one document per source, pages in order;
    a document without a page is a document of its own."""
    groups: dict[str, list[tuple[int, str]]] = {}
    titles: dict[str, str] = {}
    out: list[SourceDoc | BadLine] = []
    for d in documents:
        meta = dict(getattr(d, "metadata", {}) or {})
        text = getattr(d, "page_content", "") or ""
        src = str(meta.get("source") or "")
        if "page" not in meta or not src:
            out.append(SourceDoc(id=str(meta.get("id") or src or len(out)), title=str(meta.get("title") or ""),
                                 text=text, metadata=meta, path=src))
            continue
        groups.setdefault(src, []).append((int(meta["page"]) + 1, text))
        titles.setdefault(src, str(meta.get("title") or ""))
    for src, pages in groups.items():
        out.append(pages_to_doc(src, titles[src] or Path(src).stem, sorted(pages), path=src, metadata={"path": src}))
    return out


def page_at(pages: Sequence[Sequence[int]], offset: int) -> int | None:
    """The 1-based page whose span holds character ``offset`` (``pages``: ``[[page, start, end], ...]``
    sorted by start); an offset between two pages belongs to the earlier one; None without pages."""
    return page_of([list(p) for p in pages], offset)


def pages_within(pages: Sequence[Sequence[int]], start: int, end: int) -> list[list[int]]:
    """The entries of ``pages`` that overlap ``[start, end)``, clipped to it (what a chunk keeps)."""
    return [[int(p), max(s, start), min(e, end)] for p, s, e in pages if s < end and e > start]
