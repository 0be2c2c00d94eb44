"""PDFs in: real PDF files (tests/pdfmaker.py) read with pypdf, cleaned, chunked with their pages, and
citations that name the page and the character span of their evidence in the original document."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pdfmaker import paper_pages, write_pdf  # noqa: E402

from citegraph.cli import main  # noqa: E402
from citegraph.corpus.pdf import from_langchain, pages_to_doc, read_pdf  # noqa: E402
from citegraph.corpus.sources import BadLine, SourceDoc, iter_corpus  # noqa: E402
from citegraph.state.answer import AttributedAnswer, CitedSentence, Document, Evidence, page_of  # noqa: E402

FACTS = ["The Kestrel survey counted 412 nesting pairs in 2019.", "Nesting success was highest on the northern cliffs.",
         "Rats were removed from the island in 2015.", "The colony grew by a third after the rats were removed.",
         "Puffins returned to the eastern slope in 2021.", "Storm petrels were heard at night but never seen."]
BIRDS = ["gulls", "terns", "shags", "fulmars", "razorbills", "guillemots", "eiders", "skuas"]


def survey_pdf(path: Path, scanned_last: bool = False) -> Path:
    """Six pages of a report: a running header, a page number, one fact in the middle of each page, a word
    hyphenated across a line (page 2) and across a page break (pages 4-5), a reference list on page 6."""
    body = []
    for pg in range(6):
        lines = [f"On day {pg * 7 + k} the team logged {BIRDS[(pg + k) % 8]} along transect {k + pg}." for k in range(5)]
        lines.insert(2, FACTS[pg])
        body.append(lines)
    body[1] += ["The birds were ringed by volun-", "teers from the mainland."]
    body[3] += ["Counts were checked against the na-"]
    body[4].insert(0, "tional register each autumn.")
    body[5] += ["References", "[1] B. Smith. Seabirds of the north. Oxford, 2010."]
    pages = paper_pages(body, header="Island Ecology Reports 12")
    return write_pdf(path, pages + ([None] if scanned_last else []), title="The Kestrel Island Survey")


def test_pdf_text_is_clean_and_every_page_is_mapped(tmp_path):
    doc = read_pdf(survey_pdf(tmp_path / "survey.pdf", scanned_last=True))
    assert isinstance(doc, SourceDoc) and doc.title == "The Kestrel Island Survey" and doc.id == "survey.pdf"
    text = doc.text
    assert "Island Ecology Reports" not in text  # the running header
    assert "\n\n1\n" not in text and not text.rstrip().endswith("6")  # no page number glued into a sentence
    assert "ringed by volunteers from the mainland." in text  # hyphenation across a line
    assert "against the national register each autumn." in text  # ... and across a page break
    assert "Seabirds of the north" not in text and doc.metadata["references"]["page"] == 6  # kept apart
    pages = doc.metadata["pages"]
    assert [p for p, _, _ in pages] == [1, 2, 3, 4, 5, 6] and doc.metadata["page_count"] == 7
    for (n, a, b), fact in zip(pages, FACTS):
        assert fact in text[a:b], n  # each page's span holds that page's text
        assert page_of(pages, text.index(fact)) == n
    assert doc.notes == [f"{tmp_path / 'survey.pdf'}: no text layer on page(s) 7 (scanned?): skipped"]


@pytest.mark.parametrize("reader", ["pypdf", "pypdfium2"])
def test_both_pdf_readers_give_the_same_clean_text_and_pages(tmp_path, monkeypatch, reader):
    """CITEGRAPH_PDF_READER picks what reads the page text; PDFium's line ends and its own mark for a
    hyphen at a line end (U+FFFE) reach the cleanup as pypdf's do, so the text is the same."""
    if reader == "pypdfium2":
        pytest.importorskip("pypdfium2", reason="the pdfium extra is not installed")
    monkeypatch.setenv("CITEGRAPH_PDF_READER", reader)
    doc = read_pdf(survey_pdf(tmp_path / "survey.pdf"))
    assert isinstance(doc, SourceDoc) and doc.title == "The Kestrel Island Survey"
    assert "Island Ecology Reports" not in doc.text and "Seabirds of the north" not in doc.text
    assert "ringed by volunteers from the mainland." in doc.text
    assert "against the national register each autumn." in doc.text
    pages = doc.metadata["pages"]
    assert [p for p, _, _ in pages] == [1, 2, 3, 4, 5, 6]
    assert all(page_of(pages, doc.text.index(fact)) == n for n, fact in enumerate(FACTS, 1))
    assert doc.text == read_pdf(tmp_path / "survey.pdf", reader="pypdf").text


