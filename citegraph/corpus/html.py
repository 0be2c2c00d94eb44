"""HTML and Markdown documents with their structure: the title, the headings (as paragraphs of their
own, with where each starts in the text), and the page's text without scripts, styles or navigation.

:func:`read_html` parses with the standard library's ``html.parser`` (no browser, no network): block
elements (paragraphs, list items, table rows, headings, ``<br>``) end a paragraph, ``<script>``,
``<style>``, ``<nav>``, ``<header>``, ``<footer>``, ``<aside>``, ``<form>`` and ``<noscript>`` are left
out, and the title is ``<title>``, else the first ``<h1>``, else the file name.
:func:`markdown_title_and_headings` gives a Markdown file's first ``#`` heading as its title and every
ATX heading (``#`` ... ``######``) with its offset.

``metadata["headings"]`` is ``[[level, heading, start], ...]`` in both cases.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from citegraph.corpus.records import BadLine, SourceDoc

_SKIP = {"script", "style", "nav", "header", "footer", "aside", "form", "noscript", "template", "svg"}
_BLOCK = {"p", "div", "section", "article", "main", "li", "ul", "ol", "tr", "table", "blockquote", "pre", "dd", "dt",
          "figcaption", "h1", "h2", "h3", "h4", "h5", "h6", "br", "hr", "title"}
_HEADING = re.compile(r"^h([1-6])$")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[tuple[int, str]] = []  # (heading level or 0, text)
        self.title = ""
        self._buf: list[str] = []
        self._skip = 0
        self._level = 0
        self._in_title = False

    def _flush(self) -> None:
        text = " ".join("".join(self._buf).split())
        if text:
            self.paragraphs.append((self._level, text))
        self._buf = []

    def handle_starttag(self, tag, attrs):
        if tag in _SKIP:
            self._skip += 1
            return
        if tag == "title":
            self._in_title = True
            return
        if tag in _BLOCK:
            self._flush()
            m = _HEADING.match(tag)
            self._level = int(m.group(1)) if m else 0

    def handle_endtag(self, tag):
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag == "title":
            self._in_title = False
            return
        if tag in _BLOCK:
            self._flush()
            self._level = 0

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif not self._skip:
            self._buf.append(data)

    def close(self):
        super().close()
        self._flush()


def read_html(path: str | Path, doc_id: str | None = None) -> SourceDoc | BadLine:
    """An HTML file as one document (see the module doc); a file that is not UTF-8 (or Latin-1 declared)
    or holds no text is a :class:`BadLine`."""
    p = Path(path)
    size = p.stat().st_size
    raw = p.read_bytes()
    try:
        html = raw.decode("utf-8")
    except UnicodeDecodeError:
        head = raw[:2048].lower()
        if b"charset=iso-8859-1" in head or b"charset=windows-1252" in head or b'charset="iso-8859-1"' in head:
            html = raw.decode("cp1252", errors="replace")
        else:
            return BadLine(str(p), 0, "not UTF-8 HTML (declare its charset, or convert it)", size)
    parser = _Text()
    parser.feed(html)
    parser.close()
    text, headings = "", []
    for level, para in parser.paragraphs:
        if text:
            text += "\n\n"
        if level:
            headings.append([level, para, len(text)])
        text += para
    if not text.strip():
        return BadLine(str(p), 0, "no text in this HTML page", size)
    title = " ".join(parser.title.split()) or next((h for lv, h, _ in headings if lv == 1), "") or p.stem
    rel = doc_id or p.name
    return SourceDoc(id=rel, title=title, text=text, metadata={"path": rel, "headings": headings}, path=str(p), size=size)


_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def markdown_title_and_headings(text: str) -> tuple[str, list[list]]:
    """A Markdown text's first ``# `` heading (its title, "" without one) and its ATX headings
    ``[[level, heading, start], ...]`` (headings inside fenced code blocks are not headings)."""
    fenced = [m.span() for m in re.finditer(r"^```.*?^```", text, re.M | re.S)]
    headings = [[len(m.group(1)), m.group(2), m.start()] for m in _ATX.finditer(text)
                if not any(a <= m.start() < b for a, b in fenced)]
    title = next((h for lv, h, _ in headings if lv == 1), "")
    return title, headings
