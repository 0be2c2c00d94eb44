"""Nugget evaluation after the AutoNuggetizer protocol (Pradeep et al., 2024; castorini/nuggetizer).

1. creation (skipped when nuggets are given): an LLM updates a nugget list (1-12 words each) over the
   passages (or a reference) in windows of 10, keeping at most 30, ordered by importance;
2. importance: vital / okay, windows of 10 nuggets;
3. assignment: each nugget vs the answer (citations removed) as support / partial_support /
   not_support, windows of 10 nuggets;
4. per-topic scores V_strict (supported vital / vital), V (support + 0.5 partial over vital),
   A_strict and A (the same over all nuggets), averaged over topics.

The judge is a chat spec. Replies are grammar-constrained JSON on llama.cpp with exactly one label per
nugget; a reply that still does not fit is retried, then padded with the conservative label
(``not_support`` / ``okay``) and the problem is recorded.

From Python::

    from citegraph.eval.nuggets import evaluate_topic
    r = evaluate_topic("q", "answer text", nuggets=["n1", "n2"], importance=["vital", "okay"], judge="local")
    r.scores  # {"v_strict": ..., "v": ..., "a_strict": ..., "a": ...}
"""

from __future__ import annotations

import ast
import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from citegraph.errors import InputError
from citegraph.prompts import nuggets as P
from citegraph.run.output import read_output_file
from citegraph.state.base import default_judge
from citegraph.state.marks import strip_citations
from citegraph.tools.models import judge_many, structured, yes_probability

ASSIGN_LABELS = ("support", "partial_support", "not_support")
IMPORTANCE_LABELS = ("vital", "okay")
SCORE_KEYS = ("v_strict", "v", "a_strict", "a")


# --------------------------------------------------------------------------- arithmetic
def topic_scores(importance: Sequence[str], assignment: Sequence[str]) -> dict[str, float]:
    """V_strict, V, A_strict, A of one topic. A topic without vital nuggets scores 0 on V_strict and V
    (as nuggetizer does)."""
    if len(importance) != len(assignment):
        raise ValueError(f"{len(importance)} importance labels for {len(assignment)} assignments")
    full = [a == "support" for a in assignment]
    part = [a == "partial_support" for a in assignment]
    vital = [i for i, imp in enumerate(importance) if imp == "vital"]
    n = len(assignment)

    def mean(idx, lenient):
        if not idx:
            return 0.0
        return sum(full[i] + (0.5 * part[i] if lenient else 0.0) for i in idx) / len(idx)

    return {"v_strict": mean(vital, False), "v": mean(vital, True),
            "a_strict": mean(range(n), False), "a": mean(range(n), True)}


def average(rows: Iterable[dict[str, float]]) -> dict[str, float | None]:
    rows = list(rows)
    return {k: (sum(r[k] for r in rows) / len(rows) if rows else None) for k in SCORE_KEYS}


# --------------------------------------------------------------------------- LLM steps
def _windows(items: Sequence[Any], size: int) -> list[tuple[int, list[Any]]]:
    size = max(1, int(size))
    return [(i, list(items[i:i + size])) for i in range(0, len(items), size)]


def _coerce_labels(allowed: tuple[str, ...]):
    def coerce(data):
        if isinstance(data, list):
            data = {"labels": data}
        if isinstance(data, dict) and isinstance(data.get("labels"), list):
            fixed = []
            for x in data["labels"]:
                s = str(x).strip().lower().replace(" ", "_").replace("-", "_")
                fixed.append(s)
            data = {"labels": fixed}
        return data
    return coerce


def label_window(judge: str, prompt: str, n: int, allowed: tuple[str, ...], default: str, *,
                 system: str, max_tokens: int = 400) -> tuple[list[str], list[str]]:
    """One window of labels: exactly ``n`` from ``allowed`` (padded with ``default`` on failure)."""
    schema = P.labels_schema(n, allowed)
    obj, problems = structured(judge, prompt, schema, system=system, fallback=lambda: None, retries=1,
                               coerce=_coerce_labels(allowed), temperature=0.0, max_tokens=max_tokens)
    if obj is None:
        return [default] * n, problems + [f"window of {n}: no valid labels; all set to {default}"]
    return list(obj.labels), problems


