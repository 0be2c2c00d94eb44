"""PDF documents: text per page with pypdf, cleaned the way a two-column paper needs, and the page map
that lets a citation name its page.

:func:`read_pdf` turns a file into one :class:`~citegraph.corpus.sources.SourceDoc`; :func:`pages_to_doc`
does the same for pages read by anything else (a LangChain document loader's page documents:
:func:`from_langchain`). The page text comes from pypdf, or from pypdfium2 (PDFium) where
``$CITEGRAPH_PDF_READER`` is ``pypdfium2`` and the ``pdfium`` extra is installed: on papers whose justified
lines pypdf reads without their spaces it keeps many more sentences whole (docs/corpus.md). The cleanup,
in order:

- ligatures (ﬁ, ﬂ, ﬀ, ﬃ, ﬄ, ﬅ, ﬆ) become their letters;
- running headers and footers go: a line among the first or last two of a page that recurs (digits and
  punctuation aside, nearly the same: OCR varies; two words at least) on at least half of the pages,
  three at least, and lone
  page numbers ("7", "- 7 -", "Page 7 of 12");
- a word hyphenated across a line break (or a page break) is joined ("infor-" + "mation"), unless the
  document writes the same two parts with a hyphen elsewhere ("camera-" + "ready" stays "camera-ready");
  other line breaks inside a paragraph become spaces, so no header or page number is glued into a
  sentence, and a sentence that runs on over a page break stays one sentence (its page is the one it
  starts on);
- the reference list is kept apart: from a "References" / "Bibliography" heading in the second half of
  the document that a reference entry follows (not a subsection of that name that goes on in prose) to an
  appendix heading ("APPENDIX A: ...", "Supplementary material") or the end, it is left
  out of the text (``metadata["references"]`` says from which page and how many characters), so its titles
  are not retrieved or cited as if they were the paper's claims; appendices after it are kept;
- a page without a text layer (a scan) is skipped with a note naming it; a PDF with no text at all is a
  :class:`~citegraph.corpus.sources.BadLine`.

``metadata["pages"]`` is ``[[page, start, end], ...]``: each page's 1-based number and its character span
in the document's text (``text[start:end]``); :func:`citegraph.state.answer.page_of` finds the page of an offset.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from citegraph.corpus.records import BadLine, SourceDoc
from citegraph.errors import InputError
from citegraph.settings import setting

LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "ft",
             "\ufb06": "st"}
_LIG = re.compile("[" + "".join(LIGATURES) + "]")
_PAGE_NO = re.compile(r"^\s*(?:page\s+)?[-–—(\[]?\s*\d{1,4}\s*[-–—)\]]?\s*(?:(?:of|/)\s*\d{1,4})?\s*$", re.I)
_REFS = re.compile(r"^\s*(?:\d{1,2}\.?\s+|[IVX]{1,4}\.\s+)?(references|bibliography|works cited|literature cited)\s*$",
                   re.I)
#: a heading after the reference list that starts an appendix: the text resumes there
_APPENDIX = re.compile(r"^\s*(?:[A-Z](?:\.\d+)*\.?\s+)?(?:APPENDIX|Appendix|APPENDICES|Appendices|"
                       r"SUPPLEMENTARY\s+MATERIAL|Supplementary\s+(?:[Mm]aterials?|[Ii]nformation))\b")
#: the start of a reference entry: "[12]", "12.", "12 " before a capital, "Smith, J.", "Smith J. A.,", "Smith J., 2013"
_ENTRY = re.compile(r"^\s*(?:\[\w[\w+.-]*\]|\d{1,3}\.?\s+\S|[^\W\d_][\w'\u2019-]+,?\s+(?:[A-Z]\.|[A-Z]\w*,\s))")
_CITED_WORK = re.compile(r"https?://|\bdoi\b|\b(?:1[89]|20)\d\d[a-z]?\b", re.I)
_COMPOUND = re.compile(r"([^\W\d_]{2,})-([^\W\d_]{2,})")
_EDGE = 2  # lines at the top and the bottom of a page that may be a running header or footer
_MIN_PAGE_CHARS = 8  # a page with less extracted text has no text layer (a scan)


def _shape(line: str) -> str:
    """A line as a running header is compared: lower case, digits (page numbers) and punctuation out."""
    return " ".join(re.sub(r"[\d\W_]+", " ", line.lower()).split())


def _similar(a: str, b: str) -> bool:
    from rapidfuzz import fuzz

    return a == b or (min(len(a), len(b)) >= 8 and fuzz.ratio(a, b) >= 85)  # OCR: "VICKSBUEG", "SIEGE OP"


_NUMBERED_EDGE = re.compile(r"^\s*\d{1,4}\s+\S|\S\s+\d{1,4}\s*$")


def _running_lines(pages: Sequence[list[str]]) -> list[str]:
    """Shapes of the lines that recur (nearly the same, digits aside) among the first or last lines of
    at least half of the pages (three at least): running headers and footers, most frequent first. A
    line that carries a page number ("Chapter 4: Function reference 9") counts from three pages on,
    with another number on each: a manual's running head changes with its chapters."""
    # two words at least (a table row's label is no header), on three pages at least (in a two-page
    # document any repeated line would look like one)
    edge_lines = [[x for x in dict.fromkeys(lines[:_EDGE] + lines[-_EDGE:]) if len(_shape(x).split()) >= 2]
                  for lines in pages]  # a short page's lines are at both edges: once each
    edges = [{_shape(x) for x in e} for e in edge_lines]
    need = max(3, (len(pages) + 1) // 2)
    found: list[tuple[int, str]] = []
    for shape in sorted({x for e in edges for x in e}):
        if any(_similar(shape, f.removeprefix(_NUMBERED_MARK)) for _, f in found):
            continue
        n = sum(any(_similar(shape, x) for x in e) for e in edges)
        if n >= need:
            found.append((n, shape))
        elif n >= 3:
            numbers = [re.findall(r"\d+", x)[0 if re.match(r"\s*\d", x) else -1] for e in edge_lines for x in e
                       if _similar(_shape(x), shape) and _NUMBERED_EDGE.search(x)]
            if len(numbers) >= 3 and len(set(numbers)) == len(numbers):  # another page number each time
                found.append((len(numbers), _NUMBERED_MARK + shape))
    return [f for _, f in sorted(found, key=lambda t: -t[0])]


_NUMBERED_MARK = "#"  # a running line known by its page number: only its numbered copies go ("Appendix A 25")


def _is_running(x: str, running: Sequence[str]) -> bool:
    shape = _shape(x)
    return bool(shape) and any(_similar(shape, r.removeprefix(_NUMBERED_MARK))
                               and (not r.startswith(_NUMBERED_MARK) or bool(_NUMBERED_EDGE.search(x)))
                               for r in running)


def _strip_edges(lines: list[str], running: list[str]) -> list[str]:
    def edge_junk(x: str) -> bool:
        return not x.strip() or bool(_PAGE_NO.match(x)) or _is_running(x, running)

    lines = list(lines)
    for _ in range(_EDGE + 1):
        if lines and edge_junk(lines[0]):
            lines.pop(0)
        if lines and edge_junk(lines[-1]):
            lines.pop()
    return lines


_NUMBERED_HEAD = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.|[A-Z]\.)\s+[A-Z][^.!;]{0,80}[?:]?$")
_ENDS_SENTENCE = re.compile(r"[.!?:;\"\u201d\u2019)\]]$")