#: sentences of the JACoW paper (tests/data/jacow_a4.pdf, two columns) and the page each was read off,
#: checked by eye on the rendered pages; two of them are broken at a line-end hyphen in the PDF ("coau-thor")
#: or at a dash ("[1–" / "4, 10]"), the last one follows a subsection heading "References"
JACOW = [(3, "Multiple citations should appear in the same bracket [3, 4] and with ranges where appropriate [1–4, 10]."),
         (4, "Check that there are no page numbers."),
         (7, "The preference for ‘et al.’ takes precedence when the number of authors becomes large (e.g., >6)."),
         (10, "When there is more than one author, the submitting author should be first, followed by the coauthor."),
         (10, "Please also ensure that references in the text are cited in sequential order.")]


@pytest.mark.parametrize("reader", ["pypdf", "pypdfium2"])
def test_a_real_two_column_paper_keeps_its_sentences_whole_on_their_pages(reader):
    if reader == "pypdfium2":
        pytest.importorskip("pypdfium2", reason="the pdfium extra is not installed")
    doc = read_pdf(Path(__file__).parent / "data" / "jacow_a4.pdf", reader=reader)
    assert isinstance(doc, SourceDoc) and doc.metadata["page_count"] == 10
    for page, sentence in JACOW:
        at = doc.text.find(sentence)
        assert at >= 0 and page_of(doc.metadata["pages"], at) == page, (page, sentence)
    assert "references" not in doc.metadata  # its "References" subsection is prose, not a reference list


def test_the_pdfium_reader_without_its_package_is_one_line(tmp_path, monkeypatch):
    from citegraph.errors import InputError

    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # as if the extra were not installed
    with pytest.raises(InputError, match=r"^CITEGRAPH_PDF_READER=pypdfium2 needs pypdfium2: pip install 'citegraph\[pdfium\]'$"):
        read_pdf(survey_pdf(tmp_path / "survey.pdf"), reader="pypdfium2")
    monkeypatch.setenv("CITEGRAPH_PDF_READER", "pdfminer")
    with pytest.raises(InputError, match=r"^CITEGRAPH_PDF_READER='pdfminer': expected one of pypdf, pypdfium2$"):
        read_pdf(tmp_path / "survey.pdf")


def test_an_appendix_after_the_references_is_kept_and_a_compound_keeps_its_hyphen():
    """The reference list is left out up to an appendix heading, not to the end; a word broken at a
    hyphen that the document writes with one elsewhere keeps it, any other is joined."""
    pages = [(1, "Results\nThe final camera-ready copy was sent in May.\nThe draft went out as a camera-\n"
                 "ready version and the infor-\nmation was complete."),
             (2, "The method needs two passes over the data."),
             (3, "Discussion\nThe second pass is cheaper than the first.\nReferences\n[1] A. Author. A title. 2020."),
             (4, "[2] B. Author. Another title. 2021.\nAPPENDIX A: EXTRA TABLES\nThe appendix lists every run we made.")]
    doc = pages_to_doc("p", "Paper", pages)
    assert "a camera-ready version and the information was complete." in doc.text
    assert "The appendix lists every run we made." in doc.text and "[2] B. Author" not in doc.text
    assert "A title" not in doc.text
    refs = doc.metadata["references"]
    assert refs["page"] == 3 and refs["resumes"] == 4 and refs["chars"] == len("References\n[1] A. Author. A title. 2020.\n"
                                                                             "[2] B. Author. Another title. 2021.\n")
    assert page_of(doc.metadata["pages"], doc.text.index("The appendix lists")) == 4


def test_a_pdf_without_text_or_not_a_pdf_is_a_bad_line_with_the_reason(tmp_path):
    scan = read_pdf(write_pdf(tmp_path / "scan.pdf", [None, None]))
    assert isinstance(scan, BadLine) and "no text layer on any of its 2 page(s)" in scan.reason
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"this is not a PDF at all")
    bad = read_pdf(junk)
    assert isinstance(bad, BadLine) and bad.reason == "not a PDF (no %PDF header)"
    found = list(iter_corpus(tmp_path))  # a folder: each PDF read, each bad one reported
    assert sorted(type(x).__name__ for x in found) == ["BadLine", "BadLine"]


