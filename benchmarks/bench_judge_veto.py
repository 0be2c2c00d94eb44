#!/usr/bin/env python
"""The LLM judge as a veto: does asking it about every pair a first verifier calls supported pay?

    python benchmarks/bench_judge_veto.py [--first default+checks] [--judge llm-judge:local]
        [--heldout 400] [--expertqa 200] [--suites minimal-third]

The first verifier scores every pair; the judge is asked only where the first says supported (score at
or above 0.5) and a pair stays supported only if the judge agrees. Per set: balanced accuracy, TPR and
TNR of the first alone and with the veto, the paired bootstrap difference (2,000 resamples, 95%;
scripts/compare_lm_checkers.py's), the
share of pairs the judge was asked about and its seconds per pair. Held-out and ExpertQA are
label-stratified samples (--seed); the minimal-pair suites are scored whole. docs/verifier.md ("A third
suite, from a neutral brief") has the figures.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "scripts")]

import bench_verifier as B  # noqa: E402  (its readers and its data folder)
from compare_lm_checkers import paired_difference  # noqa: E402  (the project's paired bootstrap)

from citegraph.eval.verifier_sets import _bacc  # noqa: E402  (the benchmark's own balanced accuracy)


def balanced(y: list[int], pred: list[bool]) -> tuple[float, float, float]:
    """Balanced accuracy, TPR and TNR in percent."""
    return tuple(100 * v for v in _bacc(y, [int(p) for p in pred]))


def stratified(rows: list, n: int, rng: random.Random) -> list:
    pos = [r for r in rows if r[2]]
    neg = [r for r in rows if not r[2]]
    return rng.sample(pos, min(n // 2, len(pos))) + rng.sample(neg, min(n // 2, len(neg)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", default="default+checks")
    ap.add_argument("--judge", default="llm-judge:local")
    ap.add_argument("--heldout", type=int, default=400, help="label-stratified held-out pairs (0 = none)")
    ap.add_argument("--expertqa", type=int, default=200, help="label-stratified ExpertQA claims (0 = none)")
    ap.add_argument("--suites", default="minimal-third", help="comma-separated minimal-pair suites (see bench_verifier)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from citegraph.eval.verifier_sets import read_minimal_pairs
    from citegraph.tools.verifier import get_verifier

    data = REPO.parent / "shared" / "data"
    rng = random.Random(args.seed)
    sets: list[tuple[str, list[tuple[str, str, int]]]] = []
    if (args.heldout or args.expertqa) and not data.is_dir():
        B.die(f"data folder {data} not found (expected ../shared/data next to the repository)")
    if args.heldout:  # (premise, claim, label, ...) rows, as bench_verifier reads them
        rows = stratified(B.heldout_pairs(data), args.heldout, rng)
        sets.append((f"held-out ({args.heldout} stratified)", [r[:3] for r in rows]))
    if args.expertqa:
        rows = stratified(B.expertqa_pairs(data)[0], args.expertqa, rng)
        sets.append((f"ExpertQA ({args.expertqa} stratified)", [r[:3] for r in rows]))
    for name in [x.strip() for x in args.suites.split(",") if x.strip()]:
        if name not in B.MINIMAL_SUITES:
            B.die(f"--suites: unknown suite {name!r} ({', '.join(B.MINIMAL_SUITES)})")
        path = REPO / "benchmarks" / "data" / f"{B.MINIMAL_SUITES[name][2]}.jsonl"
        sets.append((name, [(p.premise, p.claim, p.label) for p in read_minimal_pairs(path)]))

    first, judge = get_verifier(args.first), get_verifier(args.judge)
    print(f"first {args.first}, judge {args.judge} (asked where the first scores >= 0.5)")
    print("| set | n | first: bal / TPR / TNR | with the veto | difference [95%] | asked | s per judged pair |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in sets:
        pairs = [(p, h) for p, h, _ in rows]
        y = [int(lab) for _, _, lab in rows]
        f = first.score(pairs)
        ask = [k for k, v in enumerate(f) if v >= 0.5]
        t = time.perf_counter()
        j = dict(zip(ask, judge.score([pairs[k] for k in ask])))
        per = (time.perf_counter() - t) / max(1, len(ask))
        alone = [v >= 0.5 for v in f]
        veto = [k in j and j[k] >= 0.5 for k in range(len(f))]
        a, b = balanced(y, alone), balanced(y, veto)
        _, (lo, hi) = paired_difference(np.array(y), np.array(veto, float), np.array(alone, float), 2000, args.seed)
        print(f"| {name} | {len(rows)} | {a[0]:.1f} / {a[1]:.1f} / {a[2]:.1f} | {b[0]:.1f} / {b[1]:.1f} / {b[2]:.1f} "
              f"| {b[0] - a[0]:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | {100 * len(ask) / len(rows):.0f}% | {per:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