def _heading(line: str, before: str, after: str) -> bool:
    """A line that is a heading, not a wrapped part of a sentence: numbered ("2.1. Directory layout",
    "IV. Results") or short and capitalised without a final stop ("Abstract", "Related work"), between a
    finished sentence (or nothing) and a line that starts a new one."""
    if len(line.split()) > 12 or not after[:1].isupper():
        return False
    if _NUMBERED_HEAD.match(line):
        return True
    return (len(line.split()) <= 5 and line[:1].isupper() and not _ENDS_SENTENCE.search(line)
            and (not before or bool(_ENDS_SENTENCE.search(before))))


def _compounds(pages: Iterable[list[str]]) -> set[tuple[str, str]]:
    """The hyphenated words written inside a line somewhere in the document ("camera-ready"), as
    lower-cased (left, right) pairs: a line break after their hyphen keeps it."""
    return {(a.lower(), b.lower()) for lines in pages for x in lines for a, b in _COMPOUND.findall(x)}


def _hyphen_join(text: str, line: str, compounds: set[tuple[str, str]]) -> str | None:
    """``text`` (ending in a word and a hyphen) and ``line`` (starting in lower case) as one word:
    without the hyphen, or with it where the document writes that compound; None when they are no
    hyphenated word."""
    if not (text.endswith("-") and len(text) > 1 and text[-2].isalpha() and line[:1].islower()):
        return None
    left = re.search(r"([^\W\d_]+)-$", text)
    right = re.match(r"[^\W\d_]+", line)
    if left and right and (left.group(1).lower(), right.group(0).lower()) in compounds:
        return text + line
    return text[:-1] + line


