#!/usr/bin/env python
"""Real PDFs in: how fast they are read, what the cleanup un-mangles, whether a citation's page and span
point at the very sentence, and whether retrieval finds the page that answers a hand-written question.

    python benchmarks/bench_documents.py [--pdf FILE ...] [--sentences 40] [--questions FILE]

Data: by default two PDFs Debian ships with its packages (present where `shared-mime-info` and
`libtasn1-doc` are installed: the freedesktop Shared MIME-info spec, 17 pages, and the GNU Libtasn1 manual,
36 pages; read in place, never committed), and the questions in benchmarks/data/document_questions.json,
written by hand against them, each with the page that answers it. Prints:

1. extraction: pages, seconds, pages/s of ``read_pdf`` per file;
2. mangling before and after the cleanup, against the same pages joined naively (each page's lines joined
   with spaces): words broken at a line-end hyphen, running header/footer lines left at a page's top or
   bottom (a line among a page's first or last two whose words, digits aside, recur there on 3 pages at
   least), numbered
   headings glued to the sentence after them;
3. citations: N sentences per file, evenly spaced (8-40 words), checked by ``cite`` over an index of the
   files: the share whose evidence span is exact (the document's text at ``start:end`` is the evidence
   text, and that text, whitespace and hyphens aside, starts on the reported page of the PDF as the reader reads
   it, running on to the next page at most), and, where the evidence is the checked sentence itself,
   whether its page is a page that sentence is on;
4. retrieval: Recall@5 of the questions (hybrid search; a hit counts when its chunk's pages hold the
   answer's page), with a 95% Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PDFS = ["/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf", "/usr/share/doc/libtasn1-doc/libtasn1.pdf"]


def squash(s: str) -> str:
    """Whitespace and hyphens aside, case-folded, ligatures unfolded (pypdf's page text keeps "ﬁ")."""
    return re.sub(r"[\s\-\u00ad]+", "", unicodedata.normalize("NFKC", s)).lower()


def wilson(k: int, n: int) -> tuple[float, float]:
    if not n:
        return (0.0, 0.0)
    z, p = 1.96, k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def mangling(raw_pages: list[str], text: str, spans: list, verbose: bool = False) -> dict[str, tuple[int, int]]:
    """(naive, cleaned) counts of three kinds of damage."""
    from citegraph.corpus import pdf

    lines_per_page = [p.splitlines() for p in raw_pages]
    naive = " ".join(" ".join(" ".join(x.split()) for x in lines) for lines in lines_per_page)
    broken_n = broken_c = 0
    for lines in lines_per_page:
        for a, b in zip(lines, lines[1:]):
            a, b = a.rstrip(), b.strip()
            m, n = re.search(r"(\w+)-$", a), re.match(r"([a-z]\w*)", b)
            if m and n:
                frag = f"{m.group(1)}- {n.group(1)}"
                broken_n += frag in naive
                broken_c += frag in text
    # independent of the reader's own detector: a line among a page's first or last two whose words (digits
    # aside) are those of an edge line of at least two other pages
    edges = [[" ".join(x.split()) for x in dict.fromkeys(lines[:2] + lines[-2:]) if len(pdf._shape(x).split()) >= 2]
             for lines in lines_per_page]
    count: dict[str, int] = {}
    for e in edges:
        for shape in {pdf._shape(x) for x in e}:
            count[shape] = count.get(shape, 0) + 1
    edge = [(n, x) for n, e in enumerate(edges, 1) for x in e if count[pdf._shape(x)] >= 3]
    run_n = sum(x in naive for _, x in edge)
    # after: still at the top or the bottom of its page's cleaned text (the same words inside a sentence
    # are the text's own: "version 0.21 of the Shared MIME-info Database specification")
    bodies = {n: " ".join(text[a:b].split()) for n, a, b in spans}
    left = [(n, x) for n, x in edge if bodies.get(n, "").startswith(x) or bodies.get(n, "").endswith(x)]
    run_c = len(left)
    if verbose:
        for n, x in left[:5]:
            print(f"     still at an edge of page {n}: {x!r}")
    heads = []
    for lines in lines_per_page:
        clean = [" ".join(x.split()) for x in lines]
        for i, x in enumerate(clean):
            nxt = next((y for y in clean[i + 1:] if y), "")
            if x and pdf._NUMBERED_HEAD.match(x) and len(x.split()) <= 12 and nxt[:1].isupper():
                heads.append((x, nxt.split()[0]))
    glued_n = sum(f"{h} {w}" in naive for h, w in heads)
    glued_c = sum(f"{h} {w}" in text for h, w in heads)
    return {"words broken at a line-end hyphen": (broken_n, broken_c),
            "running header/footer lines at a page's edge": (run_n, run_c),
            "numbered headings glued to the next sentence": (glued_n, glued_c)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdf", action="append", default=None)
    ap.add_argument("--sentences", type=int, default=40, help="sentences per file checked by cite")
    ap.add_argument("--questions", default=str(REPO / "benchmarks" / "data" / "document_questions.json"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))

    from citegraph.corpus import build_index, open_corpus
    from citegraph.corpus.pdf import page_texts, read_pdf
    from citegraph.graphs.registry import entry
    from citegraph.run.datasets import Item
    from citegraph.run.runner import answer_item
    from citegraph.state.answer import page_of
    from citegraph.tools.sentences import split_sentences
    from citegraph.settings import setting

    pdfs = [Path(p) for p in (args.pdf or DEFAULT_PDFS) if Path(p).is_file()]
    if not pdfs:
        print("no PDFs found (Debian: apt-get install shared-mime-info libtasn1-doc, or give --pdf)", file=sys.stderr)
        return 2
    import subprocess

    commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    print(f"commit {commit}; files: {', '.join(p.name for p in pdfs)}\n")

    print(f"1. extraction (read_pdf: {setting('pdf_reader')} (CITEGRAPH_PDF_READER), then the cleanup)")
    docs, raw = {}, {}
    for p in pdfs:
        t0 = time.perf_counter()
        d = read_pdf(p)
        secs = time.perf_counter() - t0
        raw[p.name] = [text for _, text in page_texts(p)]  # as the reader in use gives them
        docs[p.name] = d
        n = d.metadata["page_count"]
        print(f"   {p.name:40s} {n:3d} pages {secs:6.2f} s  {n / secs:6.1f} pages/s  {len(d.text):7,d} chars"
              + (f"  notes: {d.notes}" if d.notes else ""))

    print("\n2. mangling: naive join -> cleaned")
    totals: dict[str, list[int]] = {}
    for name, d in docs.items():
        for k, (a, b) in mangling(raw[name], d.text, d.metadata["pages"], verbose=True).items():
            totals.setdefault(k, [0, 0])
            totals[k][0] += a
            totals[k][1] += b
    for k, (a, b) in totals.items():
        print(f"   {k:48s} {a:4d} -> {b:4d}")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "pdfs"
        folder.mkdir()
        for p in pdfs:
            shutil.copy(p, folder / p.name)
        t0 = time.perf_counter()
        build_index(folder, Path(tmp) / "idx")
        print(f"\n   index built in {time.perf_counter() - t0:.1f} s")
        idx = str(Path(tmp) / "idx")

        print(f"\n3. citations: {args.sentences} sentences per file, `cite` over the index")
        e = entry("cite")
        ctx = e.make_context(corpus=idx)
        graph = e.build()
        exact = on_page = own = itself = n_ev = n = 0
        misses: list[str] = []
        for name, d in docs.items():
            spans = d.metadata["pages"]
            sents = [s for s in split_sentences(d.text) if 8 <= len(s.split()) <= 40 and "•" not in s]
            step = max(1, len(sents) // args.sentences)
            picked = sents[::step][: args.sentences]
            ans, _ = answer_item(graph, Item(id=name, question="", documents=[], inputs={"answer_text": " ".join(picked)}), ctx)
            for s in ans.sentences:
                n += 1
                # the pages the sentence is on (a manual repeats some: "Returns: ASN1_SUCCESS on success.")
                gold_pages = {page_of(spans, m.start()) for m in re.finditer(re.escape(s.text), d.text)}
                for ev in s.evidence[:1]:
                    n_ev += 1
                    src = ans.documents[ev.doc - 1]
                    src_id = (src.metadata or {}).get("doc_id")
                    full = docs.get(src_id) if src_id in docs else None
                    if full is not None and ev.start is not None and full.text[ev.start:ev.end] == ev.text:
                        exact += 1
                    if full is not None and ev.page and starts_on(squash(ev.text), reader_pages_of(raw[src_id], ev.page),
                                                                  reader_pages_of(raw[src_id], ev.page + 1)):
                        on_page += 1
                    elif len(misses) < 3:
                        misses.append(f"not on its page: p. {ev.page} of {src_id}: {ev.text[:90]!r}")
                    if src_id == name and squash(ev.text) == squash(s.text) and gold_pages:
                        itself += 1
                        own += ev.page in gold_pages
                        if ev.page not in gold_pages and len(misses) < 6:
                            misses.append(f"the sentence is on p. {sorted(gold_pages)}, its evidence says p. {ev.page} "
                                          f"(evidence at {ev.start} in {src_id}): {s.text[:70]!r}")
        print(f"   sentences {n}, with evidence {n_ev}")
        print(f"   evidence span exact in the document's text:  {exact}/{n_ev} ({100 * exact / max(n_ev, 1):.1f}%)")
        lo, hi = wilson(on_page, n_ev)
        print(f"   evidence text on the reported PDF page:      {on_page}/{n_ev} ({100 * on_page / max(n_ev, 1):.1f}%, "
              f"95% CI {100 * lo:.1f}-{100 * hi:.1f})")
        print(f"   evidence is the checked sentence itself:     {itself}/{n} (else another sentence the verifier prefers, "
              "or a sentence re-split so that its text is not verbatim in the document)")
        lo, hi = wilson(own, itself)
        print(f"   ... and its page is the sentence's own page: {own}/{itself} ({100 * own / max(itself, 1):.1f}%, "
              f"95% CI {100 * lo:.1f}-{100 * hi:.1f})")
        for m in misses:
            print(f"     {m}")

        qpath = Path(args.questions)
        if qpath.is_file():
            qs = [q for q in json.loads(qpath.read_text(encoding="utf-8")) if q["pdf"] in docs]
            corpus = open_corpus(idx)
            hit = 0
            for q in qs:
                hits = corpus.search(q["question"], k=5)
                pages = {pg for h in hits if h.chunk.doc_id == q["pdf"] for pg, _, _ in h.chunk.metadata.get("pages", [])}
                hit += q["page"] in pages
            lo, hi = wilson(hit, len(qs))
            print(f"\n4. retrieval: Recall@5 {hit}/{len(qs)} = {hit / max(len(qs), 1):.2f} (95% CI {lo:.2f}-{hi:.2f}), hybrid, "
                  f"a hit = a top-5 chunk holding the answer's page")
    return 0


def starts_on(text: str, page: str, after: str) -> bool:
    """``text`` is on ``page``, or starts there and runs on to the next page (past a footer and a header)."""
    return text in page or any(text[:k] in page and text[k:] in after for k in range(len(text) - 1, 9, -1))


def reader_pages_of(pages: list[str], page: int) -> str:
    return squash(pages[page - 1]) if 0 < page <= len(pages) else ""


if __name__ == "__main__":
    raise SystemExit(main())
