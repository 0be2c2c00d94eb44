#!/usr/bin/env python
"""Which pairs the structural checks flag, with ``checks.py`` as it was at a git revision and as it is in the
working tree, per set: what a change to the rules does before any verifier scores it.

    python scripts/checks_flags.py --ref cc22850 --sets minimal,minimal-blind,minimal-third
    python scripts/checks_flags.py --ref cc22850 --sets heldout,expertqa,fever --show
    python scripts/checks_flags.py --ref HEAD --sets written --groups

Per set it prints the supported and unsupported pairs each version flags (a flagged supported pair is a false
alarm; a flagged unsupported pair a catch); ``--show`` lists every pair whose verdict changed, with both
versions' findings; ``--groups`` adds a row per category of each set. The suites are read from
``benchmarks/data``; the held-out split, ExpertQA, FEVER-NLI test (its 2,000-row sample) and ``written`` (the
written hard pairs, training data: their premises are the pool's) need ``--data`` (``../shared/data``). Scoring a suite this way is not scoring a
verifier on it, but its flags are a figure: keep the suites that judge a change out of ``--sets`` until then.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "benchmarks"))

LARGE = ("heldout", "expertqa", "fever")
WRITTEN = ("written",)  # the written hard pairs (training data, all batches), grouped by category


def checks_at(ref: str):
    """The ``citegraph.tools.verifier.checks`` module of git revision ``ref``, loaded beside today's."""
    path = "citegraph/tools/verifier/checks.py"
    res = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:{path}"], capture_output=True, text=True)
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or ["git failed"])[-1]
        raise ValueError(f"--ref {ref}: git has no {path} there ({why})")
    folder = Path(tempfile.mkdtemp())
    (folder / "checks_at_ref.py").write_text(res.stdout, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("checks_at_ref", folder / "checks_at_ref.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["checks_at_ref"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def pairs_of(sets: list[str], data: Path) -> list[dict]:
    import bench_verifier as bv
    from citegraph.eval.verifier_sets import read_minimal_pairs

    rows: list[dict] = []
    if any(s in LARGE for s in sets):
        import train_lm_checker as tlc

        rows += [r for r in tlc.evaluation_rows(data, 2000, suites=()) if r["set"] in sets]
    if "written" in sets:
        import written_pairs as wp

        attr = wp.pool_rows(data)
        for path in sorted((REPO / "benchmarks" / "data").glob("written_pairs*.jsonl")):
            rows += [{"set": "written", "group": r["category"], "premise": r["premise"], "claim": r["hypothesis"],
                      "y": r["y"]} for r in wp.rows(path, data, attr)]
    for name in sets:
        if name in bv.MINIMAL_SUITES:
            rows += [{"set": name, "group": p.group, "premise": p.premise, "claim": p.claim, "y": p.label}
                     for p in read_minimal_pairs(REPO / "benchmarks" / "data" / f"{bv.MINIMAL_SUITES[name][2]}.jsonl")]
    return rows


def main(argv=None) -> int:
    import bench_verifier as bv

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True, help="the git revision whose checks.py to compare with the working tree's")
    ap.add_argument("--sets", default="minimal,minimal-blind,minimal-third",
                    help=f"comma-separated: {', '.join(LARGE + WRITTEN + tuple(bv.MINIMAL_SUITES))}")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--show", action="store_true", help="list the pairs whose verdict changed")
    ap.add_argument("--groups", action="store_true", help="a row per category (group) of each set as well")
    args = ap.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    unknown = [s for s in sets if s not in LARGE + WRITTEN and s not in bv.MINIMAL_SUITES]
    if unknown or not sets:
        print(f"--sets: unknown {', '.join(unknown) or '(none given)'}; choose from "
              f"{', '.join(LARGE + WRITTEN + tuple(bv.MINIMAL_SUITES))}", file=sys.stderr)
        return 2
    if any(s in LARGE + WRITTEN for s in sets) and not (Path(args.data) / "nli_train" / "attribution_pairs.jsonl").is_file():
        print(f"--data {args.data}: no nli_train/attribution_pairs.jsonl (needed for {', '.join(s for s in sets if s in LARGE + WRITTEN)})",
              file=sys.stderr)
        return 2
    try:
        old = checks_at(args.ref)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    from citegraph.tools.verifier.checks import find_conflicts as new

    rows = pairs_of(sets, Path(args.data))
    print(f"pairs flagged by the checks: {args.ref} -> working tree")
    print("| set | supported pairs | flagged (false alarms) | unsupported pairs | flagged (catches) | verdicts changed |")
    print("|---|---|---|---|---|---|")
    changed = []
    for s in sets:
        part = [r for r in rows if r["set"] == s]
        groups = sorted({r["group"] for r in part}) if args.groups else []
        for name, sub in [(s, part)] + [(f"{s} / {g}", [r for r in part if r["group"] == g]) for g in groups]:
            count = {(y, v): 0 for y in (1, 0) for v in ("old", "new")}
            moved = 0
            for r in sub:
                if "flags" not in r:
                    r["flags"] = old.find_conflicts(r["premise"], r["claim"]), new(r["premise"], r["claim"])
                a, b = r["flags"]
                count[(r["y"], "old")] += bool(a)
                count[(r["y"], "new")] += bool(b)
                if bool(a) != bool(b):
                    moved += 1
                    if name == s:
                        changed.append((r, a, b))
            sup, uns = sum(r["y"] == 1 for r in sub), sum(r["y"] == 0 for r in sub)
            print(f"| {name} | {sup} | {count[(1, 'old')]} -> {count[(1, 'new')]} | {uns} | "
                  f"{count[(0, 'old')]} -> {count[(0, 'new')]} | {moved} |")
    if args.show:
        for r, a, b in changed:
            print(f"\n[{r['set']} {r['group']} label {r['y']}] {args.ref}: {'; '.join(map(str, a)) or 'none'} | "
                  f"now: {'; '.join(map(str, b)) or 'none'}\n  premise: {r['premise'][:300]}\n  claim: {r['claim']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