def create_nuggets(query: str, passages: Sequence[str], judge: str = "local", *, window: int = 10,
                   max_nuggets: int = 30) -> tuple[list[str], list[str]]:
    """Nuggets from the passages (or a reference), updated window by window; at most ``max_nuggets``."""
    nuggets: list[str] = []
    problems: list[str] = []

    def coerce(data):
        if isinstance(data, list):
            return {"nuggets": [str(x) for x in data]}
        return data

    for _, win in _windows([p for p in passages if p and p.strip()], window):
        obj, probs = structured(judge, P.create_prompt(query, win, nuggets, max_nuggets), P.NuggetList,
                                system=P.CREATE_SYSTEM, fallback=lambda: None, retries=1, coerce=coerce,
                                temperature=0.0, max_tokens=900)
        problems += probs
        if obj is None:
            problems.append("creation window kept the previous list")
            continue
        new = [" ".join(n.split()) for n in obj.nuggets if n and n.strip()]
        nuggets = list(dict.fromkeys(new))[:max_nuggets]
    return nuggets, problems


def label_importance(query: str, nuggets: Sequence[str], judge: str = "local", *, window: int = 10) -> tuple[list[str], list[str]]:
    out: list[str] = []
    problems: list[str] = []
    for _, win in _windows(nuggets, window):
        labels, probs = label_window(judge, P.importance_prompt(query, win), len(win), IMPORTANCE_LABELS, "okay",
                                     system=P.SCORE_SYSTEM)
        out += labels
        problems += probs
    return out, problems


ASSIGN_MODES = ("list", "yesno")


def assign_yesno(query: str, answer: str, nugget: str, judge: str, threshold: float = 0.5) -> tuple[str, list[float]]:
    """One nugget by two Yes/No questions (P(Yes) from the judge's next-token distribution): fully
    captured → support; else partly captured → partial_support; else not_support. Returns the label
    and the probabilities asked (kept so thresholds can be fitted on labelled data)."""
    full = yes_probability(judge, P.yesno_prompt(query, answer, nugget, partial=False), system=P.ASSIGN_SYSTEM)
    if full >= threshold:
        return "support", [full]
    part = yes_probability(judge, P.yesno_prompt(query, answer, nugget, partial=True), system=P.ASSIGN_SYSTEM)
    return ("partial_support" if part >= threshold else "not_support"), [full, part]


def assign_yesno_many(query: str, answer: str, nuggets: Sequence[str], judge: str,
                      threshold: float = 0.5) -> list[tuple[str, list[float]]]:
    """:func:`assign_yesno` for every nugget, with each round's questions asked together
    (``judge_many``: in flight at once on an endpoint): "fully captured?" for all nuggets, then
    "partly captured?" for those not fully captured. The same labels and probabilities as one
    nugget at a time."""
    full = judge_many(judge, [P.yesno_prompt(query, answer, n, partial=False) for n in nuggets], system=P.ASSIGN_SYSTEM)
    rest = [k for k, f in enumerate(full) if f < threshold]
    part = dict(zip(rest, judge_many(judge, [P.yesno_prompt(query, answer, nuggets[k], partial=True) for k in rest],
                                     system=P.ASSIGN_SYSTEM)))
    out = []
    for k, f in enumerate(full):
        if f >= threshold:
            out.append(("support", [f]))
        else:
            out.append(("partial_support" if part[k] >= threshold else "not_support", [f, part[k]]))
    return out


def assign_nuggets(query: str, answer: str, nuggets: Sequence[str], judge: str = "local", *, window: int = 10,
                   mode: str = "list", p_yes: list | None = None) -> tuple[list[str], list[str]]:
    """support / partial_support / not_support of each nugget in ``answer`` (pass it without citations).
    ``list``: the protocol's labelled lists in windows of ``window``; ``yesno``: our per-nugget Yes/No
    variant for small judges, which copy the label order of a list prompt (measured: docs/results/README.md); its
    P(Yes) per nugget ([full] or [full, partial]) are appended to ``p_yes`` when given."""
    if mode not in ASSIGN_MODES:
        raise InputError(f"unknown assignment mode {mode!r}; use one of {', '.join(ASSIGN_MODES)}")
    if mode == "yesno":
        res = assign_yesno_many(query, answer, nuggets, judge)
        if p_yes is not None:
            p_yes.extend([round(p, 4) for p in ps] for _, ps in res)
        return [lab for lab, _ in res], []
    out: list[str] = []
    problems: list[str] = []
    for _, win in _windows(nuggets, window):
        labels, probs = label_window(judge, P.assign_prompt(query, answer, win), len(win), ASSIGN_LABELS,
                                     "not_support", system=P.ASSIGN_SYSTEM)
        out += labels
        problems += probs
    return out, problems


