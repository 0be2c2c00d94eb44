#!/usr/bin/env python
"""Verifier specs against a reference on the benchmark's four sets, paired: is a candidate's difference more
than the sets' noise?

    python scripts/compare_verifiers.py default hf-classifier:runs/verifier/run7 hf-classifier:runs/verifier/v3mean

The pairs are bench_verifier.py's (the held-out split of ``citegraph/assets/verifier/heldout_split.json``,
ExpertQA, FEVER-NLI test's 2,000-row stratified sample, the minimal-pair suites but the fourth), as
``train_lm_checker.evaluation_rows`` collects them. Printed per set: balanced accuracy at 0.5 with a 95%
bootstrap interval for every spec, and each candidate minus the first spec with a paired bootstrap
interval (the same resampled pairs for both); then the minimal pairs' share right per category. Scores are
cached per spec and choice of pairs in ``--cache`` (delete a spec's file when its weights change).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


import compare_lm_checkers as clc  # noqa: E402  (its sets, cache, second-opinion rule and table)

SETS = clc.SETS
# the fourth suite and later ones only when asked: each judges (or judged) a finished change
DEFAULT_SETS = SETS[:SETS.index("minimal-fourth")]


def sample_rows(rows: list[dict], n: int) -> list[dict]:
    """``rows`` with the held-out, ExpertQA and FEVER-NLI sets cut to ``n`` label-stratified pairs each."""
    if n <= 0:
        return rows
    from citegraph.eval.verifier_sets import CheckPair, stratified_sample

    out = []
    for s in SETS:
        part = [r for r in rows if r["set"] == s]
        if s.startswith("minimal"):
            out += part
            continue
        keep = stratified_sample([CheckPair(r["premise"], r["claim"], r["y"], r["group"], str(k))
                                  for k, r in enumerate(part)], n, 0)
        out += [part[int(p.id)] for p in keep]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+", help="the reference spec first, then the candidates")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--cache", default="runs/verifier_compare")
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--sets", default="", help="comma-separated sets to score (default: every set but the "
                    f"fourth suite and later ones; {', '.join(SETS)})")
    ap.add_argument("--sample", type=int, default=0, help="at most N label-stratified pairs (seed 0) of each "
                    "of heldout, expertqa and fever (0 = all)")
    ap.add_argument("--outside-sample", type=int, default=0, metavar="N",
                    help="only the pairs of heldout, expertqa and fever that --sample N would leave out (those a "
                         "development run on the N-pair samples never read)")
    ap.add_argument("--band", action="append", default=[], metavar="FIRST,LM,LO,HI",
                    help="also print FIRST's scores with LM's averaged in where FIRST is strictly inside (LO, HI), "
                         "from the two specs' scores (both must be listed): +lm's rule with another band")
    ap.add_argument("--ref", default="", metavar="SPEC|FIRST,LM,LO,HI",
                    help="the row the paired differences are taken from: a listed spec or a --band (default: the "
                         "first spec), so that two bands of +lm's rule (two checkers over one first stage) compare")
    ap.add_argument("--bound", action="append", default=[], metavar="A,B",
                    help="also print, per set, the balanced accuracy if every pair were decided by whichever of A and B "
                         "is right (the ceiling of any rule that picks between their verdicts) and the share both get wrong")
    args = ap.parse_args(argv)
    if len(args.specs) < 2:
        print("give a reference spec and at least one candidate", file=sys.stderr)
        return 2
    if not (Path(args.data) / "nli_train" / "attribution_pairs.jsonl").is_file():
        print(f"--data {args.data}: no nli_train/attribution_pairs.jsonl (the evaluation data)", file=sys.stderr)
        return 2
    import train_lm_checker as tlc
    from citegraph.tools.verifier import get_verifier

    want = set(args.sets.split(",")) if args.sets else set(DEFAULT_SETS)
    if want - set(SETS):
        print(f"--sets: unknown {', '.join(sorted(want - set(SETS)))}; choose from {', '.join(SETS)}", file=sys.stderr)
        return 2
    rows = tlc.evaluation_rows(Path(args.data), 2000, suites=tuple(s for s in SETS if s.startswith("minimal") and s in want))
    rows = [r for r in rows if r["set"] in want]
    if args.outside_sample:
        seen = {(r["set"], r["premise"], r["claim"]) for r in sample_rows(rows, args.outside_sample)
                if not r["set"].startswith("minimal")}
        rows = [r for r in rows if r["set"].startswith("minimal") or (r["set"], r["premise"], r["claim"]) not in seen]
    rows = sample_rows(rows, args.sample)
    texts = [(r["premise"], r["claim"]) for r in rows]
    cache = Path(args.cache)
    scores = {}
    for spec in args.specs:
        name = re.sub(r"[^\w.+-]+", "_", spec + (f"_{args.sets}_{args.sample}" if args.sets or args.sample else "")
                      + (f"_outside{args.outside_sample}" if args.outside_sample else ""))
        scores[spec] = np.array(clc.cached(cache / f"{name}.json", lambda spec=spec: get_verifier(spec).score(texts)))
        if len(scores[spec]) != len(rows):
            print(f"{cache / name}.json: not {len(rows)} scores; delete it and run again", file=sys.stderr)
            return 2
    labels = {}  # each --band as given -> its row's name
    for band in args.band:
        first, lm, lo, hi = band.split(",")
        if first not in scores or lm not in scores:
            print(f"--band {band}: {first!r} and {lm!r} must both be among the specs", file=sys.stderr)
            return 2
        labels[band] = f"{first}+[{lm}]({lo},{hi})"
        scores[labels[band]] = clc.second_opinion(scores[first], scores[lm], (float(lo), float(hi)))
    ref = labels.get(args.ref, args.ref or args.specs[0])
    if ref not in scores:
        print(f"--ref {args.ref}: neither a listed spec nor a --band", file=sys.stderr)
        return 2
    bounds = [pair.partition(",")[::2] for pair in args.bound]
    for pair, (a, b) in zip(args.bound, bounds):
        if a not in scores or b not in scores:
            print(f"--bound {pair}: {a!r} and {b!r} must both be among the specs", file=sys.stderr)
            return 2
    print(f"balanced accuracy at 0.5 [95% bootstrap]; candidates minus {ref}, paired")
    clc.print_table(rows, scores, ref, args.boot)
    for a, b in bounds:
        for s, (ceiling, both_wrong, n) in either_right(rows, scores[a], scores[b]).items():
            print(f"{s} ({n}): either of {a} and {b} right {ceiling:.1f}; both wrong {both_wrong:.0f}%")
    return 0


def either_right(rows: list[dict], a, b, threshold: float = 0.5) -> dict[str, tuple[float, float, int]]:
    """Per set: balanced accuracy when each pair counts as right if ``a`` or ``b`` decides it right at
    ``threshold`` (no rule choosing between their verdicts does better), and the percentage of pairs both
    decide wrong."""
    y = np.array([r["y"] for r in rows])
    sets = np.array([r["set"] for r in rows])
    right = ((np.asarray(a) >= threshold) == (y == 1)) | ((np.asarray(b) >= threshold) == (y == 1))
    out = {}
    for s in dict.fromkeys(sets):
        k = sets == s
        per_label = [right[k & (y == v)].mean() for v in (1, 0) if (k & (y == v)).any()]
        out[str(s)] = (100 * float(np.mean(per_label)), 100 * float(1 - right[k].mean()), int(k.sum()))
    return out


if __name__ == "__main__":
    sys.exit(main())
