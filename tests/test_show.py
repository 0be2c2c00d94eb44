"""`citegraph show`: the evidence page, built from outputs saved by `run_dataset` on the bundled
example (scripted models, a keyword stub verifier).

Fast tests check the page model and the HTML (escaping, evidence choice, verifier marks, pagination
data, side-by-side pairing, traces, score files, bad input). Tests marked ``browser`` load the page
in Debian's chromium through Playwright, click a chip and check the highlighted sentence, and that a
hostile document stays inert; they skip with the reason when chromium or Playwright is absent.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from citegraph.cli import main
from citegraph.run.datasets import Item, bundled_example
from citegraph.run.runner import run_dataset
from citegraph.view.page import build_page, document_segments, locate, pair_rows, render_page
from citegraph.graphs.registry import make_context
from citegraph.state import Document
from citegraph.tools.verifier import register_verifier

from stubs import KeywordVerifier  # noqa: E402

VSPEC = "stub:show-kw"
# S2 of the bundled example (document 1, second sentence): the genprog answer's evidence
S2 = ("It is named after the engineer Gustave Eiffel, whose company designed and built the tower "
      "from 1887 to 1889.")
HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1">Hostile'
HOSTILE_TEXT = ("The tower was painted <b>red</b> in 2024. </script><script>window.__pwned=2</script> "
                "Visitors <iframe src=\"javascript:window.__pwned=3\"></iframe> climbed it.")
VANILLA = ("The Eiffel Tower was built from 1887 to 1889 [1]. It is 330 metres tall [2][4]. "
           "It is a popular landmark. The tower was painted red in 2024 [6]. "
           "The tower was built in 1889 and is 330 metres tall [1][2].")


@pytest.fixture(autouse=True)
def _verifier():
    register_verifier(VSPEC, KeywordVerifier(spec=VSPEC))


def example_item(hostile: bool = True, item_id: str | None = None, question: str | None = None) -> Item:
    it = bundled_example()
    docs = list(it.documents)
    raw = copy.deepcopy(it.raw)
    if hostile:
        docs.append(Document(id="evil", title=HOSTILE_TITLE, text=HOSTILE_TEXT))
        raw["documents"] = raw["documents"] + [{"id": "evil", "title": HOSTILE_TITLE, "text": HOSTILE_TEXT}]
    if item_id:
        raw["id"] = item_id
    if question:
        raw["question"] = question
    return Item(id=item_id or it.id, question=question or it.question, documents=docs, raw=raw)


def genprog_reply(messages, kwargs):
    text = messages[-1].content
    if "**YOUR TASK**" in text:
        return "- paraphrase(S2)\n- fusion(S4, S5)"
    return {"Paraphrase": "Gustave Eiffel's company built the tower from 1887 to 1889.",
            "Fuse": "The tower is 330 metres tall and its height has changed over time."}.get(text.split()[0], "")


@pytest.fixture
def outputs(tmp_path, scripted):
    """(vanilla.json, genprog.json): saved outputs of the bundled example (+ a hostile document)."""
    vspec, _ = scripted([VANILLA])
    gspec, _ = scripted(genprog_reply)
    v, g = tmp_path / "vanilla.json", tmp_path / "genprog.json"
    run_dataset("vanilla", [example_item()], v, make_context("vanilla", llm=vspec))
    run_dataset("genprog", [example_item()], g, make_context("genprog", llm=gspec))
    return v, g


def cell(page, row=0, col=0):
    return page.rows[row].cells[col]


# --------------------------------------------------------------------------- page model
def test_document_segments_cover_the_text_verbatim():
    text = "First one.  Second one!\nThird line here."
    segs, sents = document_segments(text)
    assert "".join(t for t, _ in segs) == text
    assert sents == ["First one.", "Second one!", "Third line here."]
    assert [i for _, i in segs if i is not None] == [0, 1, 2]
    assert locate("Second   one!", sents) == [1]           # whitespace-insensitive
    assert locate("one! Third line", sents) == []          # neither a sentence nor inside one
    assert locate("First one. Second one!", sents) == [0, 1]
    assert locate("Second", sents) == [1]                  # a span inside a sentence


def test_evidence_is_highlighted_when_the_answer_has_it(outputs):
    page = build_page([outputs[1]], verifier=VSPEC)
    it = cell(page)
    assert it.method == "genprog"
    c = it.sentences[0].cites[0]
    assert (c.doc, c.source) == (1, "evidence")
    segs = dict((i, t) for t, i in it.docs[0].segments if i is not None)
    assert [segs[h.sentence] for h in c.highlights] == [S2]
    assert all(h.score is None for h in c.highlights)      # the answer's evidence carries no score
    assert c.supported is True and c.support == 1.0         # doc 1 contains every content word
    # fusion(S4, S5): both sentences of document 2 are the evidence
    c2 = it.sentences[1].cites[0]
    assert c2.doc == 2 and [h.sentence for h in c2.highlights] == [0, 1]


def test_without_evidence_the_verifier_picks_sentences_and_marks_support(outputs):
    page = build_page([outputs[0]], verifier=VSPEC)
    it = cell(page)
    s1, s2, s3, s4, s5 = it.sentences
    c = s1.cites[0]
    assert c.source == "verifier" and (c.supported, c.verdict) == (True, "alone")
    segs = dict((i, t) for t, i in it.docs[0].segments if i is not None)
    # only S2 holds every content word of "The Eiffel Tower was built from 1887 to 1889"
    assert [(segs[h.sentence], h.score) for h in c.highlights] == [(S2, 1.0)]
    # [4] is ALCE-irrelevant: [2] entails the sentence without it
    assert [(x.doc, x.supported, x.verdict) for x in s2.cites] == [(2, True, "alone"), (4, False, "irrelevant")]
    # [4] supports nothing: its best sentence is still shown, with its score (0)
    assert len(s2.cites[1].highlights) == 1 and s2.cites[1].highlights[0].score == 0.0
    assert s3.uncited and not s3.cites
    # needs both documents (the year from [1], the height from [2]): neither alone, both supported
    assert [(x.doc, x.supported, x.verdict, x.support, x.others) for x in s5.cites] == [
        (1, True, "joint", 0.0, [2]), (2, True, "joint", 0.0, [1])]
    assert page.threshold == 0.5


def test_scores_on_the_page_are_shown_as_the_verifier_is_calibrated(outputs):
    """A calibrated verifier's scores reach the page as a reader should read them: the document's score and the
    scores of the sentences it highlights alike (decisions stay on the scores as scored)."""
    from citegraph.tools.verifier import FunctionVerifier

    spec = "stub:show-calibrated"
    v = FunctionVerifier(lambda p, h: 0.9 if "1887" in p and "1887" in h else 0.02, spec=spec)
    v.set_calibration({"temperature": 2.0, "partial": 0.3})
    register_verifier(spec, v)
    c = cell(build_page([outputs[0]], verifier=spec)).sentences[0].cites[0]
    assert c.supported is True and c.support == pytest.approx(v.shown(0.9)) and c.support < 0.9
    assert c.highlights and all(h.score == pytest.approx(v.shown(0.9)) for h in c.highlights)


def test_no_verifier_shows_evidence_only(outputs):
    page = build_page(list(outputs), verifier=None)
    v, g = page.rows[0].cells
    assert all(c.supported is None and c.source == "none" and not c.highlights for s in v.sentences for c in s.cites)
    assert g.sentences[0].cites[0].source == "evidence" and g.sentences[0].cites[0].supported is None
    html = render_page(page)
    assert "not scored" in html and "verifier on this page: none" in html


def test_unlocated_evidence_is_quoted(outputs):
    path = outputs[1]
    data = json.loads(path.read_text())
    data["data"][0]["citegraph"]["answer"]["sentences"][0]["evidence"][0]["text"] = "A <span> not in the document."
    path.write_text(json.dumps(data))
    c = cell(build_page([path], verifier=VSPEC)).sentences[0].cites[0]
    assert c.unlocated == ["A <span> not in the document."]
    # no evidence located: the verifier's choice is highlighted instead
    assert c.source == "verifier" and c.highlights


# --------------------------------------------------------------------------- HTML and escaping
class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_every_text_is_escaped(outputs):
    html = render_page(build_page(list(outputs), verifier=VSPEC))
    p = _Tags()
    p.feed(html)
    tags = p.tags
    # the page's own two scripts (the row index as JSON, the page script); nothing else can run
    assert [a.get("type") for t, a in tags if t == "script"] == ["application/json", None]
    assert not any(t in ("img", "iframe") for t, _ in tags)
    assert "painted &lt;b&gt;red&lt;/b&gt; in 2024" in html
    assert not any(k.startswith("on") for _, a in tags for k in a)
    assert "&lt;script&gt;window.__pwned=2&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;Hostile" in html
    # no external resources: offline, mailable
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<link" not in html


def test_row_index_json_cannot_close_its_script(tmp_path, scripted):
    spec, _ = scripted(["Fine [1]."])
    out = tmp_path / "o.json"
    q = "What about </script><script>window.__pwned=1</script>?"
    run_dataset("vanilla", [example_item(hostile=False, question=q)], out, make_context("vanilla", llm=spec))
    html = render_page(build_page([out], verifier=None))
    m = re.search(r'<script type="application/json" id="row-index">(.*?)</script>', html, re.S)
    assert json.loads(m.group(1))[0]["q"] == q.lower()
    assert html.count("<script") == 2


def test_chip_classes_and_uncited_marks(outputs):
    html = render_page(build_page([outputs[0]], verifier=VSPEC))
    chips = re.findall(r'<button type="button" class="chip (\w+)" data-doc="(\d+)" data-hl="([^"]*)"', html)
    assert [(k, d) for k, d, _ in chips] == [("ok", "1"), ("ok", "2"), ("bad", "4"), ("ok", "6"), ("ok", "1"), ("ok", "2")]
    assert chips[0][2] == "1:1.00"                        # sentence index 1 (S2), verifier score
    assert html.count('class="sent uncited"') == 1 and "no citation</span>" in html


# --------------------------------------------------------------------------- pagination, pairing
def _many(tmp_path, scripted, n, name, ids=None, reply="The tower is 330 metres tall [2]."):
    spec, _ = scripted([reply])
    items = [example_item(hostile=False, item_id=(ids[i] if ids else f"q{i}"), question=f"Question {i}?")
             for i in range(n)]
    out = tmp_path / name
    run_dataset("vanilla", items, out, make_context("vanilla", llm=spec))
    return out


def test_pagination_data_for_many_items(tmp_path, scripted):
    out = replicate(_many(tmp_path, scripted, 1, "one.json"), 45, tmp_path / "many.json")
    page = build_page([out], verifier=None, page_size=20)
    assert len(page.rows) == 45 and page.n_pages == 3
    html = render_page(page)
    # every row is an inert <template> (cloned one page at a time by the page script)
    assert len(re.findall(r"<template data-row=", html)) == 45
    assert "var PAGE = 20;" in html and "page 1 of 3" in html
    m = re.search(r'id="row-index">(.*?)</script>', html, re.S)
    assert [r["id"] for r in json.loads(m.group(1))] == [f"q{i}" for i in range(45)]


def test_side_by_side_pairs_by_id_then_question(tmp_path, scripted):
    a = _many(tmp_path, scripted, 3, "a.json", ids=["x", "y", "z"])
    b = _many(tmp_path, scripted, 3, "b.json", ids=["z", "x", "w"])   # w has no id match...
    data = json.loads(b.read_text())
    data["data"][2]["question"] = "Question 1?"                       # ...but y's question
    b.write_text(json.dumps(data))
    extra = json.loads(b.read_text())
    extra["data"].append({**copy.deepcopy(extra["data"][0]), "question": "Only in b?", "id": "only"})
    extra["data"][-1]["citegraph"]["item_id"] = "only"
    b.write_text(json.dumps(extra))
    page = build_page([a, b], verifier=None)
    pairs = [(r.key, [c.id if c else None for c in r.cells]) for r in page.rows]
    assert pairs == [("x", ["x", "x"]), ("y", ["y", "w"]), ("z", ["z", "z"]), ("only", [None, "only"])]
    html = render_page(page)
    assert "a.json has no answer to this question." in html
    assert 'class="cells cols-2"' in html


def test_pair_rows_never_puts_two_items_of_one_file_in_a_row():
    from citegraph.view.page import FileView, ItemView

    def item(i, q):
        return ItemView(id=i, question=q, method="m", sentences=[], docs=[], usage={}, metrics=None, trace=None,
                        warnings=[], code="", output_text="")

    f = FileView(index=0, path="a", name="a", method="m", llm=None, verifier=None, codes=[], n_items=2, cost={},
                 metrics=None, score_file=None, score_verifier=None, items=[item("1", "Same?"), item("2", "Same?")])
    assert [[c.id for c in r.cells] for r in pair_rows([f])] == [["1"], ["2"]]


# --------------------------------------------------------------------------- file info, traces
def test_provenance_cost_and_score_file_beside_it(outputs):
    v, _ = outputs
    assert main(["eval", "--input", str(v), "--verifier", VSPEC]) == 0
    page = build_page([v], verifier=VSPEC)
    f = page.files[0]
    assert f.method == "vanilla" and f.n_items == 1 and f.score_verifier == VSPEC
    assert f.score_file.endswith("vanilla.score.json")
    assert f.metrics["Cit. recall"] == pytest.approx(json.loads(Path(f.score_file).read_text())["summary"]["citation_rec"])
    assert f.cost["LLM calls"] == 1.0 and f.cost["tokens"] > 0
    assert "git" in f.codes[0][0] or "citegraph 0.1" in f.codes[0][0]
    it = cell(page)
    assert it.metrics and "Cit. F1" in it.metrics and it.usage["LLM calls"] == 1
    html = render_page(page)
    assert "Cit. recall" in html and "vanilla.score.json" in html


def test_traces_genprog_raac_and_unknown_methods(outputs):
    v, g = outputs
    page = build_page([g], verifier=None)
    tr = cell(page).trace
    bullets = next(b["table"] for b in tr["blocks"] if "table" in b)
    assert tr["summary"] == "GenerationPrograms program (2 bullets)"
    assert [row[2] for row in bullets["rows"]] == [["S2"], ["S4", "S5"]]
    html = render_page(page)
    assert "GenerationPrograms program (2 bullets)" in html and "fusion(S4, S5)" in html
    # a RAAC summary and a method this page does not know (e.g. SQuAI), both from the record alone
    data = json.loads(v.read_text())
    md = data["data"][0]["citegraph"]["answer"]["metadata"]
    md["trace"] = {"method": "raac", "rounds": [{"pass": 0, "round": 1, "kind": "initial", "scores": {"completeness": 3},
                                                 "total": 14, "overruled": ["length"]}],
                   "validations": [{"pass": 0, "sentence": 0, "cited": [1, 4], "kept": [1], "dropped": [4]}],
                   "discoveries": [], "calibrations": [{"pass": 0, "documents": [1, 2], "f1": 0.61,
                                                        "decision": "initial", "next": "restrict", "reason": "f1<tau"}],
                   "text_stop": "max score"}
    v.write_text(json.dumps(data))
    html = render_page(build_page([v], verifier=None))
    assert "RAAC trace: 1 TextAgent round(s), 1 validation(s), 0 discoveries, 1 calibration decision(s)" in html
    assert "f1&lt;tau" in html and "restrict" in html
    md["trace"] = {"method": "squai", "sub_questions": ["Who <b>built</b> it?", "How tall?"],
                   "judge": {"scores": [0.9, 0.2]}}
    v.write_text(json.dumps(data))
    html = render_page(build_page([v], verifier=None))
    assert "<th>sub_questions</th>" in html and "Who &lt;b&gt;built&lt;/b&gt; it?, How tall?" in html
    assert "<th>scores</th><td>0.90, 0.20</td>" in html


def test_alce_output_without_our_structure(tmp_path):
    alce = tmp_path / "alce.json"
    alce.write_text(json.dumps({"data": [{"question": "Q?", "docs": [{"title": "T", "text": "Paris is in France."}],
                                          "output": "Paris is in France [1]. Unsourced."}]}))
    page = build_page([alce], verifier=VSPEC)
    it = cell(page)
    assert [len(s.cites) for s in it.sentences] == [1, 0] and it.sentences[0].cites[0].supported is True
    assert page.files[0].method == "unknown" and it.trace is None


# --------------------------------------------------------------------------- CLI
def test_cli_writes_the_page(outputs, capsys, monkeypatch):
    import webbrowser

    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url))
    v, g = outputs
    assert main(["show", str(v), "--verifier", VSPEC, "--open"]) == 0
    assert (v.parent / "vanilla.html").is_file() and opened == [(v.parent / "vanilla.html").resolve().as_uri()]
    assert re.match(r"vanilla\.json: scoring \d+ citation pairs with the 'stub:show-kw' verifier", capsys.readouterr().err)
    assert main(["show", str(v), str(g), "--verifier", "none", "--page-size", "5"]) == 0
    page = (v.parent / "vanilla_vs_genprog.html").read_text()
    assert "var PAGE = 5;" in page and "vanilla.json vs genprog.json" in page
    out = v.parent / "custom.html"
    assert main(["show", str(g), "--html", str(out), "--verifier", "none"]) == 0
    assert "custom.html (1 question(s), 1 file(s))" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["{missing}"], "output file not found"),
    (["{v}", "{v}", "{v}"], "at most 2 output files"),
    (["{data}"], "has no 'output' text"),
    (["{v}", "--page-size", "0"], "--page-size must be at least 1"),
    (["{v}", "--top", "0"], "--top must be at least 1"),
    (["{v}", "--html", "{dir}"], "--html must be a file"),
    (["{v}", "--html", "{dir}/page.txt"], "--html must name an .html file"),
    (["{v}", "--html", "{dir}/no/such/page.html"], "folder does not exist"),
    (["{v}", "--verifier", "nonsense-spec"], "unknown verifier spec"),
    (["{bad}"], "invalid JSON"),
])
def test_cli_bad_input_is_one_line_and_exit_2(outputs, tmp_path, capsys, argv, message):
    v, _ = outputs
    data = tmp_path / "data.json"
    data.write_text(json.dumps([{"question": "Q?", "docs": [{"text": "x"}]}]))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    subs = {"missing": tmp_path / "nope.json", "v": v, "data": data, "dir": tmp_path, "bad": bad}
    argv = [a.format(**{k: str(p) for k, p in subs.items()}) for a in argv]
    if "--verifier" not in argv:
        argv += ["--verifier", VSPEC]
    assert main(["show", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("citegraph: error:") and message in err


# --------------------------------------------------------------------------- in a real browser
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-sync"]


def chromium_path() -> str:
    path = os.environ.get("CITEGRAPH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("chromium not installed (Debian: apt-get install -y chromium); browser tests skipped")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright not installed (pip install playwright; never `playwright install`)")
    return path


@pytest.fixture
def browser():
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()


def open_page(browser, html: Path):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(html.resolve().as_uri())
    return page, errors, requests


@pytest.mark.browser
def test_browser_chip_click_highlights_the_evidence_and_hostile_text_stays_inert(outputs, tmp_path, browser):
    v, g = outputs
    html = tmp_path / "side.html"
    assert main(["show", str(v), str(g), "--html", str(html), "--verifier", VSPEC]) == 0
    page, errors, requests = open_page(browser, html)
    # genprog's first chip: [1], evidence S2
    gcell = page.locator('#rows .cell[data-col="1"]')
    gcell.locator("button.chip").first.click()
    hl = gcell.locator(".doc:not([hidden]) .s.hl")
    assert hl.all_inner_texts() == [S2]
    assert "the answer's evidence" in gcell.locator(".note:not([hidden])").inner_text()
    assert gcell.locator("button.chip.active").count() == 1
    # vanilla's [4] is not supported: hovering shows the note and the best (weak) sentence with its score
    vcell = page.locator('#rows .cell[data-col="0"]')
    bad = vcell.locator("button.chip.bad")
    assert bad.count() == 1
    bad.hover()
    assert "not needed: [2] entails the sentence without it (this document alone: 0.00)" in vcell.locator(
        ".note:not([hidden])").inner_text()
    assert vcell.locator(".doc:not([hidden]) h4").inner_text().startswith("[4]")
    assert vcell.locator(".doc:not([hidden]) .s.hl.weak .badge").all_inner_texts() == ["0.00"]
    # the hostile document: its chip shows the markup as text; nothing ran, loaded or popped up
    vcell.locator('button.chip[data-doc="6"]').click()
    doc = vcell.locator(".doc:not([hidden])")
    assert "</script><script>window.__pwned=2</script>" in doc.inner_text()
    assert HOSTILE_TITLE in doc.locator("h4").inner_text()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("#rows img, #rows iframe, #rows .doc b").count() == 0
    assert errors == [] and all(u.startswith("file://") for u in requests)


def replicate(path: Path, n: int, out: Path) -> Path:
    """``n`` copies of the file's first record, as ``q0..q{n-1}`` / "Question i?" (running the graph
    500 times would only cost time)."""
    data = json.loads(path.read_text())
    rec = data["data"][0]
    recs = []
    for i in range(n):
        r = copy.deepcopy(rec)
        r["id"], r["question"] = f"q{i}", f"Question {i}?"
        r["citegraph"]["item_id"] = f"q{i}"
        recs.append(r)
    out.write_text(json.dumps({"args": data["args"], "data": recs}))
    return out


@pytest.mark.browser
def test_browser_pages_and_filters_500_items(tmp_path, scripted, browser):
    out = replicate(_many(tmp_path, scripted, 1, "one.json"), 500, tmp_path / "big.json")
    html = tmp_path / "big.html"
    assert main(["show", str(out), "--html", str(html), "--verifier", "none"]) == 0
    page, errors, _ = open_page(browser, html)
    assert page.locator("#rows article.row").count() == 20
    assert page.locator("#pageinfo").inner_text() == "page 1 of 25"
    page.locator("#next").click()
    assert page.locator("#rows article.row .qnum").first.inner_text() == "#21"
    page.locator("#filter").fill("question 499?")
    assert page.locator("#rows article.row").count() == 1
    assert page.locator("#count").inner_text() == "1 of 500 questions"
    assert errors == []


def test_malformed_or_partial_traces_never_break_the_page():
    from citegraph.view.page import trace_view

    partial = trace_view("raac", {"trace": {"method": "raac", "rounds": [{"round": 1, "scores": {"length": 2}}]}})
    rounds = partial["blocks"][0]["table"]
    assert partial["summary"].startswith("RAAC trace: 1 TextAgent round(s), 0 validation(s)")
    assert rounds["rows"] == [[0, 1, "", "", "", "", 2, "", "", None, []]]  # every missing column has its default
    assert not any("table" in b and b["table"]["columns"][1]["label"] == "sentence" for b in partial["blocks"])
    generic = {"summary": "Trace summary", "blocks": [{"data": {"method": "raac", "rounds": "oops"}}]}
    assert trace_view("raac", {"trace": {"method": "raac", "rounds": "oops"}}) == generic
    assert trace_view("genprog", {"trace": {"bullets": [{"sids": "S1"}]}})["blocks"] == [{"data": {"bullets": [{"sids": "S1"}]}}]
    legacy = trace_view("genprog", {"program": "- extract(S1)"})
    assert legacy["summary"] == "GenerationPrograms program (0 bullets)" and legacy["blocks"] == [{"pre": "- extract(S1)"}]
    assert trace_view("raac", {"raac": {"rounds": 2}}) == {"summary": "Trace summary", "blocks": [{"data": {"rounds": 2}}]}
    assert trace_view("vanilla", {}) is None and trace_view("unknown-method", {}) is None
    # a trace names its own method: a genprog-posthoc trace in a file whose method is not known
    assert trace_view("unknown", {"trace": {"method": "genprog-posthoc", "program": "- x(S1)"}})["summary"].startswith(
        "GenerationPrograms program")
    # and the page renders them
    from citegraph.view.page import FileView, ItemView, Page, Row

    it = ItemView(id="i", question="Q?", method="raac", sentences=[], docs=[], usage={}, metrics=None,
                  trace=partial, warnings=[], code="", output_text="")
    f = FileView(index=0, path="a.json", name="a.json", method="raac", llm=None, verifier=None, codes=[], n_items=1,
                 cost={}, metrics=None, score_file=None, score_verifier=None, items=[it])
    html = render_page(Page(files=[f], rows=[Row(0, "i", "Q?", [it])], page_size=20, verifier=None, threshold=None, top=2))
    assert "RAAC trace: 1 TextAgent round(s), 0 validation(s)" in html and "The method returned no answer." in html
    assert '<th title="completeness">compl.</th>' in html


# what a shared room may say about a method: metric names (RAAC's citation F1 is a metric the evaluator
# reports, not the method) and examples in --help texts; nothing a command or the view does differently
MENTIONS = {
    "view/page.py": ['"raac_f1": "RAAC cit. F1"'],
    "cli/eval.py": ['"RAAC citation recall"', '"RAAC citation precision"', '"RAAC citation F1"'],
    "cli/__init__.py": ["citegraph graphs raac  ", "--methods vanilla,raac "],
    "cli/bench.py": ['"genprog:refine=true, raac:use_calibration=false"', "RAAC's Table 16 evaluator"],
}


def test_the_shared_rooms_hold_no_method_names():
    """Issue #36: a method's progress lines and trace view live in its own modules (nodes/<method>/display.py,
    found through its registry entry); every CLI module, the view and its template, the shared display
    shapes and the registry's code outside its GRAPHS table name no method."""
    import re

    from citegraph.graphs.registry import GRAPHS

    root = Path(__file__).resolve().parents[1] / "citegraph"
    words = re.compile(r"\b(raac|genprog|squai|ginger|odmds|GenerationPrograms|SQuAI|GINGER)\b", re.I)
    shared = sorted((root / "cli").glob("*.py")) + [root / "view" / "page.py", root / "view" / "__init__.py",
                                                      root / "view" / "templates" / "show.html.j2", root / "nodes" / "display.py",
                                                      root / "graphs" / "registry.py"]
    for path in shared:
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel == "graphs/registry.py":  # the table that names each method, and the imports of what it
            start = text.index("GRAPHS: dict[str, GraphEntry] = {")  # names, are the registry's data
            text = text[:start] + text[text.index("\n}\n", start) + 3:]
            text = re.sub(r"^from citegraph\.(graphs|nodes\.\w+|state\.\w+) import .*$", "", text, flags=re.M)
        for allowed in MENTIONS.get(rel, []):
            assert allowed in text, f"{rel}: the allowed mention {allowed!r} is gone; drop it from MENTIONS"
            text = text.replace(allowed, "")
        assert not words.search(text), f"{rel} names a method: {words.search(text).group(0)}"
    for name, e in GRAPHS.items():
        if e.display:
            assert callable(getattr(e.display, "describe_event", None)), name


