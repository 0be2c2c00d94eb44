"""Fact-checking sets for measuring a verifier, and the figures reported on them.

Readers return :class:`CheckPair` rows (premise, claim, label 1 = supported, group name):

* :func:`read_aggrefact` — LLM-AggreFact's published format (``dataset, doc, claim, label``) as
  parquet, CSV/TSV or JSON lines; ``group`` is the row's ``dataset``, and the leaderboard's figure is
  the mean of the per-dataset balanced accuracies (:func:`leaderboard_average`).
* :func:`read_fever_nli` — binary FEVER-NLI TSV (``label<TAB>premise<TAB>hypothesis``).
* :func:`read_minimal_pairs` — our minimal-pair suite (``benchmarks/data/minimal_pairs.jsonl``:
  ``category`` is the group; controls are the supported claims beside each perturbed one).

:func:`binary_report` gives balanced accuracy, TPR, TNR and ROC-AUC with seeded percentile bootstrap
intervals, and the expected calibration error (ECE) of the score read as a probability.
"""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from citegraph.errors import InputError
from citegraph.tools.verifier.base import logit, temperature_scaled


@dataclass(frozen=True)
class CheckPair:
    premise: str
    claim: str
    label: int
    group: str = ""
    id: str = ""


_TRUE = {"1", "1.0", "true", "yes", "supported", "entailment", "entailed", "consistent"}
_FALSE = {"0", "0.0", "false", "no", "unsupported", "not_entailment", "not_supported", "inconsistent",
          "contradiction", "neutral"}


def _label(value, where: str) -> int:
    v = str(value).strip().lower()
    if v in _TRUE:
        return 1
    if v in _FALSE:
        return 0
    raise InputError(f"{where}: label {value!r} is neither supported (1) nor unsupported (0)")


def _rows_of(path: Path) -> list[dict]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas ships with the dependencies
            raise InputError(f"{path}: reading parquet needs pandas and pyarrow") from exc
        try:
            return pd.read_parquet(path).to_dict("records")
        except ImportError as exc:
            raise InputError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from exc
    if suffix in (".csv", ".tsv"):
        with path.open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f, delimiter="\t" if suffix == ".tsv" else ","))
    if suffix in (".jsonl", ".json"):
        text = path.read_text(encoding="utf-8")
        if suffix == ".json" and text.lstrip().startswith("["):
            return json.loads(text)
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{n}: not JSON ({exc.msg})") from exc
        return out
    raise InputError(f"{path}: expected .parquet, .csv, .tsv, .jsonl or .json")


def read_aggrefact(path: str | Path, datasets: Sequence[str] | None = None) -> list[CheckPair]:
    """Rows of an LLM-AggreFact file (one split), optionally only the named ``datasets``."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    rows = _rows_of(path)
    if not rows:
        raise InputError(f"{path}: no rows")
    missing = {"doc", "claim", "label"} - set(rows[0])
    if missing:
        raise InputError(f"{path}: not LLM-AggreFact's format (missing column(s) {', '.join(sorted(missing))}; "
                         "expected dataset, doc, claim, label)")
    want = {d.lower() for d in datasets} if datasets else None
    out = []
    for i, r in enumerate(rows):
        name = str(r.get("dataset") or path.stem)
        if want and name.lower() not in want:
            continue
        out.append(CheckPair(str(r["doc"] or ""), str(r["claim"] or ""), _label(r["label"], f"{path} row {i + 1}"),
                             name, str(r.get("id") or i)))
    if want and not out:
        raise InputError(f"{path}: none of the datasets {', '.join(sorted(want))} in the file")
    return out


def read_fever_nli(path: str | Path) -> list[CheckPair]:
    path = Path(path)
    out = []
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                out.append(CheckPair(parts[1], parts[2], _label(parts[0], f"{path}:{i + 1}"), "fever_nli", str(i)))
    return out


def read_factcg(path: str | Path) -> list[CheckPair]:
    """FactCG's document-grounded synthetic claims (``CG2C_doc.json``: JSON lines ``{text_a: document,
    text_b: [claim], orig_label}``), one pair per claim."""
    path = Path(path)
    out = []
    for i, r in enumerate(_rows_of(path)):
        claims = r["text_b"] if isinstance(r["text_b"], list) else [r["text_b"]]
        for k, c in enumerate(claims):
            out.append(CheckPair(r["text_a"], c, _label(str(r["orig_label"]), f"{path}:{i + 1}"), "factcg", f"{i}.{k}"))
    return out


def read_minimal_pairs(path: str | Path) -> list[CheckPair]:
    path = Path(path)
    out = []
    for r in _rows_of(path):
        out.append(CheckPair(r["premise"], r["claim"], int(r["label"]), r["category"], r["id"]))
    return out


def stratified_sample(pairs: Sequence[CheckPair], n: int, seed: int = 0) -> list[CheckPair]:
    """At most ``n`` pairs, the label shares kept, seeded; the original order is kept."""
    if n <= 0 or n >= len(pairs):
        return list(pairs)
    rng = random.Random(seed)
    by = {0: [i for i, p in enumerate(pairs) if p.label == 0], 1: [i for i, p in enumerate(pairs) if p.label == 1]}
    keep = []
    for lab, idx in by.items():
        k = round(n * len(idx) / len(pairs))
        keep += rng.sample(idx, min(k, len(idx)))
    return [pairs[i] for i in sorted(keep)]


# ------------------------------------------------------------------------------------------------
def best_sentences(premise: str, claim: str, words: int = 95) -> str:
    """The premise cut to its sentences sharing the most content words with the claim, in their own order, up
    to about ``words`` words (one window of the shipped verifier beside a claim): a way to score a long
    premise that ``bench_verifier.py --premise best-sentences`` measures against the verifier's own windows."""
    from citegraph.tools.sentences import split_sentences
    from citegraph.tools.verifier.checks import content_stems

    sents = [x for x in split_sentences(premise) if x.strip()]
    if len(sents) <= 1:
        return premise
    want = content_stems(claim)
    ranked = sorted(range(len(sents)), key=lambda i: (-len(want & content_stems(sents[i])), i))
    chosen, n = [], 0
    for i in ranked:
        w = len(sents[i].split())
        if chosen and n + w > words:
            continue
        chosen.append(i)
        n += w
    return " ".join(sents[i] for i in sorted(chosen))


