"""Pairs/s of several verifier specs on the same pairs, in one process, alternating (a busy machine slows
them alike).

    python benchmarks/bench_verifier_specs.py --specs default,default+checks [--rounds 3] [--pairs 500]

The pairs are bench_verifier.py's throughput set (ALCE ASQA documents against answer and document
sentences, a quarter of them repeated). Every spec scores them once before timing (models and the checks'
rules loaded), then each round times every spec on all the pairs with its cache cleared, the order
reversed every other round. Printed: the median pairs/s per spec and every round's figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", default="default,default+checks")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    args = ap.parse_args(argv)
    import torch

    import bench_verifier as bv
    from citegraph.tools.verifier import get_verifier

    torch.set_num_threads(args.threads)
    pairs, unique = bv.alce_pairs(Path(args.data), args.pairs, 0.25, 0)
    specs = [s.strip() for s in args.specs.split(",") if s.strip()]
    vers = {s: get_verifier(s) for s in specs}
    for v in vers.values():
        v.score(pairs[:5])
    res: dict[str, list[float]] = {s: [] for s in specs}
    for r in range(args.rounds):
        for s in (specs if r % 2 == 0 else specs[::-1]):
            vers[s].clear_cache()
            t = time.perf_counter()
            vers[s].score(pairs)
            res[s].append(len(pairs) / (time.perf_counter() - t))
    print(f"{len(pairs)} pairs ({unique} unique), torch threads {args.threads}, {args.rounds} rounds alternating")
    for s, xs in res.items():
        print(f"  {s:24s} pairs/s median {statistics.median(xs):.1f}  (rounds: {', '.join(f'{x:.1f}' for x in xs)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
