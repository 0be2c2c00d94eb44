#!/usr/bin/env python
"""Benchmark of the entailment verifier: accuracy and throughput.

    python benchmarks/bench_verifier.py [--judge-sample 200] [--skip-judge] [--data ../shared/data]

(1) Accuracy: balanced accuracy (threshold 0.5) and ROC-AUC of ``default`` and
    ``llm-judge:local`` on (a) the held-out attribution split written by
    scripts/train_verifier.py (citegraph/assets/verifier/heldout_split.json) and (b) ExpertQA
    claims (support Complete = entailed; Missing / Incomplete = not entailed; Partial and
    unlabelled claims excluded; premise = the claim's evidence passages joined). The llm-judge
    is slow, so it (and ``default`` again, for a like-for-like row) runs on a fixed seeded sample.
(2) Throughput: the batched, cached verifier vs a one-pair-per-call loop (as ALCE's eval.py
    calls its NLI model) on the same 500 (premise, hypothesis) pairs built from ALCE ASQA docs,
    with repeated pairs as RAAC-style loops produce them.

Data is read from ../shared/data relative to the repository; the script exits with a message
where it is absent.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--verifier", default="default")
    ap.add_argument("--quantize", choices=["shipped", "none", "int8"], default="shipped",
                    help="CPU weights of --verifier: as shipped (assets/verifier/inference.json), fp32 or dynamic int8")
    ap.add_argument("--max-windows", type=int, default=None,
                    help="score at most N windows of a long premise (best word overlap first); default: as shipped")
    ap.add_argument("--judge", default="llm-judge:local")
    ap.add_argument("--judge-sample", type=int, default=200, help="pairs per set for the slow llm-judge")
    ap.add_argument("--skip-judge", action="store_true")
    ap.add_argument("--throughput-pairs", type=int, default=500)
    ap.add_argument("--repeat-share", type=float, default=0.25, help="share of repeated pairs in the throughput set")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default=None, help="cpu, cuda or auto (the verifier's own default: auto, bf16 on CUDA)")
    ap.add_argument("--batch-sizes", default="", help="comma-separated batch sizes for extra throughput rows, e.g. 32,128,512")
    ap.add_argument("--scores-out", default=None, help="write the held-out scores (one per pair, in split order) to this JSON file")
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    return ap.parse_args(argv)


def die(msg: str) -> None:
    print(msg, file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
def heldout_pairs(data: Path):
    from citegraph.tools.verifier import ASSET_DIR

    split_file = ASSET_DIR / "heldout_split.json"
    attr_file = data / "nli_train" / "attribution_pairs.jsonl"
    if not attr_file.exists():
        die(f"missing {attr_file}: the held-out attribution split needs ../shared/data/nli_train")
    if not split_file.exists():
        die(f"missing {split_file}: train the model first (scripts/train_verifier.py)")
    lines = set(json.loads(split_file.read_text())["lines"])
    out = []
    with attr_file.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i in lines:
                r = json.loads(line)
                out.append((r["premise"], r["hypothesis"], int(r["label"] == "supported"), r["label"], r["source"]))
    return out


def expertqa_pairs(data: Path):
    path = data / "expertqa" / "lfqa_domain_test.jsonl"
    if not path.exists():
        die(f"missing {path}")
    out, skipped = [], collections.Counter()
    with path.open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            for ans in q["answers"].values():
                for c in ans.get("claims") or []:
                    sup = c.get("support")
                    if sup == "Complete":
                        y = 1
                    elif sup in ("Missing", "Incomplete"):
                        y = 0
                    else:
                        skipped[str(sup)] += 1
                        continue
                    premise = "\n\n".join(c.get("evidence") or [])
                    out.append((premise, c["claim_string"], y, sup, "expertqa"))
    return out, skipped


def metrics(y, p, thr=0.5):
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    bacc = balanced_accuracy_score(y, [int(v >= thr) for v in p])
    auc = roc_auc_score(y, p) if len(set(y)) > 1 else float("nan")
    return bacc, auc


def load_verifier(args):
    from citegraph.tools.verifier import get_verifier

    kw = {} if args.quantize == "shipped" or args.verifier.startswith("llm-judge") else {"quantize": args.quantize}
    if args.max_windows is not None and not args.verifier.startswith("llm-judge"):
        kw["max_windows"] = args.max_windows
    if args.device and not args.verifier.startswith("llm-judge"):
        kw["device"] = args.device
    ver = get_verifier(args.verifier, **kw)
    print(f"verifier {args.verifier}: max_length {getattr(ver, 'max_length', '-')}, "
          f"max_windows {getattr(ver, 'max_windows', '-')}, int8 {getattr(ver, 'quantized', False)}, "
          f"device {getattr(ver, 'device', '-')}")
    return ver


def timed_score(verifier, pairs):
    verifier.clear_cache()
    t = time.perf_counter()
    s = verifier.score(pairs)
    return s, len(pairs) / max(time.perf_counter() - t, 1e-9)


def print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")


# ---------------------------------------------------------------------------------------------
def accuracy(args, data: Path):
    from citegraph.tools.verifier import get_verifier

    held = heldout_pairs(data)
    eqa, skipped = expertqa_pairs(data)
    print(f"held-out attribution pairs: {len(held)} ({sum(r[2] for r in held)} entailed; partially_supported "
          f"counted as not entailed)")
    print(f"ExpertQA claims: {len(eqa)} ({sum(r[2] for r in eqa)} Complete = entailed, "
          f"{sum(r[3] == 'Incomplete' for r in eqa)} Incomplete + {sum(r[3] == 'Missing' for r in eqa)} Missing "
          f"= not entailed; Missing claims have no evidence, premise is empty); excluded: "
          + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())) + " (Partial excluded by design)")

    ver = load_verifier(args)
    rows, partial_rows = [], []
    judge = None
    judge_note = ""
    if not args.skip_judge:
        try:
            judge = get_verifier(args.judge)
            judge.score([("The sky is blue.", "The sky is blue.")])  # fail early if the model is missing
        except Exception as exc:  # noqa: BLE001
            judge_note = f"{args.judge} not available: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            judge = None
    sets = [("held-out attribution", held), ("ExpertQA (Complete vs Missing+Incomplete)", eqa),
            ("ExpertQA with evidence (Complete vs Incomplete)", [r for r in eqa if r[0].strip()])]
    eqa_scores: dict = {}
    for name, items in sets:
        pairs = [(p, h) for p, h, *_ in items]
        y = [r[2] for r in items]
        if name.startswith("ExpertQA with"):  # a subset of the previous set: reuse its scores
            s = [eqa_scores[pr] for pr in pairs]
            pps = float("nan")
        else:
            s, pps = timed_score(ver, pairs)
            if name.startswith("held-out") and args.scores_out:
                Path(args.scores_out).write_text(json.dumps({"device": str(ver.device), "dtype": str(ver.dtype), "scores": s}))
            if name.startswith("ExpertQA"):
                eqa_scores = dict(zip(pairs, s))
        b, a = metrics(y, s)
        rows.append((name, args.verifier, "full", len(items), f"{b:.3f}", f"{a:.3f}", f"{pps:.1f}" if pps == pps else "(as above)"))
        print("  row:", rows[-1], file=sys.stderr, flush=True)
        if name.startswith("held-out"):
            by = collections.defaultdict(list)
            for r, sc in zip(items, s):
                by[r[3]].append(sc)
            for lab, v in sorted(by.items()):
                partial_rows.append((lab, len(v), f"{sum(v) / len(v):.3f}", f"{sum(x >= 0.5 for x in v) / len(v):.3f}"))
            srcs = collections.defaultdict(lambda: ([], []))
            for r, sc in zip(items, s):
                srcs[r[4].split("/")[0]][0].append(r[2])
                srcs[r[4].split("/")[0]][1].append(sc)
            src_rows = []
            for src, (yy, ss) in sorted(srcs.items()):
                bb, aa = metrics(yy, ss)
                src_rows.append((src, len(yy), sum(yy), f"{bb:.3f}", f"{aa:.3f}" if aa == aa else "n/a (one class)"))
        if name.startswith("ExpertQA with"):
            continue
        rng = random.Random(args.seed)
        idx = sorted(rng.sample(range(len(items)), min(args.judge_sample, len(items))))
        sy = [y[i] for i in idx]
        b, a = metrics(sy, [s[i] for i in idx])
        rows.append((name, args.verifier, f"sample {len(idx)}", len(idx), f"{b:.3f}", f"{a:.3f}", "(as full)"))
        if judge is not None:
            js, jpps = timed_score(judge, [pairs[i] for i in idx])
            b, a = metrics(sy, js)
            rows.append((name, args.judge, f"sample {len(idx)}", len(idx), f"{b:.3f}", f"{a:.3f}", f"{jpps:.2f}"))
            print("  row:", rows[-1], file=sys.stderr, flush=True)
    print("\n(1) Accuracy (threshold 0.5)")
    print_table(["set", "verifier", "subset", "n", "balanced acc", "ROC-AUC", "pairs/s"], rows)
    if judge is None and not args.skip_judge:
        print(f"note: {judge_note}")
    print("\nHeld-out attribution by source (default)")
    print_table(["source", "n", "entailed", "balanced acc", "ROC-AUC"], src_rows)
    print("\nHeld-out score by original label (default): is partially_supported closer to supported or not?")
    print_table(["label", "n", "mean P(entailed)", "share >= 0.5"], partial_rows)


# ---------------------------------------------------------------------------------------------
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")


def alce_pairs(data: Path, n: int, repeat_share: float, seed: int):
    path = data / "alce" / "asqa_dev60.json"
    if not path.exists():
        die(f"missing {path}")
    rng = random.Random(seed)
    unique = []
    for ex in json.loads(path.read_text(encoding="utf-8")):
        docs = [f"Title: {d['title']}\n{d['text']}" for d in ex["docs"]]
        hyps = [s for s in _SENT.split(ex.get("answer") or "") if len(s.split()) >= 4]
        for ann in ex.get("annotations") or []:
            hyps += [s for s in _SENT.split(ann.get("long_answer") or "") if len(s.split()) >= 4]
        for d in ex["docs"]:  # sentences of other docs as hypotheses
            hyps += [s for s in _SENT.split(d["text"])[:1] if len(s.split()) >= 4]
        for h in dict.fromkeys(hyps):
            for doc in docs:
                unique.append((doc, h))
    unique = list(dict.fromkeys(unique))
    rng.shuffle(unique)
    n_rep = int(round(n * repeat_share))
    base = unique[: n - n_rep]
    pairs = base + [rng.choice(base) for _ in range(n_rep)]
    rng.shuffle(pairs)
    return pairs, len(set(pairs))


def one_pair_loop(ver, pairs):
    """ALCE eval.py style: tokenize one pair, one forward pass, no batching and no cache."""
    import torch

    tok, model, out = ver.tokenizer, ver.model, []
    t = time.perf_counter()
    with torch.inference_mode():
        for p, h in pairs:
            enc = tok(p, h, truncation=True, max_length=ver.max_length, return_tensors="pt").to(ver.device)
            logits = model(**enc).logits.float()
            out.append(torch.softmax(logits, -1)[0, ver.entail_idx].item())
    return out, len(pairs) / (time.perf_counter() - t)


def throughput(args, data: Path):

    pairs, n_unique = alce_pairs(data, args.throughput_pairs, args.repeat_share, args.seed)
    ver = load_verifier(args)
    loop_scores, loop_pps = one_pair_loop(ver, pairs)
    ver.clear_cache()
    before = (ver.stats.pairs_scored, ver.stats.cache_hits, ver.stats.batches)
    t = time.perf_counter()
    scores = ver.score(pairs)
    bpps = len(pairs) / (time.perf_counter() - t)
    scored, hits, batches = (ver.stats.pairs_scored - before[0], ver.stats.cache_hits - before[1],
                             ver.stats.batches - before[2])
    # a pair whose premise needed windows can differ from the truncating loop; the rest must agree
    agree = sum(abs(a - b) < 1e-3 for a, b in zip(scores, loop_scores))
    print(f"\n(2) Throughput on {len(pairs)} ALCE ASQA (doc, sentence) pairs ({n_unique} unique; "
          f"torch threads {args.threads}, {ver.device} {str(ver.dtype).replace('torch.', '')})")
    print_table(["mode", "pairs", "model forwards (pairs)", "batches", "pairs/s"], [
        ("one pair per call (ALCE eval.py style)", len(pairs), len(pairs), len(pairs), f"{loop_pps:.1f}"),
        ("batched + length-sorted + cached", len(pairs), scored, batches, f"{bpps:.1f}"),
    ])
    print(f"speed-up: {bpps / loop_pps:.1f}x  (cache hits {hits}; scores within 1e-3 of the loop: {agree}/{len(pairs)})")
    sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    if sizes:  # unique pairs, no cache: what one batch size buys on this device
        rows, shipped = [], ver.batch_size
        uniq = list(dict.fromkeys(pairs))
        for b in sizes:
            ver.batch_size = b
            ver.score(uniq[:b])  # warm-up at this shape
            _, pps = timed_score(ver, uniq)
            rows.append((b, len(uniq), f"{pps:.1f}", f"{pps / loop_pps:.1f}x"))
        ver.batch_size = shipped
        print(f"\nBatch size on {ver.device} ({len(uniq)} unique pairs, cache cleared; ratio to the one-pair loop)")
        print_table(["batch size", "pairs", "pairs/s", "vs one pair per call"], rows)


def main(argv=None) -> int:
    args = parse_args(argv)
    data = Path(args.data)
    if not data.exists():
        die(f"data folder {data} not found (expected ../shared/data next to the repository)")
    import torch

    torch.set_num_threads(args.threads)
    if not args.skip_accuracy:
        accuracy(args, data)
    if not args.skip_throughput:
        throughput(args, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