def _join(lines: list[str], compounds: set[tuple[str, str]] = frozenset()) -> str:
    """One page's lines as paragraphs: a hyphenated word joined (:func:`_hyphen_join`), other breaks a
    space; a blank line stays a paragraph break, and a heading (:func:`_heading`) is a paragraph of its
    own, so that it is never glued to the sentence after it."""
    out = ""
    clean = [" ".join(raw.split()) for raw in lines]
    for i, line in enumerate(clean):
        if not line:
            if out and not out.endswith("\n\n"):
                out = out.rstrip() + "\n\n"
            continue
        prev = out.rsplit("\n\n", 1)[-1]
        nxt = next((x for x in clean[i + 1:] if x), "")
        if _heading(line, prev, nxt):
            out = (out.rstrip() + "\n\n" if out else "") + line + "\n\n"
        elif (joined := _hyphen_join(out, line, compounds)) is not None:
            out = joined
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
    work = [r for r in running if not r.startswith(_NUMBERED_MARK)]  # a chapter's running head names no work
    if not title and work:  # a running header names the work ("THE SIEGE OF VICKSBURG. 49")
        heads = [x for _, ls in kept for x in ls[:_EDGE] if _is_running(x, work[:1])]
        shapes = [_shape(x) for x in heads]
        best = max(set(shapes), key=shapes.count) if shapes else ""  # the spelling most pages agree on
        head = next((x for x in heads if _shape(x) == best), "")
        head = " ".join(re.sub(r"^\s*\d+\s+|\s+\d+\s*$", "", head).split())
        title = head if _looks_like_title(head) else ""
    text, spans = "", []
    refs: dict[str, Any] | None = None
    in_refs = False
    compounds = _compounds(lines for _, lines in kept)
    for k, (n, lines) in enumerate(kept):
        lines = _strip_edges(lines, running)
        if not title and k == 0 and lines and _looks_like_title(lines[0]):
            title = " ".join(lines[0].split())  # a paper's first line is its title
        if in_refs:
            lines, in_refs = _after_references(lines, refs, n)
        elif refs is None and k >= len(kept) // 2:  # a reference list starts in the document's second half
            at = next((j for j, x in enumerate(lines) if _REFS.match(x) and _entry_follows(lines, j, kept[k + 1:])), None)
            if at is not None:
                refs = {"page": n, "chars": 0}
                tail, in_refs = _after_references(lines[at:], refs, n)
                lines = lines[:at] + ([""] + tail if tail else [])
        body = _join(lines, compounds)
        if body:
            joined = _hyphen_join(text, body, compounds)
            if joined is not None:  # a word hyphenated across the page break: its end starts this page
                spans[-1][2] = len(joined) - len(body)
                text = joined[:len(joined) - len(body)]
            elif text and text[-1] not in _ENDS and body[:1].islower():
                text += " "  # a sentence that runs on over the page break stays one sentence
            elif text:
                text += "\n\n"
            spans.append([n, len(text), len(text) + len(body)])
            text += body
    meta = dict(metadata or {})
    meta.update(pages=spans, page_count=len(texts))
    notes = []
    if empty:
        notes.append(f"{where}: no text layer on page(s) {_ranges(empty)} (scanned?): skipped")
    if refs is not None:
        meta["references"] = refs
    return SourceDoc(id=doc_id, title=title, text=text, metadata=meta, path=path, size=size, notes=notes)


def _entry_follows(lines: list[str], at: int, later: Sequence[tuple[int, list[str]]]) -> bool:
    """Whether the first line after a "References" heading (on this page or the next) starts a
    reference entry ("[1] ...", "1. A. Author", "Author, A.", "Author A. N., 2013") or names a work (a
    URL, a DOI, a year): a subsection called "References" that goes on in prose is not the list."""
    after = [x for x in lines[at + 1:] if x.strip()] or [x for _, ls in later[:1] for x in ls if x.strip()]
    return bool(after) and bool(_ENTRY.match(after[0]) or _CITED_WORK.search(after[0]))


def _after_references(lines: list[str], refs: dict[str, Any], page: int) -> tuple[list[str], bool]:
    """A page's lines inside the reference list: (the lines from an appendix heading on, whether the
    list goes on after them); the lines left out are counted in ``refs["chars"]``, and the page an
    appendix resumes on is ``refs["resumes"]``."""
    at = next((j for j, x in enumerate(lines) if len(x.split()) <= 12 and _APPENDIX.match(x)), None)
    cut = lines if at is None else lines[:at]
    refs["chars"] += sum(len(x) + 1 for x in cut)
    if at is None:
        return [], True
    refs["resumes"] = page
    return lines[at:], False


