"""What RAAC's agents did on a benchmark run: TextAgent rounds and why the loop stopped, what the
CitationAgent validated and discovered, and the Summary-Calibration decisions.

Reads the raw outputs ``citegraph bench`` / ``citegraph run`` wrote (``<out>/raw/raac*.json``, or a
run still in progress through its ``.partial.jsonl`` journal) and prints one table per file:

    python benchmarks/raac_trace_stats.py runs/bench_asqa/raw/raac.json [more files ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path


def load(path: Path) -> list[dict]:
    """Items of a finished output file, or of its journal when the run has not finished."""
    journal = path.with_name(path.name + ".partial.jsonl")
    items: list[dict] = []
    if path.exists():
        items = json.loads(path.read_text()).get("data", [])
    if journal.exists():
        seen = {json.dumps(i.get("citegraph", {}).get("item_id")) for i in items}
        for line in journal.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if json.dumps(row.get("citegraph", {}).get("item_id")) not in seen:
                    items.append(row)
    return items


def stats(items: list[dict]) -> dict:
    rounds, stops, texts, cal, sent, uncited, disc, valid, calls, secs = [], Counter(), [], Counter(), [], [], [], [], [], []
    f1s = []
    for it in items:
        ans = it.get("citegraph", {}).get("answer", {})
        meta = ans.get("metadata", {})
        ta = meta.get("text_agent") or {}
        raac = meta.get("raac") or {}
        usage = meta.get("usage") or {}
        if ta:
            rounds.append(ta.get("rounds") or 0)
            stops[ta.get("stop") or "?"] += 1
        texts.append(raac.get("text_rounds", 0))
        decisions = [c.get("decision") for c in raac.get("calibration", [])]
        if len(decisions) <= 1:
            cal["gate passed or nothing to restrict" if raac.get("calibration") else "no calibration"] += 1
        else:
            cal[decisions[-1]] += 1
        s = ans.get("sentences", [])
        sent.append(len(s))
        uncited.append(sum(1 for x in s if not x.get("citations")))
        disc.append(raac.get("discoveries", 0))  # every calibration pass
        valid.append(raac.get("validated_sentences", 0))
        if raac.get("citation_f1") is not None:
            f1s.append(raac["citation_f1"])
        calls.append(usage.get("llm_calls", 0))
        secs.append(usage.get("seconds", 0.0))
    mean = lambda xs: statistics.fmean(xs) if xs else None  # noqa: E731
    rnd = lambda x, k: "n/a" if x is None else round(x, k)  # noqa: E731
    return {
        "items": len(items),
        "TextAgent rounds (accepted pass), mean": rnd(mean(rounds), 2),
        "TextAgent rounds, distribution": dict(sorted(Counter(rounds).items())),
        "TextAgent stop reasons": dict(stops.most_common()),
        "sentences per answer, mean": rnd(mean(sent), 2),
        "uncited sentences in the final answer": f"{sum(uncited)}/{sum(sent)}",
        "sentences validated (cited by the TextAgent; all passes), mean": rnd(mean(valid), 2),
        "Discovery attempts per item (all passes), mean": rnd(mean(disc), 2),
        "Summary Calibration": dict(cal.most_common()),
        "RAAC citation F1 (run's own), mean": rnd(mean(f1s), 3),
        "LLM calls, mean": rnd(mean(calls), 2),
        "seconds per item, mean": rnd(mean(secs), 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="raw RAAC output files (raw/raac*.json)")
    args = ap.parse_args(argv)
    status = 0
    for name in args.files:
        path = Path(name)
        items = load(path)
        if not items:
            print(f"error: no RAAC items in {path} (nor in its .partial.jsonl journal)", file=sys.stderr)
            status = 2
            continue
        print(f"## {path}")
        for k, v in stats(items).items():
            print(f"- {k}: {v}")
    return status


if __name__ == "__main__":
    sys.exit(main())
