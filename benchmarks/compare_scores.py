"""Paired comparison of two scored runs of the same items: the per-item difference of one metric, its
mean and a 95% bootstrap interval over the items, and on how many items the two differ.

``bench_attribution.py`` caches every row's per-item scores in ``scores_<mode>_<verifier>.json``; two
rows of the same answers (say the stage run with two verifiers, scored by the same judge) compare as

    python benchmarks/compare_scores.py \\
        runs/stage60_asqa/rag_free/hf-classifier__tmp_v1verifier/scores_repair_llm-judge_local.json \\
        runs/stage60_asqa/rag_free/default/scores_repair_llm-judge_local.json --metric citation_f1

Several files joined by commas on each side are pooled, the k-th file of A paired with the k-th of B
(say the free and the constrained answers of one run).

Prints one line: n, mean of A, mean of B, mean of A − B [95% interval], items where A > B, A < B.
Only the items both files hold are compared (the line says how many); none in common is an error.
The means are of the per-item values: for citation F1 they differ a little from the tables', whose F1
is that of the mean recall and precision (as ALCE's eval.py computes it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citegraph.eval.scoring import bootstrap  # noqa: E402


def load(paths: str, metric: str) -> dict[str, float]:
    """Per-item values of ``metric`` from one scores file or several joined by commas (ids keyed by file)."""
    parts = [x for x in paths.split(",") if x]
    if len(parts) > 1:
        return {f"{k}:{i}": v for k, part in enumerate(parts) for i, v in load(part, metric).items()}
    path = parts[0] if parts else paths
    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"error: no such scores file: {path}")
    try:
        items = json.loads(p.read_text(encoding="utf-8"))["items"]
    except (ValueError, KeyError, TypeError):
        raise SystemExit(f"error: {path} is not a bench_attribution scores file (no 'items')") from None
    out = {}
    for it in items:
        if it.get(metric) is not None:
            out[str(it["id"])] = float(it[metric])
    return out


def paired(a: list[float], b: list[float], n_resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of a − b and its 95% percentile bootstrap interval over the pairs (the evaluator's bootstrap)."""
    d = [x - y for x, y in zip(a, b)]
    lo, hi = bootstrap([{"d": x} for x in d], n_resamples=n_resamples, seed=seed)["d"]
    return sum(d) / len(d), lo, hi


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="scores file A (several: joined by commas, pooled)")
    ap.add_argument("b", help="scores file B (as many files as A, in the same order)")
    ap.add_argument("--metric", default="citation_f1", help="per-item field to compare (default citation_f1)")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.a.count(",") != args.b.count(","):
        print("error: A and B must name as many files each (joined by commas)", file=sys.stderr)
        return 2
    sa, sb = load(args.a, args.metric), load(args.b, args.metric)
    ids = [i for i in sa if i in sb]
    if not ids:
        print(f"error: the two files share no item with a '{args.metric}'", file=sys.stderr)
        return 2
    a, b = [sa[i] for i in ids], [sb[i] for i in ids]
    mean, lo, hi = paired(a, b, args.resamples, args.seed)
    more = sum(x > y for x, y in zip(a, b))
    less = sum(x < y for x, y in zip(a, b))
    print(f"{args.metric}: n {len(ids)} (A {len(sa)}, B {len(sb)}) · A {sum(a) / len(a):.1f} · B {sum(b) / len(b):.1f} · "
          f"A − B {mean:+.1f} [{lo:+.1f}, {hi:+.1f}] · A > B on {more}, A < B on {less}, equal on {len(ids) - more - less}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
