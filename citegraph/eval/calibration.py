"""Calibrating a verifier's scores and choosing the attribution stage's status thresholds on development
pairs, then reporting both on pairs kept apart from that choice.

The held-out split of the training pool is cut in two halves, each source x label cut alike
(:func:`dev_test_split`, seeded). On the development half:

* a **temperature** is fitted on the log-loss (:func:`~citegraph.eval.verifier_sets.fit_temperature`):
  the score shown is ``sigmoid(logit(score) / T)``, so a decision at 0.5 is the same before and after;
* the **partial threshold** is the highest score (on the shown scale, a 0.01 grid below 0.5) at which
  at most ``max_missed`` of the pairs called unsupported are in fact supported
  (:func:`choose_partial`; the median over bootstrap resamples of the half, :func:`bagged_partial`):
  "unsupported" is wrong at most one time in ten by default, and "partial" is as narrow as that allows.

:func:`calibrate` reports, on the test half, each status's share of the pairs and the share of it that
is truly supported (its precision, with a bootstrap interval: :func:`bands`), and the ECE before and after;
:func:`keep_partial` keeps a published partial threshold instead of the chosen one.
The result is one entry of ``citegraph/assets/verifier/calibration.json`` (:func:`entry`), read by
:func:`citegraph.tools.verifier.get_verifier`.
"""

from __future__ import annotations

import math
import random
from typing import Sequence

from citegraph.eval.verifier_sets import CheckPair, apply_temperature, ece, fit_temperature

MAX_MISSED = 0.10  # "unsupported" may be wrong (the pair in fact supported) at most this often
GRID = 0.01


