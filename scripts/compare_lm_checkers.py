#!/usr/bin/env python
"""Which ``lm-check`` adapter to ship: each candidate as the second opinion of ``<first>+lm``, on the
evaluation pairs of a ``train_lm_checker.py payload`` (the pool's held-out split, ExpertQA, FEVER-NLI
test, the minimal pairs), with a paired bootstrap of its difference from the shipped adapter.

    python scripts/compare_lm_checkers.py --payload .lmgpu/all runs/lmgpu16/a runs/lmgpu16/b

A candidate is a training run's output folder: its ``eval_scores.jsonl`` (the GPU's own scores, one per
evaluation pair in payload order) is read, nothing is re-scored. The reference is the shipped adapter
(``--reference-spec lm-check``), scored here on the CPU, only on the pairs where the first verifier is
unsure (the band, where ``+lm`` asks it): about a third of the pairs, 30 minutes on the 2-core machine.
The first verifier's scores and the reference's are cached in ``--cache`` and reused.
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SETS = ("heldout", "expertqa", "fever", "minimal", "minimal-blind", "minimal-third", "minimal-fourth", "minimal-fifth", "minimal-sixth",
        "minimal-seventh", "minimal-eighth", "minimal-ninth", "minimal-tenth",
        "minimal-eleventh", "minimal-twelfth", "minimal-thirteenth", "minimal-fourteenth")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="training runs' output folders (each with eval_scores.jsonl)")
    ap.add_argument("--payload", required=True, help="the payload folder whose pairs.jsonl.xz the runs scored")
    ap.add_argument("--first", default="default+checks", help="the first verifier of <first>+lm")
    ap.add_argument("--reference-spec", default="lm-check", help="the shipped second opinion, scored here")
    ap.add_argument("--cache", default="runs/lm_compare", help="folder for the first's and the reference's scores")
    ap.add_argument("--boot", type=int, default=2000)
    return ap.parse_args(argv)


def second_opinion(first: list[float], second: dict[int, float] | list[float], band=(0.1, 0.9)) -> np.ndarray:
    """``<first>+lm``'s score (citegraph.tools.verifier.lm.SecondOpinionVerifier): the mean of both inside
    the band, the first's elsewhere."""
    return np.array([(f + second[i]) / 2 if band[0] < f < band[1] else f for i, f in enumerate(first)])


def paired_difference(y: np.ndarray, new: np.ndarray, ref: np.ndarray, boot: int, seed: int = 0):
    """Balanced accuracy of ``new`` minus ``ref`` at 0.5, and its 95% paired percentile bootstrap interval."""
    from citegraph.eval.verifier_sets import _bacc  # the benchmark's own balanced accuracy

    def bacc(idx, s):
        return _bacc(y[idx].tolist(), (s[idx] >= 0.5).tolist())[0]

    every = np.arange(len(y))
    rng = np.random.default_rng(seed)
    diffs = [bacc(k, new) - bacc(k, ref) for k in (rng.integers(0, len(y), len(y)) for _ in range(boot))]
    return bacc(every, new) - bacc(every, ref), tuple(np.percentile(diffs, [2.5, 97.5]))


def print_table(rows: list[dict], scores: dict[str, np.ndarray], ref: str, boot: int, unpaired=()) -> None:
    """Per set of ``rows``: each spec's balanced accuracy at 0.5 with a bootstrap interval, and (but for ``ref``
    and ``unpaired``) its difference from ``ref`` on the same resampled pairs; then the minimal pairs' share
    right per category."""
    from citegraph.eval.verifier_sets import binary_report

    y_all = np.array([r["y"] for r in rows])
    for s in SETS:
        idx = np.array([i for i, r in enumerate(rows) if r["set"] == s])
        if not len(idx):
            continue
        y = y_all[idx]
        cells = []
        for name, sc in scores.items():
            rep = binary_report(y.tolist(), sc[idx].tolist(), boot=boot)
            lo, hi = rep.bacc_ci
            cell = f"{name} {100 * rep.balanced_accuracy:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
            if name != ref and name not in unpaired:
                d, (dlo, dhi) = paired_difference(y, sc[idx], scores[ref][idx], boot)
                cell += f", {100 * d:+.1f} [{100 * dlo:+.1f}, {100 * dhi:+.1f}]"
            cells.append(cell)
        print(f"{s} ({len(idx)}): " + " | ".join(cells))
    for s in (s for s in SETS if s.startswith("minimal")):
        idx = [i for i, r in enumerate(rows) if r["set"] == s]
        if not idx:
            continue
        title = "minimal pairs" if s == "minimal" else s
        for name, sc in scores.items():
            cats: dict[str, list[bool]] = {}
            for i in idx:
                cats.setdefault(rows[i]["group"], []).append(int(sc[i] >= 0.5) == rows[i]["y"])
            print(f"{title}, share right, {name}: " + ", ".join(f"{c} {100 * sum(v) / len(v):.0f}"
                                                               for c, v in sorted(cats.items())))


def cached(path: Path, make):
    if path.is_file():
        return json.loads(path.read_text())
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return value


def main(argv=None) -> int:
    args = parse_args(argv)
    pairs_file = Path(args.payload) / "pairs.jsonl.xz"
    if not pairs_file.is_file():
        print(f"--payload {args.payload}: no pairs.jsonl.xz (write one with train_lm_checker.py payload)", file=sys.stderr)
        return 2
    with lzma.open(pairs_file, "rt", encoding="utf-8") as f:
        rows = [r for r in map(json.loads, f) if r["split"] == "eval"]
    runs = {}
    for run in map(Path, args.runs):
        f = run / "eval_scores.jsonl"
        got = [json.loads(line) for line in f.read_text().splitlines()] if f.is_file() else []
        if len(got) != len(rows) or any(g["y"] != r["y"] for g, r in zip(got, rows)):
            print(f"{f}: not {len(rows)} scores of this payload's evaluation pairs", file=sys.stderr)
            return 2
        runs[run.name] = [g["p"] for g in got]

    from citegraph.tools.verifier import get_verifier

    cache = Path(args.cache)
    texts = [(r["premise"], r["claim"]) for r in rows]
    first = cached(cache / f"first_{args.first}.json", lambda: get_verifier(args.first).score(texts))
    band = [i for i, v in enumerate(first) if 0.1 < v < 0.9]

    def reference():
        scores = get_verifier(args.reference_spec).score([texts[i] for i in band])
        return {str(i): v for i, v in zip(band, scores)}

    ref_band = {int(k): v for k, v in cached(cache / f"band_{args.first}_{args.reference_spec}.json", reference).items()}
    shipped = f"{args.reference_spec} (shipped)"
    combos = {"first": np.array(first), shipped: second_opinion(first, ref_band)}
    combos.update({name: second_opinion(first, s) for name, s in runs.items()})
    print(f"{args.first}+lm, balanced accuracy at 0.5 [95% bootstrap]; candidates minus the shipped adapter, paired; "
          f"{len(band)} of {len(rows)} pairs in the band")
    print_table(rows, combos, shipped, args.boot, unpaired=("first",))
    return 0


if __name__ == "__main__":
    sys.exit(main())