def test_ligatures_and_langchain_page_documents():
    assert pages_to_doc("x", "t", [(1, "The ﬁrst ﬂoor had eﬀective ﬃxtures.")]).text == \
        "The first floor had effective ffixtures."
    from langchain_core.documents import Document as LCDocument

    pages = [LCDocument(page_content=f"Header line\n{FACTS[k]}\n{BIRDS[k]} were counted too.\n{k}",
                        metadata={"source": "r.pdf", "page": k - 1}) for k in (2, 1, 3)]
    pages.append(LCDocument(page_content="A note with no page.", metadata={"source": "note.txt"}))
    docs = from_langchain(pages)
    grouped = next(d for d in docs if d.id == "r.pdf")
    assert [p for p, _, _ in grouped.metadata["pages"]] == [1, 2, 3]  # in page order
    assert "Header line" not in grouped.text and grouped.text.startswith(FACTS[1] + " terns were counted too.")
    assert any(d.text == "A note with no page." for d in docs)


def test_headings_are_paragraphs_of_their_own_not_glued_to_the_next_sentence():
    page = ("The database was merged.\n2. Unified system\nIn discussions about the previous systems, the\n"
            "differences were small.\n2.1. Directory layout\nThere are two requirements.\nAbstract\n"
            "We study towers. The tower in\nParis\nwas built in 1889.")
    text = pages_to_doc("x", "t", [(1, page)]).text
    assert text.split("\n\n") == [
        "The database was merged.", "2. Unified system",
        "In discussions about the previous systems, the differences were small.", "2.1. Directory layout",
        "There are two requirements.", "Abstract", "We study towers. The tower in Paris was built in 1889."]


def test_a_manuals_chapter_running_heads_go_and_its_chapter_titles_stay():
    """A running head that changes with the chapter recurs on fewer than half of the pages: known by its
    page number (another on each page), it goes from three pages on; the chapter's own title stays."""
    body = ["The parser reads definitions.", "Each node holds one element of a structure and its children.",
            "Encoding follows the distinguished rules.", "A tag names the class of a value in two bits.",
            "Lengths above 127 take several bytes.", "Strings may be printable, visible or in UTF-8.",
            "An error code is returned by every function of the library.", "Copying is permitted under the terms below.",
            "Modified versions must carry a distinct title.", "Aggregates of independent works are allowed.",
            "Later versions of the licence may be published."]
    pages = [(1, "Libtasn1\nA manual for the library."), (2, "1 Introduction\n" + body[0])]
    pages += [(n, f"Chapter 2: Function reference {n + 6}\n{body[n]}") for n in range(3, 7)]
    pages += [(7, "Appendix A Copying Information\n" + body[7])]
    pages += [(n, f"Appendix A: Copying Information {n + 6}\n{body[n]}") for n in range(8, 11)]
    doc = pages_to_doc("m", "", pages)
    assert "Function reference" not in doc.text and "Copying Information 1" not in doc.text
    assert "Appendix A Copying Information" in doc.text and doc.title == "Libtasn1"
    assert all(b in doc.text for b in body[3:7] + body[8:11])


def test_evidence_carries_the_page_and_span_in_the_original_document():
    text = "Alpha beta gamma. The colony grew by a third. Delta epsilon."
    whole = Document(id="r", title="R", text=text, metadata={"pages": [[1, 0, 17], [2, 18, len(text)]]})
    chunk = Document(id="r#1", title="R", text="The colony grew by a third.",
                     metadata={"chunk_id": "r#1", "start": 18, "end": 45, "source": {"pages": [[2, 18, 45]]}})
    inline = Document(id="n", text="Plain text with no pages. The colony grew by a third.")
    ans = AttributedAnswer(documents=[whole, chunk, inline], sentences=[CitedSentence(
        text="It grew.", citations=[1, 2, 3],
        evidence=[Evidence(doc=k, text="The colony grew by  a third.") for k in (1, 2, 3)]
        + [Evidence(doc=1, text="Not in the document.")])])
    assert ans.needs_locations() and ans.sentences[0].evidence[0].start is None  # the contract as given
    ans = ans.with_locations()
    assert not [e for e in ans.sentences[0].evidence[:3] if e.start is None]
    ev = ans.sentences[0].evidence
    assert [(e.start, e.end, e.page) for e in ev[:2]] == [(18, 45, 2), (18, 45, 2)]  # whitespace may differ
    assert (ev[2].start, ev[2].page) == (26, None)  # inline text: offsets, no page
    assert (ev[3].start, ev[3].page) == (None, None)  # not found: no location invented
    assert text[ev[0].start:ev[0].end] == "The colony grew by a third."
    again = AttributedAnswer.model_validate_json(ans.model_dump_json())
    assert again.sentences[0].evidence[1].page == 2