@dataclass
class TopicResult:
    query: str
    nuggets: list[str]
    importance: list[str]
    assignment: list[str]
    scores: dict[str, float]
    problems: list[str] = field(default_factory=list)
    created: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate_topic(query: str, answer: str, *, nuggets: Sequence[str] | None = None,
                   importance: Sequence[str] | None = None, passages: Sequence[str] | None = None,
                   judge: str = "local", window: int = 10, max_nuggets: int = 30, mode: str = "list") -> TopicResult:
    """Score one answer. Given nuggets skip creation; given importance skips labelling. Citation
    markers are removed from the answer before assignment (the judge does not see citations)."""
    problems: list[str] = []
    created = False
    if nuggets is None:
        if not passages:
            raise InputError("nugget evaluation needs nuggets, or passages (or a reference) to create them from")
        nuggets, probs = create_nuggets(query, passages, judge, window=window, max_nuggets=max_nuggets)
        problems += probs
        created = True
    nuggets = list(nuggets)
    if importance is None:
        importance, probs = label_importance(query, nuggets, judge, window=window)
        problems += probs
    importance = list(importance)
    if len(importance) != len(nuggets):
        raise InputError(f"{len(importance)} importance labels for {len(nuggets)} nuggets")
    assignment, probs = assign_nuggets(query, strip_citations(answer or ""), nuggets, judge, window=window, mode=mode)
    problems += probs
    return TopicResult(query, nuggets, importance, assignment, topic_scores(importance, assignment), problems, created)


# --------------------------------------------------------------------------- files
def read_nuggets_file(path: str | Path) -> dict[str, dict[str, list[str]]]:
    """Given nuggets: JSON lines ``{"id"|"qid", "nuggets": [...], "importance"?: [...]}`` or a JSON object
    ``{id: [...]}`` / ``{id: {"nuggets": [...], "importance": [...]}}``. Returns id → {nuggets, importance?}."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"nuggets file not found: {p}")
    text = p.read_text()
    out: dict[str, dict[str, list[str]]] = {}
    try:
        data = json.loads(text)
        if isinstance(data, dict) and "nuggets" in data:  # one JSON line
            rows = [data]
        elif isinstance(data, dict):
            rows = [{"id": k, **(v if isinstance(v, dict) else {"nuggets": v})} for k, v in data.items()]
        else:
            rows = list(data)
    except json.JSONDecodeError:
        try:
            rows = [json.loads(l) for l in text.splitlines() if l.strip()]
        except json.JSONDecodeError as e:
            raise InputError(f"{p}: neither JSON nor JSON lines ({e})") from e
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict) or not isinstance(r.get("nuggets"), list):
            raise InputError(f"{p}: entry {i} has no 'nuggets' list")
        key = str(r.get("id", r.get("qid", "")))
        imp = r.get("importance")
        if imp is not None and (not isinstance(imp, list) or len(imp) != len(r["nuggets"])
                                or any(x not in IMPORTANCE_LABELS for x in imp)):
            raise InputError(f"{p}: entry {key!r}: 'importance' must list vital/okay, one per nugget")
        out[key] = {"nuggets": [str(x) for x in r["nuggets"]], **({"importance": list(imp)} if imp else {})}
    return out


@dataclass
class FidelitySystem:
    response: str
    nuggets: list[str]
    importance: list[str]
    assignment: list[str]
    v_strict: float | None


@dataclass
class FidelityTopic:
    qid: str
    query: str
    systems: dict[str, FidelitySystem]


_SUFFIX = "_automatically_detected_nuggets"


def _pylist(text: str, where: str) -> list[str]:
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError) as e:
        raise InputError(f"{where}: not a list literal ({e})") from e
    if not isinstance(v, list):
        raise InputError(f"{where}: not a list")
    return [str(x) for x in v]


def read_fidelity_csv(path: str | Path) -> list[FidelityTopic]:
    """GINGER's released AutoNuggetizer files (';'-separated): per topic, for each system, its response,
    GPT-4o's nuggets, importance and assignments (Python list literals) and V_strict."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"fidelity file not found: {p}")
    csv.field_size_limit(1 << 30)
    with p.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter=";"))
    if not rows:
        return []
    systems = [h[: -len(_SUFFIX)] for h in rows[0] if h.endswith(_SUFFIX)]
    missing = [s for s in systems if s not in rows[0]]
    if not systems or missing:
        raise InputError(f"{p}: no '<system>{_SUFFIX}' columns with their responses")
    topics = []
    for r in rows:
        sysd = {}
        for s in systems:
            where = f"{p.name} {r['qid']} {s}"
            nug = _pylist(r[f"{s}{_SUFFIX}"], where)
            imp = _pylist(r[f"{s}_nuggets_importance"], where)
            asg = _pylist(r[f"{s}_nuggets_assignments"], where)
            if not len(nug) == len(imp) == len(asg):
                raise InputError(f"{where}: {len(nug)} nuggets, {len(imp)} importance, {len(asg)} assignments")
            vs = r.get(f"{s}_v_strict_score")
            sysd[s] = FidelitySystem(r[s], nug, imp, asg, float(vs) if vs not in (None, "") else None)
        topics.append(FidelityTopic(r["qid"], r["query"], sysd))
    return topics