_ENDS = '.!?:;"\u201d\u2019)]'
_JUNK_TITLE = re.compile(r"(?i)^(untitled|microsoft word\b|binder\d*\b)|\.(pdf|docx?|tex|dvi|ps|indd|rtf)$")


def _looks_like_title(line: str) -> bool:
    t = " ".join(line.split())
    return 3 <= len(t) <= 150 and len(t.split()) <= 20 and not t.endswith((",", ";", "-")) and not t[:1].islower()


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


def read_pdf(path: str | Path, doc_id: str | None = None, reader: str | None = None) -> SourceDoc | BadLine:
    """A PDF file as one document (id: ``doc_id`` or the file name; title: the PDF's own title, else its
    first line, else the file name); a file the reader cannot read, an encrypted one or one with no text
    is a :class:`BadLine` with the reason. ``reader``: pypdf or pypdfium2 (default:
    ``$CITEGRAPH_PDF_READER``, else pypdf)."""
    p = Path(path)
    size = p.stat().st_size
    with p.open("rb") as f:
        head = f.read(1024)
    if b"%PDF-" not in head:
        kind = "HTML" if head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")) else "no %PDF header"
        return BadLine(str(p), 0, f"not a PDF ({kind})", size)
    got = _reader(reader)(p)
    if isinstance(got, str):
        return BadLine(str(p), 0, got, size)
    pages, title = got
    if _JUNK_TITLE.search(title):  # a file name or an editor's placeholder, not the work's title
        title = ""
    if not pages:
        return BadLine(str(p), 0, "a PDF with no pages", size)
    doc = pages_to_doc(doc_id or p.name, title, pages, path=str(p), size=size, metadata={"path": doc_id or p.name})
    if isinstance(doc, SourceDoc) and not doc.title:
        doc.title = p.stem
    return doc


def page_texts(path: str | Path, reader: str | None = None) -> list[tuple[int, str]]:
    """(page number, text) of every page as the reader gives it, before the cleanup (what a naive reader
    gets; ``reader`` as in :func:`read_pdf`); an unreadable file is an InputError with the reason."""
    got = _reader(reader)(Path(path))
    if isinstance(got, str):
        raise InputError(f"{path}: {got}")
    return got[0]


def _reader(reader: str | None) -> Any:
    return _pdfium_pages if (reader or setting("pdf_reader")) == "pypdfium2" else _pypdf_pages


def _pypdf_pages(p: Path) -> tuple[list[tuple[int, str]], str] | str:
    """(page number, text) of every page and the PDF's title, with pypdf; or why it cannot be read."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    quiet = logging.getLogger("pypdf")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # pypdf's repair notes ("EOF marker not found"): the reason below says it
    try:
        reader = PdfReader(str(p))
        if reader.is_encrypted and not reader.decrypt(""):
            return "encrypted PDF (a password is needed to read it)"
        pages = [(n, page.extract_text() or "") for n, page in enumerate(reader.pages, 1)]
        return pages, str((reader.metadata or {}).get("/Title") or "").strip()
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as e:
        return _unreadable(e)
    finally:
        quiet.setLevel(level)


def _unreadable(e: Exception) -> str:
    """The reason a reader gives for a file it cannot read, in one line."""
    return f"not a readable PDF ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else 'no detail'})"


def _pdfium_pages(p: Path) -> tuple[list[tuple[int, str]], str] | str:
    """The same with pypdfium2 (PDFium): its line ends made newlines, and the hyphen it marks where it
    broke a word at a line end (U+FFFE, with or without that line end) a hyphen and a newline, so the
    cleanup treats both readers' text alike."""
    try:
        import pypdfium2 as pdfium  # the optional pdfium extra
    except ImportError:
        raise InputError("CITEGRAPH_PDF_READER=pypdfium2 needs pypdfium2: pip install 'citegraph[pdfium]'") from None
    try:
        doc = pdfium.PdfDocument(str(p))
    except pdfium.PdfiumError as e:
        if "password" in str(e).lower():
            return "encrypted PDF (a password is needed to read it)"
        return _unreadable(e)
    try:
        pages = []
        for n in range(len(doc)):
            textpage = doc[n].get_textpage()
            text = textpage.get_text_range()
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            pages.append((n + 1, re.sub("\ufffe\n?", "-\n", text)))
        return pages, str(doc.get_metadata_dict().get("Title") or "").strip()
    finally:
        doc.close()


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


def pages_within(pages: Sequence[Sequence[int]], start: int, end: int) -> list[list[int]]:
    """The entries of ``pages`` that overlap ``[start, end)``, clipped to it (what a chunk keeps)."""
    return [[int(p), max(s, start), min(e, end)] for p, s, e in pages if s < end and e > start]