def test_cite_over_a_pdf_names_the_page(tmp_path, capsys):
    pdf = survey_pdf(tmp_path / "survey.pdf")
    answer = tmp_path / "answer.txt"
    answer.write_text("Rats were removed from the island in 2015. The colony doubled after that.\n")
    assert main(["cite", "--text", str(answer), "--docs", str(pdf), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    first = out["sentences"][0]
    assert first["support"] == "supported"
    ev = first["evidence"][0]
    assert ev["page"] == 3 and ev["text"] == FACTS[2]
    doc = read_pdf(pdf)
    assert doc.text[ev["start"]:ev["end"]] == FACTS[2]  # the span is in the PDF's text, not the passage's
    assert main(["cite", "--text", str(answer), "--docs", str(pdf)]) == 0
    printed = capsys.readouterr().out
    assert f"p. 3 “{FACTS[2]}”" in printed and "The Kestrel Island Survey, pp." in printed


def test_index_a_folder_of_pdfs_with_pages_and_warnings(tmp_path, capsys):
    folder = tmp_path / "papers"
    folder.mkdir()
    survey_pdf(folder / "survey.pdf", scanned_last=True)
    write_pdf(folder / "scan.pdf", [None])
    idx = tmp_path / "idx"
    code = main(["index", "build", "--corpus", str(folder), "--index", str(idx), "--chunk-tokens", "64"])
    err = capsys.readouterr().err
    assert code == 2  # the scanned-only PDF is a bad line; the rest is indexed
    assert "no text layer on page(s) 7" in err and "scan.pdf" in err and "no text layer on any" in err
    assert main(["index", "search", "--index", str(idx), "--query", "when were rats removed", "--json",
                 "--mode", "bm25", "--k", "1"]) == 0
    hit = json.loads(capsys.readouterr().out.splitlines()[0])
    assert hit["doc_id"] == "survey.pdf" and 3 in hit["pages"] and FACTS[2] in hit["text"]
    assert hit["pages"] == sorted(hit["pages"]) and len(hit["pages"]) <= 2  # the chunk's own pages only


def test_a_long_pdf_given_with_docs_is_cut_to_the_questions_top_passages(tmp_path):
    from citegraph.corpus.passages import read_passages

    pdf = survey_pdf(tmp_path / "survey.pdf")
    got = read_passages(pdf, "In which year were rats removed from the island?", k=1, chunk_tokens=64)
    assert len(got.documents) == 1 and FACTS[2] in got.documents[0].text
    assert got.notes and "top 1 by BM25" in got.notes[0]
    every = read_passages(pdf, "", k=1, chunk_tokens=64)  # no question: nothing to rank by, all kept
    assert len(every.documents) > 3 and not every.notes
    with pytest.raises(Exception, match="no readable document"):
        read_passages(write_pdf(tmp_path / "scan.pdf", [None]))


def test_the_evidence_view_names_the_page(tmp_path):
    from citegraph.run.datasets import Item
    from citegraph.run.runner import make_record
    from citegraph.view.page import build_page, render_page

    text = "Rats were removed in 2015. The colony grew by a third."
    doc = Document(id="survey.pdf#0", title="Survey", text=text,
                   metadata={"chunk_id": "survey.pdf#0", "start": 900, "source": {"pages": [[4, 900, 926], [5, 927, 954]]}})
    ans = AttributedAnswer(question="Q?", documents=[doc], sentences=[CitedSentence(
        text="The colony grew by a third.", citations=[1], evidence=[Evidence(doc=1, text="The colony grew by a third.")])])
    ans = ans.with_locations()
    assert ans.sentences[0].evidence[0].page == 5
    raw = {"question": "Q?", "docs": [doc.model_dump(mode="json")]}
    rec = make_record(Item(id="q1", question="Q?", documents=[doc], raw=raw), ans, {})
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"args": {"method": "rag"}, "data": [rec]}))
    html = render_page(build_page([path], verifier=None))
    assert "[1] p. 5" in html and 'title="[1] Survey, p. 5"' in html