def test_support_status_of_the_attribution_stage_is_shown(tmp_path, scripted):
    """A run with attribution=strict: each sentence's support is marked; a flagged sentence says so."""
    spec, _ = scripted([VANILLA])
    out = tmp_path / "repaired.json"
    run_dataset("vanilla", [example_item()], out,
                make_context("vanilla", llm=spec, verifier=VSPEC, attribution="repair"))
    rec = json.loads(out.read_text())["data"][0]["citegraph"]["answer"]
    supports = [s["support"] for s in rec["sentences"]]
    assert set(supports) <= {"supported", "partial", "unsupported"} and len(supports) == 5
    html = render_page(build_page([out], verifier=None))
    marks = re.findall(r'<span class="support (\w+)"', html)
    assert marks[-len(supports):] == supports  # the legend's three come first
    assert html.count('class="support unsupported"') == 1 + supports.count("unsupported")


def test_a_record_whose_evidence_lies_in_another_document_than_the_cited_one_is_warned(tmp_path):
    """An output whose citations point into another order of the documents than the file keeps (written
    before records kept the answer's own documents): the page says its documents and verdicts are wrong."""
    from citegraph.run.datasets import Item as It
    from citegraph.run.runner import make_record
    from citegraph.state import AttributedAnswer, CitedSentence, Evidence
    from citegraph.eval.scoring import MISPLACED_EVIDENCE

    raw = [{"title": "A", "text": "Paris is in France."}, {"title": "B", "text": "Cats purr loudly."}]
    docs = [Document(id=str(i), title=d["title"], text=d["text"]) for i, d in enumerate(raw, 1)]
    item = It(id="q1", question="Cats?", documents=docs, raw={"question": "Cats?", "docs": raw})
    ans = AttributedAnswer(question="Cats?", documents=[docs[1], docs[0]], sentences=[CitedSentence(
        text="Cats purr loudly.", citations=[1], evidence=[Evidence(doc=1, text="Cats purr loudly.")])])
    rec = make_record(item, ans, {})
    for name, drop, warned in (("good", False, False), ("old", True, True)):
        r = json.loads(json.dumps(rec))
        if drop:
            del r["citegraph"]["documents"]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"args": {"method": "rag"}, "data": [r]}))
        assert (MISPLACED_EVIDENCE in cell(build_page([path], verifier=None)).warnings) is warned


