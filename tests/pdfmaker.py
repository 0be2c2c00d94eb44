"""Writes small real PDF files for the tests (no PDF writer ships here): pages of text lines placed at
(x, y) in Helvetica, or a page with a drawing and no text layer (what a scanned page looks like to a
text extractor). pypdf and every other reader parse them as they would any PDF."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

Line = tuple[float, float, str]  # x, y (points from the bottom left), text


def _escape(text: str) -> bytes:
    raw = text.encode("cp1252")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def write_pdf(path: str | Path, pages: Sequence[Sequence[Line] | None], title: str = "", size: float = 10) -> Path:
    """``pages``: per page its lines, or None for a page with no text (a filled rectangle only)."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pages_id = len(objects) + 2 * len(pages) + (1 if title else 0) + 1  # the object written after them
    kids = []
    for lines in pages:
        if lines is None:
            stream = b"0.5 g 72 72 400 600 re f"
        else:
            stream = b"\n".join(b"BT /F1 %g Tf %g %g Td (%s) Tj ET" % (size, x, y, _escape(t)) for x, y, t in lines)
        content = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                        b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (pages_id, content, font)))
    info = add(b"<< /Title (%s) >>" % _escape(title)) if title else None
    assert len(objects) + 1 == pages_id
    add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids)))
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, catalog, (b" /Info %d 0 R" % info) if info else b"", xref)
    Path(path).write_bytes(bytes(out))
    return Path(path)


def paper_pages(body: Sequence[Sequence[str]], header: str = "Journal of Tests, Vol. 3", top: float = 750,
                step: float = 14) -> list[list[Line]]:
    """Pages of a paper: a running header on top, the body lines, a page number at the bottom."""
    pages = []
    for n, lines in enumerate(body, 1):
        page = [(72, top, header)] + [(72, top - 30 - k * step, t) for k, t in enumerate(lines)] + [(300, 40, str(n))]
        pages.append(page)
    return pages