def _bacc(y: Sequence[int], pred: Sequence[int]) -> tuple[float, float, float]:
    pos = sum(y)
    neg = len(y) - pos
    tp = sum(1 for a, b in zip(y, pred) if a == 1 and b == 1)
    tn = sum(1 for a, b in zip(y, pred) if a == 0 and b == 0)
    tpr = tp / pos if pos else float("nan")
    tnr = tn / neg if neg else float("nan")
    if not pos:
        return tnr, tpr, tnr
    if not neg:
        return tpr, tpr, tnr
    return (tpr + tnr) / 2, tpr, tnr


def _auc(y: Sequence[int], s: Sequence[float]) -> float:
    if len(set(y)) < 2:
        return float("nan")
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s))


def ece(y: Sequence[int], s: Sequence[float], bins: int = 10) -> float:
    """Expected calibration error of ``s`` as P(supported): equal-width bins, weighted by size."""
    total, err = len(y), 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, v in enumerate(s) if lo <= v < hi or (b == bins - 1 and v == 1.0)]
        if idx:
            conf = sum(s[i] for i in idx) / len(idx)
            acc = sum(y[i] for i in idx) / len(idx)
            err += len(idx) / total * abs(conf - acc)
    return err


@dataclass
class Report:
    n: int
    positives: int
    balanced_accuracy: float
    tpr: float
    tnr: float
    roc_auc: float
    ece: float
    bacc_ci: tuple[float, float]
    auc_ci: tuple[float, float]

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def binary_report(y: Sequence[int], s: Sequence[float], threshold: float = 0.5, boot: int = 1000,
                  seed: int = 0) -> Report:
    """Figures of scores ``s`` against labels ``y`` at ``threshold``, with 95% percentile bootstrap
    intervals (``boot`` resamples of the pairs, seeded) for balanced accuracy and ROC-AUC."""
    y, s = list(y), list(s)
    pred = [int(v >= threshold) for v in s]
    bacc, tpr, tnr = _bacc(y, pred)
    auc = _auc(y, s)
    rng = random.Random(seed)
    baccs, aucs = [], []
    n = len(y)
    for _ in range(boot if n > 1 else 0):
        idx = [rng.randrange(n) for _ in range(n)]
        yy = [y[i] for i in idx]
        baccs.append(_bacc(yy, [pred[i] for i in idx])[0])
        if len(set(yy)) > 1 and auc == auc:
            aucs.append(_auc(yy, [s[i] for i in idx]))
    return Report(n, sum(y), bacc, tpr, tnr, auc, ece(y, s), _interval(baccs), _interval(aucs))


def _interval(values: list[float]) -> tuple[float, float]:
    vals = sorted(v for v in values if v == v)
    if not vals:
        return (float("nan"), float("nan"))
    lo = vals[int(math.floor(0.025 * (len(vals) - 1)))]
    hi = vals[int(math.ceil(0.975 * (len(vals) - 1)))]
    return (lo, hi)


def leaderboard_average(pairs: Sequence[CheckPair], scores: Sequence[float], threshold: float = 0.5) -> dict:
    """Per-group balanced accuracy and their unweighted mean (LLM-AggreFact's leaderboard figure)."""
    groups: dict[str, tuple[list[int], list[int]]] = {}
    for p, v in zip(pairs, scores):
        ys, ps = groups.setdefault(p.group, ([], []))
        ys.append(p.label)
        ps.append(int(v >= threshold))
    per = {g: _bacc(ys, ps)[0] for g, (ys, ps) in sorted(groups.items())}
    return {"per_dataset": per, "average": sum(per.values()) / len(per) if per else float("nan")}


def minimal_pair_table(pairs: Sequence[CheckPair], scores: Sequence[float], threshold: float = 0.5) -> dict:
    """Share of pairs decided right per category (controls: share of supported claims kept)."""
    out: dict[str, list[int]] = {}
    for p, v in zip(pairs, scores):
        out.setdefault(p.group, []).append(int(int(v >= threshold) == p.label))
    return {g: {"n": len(v), "right": sum(v), "share": sum(v) / len(v)} for g, v in sorted(out.items())}


# ------------------------------------------------------------------------------------------------
def apply_temperature(scores: Sequence[float], temperature: float) -> list[float]:
    """Binary scores as if the model's logits had been divided by ``temperature`` (same decisions at 0.5)."""
    return [temperature_scaled(p, temperature) for p in scores]


def fit_temperature(y: Sequence[int], scores: Sequence[float]) -> float:
    """The temperature that minimises the log-loss of ``scores`` on labels ``y`` (a grid, then a finer one)."""
    logits = [logit(p) for p in scores]

    def nll(t: float) -> float:
        total = 0.0
        for lab, z in zip(y, logits):
            q = 1 / (1 + math.exp(-z / t))
            total -= math.log(max(q if lab else 1 - q, 1e-12))
        return total

    best = min((0.25 + 0.05 * k for k in range(96)), key=nll)
    return round(min((best - 0.05 + 0.005 * k for k in range(21)), key=nll), 3)