REAL = Path(__file__).parent / "data" / "vicksburg_ocr.pdf"


def test_a_real_scanned_document_with_ocr_headers(tmp_path):
    """tests/data/README.md: six OCR'd pages whose running header varies with the OCR ("THE SIEGE OF
    VICKSBURG. 49", "50 THE SIEGE OF VICKSBUEG.", "THE SIEGE OP VICKSBURG. 53")."""
    doc = read_pdf(REAL)
    assert doc.title == "THE SIEGE OF VICKSBURG." and doc.metadata["page_count"] == 6
    assert "VICKSBU" not in doc.text and "SIEGE OP" not in doc.text  # every header variant is gone
    checked = {  # sentence start -> PDF page, read off pypdf's per-page text of the file
        "A report creeps into camp that Johnston is coming": 1,
        "Another fell on top of the hill and rolled down": 2,
        "Cannister shot is a tin cylinder with iron heads": 3,
        "We are doing all we can to expedite the glorious victory": 4,
        "In fact we can all do patchwork, sew on buttons": 5,
        "I do not often go star-gazing, but last night I sat and watched the beauty above.": 5,  # runs over to p. 6
    }
    for start, page in checked.items():
        at = doc.text.find(start)
        assert at >= 0 and page_of(doc.metadata["pages"], at) == page, start
    assert "it became too conspicuous and dangerous for use." in doc.text  # "dan-" + "gerous" joined
    answer = tmp_path / "a.txt"
    answer.write_text("Canister shot was a tin cylinder filled with balls packed with saw-dust.\n")
    got = AttributedAnswer.model_validate(json.loads(_cite_json(answer, REAL)))
    ev = got.sentences[0].evidence[0]
    assert ev.page == 3 and doc.text[ev.start:ev.end] == ev.text


def _cite_json(answer: Path, docs: Path) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["cite", "--text", str(answer), "--docs", str(docs), "--json"]) == 0
    return buf.getvalue()


def test_two_columns_a_table_and_a_footnote(tmp_path):
    def page(n: int) -> list:
        left = [["Seabird colonies on the island were", "Gull roosts on the west shore were", "Tern nests near the old jetty were"][n - 1],
                ["surveyed twice a year by boat.", "counted from the cliffs.", "seen from a plane."][n - 1],
                f"The spring count found {400 + n} pairs."]
        right = [f"The autumn count on island {n} found fewer", "birds, as most had left for the open sea.",
                 f"Table {n}: counts by species"]
        table = ["Species   Spring   Autumn", f"Puffin   {200 + n}   12", f"Guillemot   {190 + n}   40"]
        return ([(72, 700 - 14 * k, t) for k, t in enumerate(left)] + [(320, 700 - 14 * k, t) for k, t in enumerate(right)]
                + [(320, 640 - 14 * k, t) for k, t in enumerate(table)] + [(72, 60, "1 Counts exclude chicks.")])

    doc = read_pdf(write_pdf(tmp_path / "cols.pdf", [page(1), page(2), page(3)]))
    text = doc.text
    # the columns read one after the other, never glued line by line
    assert "Gull roosts on the west shore were counted from the cliffs. The spring count found 402 pairs." in text
    assert "The autumn count on island 1 found fewer birds, as most had left for the open sea." in text
    assert "Puffin 201 12" in text and "Guillemot 192 40" in text  # a table row stays one row
    assert "Counts exclude chicks." not in text  # a footnote on every page is a running footer
    assert [p for p, _, _ in doc.metadata["pages"]] == [1, 2, 3]


