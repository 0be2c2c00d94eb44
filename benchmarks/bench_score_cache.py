"""What a resumed ``citegraph bench`` spends on scoring: every item scored (before the per-item score
cache, each resumed bench did this for every method), all items from the cache, one changed item.

The output file is synthetic and built from the data alone: for each ASQA item, one sentence per
document from ALCE's own ``summary`` field of its first ``--docs`` documents, each citing that
document (a SUMM-like answer; only the scoring cost is measured, not answer quality). The
verifier's in-memory pair cache is cleared before each pass, as in a new bench process.

    python benchmarks/bench_score_cache.py --data ../shared/data/alce/asqa_dev60.json --items 60
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def synthetic_outputs(data: Path, n: int, docs: int) -> dict:
    items = json.loads(data.read_text())[:n]
    out = []
    for it in items:
        sents = []
        for i, d in enumerate(it["docs"][:docs], 1):
            s = " ".join((d.get("summary") or d.get("text") or "").split()).rstrip(".")
            if s:
                sents.append(f"{s} [{i}].")
        out.append({**it, "output": " ".join(sents)})
    return {"args": {"method": "synthetic"}, "data": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/alce/asqa_dev60.json")
    ap.add_argument("--items", type=int, default=60)
    ap.add_argument("--docs", type=int, default=3, help="documents (cited sentences) per synthetic answer")
    ap.add_argument("--verifier", default="default")
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    from citegraph.eval.scoring import score_file
    from citegraph.metrics import resolve_verifier

    t0 = time.perf_counter()
    verifier = resolve_verifier(a.verifier)
    verifier.score([("Paris is in France.", "Paris is in France.")])
    load = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "synthetic.json"
        content = synthetic_outputs(Path(a.data), a.items, a.docs)
        raw.write_text(json.dumps(content))
        rows = []

        def timed(label: str, **kw) -> None:
            verifier.clear_cache()
            pairs0 = verifier.stats.pairs_scored
            t = time.perf_counter()
            res = score_file(raw, verifier=a.verifier, **kw)
            rows.append((label, res.get("scored", len(res["items"])), res.get("reused", 0),
                         verifier.stats.pairs_scored - pairs0, time.perf_counter() - t,
                         res["summary"].get("citation_rec")))

        timed("no cache (bench before)")
        (Path(tmp) / "synthetic.score.json").unlink()
        timed("first run, cache empty", reuse=True)
        timed("resumed run, nothing changed", reuse=True)
        content["data"][0]["output"] = content["data"][0]["output"].replace("[1]", "[2]", 1)
        raw.write_text(json.dumps(content))
        timed("one item's output changed", reuse=True)
    print(f"data {a.data}, {a.items} items, synthetic answers of {a.docs} cited sentences; verifier {a.verifier} "
          f"(loaded in {load:.1f} s, not counted below); {os.cpu_count()} CPUs, torch threads 1")
    print("| pass | items scored | items re-used | verifier pairs | seconds | cit. recall |")
    print("|---|---|---|---|---|---|")
    for label, scored, reused, pairs, secs, rec in rows:
        print(f"| {label} | {scored} | {reused} | {pairs} | {secs:.2f} | {rec:.1f} |")


if __name__ == "__main__":
    main()