def dev_test_split(pairs: Sequence[CheckPair], seed: int = 7) -> tuple[list[int], list[int]]:
    """Indices of a development half and a test half: every (group, label) stratum shuffled with ``seed``
    and cut in two (the odd one out of a stratum goes to the test half)."""
    strata: dict[tuple[str, int], list[int]] = {}
    for i, q in enumerate(pairs):
        strata.setdefault((q.group, q.label), []).append(i)
    rng = random.Random(seed)
    dev, test = [], []
    for key in sorted(strata):
        idx = strata[key][:]
        rng.shuffle(idx)
        dev += idx[: len(idx) // 2]
        test += idx[len(idx) // 2:]
    return sorted(dev), sorted(test)


def choose_partial(y: Sequence[int], shown: Sequence[float], threshold: float = 0.5,
                   max_missed: float = MAX_MISSED) -> float:
    """The highest ``t`` on a 0.01 grid below ``threshold`` such that, of the pairs scoring below ``t``
    (the ones the stage would call unsupported), at most ``max_missed`` are labelled supported. At least
    0.01; a set where even that misses too many gets 0.01 (everything below the threshold is partial)."""
    pairs = sorted(zip(shown, y))
    best = GRID
    k = 1
    while k * GRID < threshold - 1e-9:
        t = round(k * GRID, 2)
        below = [lab for s, lab in pairs if s < t]
        if below and sum(below) / len(below) <= max_missed:
            best = t
        k += 1
    return best


def bagged_partial(y: Sequence[int], shown: Sequence[float], threshold: float = 0.5, max_missed: float = MAX_MISSED,
                   resamples: int = 200, seed: int = 0) -> float:
    """The median of :func:`choose_partial` over ``resamples`` bootstrap resamples of the pairs: the
    share missed grows slowly with the threshold, so one sample's choice swings by several hundredths;
    the median does not."""
    y, shown = list(y), list(shown)
    if not y:
        return GRID
    rng = random.Random(seed)
    picks = []
    for _ in range(resamples):
        idx = [rng.randrange(len(y)) for _ in y]
        picks.append(choose_partial([y[i] for i in idx], [shown[i] for i in idx], threshold, max_missed))
    picks.sort()
    return picks[len(picks) // 2]


def bands(y: Sequence[int], shown: Sequence[float], partial: float, threshold: float = 0.5,
          boot: int = 1000, seed: int = 0) -> list[dict]:
    """Per status (unsupported below ``partial``, partial up to ``threshold``, supported from it): the
    pairs, their share, and the share truly supported with a 95% percentile bootstrap interval (resampling
    the pairs of that band)."""
    out = []
    rng = random.Random(seed)
    for status, lo, hi in (("unsupported", 0.0, partial), ("partial", partial, threshold), ("supported", threshold, 1.01)):
        ys = [lab for lab, s in zip(y, shown) if lo <= s < hi]
        prec = sum(ys) / len(ys) if ys else float("nan")
        draws = sorted(sum(rng.choice(ys) for _ in ys) / len(ys) for _ in range(boot)) if ys and boot else []
        ci = (draws[int(0.025 * (len(draws) - 1))], draws[int(math.ceil(0.975 * (len(draws) - 1)))]) if draws else (float("nan"),) * 2
        out.append({"status": status, "from": lo, "to": min(hi, 1.0), "n": len(ys), "share": len(ys) / max(len(y), 1),
                    "precision": prec, "precision_ci": list(ci)})
    return out


def calibrate(pairs: Sequence[CheckPair], scores: Sequence[float], threshold: float = 0.5, seed: int = 7,
              max_missed: float = MAX_MISSED, boot: int = 1000) -> dict:
    """Fit the temperature and choose the partial threshold on the development half of ``pairs`` (their
    raw ``scores``); report both on the test half. Returns the figures :func:`entry` keeps."""
    dev, test = dev_test_split(pairs, seed)
    y = [q.label for q in pairs]
    t = fit_temperature([y[i] for i in dev], [scores[i] for i in dev])
    shown = apply_temperature(scores, t)
    partial = bagged_partial([y[i] for i in dev], [shown[i] for i in dev], threshold, max_missed)
    raw_partial = apply_temperature([partial], 1 / t)[0]
    yt, st_raw, st = [y[i] for i in test], [scores[i] for i in test], [shown[i] for i in test]
    return {
        "temperature": t, "partial": partial, "threshold": threshold, "partial_raw": round(raw_partial, 4),
        "max_missed": max_missed, "seed": seed, "dev_pairs": len(dev), "test_pairs": len(test),
        "test": {"ece_raw": ece(yt, st_raw), "ece": ece(yt, st),
                 "bands": bands(yt, st, partial, threshold, boot=boot),
                 "bands_raw_0.2": bands(yt, st_raw, 0.2, threshold, boot=boot)},
        "dev": {"ece_raw": ece([y[i] for i in dev], [scores[i] for i in dev]),
                "ece": ece([y[i] for i in dev], [shown[i] for i in dev])},
    }


def keep_partial(fit: dict, raw: float, y: Sequence[int] | None = None, scores: Sequence[float] | None = None,
                 boot: int = 1000) -> dict:
    """``fit`` with the partial threshold kept at ``raw`` as scored (shown at the fitted temperature) instead of
    the chosen one, which stays beside it as ``partial_chosen``; the test half's bands are re-counted when
    its labels and raw scores are given. For a spec whose published figures were made at ``raw``."""
    # rounded down at 6 decimals: as scored it is at most ``raw`` and above any 4-decimal score below ``raw``
    shown_partial = math.floor(apply_temperature([raw], fit["temperature"])[0] * 1e6) / 1e6
    out = {**fit, "partial_chosen": fit["partial"], "partial": shown_partial, "partial_raw": raw}
    if y is not None and scores is not None:
        shown = apply_temperature(scores, fit["temperature"])
        out["test"] = {**fit["test"], "bands_chosen": fit["test"]["bands"],
                       "bands": bands(y, shown, out["partial"], fit["threshold"], boot=boot)}
    return out


def entry(fit: dict, *, data: str, commit: str, command: str) -> dict:
    """What ``calibration.json`` keeps for one spec: the two numbers the code reads (``temperature``,
    ``partial``) and where they came from, with the test half's figures."""
    test = fit["test"]
    kept = {}
    if "partial_chosen" in fit:
        kept = {"partial_chosen": fit["partial_chosen"],
                "partial_kept": f"{fit['partial_raw']} as scored, the value the published figures of this spec were "
                                "made with; the chosen one needs them re-run (docs/verifier.md)",
                "test_half_at_chosen": {"precision": {b["status"]: round(b["precision"], 3) for b in test["bands_chosen"]},
                                        "share": {b["status"]: round(b["share"], 3) for b in test["bands_chosen"]}}}
    return {"temperature": fit["temperature"], "partial": fit["partial"], **kept,
            "chosen_on": f"{data}: development half ({fit['dev_pairs']} pairs, seed {fit['seed']}); partial = the highest "
                         f"score at which at most {fit['max_missed']:.0%} of the pairs called unsupported are supported",
            "commit": commit, "command": command,
            "test_half": {"pairs": fit["test_pairs"], "ece_raw": round(test["ece_raw"], 3), "ece": round(test["ece"], 3),
                          "precision": {b["status"]: round(b["precision"], 3) for b in test["bands"]},
                          "share": {b["status"]: round(b["share"], 3) for b in test["bands"]}}}