def agreement(ours: Sequence[str], theirs: Sequence[str]) -> dict[str, float]:
    """Accuracy and Cohen's kappa over support / partial_support / not_support."""
    from sklearn.metrics import cohen_kappa_score

    if not ours:
        return {"n": 0, "accuracy": float("nan"), "kappa": float("nan")}
    acc = sum(a == b for a, b in zip(ours, theirs)) / len(ours)
    kappa = float(cohen_kappa_score(list(theirs), list(ours), labels=list(ASSIGN_LABELS)))
    return {"n": len(ours), "accuracy": acc, "kappa": kappa}


def labels_from_scores(p_yes: Sequence[float], support_at: float, partial_at: float) -> list[str]:
    """Three labels from one P(Yes) per nugget ("does the answer fully capture it?"): support at
    ``p >= support_at``, partial_support at ``partial_at <= p < support_at``, else not_support."""
    return ["support" if p >= support_at else "partial_support" if p >= partial_at else "not_support" for p in p_yes]


def fit_thresholds(p_yes: Sequence[float], gold: Sequence[str], step: float = 0.05) -> dict[str, float]:
    """The (support_at, partial_at) pair on a grid of ``step`` (partial_at <= support_at; a threshold above 1
    switches a label off) that maximises Cohen's kappa of :func:`labels_from_scores` against ``gold``
    labels, e.g. GPT-4o's on part of the fidelity file, for a small judge whose P(Yes) ranks nuggets
    better than its 0.5 cut-off labels them. Ties go to the first pair found (lowest thresholds)."""
    if len(p_yes) != len(gold) or not gold:
        raise InputError(f"fit_thresholds needs as many scores as labels (got {len(p_yes)} and {len(gold)})")
    n = int(round(1 / step))
    grid = [round(i * step, 6) for i in range(n + 1)] + [1.01]
    best = {"support_at": 0.5, "partial_at": 0.5, "kappa": float("-inf")}
    for s in grid:
        for q in grid:
            if q > s:
                break
            k = agreement(labels_from_scores(p_yes, s, q), gold)["kappa"]
            if k > best["kappa"]:
                best = {"support_at": s, "partial_at": q, "kappa": k}
    return best


# --------------------------------------------------------------------------- ALCE-style outputs (CLI)
def evaluate_output_file(path: str | Path, *, judge: str | None = None, nuggets_file: str | Path | None = None,
                         claims_key: str | None = None, window: int = 10, max_nuggets: int = 30,
                         journal: str | Path | None = None, progress=None, mode: str = "list") -> dict[str, Any]:
    """Nugget scores of every item of a ``citegraph run`` / ``bench`` output file. Nuggets per item: from
    ``nuggets_file`` (by item id), else the item's ``claims_key`` list as vital nuggets (ELI5 ``claims``),
    else created from the item's documents. Finished items are journalled (re-running resumes).
    ``judge`` defaults to ``$CITEGRAPH_JUDGE`` (else ``$CITEGRAPH_LLM``, else ``local``)."""
    judge = judge or default_judge()

    args, records = read_output_file(path)
    given = read_nuggets_file(nuggets_file) if nuggets_file else {}
    done: dict[str, dict] = {}
    jpath = Path(journal) if journal else None
    if jpath and jpath.exists():
        for line in jpath.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["id"]] = r
    rows = []
    for k, rec in enumerate(records, 1):
        rid = str((rec.get("citegraph") or {}).get("item_id") or rec.get("id") or rec.get("qid") or k)
        if rid in done:
            rows.append(done[rid])
            continue
        q = rec.get("question", "")
        kw: dict[str, Any] = {}
        if rid in given:
            kw = {"nuggets": given[rid]["nuggets"], "importance": given[rid].get("importance")}
        elif claims_key and isinstance(rec.get(claims_key), list):
            kw = {"nuggets": [str(c) for c in rec[claims_key]], "importance": ["vital"] * len(rec[claims_key])}
        else:
            kw = {"passages": [d.get("text", "") for d in rec.get("docs", rec.get("documents", []))]}
        res = evaluate_topic(q, rec.get("output", ""), judge=judge, window=window, max_nuggets=max_nuggets, mode=mode, **kw)
        row = {"id": rid, **res.as_dict()}
        rows.append(row)
        if jpath:
            jpath.parent.mkdir(parents=True, exist_ok=True)
            with jpath.open("a") as f:
                f.write(json.dumps(row) + "\n")
        if progress:
            progress(k, len(records))
    return {"file": str(path), "judge": judge, "items": rows, "summary": average(r["scores"] for r in rows)}
