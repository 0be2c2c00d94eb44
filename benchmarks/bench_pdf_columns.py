"""Two-column papers: how many of a paper's sentences come out of its PDF whole.

A citation quotes an evidence sentence and names its page, so what matters of a PDF's text is that each
sentence of the paper is there in one piece: not cut by a column or page break, a footnote, a running
header or a hyphen. The truth is the paper's LaTeX source (converted to text with pylatexenc); its
sentences of 8 words or more that the conversion left clean (no dropped macro) are looked up in each
extractor's text, both case-folded with every run of non-alphanumerics as one space (ligatures
unfolded). Extractors:

- ``pypdf``: pypdf's page text joined with line breaks (what a naive reader gets);
- ``citegraph (pypdf)``: ``citegraph.corpus.pdf.read_pdf`` (pypdf's page text with the cleanup: hyphens
  joined across lines and pages, running headers and page numbers dropped, the reference list kept apart);
- ``pypdfium2`` and ``citegraph (pypdfium2)``: the same with PDFium's page text (the ``pdfium`` extra).

The papers: LaTeX class samples with their sources, such as the ACM ``sample-sigconf`` that Debian's
``texlive-publishers-doc`` ships (``apt-get download texlive-publishers-doc``, then ``dpkg-deb -x``).
Needs ``pip install pylatexenc`` (and ``pypdfium2`` for its rows); neither is a citegraph dependency.

    python benchmarks/bench_pdf_columns.py PAPER.pdf:PAPER.tex[.gz] [...] [--misses 5]
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citegraph.corpus.pdf import read_pdf  # noqa: E402
from citegraph.tools.sentences import split_sentences  # noqa: E402

MIN_WORDS = 8


def norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


def truth_sentences(tex_path: Path) -> list[str]:
    """The source's body sentences of MIN_WORDS words or more that converted cleanly."""
    from pylatexenc.latex2text import LatexNodes2Text

    raw = tex_path.read_bytes()
    src = (gzip.decompress(raw) if tex_path.suffix == ".gz" else raw).decode("utf-8", "replace")
    # the logos and verbatim words the converter would drop, as the PDF prints them
    src = re.sub(r"\\verb(.)(.*?)\1", lambda m: m.group(2), src)
    src = re.sub(r"\\LaTeX\b(\{\})?", "LATEX", src)
    src = re.sub(r"\\TeX\b(\{\})?", "TEX", src)
    src = re.sub(r"\\Description(\[[^\]]*\])?\{[^{}]*\}", "", src)  # a figure's alt text: not printed
    start = src.find("\\begin{abstract}")
    start = start if start >= 0 else src.find("\\begin{document}")
    end = src.find("\\end{document}")
    text = LatexNodes2Text().latex_to_text(src[max(start, 0):end if end > 0 else None])
    out = []
    for para in re.split(r"\n\s*\n", text):
        para = re.sub(r"[ \t]*\n[ \t]*", " ", para).strip()
        if not para or "<" in para or "\\" in para:  # XML (CCS concepts), graphics placeholders, residue
            continue
        for s in split_sentences(para):
            # two spaces, an empty pair of quotes or brackets: a macro (a citation, a reference) left
            # nothing there; square brackets: a list's or a date line's options
            # ... and math, which the converter writes otherwise than the PDF prints it
            # (a space before a comma or stop, "#1", "§": a macro left nothing, or its parameter)
            if len(s.split()) >= MIN_WORDS and not re.search(r"  |\u201c\u201d|\(\s*\)|\[|~|[_^=→∞$#§]|\s[,.;:)]", s):
                out.append(" ".join(s.split()))
    return out


def extractors() -> dict:
    from pypdf import PdfReader

    out = {
        "pypdf": lambda p: "\n".join(page.extract_text() or "" for page in PdfReader(str(p)).pages),
        "citegraph (pypdf)": lambda p: read_pdf(p, reader="pypdf").text,
    }
    try:
        import pypdfium2 as pdfium
    except ImportError:
        return out

    def pdfium_text(path: Path) -> str:
        doc = pdfium.PdfDocument(str(path))
        try:
            return "\n".join(doc[n].get_textpage().get_text_range() for n in range(len(doc)))
        finally:
            doc.close()

    out["pypdfium2"] = pdfium_text
    out["citegraph (pypdfium2)"] = lambda p: read_pdf(p, reader="pypdfium2").text
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("papers", nargs="+", help="PDF:TEX pairs")
    ap.add_argument("--misses", type=int, default=3, help="print this many sentences each extractor missed")
    args = ap.parse_args(argv)
    ex = extractors()
    totals = {name: [0, 0, 0.0, 0] for name in ex}  # found, sentences, seconds, pages
    print("| paper | pages | sentences | " + " | ".join(f"{n} whole" for n in ex) + " |")
    print("|---|---|---|" + "---|" * len(ex))
    misses: dict[str, list[str]] = {n: [] for n in ex}
    for pair in args.papers:
        pdf, _, tex = pair.partition(":")
        pdf_path, tex_path = Path(pdf), Path(tex)
        truth = truth_sentences(tex_path)
        from pypdf import PdfReader

        pages = len(PdfReader(str(pdf_path)).pages)
        cells = []
        for name, fn in ex.items():
            t0 = time.perf_counter()
            text = norm(fn(pdf_path))
            secs = time.perf_counter() - t0
            found = [norm(s) in text for s in truth]
            totals[name][0] += sum(found)
            totals[name][1] += len(truth)
            totals[name][2] += secs
            totals[name][3] += pages
            misses[name] += [f"{pdf_path.name}: {s}" for s, ok in zip(truth, found) if not ok]
            cells.append(f"{sum(found)} ({100 * sum(found) / max(len(truth), 1):.1f}%)")
        print(f"| {pdf_path.name} | {pages} | {len(truth)} | " + " | ".join(cells) + " |")
    print("| all | " + str(totals["pypdf"][3]) + " | " + str(totals["pypdf"][1]) + " | " + " | ".join(
        f"{v[0]} ({100 * v[0] / max(v[1], 1):.1f}%)" for v in totals.values()) + " |")
    print("\npages/s: " + ", ".join(f"{n} {v[3] / v[2]:.0f}" for n, v in totals.items()))
    for name, missed in misses.items():
        if args.misses and missed:
            print(f"\n{name}: {len(missed)} sentences not found whole; the first {min(args.misses, len(missed))}:")
            for m in missed[:args.misses]:
                print("  -", m[:220])
    return 0


if __name__ == "__main__":
    sys.exit(main())
