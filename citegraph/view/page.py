"""The evidence view behind ``citegraph show``: what a page shows about one or two output files.

:func:`build_page` reads output files (ours, or ALCE's ``{"data": [...]}``), pairs their items by
item id (else by question) and reduces each answer to what a reader needs to verify it:

* each answer sentence with its citations; a sentence without any is marked;
* for each citation, the cited document split into sentences and the sentence(s) to highlight:
  the answer's own :class:`~citegraph.state.answer.Evidence` for that document when it has some,
  else the document sentences the verifier scores highest for the answer sentence, with their
  scores (at most ``top`` of those at or above the verifier's threshold; when none is, the single
  best one, shown as weak);
* whether the verifier supports the citation, by the evaluator's own ALCE semantics
  (:func:`citegraph.metrics.alce_citation_job`, every citation checked): the sentence's cited
  documents together must entail it, and a citation is not supported either when they do not or when
  the other citations entail the sentence without it (ALCE's "irrelevant"); the page also shows the
  document's score alone -- ``verifier=None`` skips all scoring;
* the method, models and verifier from the records' provenance, cost counters, the citation metrics
  of a ``<name>.score.json`` beside the file (``citegraph eval`` writes it), and the method's trace
  summary (``answer.metadata["trace"]``, written by the method's final node) as the method's
  ``nodes/<method>/display.py: trace_view`` shows it, else as a key/value table.

:func:`render_page` turns the model into one self-contained HTML page (Jinja2 with autoescaping;
inline CSS/JS, no network). Rows are rendered into inert ``<template>`` elements and the page
script clones one page of them at a time, so 500 items stay responsive.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from citegraph import __version__
from citegraph.errors import InputError
from citegraph.eval.scoring import MISPLACED_EVIDENCE, _documents, misplaced_evidence, score_path, structured_answer
from citegraph.graphs.registry import GRAPHS
from citegraph.nodes.display import generic_view
from citegraph.run.output import read_output_file
from citegraph.metrics import alce_citation_job, alce_doc, resolve_verifier, run_jobs
from citegraph.run.provenance import code_label
from citegraph.run.trace import TraceStore, calls_line
from citegraph.state.answer import AttributedAnswer, Document
from citegraph.tools.citations import parse_answer
from citegraph.tools.sentences import split_sentences

MAX_FILES = 2
COST_KEYS = ("llm_calls", "tokens", "verifier_pairs", "seconds")
COST_LABELS = {"llm_calls": "LLM calls", "tokens": "tokens", "verifier_pairs": "verifier pairs", "seconds": "seconds"}
# score-file metrics shown on the page (citegraph eval's keys), in this order
METRIC_LABELS = {
    "citation_rec": "Cit. recall", "citation_prec": "Cit. precision", "citation_f1": "Cit. F1",
    "raac_f1": "RAAC cit. F1", "str_em": "STR-EM", "claims_nli": "Claims", "rougeLsum": "ROUGE-Lsum",
    "uncited_pct": "Uncited sent. %",
    "cited_or_flagged_pct": "Cited or flagged %",
    "flagged_pct": "Flagged unsupported %",
}


# --------------------------------------------------------------------------- the page model
@dataclass
class Highlight:
    sentence: int  # 0-based index into the document's sentences
    score: float | None = None  # verifier score (None: the answer's own evidence)


@dataclass
class CiteView:
    doc: int  # 1-based, into the answer's documents
    title: str
    source: str  # "evidence" | "verifier" | "none"
    highlights: list[Highlight] = field(default_factory=list)
    unlocated: list[str] = field(default_factory=list)  # evidence text not found in the document
    support: float | None = None  # verifier score of (this document alone, sentence)
    supported: bool | None = None
    # why: "alone" (this document entails the sentence), "joint" (needed with the others), "unsupported"
    # (the citations together do not entail it), "irrelevant" (the others entail it without this one)
    verdict: str | None = None
    others: list[int] = field(default_factory=list)  # the sentence's other citations
    page: int | None = None  # the page of the source document (a PDF) where its evidence starts

    @property
    def hl_attr(self) -> str:
        """``"3 5:0.91"``: sentence indices (with the verifier's score) for the page script."""
        return " ".join(f"{h.sentence}" if h.score is None else f"{h.sentence}:{h.score:.2f}" for h in self.highlights)


@dataclass
class SentenceView:
    n: int
    text: str
    cites: list[CiteView] = field(default_factory=list)
    support: str | None = None  # the attribution stage's verdict (supported / partial / unsupported)
    support_score: float | None = None
    conflicts: list[str] = field(default_factory=list)  # a +checks verifier's reasons (the stage's record)

    @property
    def uncited(self) -> bool:
        return not self.cites


@dataclass
class DocView:
    n: int
    id: str
    title: str
    segments: list[tuple[str, int | None]]  # the text in order; int = sentence index
    cited: bool = False


@dataclass
class ItemView:
    id: str
    question: str
    method: str
    sentences: list[SentenceView]
    docs: list[DocView]
    usage: dict[str, Any]
    metrics: dict[str, float] | None
    trace: dict[str, Any] | None
    warnings: list[str]
    code: str
    output_text: str
    thread: str = ""  # the item's checkpoint thread, when it ran with --checkpoint
    steps: dict[str, Any] | None = None  # its steps from the store (show --checkpoint), shaped as a trace view


@dataclass
class FileView:
    index: int
    path: str
    name: str
    method: str
    llm: str | None
    verifier: str | None
    codes: list[tuple[str, int]]
    n_items: int
    cost: dict[str, float]
    metrics: dict[str, float] | None
    score_file: str | None
    score_verifier: str | None
    items: list[ItemView] = field(default_factory=list)
    item_scores: dict[str, dict] = field(default_factory=dict, repr=False)  # the score file's per-item rows


@dataclass
class Row:
    index: int
    key: str
    question: str
    cells: list[ItemView | None]


@dataclass
class Page:
    files: list[FileView]
    rows: list[Row]
    page_size: int
    verifier: str | None
    threshold: float | None
    top: int

    @property
    def n_pages(self) -> int:
        return max(1, -(-len(self.rows) // self.page_size))

    def index(self) -> list[dict[str, Any]]:
        """What the page script needs to page and filter without touching the rows: question text
        (lower-cased, for the filter box) per row."""
        return [{"q": r.question.lower(), "id": r.key.lower()} for r in self.rows]


# --------------------------------------------------------------------------- documents
def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def document_segments(text: str) -> tuple[list[tuple[str, int | None]], list[str]]:
    """The document's text as ordered segments (sentence ``i`` or the whitespace between) and its
    sentences. Every character of ``text`` appears once, so the page shows the document verbatim."""
    sentences = split_sentences(text)
    segments: list[tuple[str, int | None]] = []
    pos = 0
    found: list[str] = []
    for s in sentences:
        at = text.find(s, pos)
        if at < 0:  # the splitter changed the text (it should not): show the rest unsplit
            break
        if at > pos:
            segments.append((text[pos:at], None))
        segments.append((s, len(found)))
        found.append(s)
        pos = at + len(s)
    if pos < len(text):
        segments.append((text[pos:], None))
    return segments, found


def locate(evidence: str, sentences: Sequence[str]) -> list[int]:
    """Sentence indices that an evidence text covers: sentences contained in it, or the sentence
    that contains it (whitespace-insensitive). Empty when it is not in the document."""
    ev = _norm(evidence)
    if not ev:
        return []
    normed = [_norm(s) for s in sentences]
    inside = [i for i, s in enumerate(normed) if s and s in ev]
    if inside:
        return inside
    return [i for i, s in enumerate(normed) if ev in s][:1]


# --------------------------------------------------------------------------- reading files
def _item_key(rec: dict, n: int) -> str:
    cg = rec.get("citegraph") if isinstance(rec.get("citegraph"), dict) else {}
    for v in (cg.get("item_id"), rec.get("sample_id"), rec.get("id"), rec.get("qid")):
        if v not in (None, ""):
            return str(v)
    return f"#{n}"


def _answer(rec: dict, docs: list[Document]) -> AttributedAnswer:
    ans = structured_answer(rec, docs)
    if ans is None:  # an ALCE output (or an edited one): parse its [n]-cited text
        ans = parse_answer(rec["output"], question=str(rec.get("question", "")), documents=docs)
    return ans


def _read_scores(path: Path) -> tuple[dict | None, str | None, str | None]:
    sp = score_path(path)
    if not sp.is_file():
        return None, None, None
    try:
        data = json.loads(sp.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None, None, None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
        return None, None, None
    return data, str(sp), data.get("verifier")


def _pick_metrics(d: dict | None) -> dict[str, float] | None:
    if not isinstance(d, dict):
        return None
    out = {METRIC_LABELS[k]: float(d[k]) for k in METRIC_LABELS if isinstance(d.get(k), (int, float))}
    return out or None


def _raw_usage(rec: dict) -> dict[str, Any]:
    """A record's ``citegraph.usage`` as written ({} when absent or malformed)."""
    cg = rec.get("citegraph") if isinstance(rec.get("citegraph"), dict) else {}
    return cg.get("usage") if isinstance(cg.get("usage"), dict) else {}


def _usage(rec: dict) -> dict[str, Any]:
    u = _raw_usage(rec)
    out: dict[str, Any] = {}
    for k in COST_KEYS:
        v = u.get(k)
        if k == "tokens" and v is None and u:
            v = (u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0)
        if isinstance(v, (int, float)):
            out[k] = v
    return out


def trace_view(method: str, metadata: dict[str, Any]) -> dict[str, Any] | None:
    """What the page shows of a method's trace (``metadata["trace"]``, else what an older record kept):
    the method's own view (its registry entry's ``trace_view``, shaped as ``citegraph.nodes.display``
    says: a summary line and blocks), else the trace as a key/value table; ``None`` when there is
    nothing to show. The method is the trace's own ``method`` or the record's."""
    trace = metadata.get("trace")
    name = (trace.get("method") if isinstance(trace, dict) else None) or method
    e = GRAPHS.get(str(name))
    view = e.trace_view(metadata) if e is not None else None
    if view is not None:
        return view
    return generic_view(trace) if isinstance(trace, dict) else None


def _read_file(index: int, path: Path) -> tuple[FileView, list[tuple[str, dict, list[Document], AttributedAnswer]]]:
    args, records = read_output_file(path)
    scores, score_file, score_verifier = _read_scores(path)
    item_scores = {}
    if scores and isinstance(scores.get("items"), list):
        item_scores = {str(s.get("id")): s for s in scores["items"] if isinstance(s, dict)}
    ctx = args.get("context") if isinstance(args.get("context"), dict) else {}
    provs = [((r.get("citegraph") or {}).get("provenance") or {}) if isinstance(r.get("citegraph"), dict) else {}
             for r in records]
    first = next((p for p in provs if p), {})
    parsed = []
    seen: set[str] = set()
    for n, rec in enumerate(records, 1):
        key = _item_key(rec, n)
        if key in seen:
            key = f"{key}#{n}"
        seen.add(key)
        docs = _documents(rec, f"{path}: item {n}")
        parsed.append((key, rec, docs, _answer(rec, docs)))
    methods = Counter(str(a.metadata.get("method")) for *_, a in parsed if a.metadata.get("method"))
    method = str(args.get("method") or (methods.most_common(1)[0][0] if methods else "unknown"))
    usages = [_usage(r) for _, r, _, _ in parsed]
    cost = {}
    for k in COST_KEYS:
        vals = [u[k] for u in usages if k in u]
        if vals:
            cost[COST_LABELS[k]] = sum(vals) / len(vals)
    fv = FileView(
        index=index, path=str(path), name=path.name, method=method,
        llm=first.get("llm") or ctx.get("llm"), verifier=first.get("verifier") or ctx.get("verifier"),
        codes=Counter(code_label(p or None) for p in provs).most_common(), n_items=len(records), cost=cost,
        metrics=_pick_metrics(scores.get("summary") if scores else None), score_file=score_file,
        score_verifier=score_verifier, item_scores=item_scores,
    )
    return fv, parsed


# --------------------------------------------------------------------------- verifier evidence
def _plan_citations(ans: AttributedAnswer, doc_sents: list[list[str]], use_verifier: bool):
    """Per (sentence, citation): the evidence sentences, unlocated evidence, and the verifier pairs
    still to score (support of the citation; candidate sentences when there is no evidence)."""
    plans = []
    for si, s in enumerate(ans.sentences):
        for c in s.citations:
            sents = doc_sents[c - 1]
            ev = [e for e in s.evidence if e.doc == c]
            hl: list[int] = []
            unlocated: list[str] = []
            for e in ev:
                idx = locate(e.text, sents)
                if idx:
                    hl.extend(i for i in idx if i not in hl)
                else:
                    unlocated.append(e.text)
            need_candidates = use_verifier and not hl
            plans.append((si, c, hl, unlocated, need_candidates))
    return plans


def _file_items(fv: FileView, parsed, verifier: Any, top: int, on_scoring=None) -> None:
    item_scores = fv.item_scores
    use_verifier = verifier is not None
    all_pairs: list[tuple[str, str]] = []
    work = []
    for key, rec, docs, ans in parsed:
        segs_sents = [document_segments(d.text) for d in docs]
        doc_sents = [ss for _, ss in segs_sents]
        plans = _plan_citations(ans, doc_sents, use_verifier)
        slots = []
        for si, c, hl, unlocated, need in plans:
            hyp = ans.sentences[si].text
            support_at = cand_at = None
            if use_verifier:
                support_at = len(all_pairs)
                all_pairs.append((alce_doc(docs[c - 1]), hyp))  # the evaluator's premise: cached for it
                if need:
                    cand_at = len(all_pairs)
                    all_pairs.extend((s, hyp) for s in doc_sents[c - 1])
            slots.append((support_at, cand_at))
        work.append((key, rec, docs, ans, segs_sents, plans, slots))
    if use_verifier and all_pairs and on_scoring is not None:
        on_scoring(fv.name, len(all_pairs))
    scores = verifier.score(all_pairs) if use_verifier and all_pairs else []
    threshold = getattr(verifier, "threshold", 0.5) if use_verifier else None
    shown = getattr(verifier, "shown", float) if use_verifier else float
    checks: list[Any] = [None] * len(work)
    if use_verifier:  # ALCE's citation semantics, from the evaluator (all citations, not only 3)
        checks = run_jobs(verifier, [alce_citation_job(w[3], w[2], at_most_citations=None) for w in work])
    for (key, rec, docs, ans, segs_sents, plans, slots), check in zip(work, checks):
        # the evaluator's units are the answer's non-empty sentences
        units = [i for i, s in enumerate(ans.sentences) if s.text.strip()]
        per_sentence = {}
        if check is not None and len(check["sentences"]) == len(units):
            per_sentence = dict(zip(units, check["sentences"]))
        cited = set(ans.cited_documents())
        sentences = [SentenceView(n=i + 1, text=s.text, support=s.support, support_score=s.support_score, conflicts=why)
                     for i, (s, why) in enumerate(zip(ans.sentences, ans.sentence_conflicts()))]
        for (si, c, hl, unlocated, need), (support_at, cand_at) in zip(plans, slots):
            page = next((e.page for e in ans.sentences[si].evidence if e.doc == c and e.page is not None), None)
            cv = CiteView(doc=c, title=docs[c - 1].title or docs[c - 1].id, source="evidence" if hl else "none",
                          highlights=[Highlight(i) for i in hl], unlocated=unlocated, page=page)
            if support_at is not None:
                raw = float(scores[support_at])
                cv.support = shown(raw)  # as a reader should read it: calibrated where the spec is
                cv.others = [x for x in ans.sentences[si].citations if x != c]
                unit = per_sentence.get(si)
                if unit is None:  # no ALCE unit for it: this document alone decides
                    cv.supported = raw >= threshold
                    cv.verdict = "alone" if cv.supported else "unsupported"
                elif not unit["supported"]:
                    cv.supported, cv.verdict = False, "unsupported"
                elif c in unit["irrelevant"]:
                    cv.supported, cv.verdict = False, "irrelevant"
                else:
                    cv.supported = True
                    cv.verdict = "alone" if raw >= threshold or not cv.others else "joint"
            if cand_at is not None:
                n = len(segs_sents[c - 1][1])
                ranked = sorted(range(n), key=lambda i: -scores[cand_at + i])
                # the top sentences the verifier accepts; none accepted: the single best one (shown weak)
                cand = [i for i in ranked[:top] if scores[cand_at + i] >= threshold] or ranked[:1]
                cv.highlights = [Highlight(i, shown(float(scores[cand_at + i]))) for i in sorted(cand)]
                cv.source = "verifier" if cand else "none"
            sentences[si].cites.append(cv)
        md = ans.metadata
        method = str(md.get("method") or fv.method)
        prov = (rec.get("citegraph") or {}).get("provenance") if isinstance(rec.get("citegraph"), dict) else None
        fv.items.append(ItemView(
            id=key, question=str(rec.get("question") or ans.question or ""), method=method, sentences=sentences,
            docs=[DocView(n=i + 1, id=d.id, title=d.title, segments=segs_sents[i][0], cited=(i + 1) in cited)
                  for i, d in enumerate(docs)],
            usage={COST_LABELS[k]: v for k, v in _usage(rec).items()},
            metrics=_pick_metrics(item_scores.get(key)), trace=trace_view(method, md),
            warnings=[str(w) for w in ans.warnings] + ([MISPLACED_EVIDENCE] if misplaced_evidence(rec) else []),
            code=code_label(prov) if prov else "", output_text=rec["output"],
            thread=str(_raw_usage(rec).get("thread_id") or ""),
        ))


def pair_rows(files: Sequence[FileView]) -> list[Row]:
    """One row per item, cells in file order; items are matched by item id, else by question (two
    methods run on the same data set share ids). Order: the first file's, then the others' new ones."""
    rows: list[Row] = []
    by_key: dict[str, Row] = {}
    by_question: dict[str, Row] = {}
    for fi, fv in enumerate(files):
        for it in fv.items:
            row = by_key.get(it.id)
            if row is None or row.cells[fi] is not None:
                row = by_question.get(_norm(it.question).lower())
                if row is not None and row.cells[fi] is not None:
                    row = None
            if row is None:
                row = Row(index=len(rows), key=it.id, question=it.question, cells=[None] * len(files))
                rows.append(row)
                by_key.setdefault(it.id, row)
                by_question.setdefault(_norm(it.question).lower(), row)
            row.cells[fi] = it
    return rows


def steps_view(store: Any, thread: str) -> dict[str, Any]:
    """One item's steps from a checkpoint store (:class:`citegraph.run.trace.TraceStore`) as a trace
    block: each step's nodes, seconds, fields changed, LLM and verifier calls and next nodes."""
    try:
        steps = store.steps(thread)
    except InputError as e:
        return {"summary": "Steps", "blocks": [{"note": str(e)}]}
    cols = [{"label": label, "title": "", "numeric": label in ("step", "seconds")}
            for label in ("step", "nodes", "seconds", "fields changed", "LLM and verifier calls", "next")]
    rows = [[s.step, s.nodes or ["(input)"], s.seconds, s.changed, calls_line(s.calls), s.next or ["(end)"]]
            for s in steps]
    return {"summary": f"Steps ({len(steps)}) of thread {thread}",
            "blocks": [{"table": {"columns": cols, "rows": rows}}]}


def build_page(paths: Sequence[str | Path], *, verifier: str | None = "default", top: int = 2,
               page_size: int = 20, on_scoring: Callable[[str, int], None] | None = None,
               checkpoint: str | None = None) -> Page:
    """The page model of one output file, or of two side by side. ``verifier=None``: no scoring
    (citations show the answer's evidence only, support unknown). ``on_scoring(file, n_pairs)`` is
    called before a file's verifier pairs are scored (the CLI reports progress with it)."""
    if not paths:
        raise InputError("give at least one output file")
    if len(paths) > MAX_FILES:
        raise InputError(f"show compares at most {MAX_FILES} output files side by side (got {len(paths)})")
    if page_size < 1:
        raise InputError("--page-size must be at least 1")
    if top < 1:
        raise InputError("--top must be at least 1")
    read = [_read_file(i, Path(p)) for i, p in enumerate(paths)]  # every file is valid before any scoring
    v = None
    if verifier is not None:
        v = resolve_verifier(verifier)
    store = None
    if checkpoint:
        store = TraceStore(checkpoint)
    files = []
    for fv, parsed in read:
        _file_items(fv, parsed, v, top, on_scoring)
        if store is not None:  # each item's steps, from the store its run wrote (collapsed on the page)
            for it in fv.items:
                if it.thread:
                    it.steps = steps_view(store, it.thread)
        files.append(fv)
    return Page(files=files, rows=pair_rows(files), page_size=page_size, verifier=verifier,
                threshold=getattr(v, "threshold", None) if v is not None else None, top=top)


# --------------------------------------------------------------------------- HTML
def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "—" if v is None else ("yes" if v else "no")
    if isinstance(v, float):
        if v.is_integer() and abs(v) >= 10:
            return str(int(v))
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)


def render_page(page: Page, *, title: str | None = None) -> str:
    """The page as one self-contained HTML document (Jinja2, autoescaped)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("citegraph.view", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = _fmt
    tpl = env.get_template("show.html.j2")
    title = title or " vs ".join(f.name for f in page.files)
    return tpl.render(page=page, title=title, version=__version__, index=page.index())
