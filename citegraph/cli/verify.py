"""``citegraph verify --pairs FILE.jsonl``: score (premise, hypothesis) pairs with an entailment verifier.

File reading and writing live here; the verifiers themselves are in ``citegraph.tools.verifier``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from citegraph.errors import InputError
from citegraph.run.datasets import json_loads
from citegraph.tools.verifier import _REGISTRY, VerifierStats, _HFVerifier, get_verifier

def _read_pairs(pairs_path: str | os.PathLike) -> list[dict]:
    path = Path(pairs_path)
    if not path.is_file():
        raise InputError(f"pairs file not found: {path}")
    rows: list[dict] = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json_loads(line, f"{path}:{lineno}")  # also: huge numbers, deep nesting, lone surrogates
            except InputError as exc:
                raise InputError(str(exc).replace(f"{path}:{lineno}:1:", f"{path}:{lineno}:")) from None
            if not isinstance(row, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object with premise and hypothesis")
            for field in ("premise", "hypothesis"):
                if not isinstance(row.get(field), str):
                    raise InputError(f"{path}:{lineno}: missing string field {field!r}")
            rows.append(row)
    return rows


def verify_file(pairs_path: str | os.PathLike, output_path: str | os.PathLike | None = None,
                spec: str = "default", threshold: float | None = None,
                max_windows: int | None = None) -> dict:
    """Score a JSONL file of ``{"premise", "hypothesis", ...}`` lines.

    Each input line is written back with ``probability`` (P(entailed), calibrated on held-out pairs where
    the spec has a calibration), ``score`` (as the verifier gives it) and ``entailed`` (``score`` at least
    the threshold) added,
    to ``output_path`` or, when it is None, to stdout. Returns a summary dict. ``max_windows``
    (default, hf-classifier and hf-seq2seq only) scores at most that many windows of a long premise,
    those sharing the most words with the claim; 0 scores every window (the backend's default when
    None: ``default`` scores one).
    """
    spec = (spec or "default").strip()
    kw: dict[str, Any] = {}
    if max_windows is not None:
        base = spec.removesuffix("+lm").removesuffix("+checks")
        windowed = base == "default" or base.partition(":")[0] in ("hf-classifier", "hf-seq2seq")
        if not windowed or base in _REGISTRY:
            raise InputError(f"max_windows applies to default, hf-classifier: and hf-seq2seq: verifiers, not {spec!r}")
        kw["max_windows"] = int(max_windows)
    rows = _read_pairs(pairs_path)
    try:
        verifier = get_verifier(spec, **kw)
    except ValueError as exc:  # an unknown spec, a negative max_windows: a one-line error, not a traceback
        raise InputError(str(exc)) from None
    before = VerifierStats(**verifier.stats.as_dict())
    t0 = time.perf_counter()
    scores = verifier.score([(r["premise"], r["hypothesis"]) for r in rows])
    seconds = time.perf_counter() - t0
    thr = verifier.threshold if threshold is None else float(threshold)
    explain = getattr(verifier, "explain", None)  # a +checks verifier says why it capped a pair
    shown = getattr(verifier, "shown", float)
    out_lines = []
    for r, s in zip(rows, scores):
        # probability: the score as a reader should read it (calibrated on held-out pairs where the spec has
        # a calibration); score: as the verifier gives it, which the threshold is compared with
        line = {**r, "probability": round(shown(s), 6), "score": round(s, 6), "entailed": bool(s >= thr)}
        if explain is not None:
            line["conflicts"] = [str(f) for f in explain(r["premise"], r["hypothesis"])]
        out_lines.append(json.dumps(line, ensure_ascii=False))
    text = "\n".join(out_lines) + ("\n" if out_lines else "")
    if output_path is None or str(output_path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        out = Path(output_path)
        if out.parent and not out.parent.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    n_ent = sum(s >= thr for s in scores)
    return {
        "verifier": verifier.spec,
        "threshold": thr,
        "pairs": len(rows),
        "entailed": int(n_ent),
        "not_entailed": len(rows) - int(n_ent),
        "pairs_scored": verifier.stats.pairs_scored - before.pairs_scored,
        "cache_hits": verifier.stats.cache_hits - before.cache_hits,
        "max_windows": (model.max_windows or 0) if isinstance(model := getattr(verifier, "base", verifier), _HFVerifier)
        else None,
        "premises_not_all_windows": verifier.stats.windows_skipped - before.windows_skipped,
        "seconds": round(seconds, 3),
        "pairs_per_second": round(len(rows) / seconds, 1) if seconds > 0 else None,
        "output": None if output_path is None else str(output_path),
    }


def _run_verify(args: argparse.Namespace) -> int:
    summary = verify_file(args.pairs, args.output, spec=args.verifier, threshold=args.threshold,
                          max_windows=args.max_windows)
    print(json.dumps(summary), file=sys.stderr)
    print(f"{summary['pairs']} pairs, {summary['entailed']} entailed, {summary['pairs_per_second']} pairs/s "
          f"({summary['pairs_scored']} scored, {summary['cache_hits']} cache hits)", file=sys.stderr)
    return 0


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``verify --pairs FILE.jsonl [--verifier SPEC] [--output OUT.jsonl] [--threshold T] [--max-windows N]``.

    The parser's ``func`` default is ``_run_verify(args) -> int`` (prints the summary to stderr).
    """
    p = subparsers.add_parser(
        "verify", help="score (premise, hypothesis) pairs with an entailment verifier",
        description="Read JSONL lines with premise and hypothesis; write them back with probability and entailed.",
    )
    p.add_argument("--pairs", required=True, help="JSONL file, one {premise, hypothesis} object per line")
    p.add_argument("--verifier", default="default", help="verifier spec (default, lm-check, hf-classifier:PATH, hf-seq2seq:PATH, "
                   "llm-judge[:SPEC][:table16]; +checks after any of them adds the structural checks, then +lm the "
                   "language-model checker's second opinion)")
    p.add_argument("--output", default=None, help="output JSONL (default: stdout)")
    p.add_argument("--threshold", type=float, default=None, help="entailment threshold (default: the verifier's, 0.5)")
    p.add_argument("--max-windows", type=int, default=None, metavar="N",
                   help="long premises: score at most N token windows, those sharing the most words with the "
                        "claim; 0 = every window (default, hf-classifier, hf-seq2seq; default: the verifier's, "
                        "1 for default, every window for the others)")
    p.set_defaults(func=_run_verify)
    return p