@pytest.mark.parametrize("make, reason", [
    (lambda p: _encrypted(p), "encrypted PDF"),
    (lambda p: _no_pages(p), "a PDF with no pages"),
    (lambda p: p.write_text("<!DOCTYPE html><html><body>Not a PDF</body></html>"), "not a PDF (HTML)"),
    (lambda p: p.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 4096), "not a readable PDF"),
])
def test_bad_pdfs_are_one_line_and_the_index_keeps_the_rest(tmp_path, capsys, make, reason):
    folder = tmp_path / "docs"
    folder.mkdir()
    make(folder / "bad.pdf")
    (folder / "good.txt").write_text("The spring count found 412 pairs of puffins on the island.")
    (folder / "latin1.txt").write_bytes("Caf\xe9 au lait.".encode("latin-1"))
    bad = read_pdf(folder / "bad.pdf")
    assert isinstance(bad, BadLine) and reason in bad.reason and "\n" not in bad.reason
    idx = tmp_path / "idx"
    assert main(["index", "build", "--corpus", str(folder), "--index", str(idx), "--chunk-tokens", "64"]) == 2
    err = capsys.readouterr().err
    assert reason in err and "latin1.txt:0: not UTF-8 text" in err and "Traceback" not in err
    assert main(["index", "list", "--index", str(idx), "--json"]) == 0
    assert [json.loads(x)["id"] for x in capsys.readouterr().out.splitlines()] == ["good.txt"]


def _encrypted(path: Path) -> None:
    from pypdf import PdfWriter

    w = PdfWriter()
    w.add_blank_page(100, 100)
    w.encrypt("secret")
    w.write(str(path))


def _no_pages(path: Path) -> None:
    from pypdf import PdfWriter

    PdfWriter().write(str(path))


def test_the_tool_output_names_the_page_of_the_evidence():
    from citegraph.graphs.tool import render_for_agent

    doc = Document(id="r.pdf#2", title="Report", text="Rats were removed in 2015.",
                   metadata={"chunk_id": "r.pdf#2", "start": 500, "source": {"pages": [[7, 480, 530]]}})
    ans = AttributedAnswer(documents=[doc], sentences=[CitedSentence(
        text="Rats were removed in 2015.", citations=[1], evidence=[Evidence(doc=1, text="Rats were removed in 2015.")])])
    assert "[1] Report, p. 7 (id: r.pdf#2)" in render_for_agent(ans.with_locations())


HTML = """<!DOCTYPE html><html><head><title>Kestrel Island &amp; its birds</title>
<style>p { color: red }</style><script>var tracking = "Rats were never removed";</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<h1>Kestrel Island</h1><p>The Kestrel survey counted 412 nesting pairs in 2019.</p>
<h2>Rats</h2><p>Rats were removed from the island<br>in 2015.</p><ul><li>Puffins returned in 2021.</li></ul>
<footer>Copyright 2024 Island Trust</footer></body></html>"""


def test_html_and_markdown_keep_their_title_and_headings(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "island.html").write_text(HTML)
    (folder / "notes.md").write_text("Intro line.\n\n# Field notes\n\n```\n# not a heading\n```\n\n## Rats\n\nRats were removed in 2015.\n")
    (folder / "latin.html").write_bytes("<meta charset=iso-8859-1><p>Caf\xe9 au lait on the quay.</p>".encode("latin-1"))
    docs = {d.id: d for d in iter_corpus(folder)}
    page = docs["island.html"]
    assert page.title == "Kestrel Island & its birds"
    assert page.text == ("Kestrel Island\n\nThe Kestrel survey counted 412 nesting pairs in 2019.\n\nRats\n\n"
                         "Rats were removed from the island\n\nin 2015.\n\nPuffins returned in 2021.")
    assert "tracking" not in page.text and "About us" not in page.text and "Copyright" not in page.text
    assert [(lv, h, page.text[at:at + len(h)]) for lv, h, at in page.metadata["headings"]] == \
        [(1, "Kestrel Island", "Kestrel Island"), (2, "Rats", "Rats")]
    note = docs["notes.md"]
    assert note.title == "Field notes" and [h[:2] for h in note.metadata["headings"]] == [[1, "Field notes"], [2, "Rats"]]
    assert docs["latin.html"].text == "Café au lait on the quay."
    # a single text file given with --docs is read as a document (not as JSON lines)
    answer = tmp_path / "a.txt"
    answer.write_text("The survey counted 412 nesting pairs in 2019.\n")
    assert main(["cite", "--text", str(answer), "--docs", str(folder / "island.html"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sentences"][0]["support"] == "supported" and out["documents"][0]["title"] == "Kestrel Island & its birds"
    assert main(["cite", "--text", str(answer), "--docs", str(folder / "notes.md"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["documents"][0]["title"] == "Field notes" and out["sentences"][0]["support"] == "unsupported"