def test_a_checked_verifiers_reason_is_shown_under_the_sentence(tmp_path, scripted):
    """With a +checks verifier, the stage's reason for not calling a sentence supported reaches the page."""
    from citegraph.tools.verifier import FunctionVerifier

    def lenient(premise: str, claim: str) -> float:  # accepts any premise holding most of the claim's words
        words = set(re.findall(r"\w+", claim.lower()))
        return 0.9 if len(words & set(re.findall(r"\w+", premise.lower()))) >= 0.6 * len(words) else 0.05

    register_verifier("stub:lenient-show", FunctionVerifier(lenient, spec="stub:lenient-show"))
    spec, _ = scripted(["The Eiffel Tower was not built from 1887 to 1889 [1]. It is 330 metres tall [2]."])
    out = tmp_path / "v.json"
    run_dataset("vanilla", [example_item(hostile=False)], out,
                make_context("vanilla", llm=spec, attribution="repair", verifier="stub:lenient-show+checks"))
    page = build_page([out], verifier=VSPEC)
    first, second = cell(page).sentences[:2]
    assert first.support == "unsupported" and first.conflicts[0].startswith("[1] negation: the claim says 'not' of 'built'")
    assert second.support == "supported" and second.conflicts == []
    assert '<div class="conflict">✗ [1] negation: the claim says &#39;not&#39; of &#39;built&#39;' in render_page(page)
