#!/usr/bin/env python
"""Train several verifier variants side by side on one GPU, score them, and bring the best back.

A GPU is lent here for minutes, through a transfer of at most 64 MiB each way, to a machine with
PyTorch, transformers and scikit-learn but not this package's dependencies. So the run is three steps:

    # 1. here: the training data (xz) and the evaluation sets (FEVER-NLI test sample, minimal pairs,
    #    ExpertQA, read by the benchmark's own loaders) into one folder that travels
    python scripts/verifier_sweep.py bundle --out .gpu
    # 2. there: unpack, train every --variant in parallel (scripts/train_verifier.py with a time
    #    budget), score each, write the changed tensors of the best ones in chunks under 16 MiB
    python scripts/verifier_sweep.py run --bundle .gpu --work /tmp/sweep --export $OUT --device cuda \\
        --time-budget 4.5 --common "--nli -1 ..." --variant a="--lr 3e-5" --variant b="--lr 5e-5"
    # 3. here: rebuild a full model folder from a returned variant (the base's tensors + its changed ones)
    python scripts/verifier_sweep.py import --chunks DIR --name a --out runs/verifier/gpu-a

Rehearse step 2 on the CPU with ``--device cpu --common "... --max-steps 3"`` before spending GPU
time. Selection among variants: the mean of the held-out split's and the minimal-pair suite's
balanced accuracy (both ours); FEVER-NLI test and ExpertQA are printed beside it and not used to pick.
"""

from __future__ import annotations

import argparse
import collections
import json
import lzma
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
DATA = REPO.parent / "shared" / "data"
TRAIN_FILES = ("attribution_pairs.jsonl", "nli_pairs.jsonl", "extra/fever_nli/dev.txt",
               "extra/factcg/CG2C_doc.json", "extra/factcg/CG2C_musique_minhop3.json")
CHUNK_BYTES = 15 * 1024 * 1024
SPLIT = "@@block"  # name suffix of a row block of a tensor too big for one file


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle", help="write the training data and the evaluation sets (xz) into one folder")
    b.add_argument("--out", required=True)
    b.add_argument("--data", default=str(DATA))
    b.add_argument("--fever-sample", type=int, default=2000, help="as bench_verifier.py (label-stratified, seed 0)")
    r = sub.add_parser("run", help="train the variants in parallel, score them, export the best")
    r.add_argument("--bundle", required=True)
    r.add_argument("--work", required=True, help="scratch folder (unpacked data, one folder per variant)")
    r.add_argument("--export", default="", help="folder for the returned files (summary, log, weight chunks)")
    r.add_argument("--export-mb", type=float, default=60, help="weight chunks written in all, at most (MiB)")
    r.add_argument("--base", default=str(REPO / "citegraph" / "assets" / "verifier"), help="model to continue")
    r.add_argument("--device", default="cuda")
    r.add_argument("--time-budget", type=float, default=4.5, help="minutes of training per variant")
    r.add_argument("--common", default="", help="train_verifier.py arguments every variant gets")
    r.add_argument("--variant", action="append", default=[], metavar='NAME="ARGS"')
    i = sub.add_parser("import", help="a full model folder from a returned variant's chunks")
    i.add_argument("--chunks", required=True)
    i.add_argument("--name", required=True)
    i.add_argument("--base", default=str(REPO / "citegraph" / "assets" / "verifier"))
    i.add_argument("--out", required=True)
    return ap.parse_args(argv)


# ---- 1. bundle (here) ---------------------------------------------------------------------------
def bundle(args) -> int:
    sys.path.insert(0, str(REPO / "benchmarks"))
    sys.path.insert(0, str(REPO))
    import bench_verifier as bv
    from citegraph.eval.verifier_sets import read_fever_nli, read_minimal_pairs, stratified_sample

    data, out = Path(args.data), Path(args.out)
    for rel in TRAIN_FILES:
        src = data / "nli_train" / rel
        if not src.exists():
            print(f"missing {src}", file=sys.stderr)
            return 2
        dst = out / "nli_train" / (rel + ".xz")
        dst.parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(dst, "wb", preset=9 | lzma.PRESET_EXTREME) as f:
            f.write(src.read_bytes())
        print(f"{dst}: {dst.stat().st_size / 1e6:.1f} MB")
    rows = []
    fever = stratified_sample(read_fever_nli(data / "nli_train" / "extra" / "fever_nli" / "test.txt"),
                              args.fever_sample, 0)
    rows += [{"set": "fever", "group": "", "premise": p.premise, "claim": p.claim, "y": p.label} for p in fever]
    for p in read_minimal_pairs(REPO / "benchmarks" / "data" / "minimal_pairs.jsonl"):
        rows.append({"set": "minimal", "group": p.group, "premise": p.premise, "claim": p.claim, "y": p.label})
    eqa, _ = bv.expertqa_pairs(data)
    rows += [{"set": "expertqa", "group": lab, "premise": p, "claim": h, "y": y} for p, h, y, lab, _ in eqa]
    with lzma.open(out / "eval.jsonl.xz", "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{out / 'eval.jsonl.xz'}: {collections.Counter(r['set'] for r in rows)}")
    return 0


# ---- 2. run (there) -----------------------------------------------------------------------------
def unpack(bundle_dir: Path, work: Path) -> Path:
    data = work / "data"
    for rel in TRAIN_FILES:
        dst = data / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        with lzma.open(bundle_dir / "nli_train" / (rel + ".xz"), "rb") as f, dst.open("wb") as g:
            shutil.copyfileobj(f, g)
    return data


def scores(model_dir: Path, rows: list[dict], device: str) -> list[float]:
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    import train_verifier as tv

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = BertForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).to(device)
    max_len = json.loads((model_dir / "inference.json").read_text())["max_length"]
    prepared = tv.prepare(tok, [{"premise": r["premise"], "hypothesis": r["claim"], "y": r["y"]} for r in rows], max_len)
    return tv.evaluate(model, tok, prepared, max_len, device=device)


def report(rows: list[dict], probs: list[float]) -> dict:
    """Per set balanced accuracy, TPR/TNR, ROC-AUC, and per minimal-pair category the share right, for
    picking among variants on the GPU machine, which cannot import citegraph (its dependencies are not
    there): the benchmark's figures come from ``citegraph.eval.verifier_sets.binary_report`` here."""
    from sklearn.metrics import roc_auc_score

    def one(idx):
        y = [rows[i]["y"] for i in idx]
        pred = [int(probs[i] >= 0.5) for i in idx]
        pos = [p for p, t in zip(pred, y) if t == 1]
        neg = [p for p, t in zip(pred, y) if t == 0]
        tpr = sum(pos) / len(pos) if pos else None
        tnr = (len(neg) - sum(neg)) / len(neg) if neg else None
        both = [v for v in (tpr, tnr) if v is not None]
        out = {"n": len(idx), "balanced_accuracy": round(sum(both) / len(both), 4), "tpr": tpr, "tnr": tnr}
        if pos and neg:
            out["roc_auc"] = round(roc_auc_score(y, [probs[i] for i in idx]), 4)
        return out

    by_set = collections.defaultdict(list)
    by_cat = collections.defaultdict(lambda: collections.defaultdict(list))
    for k, r in enumerate(rows):
        by_set[r["set"]].append(k)
        if r["set"].startswith("minimal"):
            by_cat[r["set"]][r["group"]].append(k)
    out = {name: one(idx) for name, idx in sorted(by_set.items())}
    for name, cats in sorted(by_cat.items()):  # minimal_categories, minimal-blind_categories, ...
        out[f"{name}_categories"] = {g: round(sum(int(probs[i] >= 0.5) == rows[i]["y"] for i in idx) / len(idx), 3)
                                     for g, idx in sorted(cats.items())}
    return out


def heldout_rows(data: Path, model_dir: Path) -> list[dict]:
    lines = set(json.loads((model_dir / "heldout_split.json").read_text())["lines"])
    out = []
    with (data / "attribution_pairs.jsonl").open(encoding="utf-8") as f:
        for k, line in enumerate(f):
            if k in lines:
                r = json.loads(line)
                out.append({"set": "heldout", "group": r["source"].split("/")[0], "premise": r["premise"],
                            "claim": r["hypothesis"], "y": int(r["label"] == "supported")})
    return out


def export(results: list[dict], base: Path, export_dir: Path, budget_mb: float) -> list[str]:
    """The tensors each chosen variant changed (fp16, as saved), best first, in files under 16 MiB,
    while they fit in ``budget_mb``."""
    from safetensors.torch import load_file, save_file

    base_t = load_file(str(base / "model.safetensors"))
    written, used = [], 0
    for res in results:
        t = load_file(str(Path(res["dir"]) / "model.safetensors"))
        changed = {k: v.contiguous() for k, v in t.items()
                   if k not in base_t or base_t[k].shape != v.shape or not bool((base_t[k] == v).all())}
        size = sum(v.numel() * v.element_size() for v in changed.values())
        if used + size > budget_mb * 1024 * 1024:
            print(f"export: {res['name']} ({size / 2**20:.1f} MiB) does not fit; left behind")
            continue
        pieces = {}
        for k, v in changed.items():  # a tensor over a file's limit (the word embeddings) travels in row blocks
            rows = max(1, CHUNK_BYTES // max(1, v[0].numel() * v.element_size())) if v.dim() else 1
            if v.numel() * v.element_size() <= CHUNK_BYTES or v.dim() == 0:
                pieces[k] = v
            else:
                for b, s in enumerate(range(0, v.shape[0], rows)):
                    pieces[f"{k}{SPLIT}{b:03d}"] = v[s: s + rows].contiguous()
        changed = pieces
        part, cur, n = 0, {}, 0
        for k in sorted(changed):
            nb = changed[k].numel() * changed[k].element_size()
            if cur and n + nb > CHUNK_BYTES:
                save_file(cur, str(export_dir / f"{res['name']}.part{part}.safetensors"))
                written.append(f"{res['name']}.part{part}.safetensors")
                part, cur, n = part + 1, {}, 0
            cur[k], n = changed[k], n + nb
        if cur:
            save_file(cur, str(export_dir / f"{res['name']}.part{part}.safetensors"))
            written.append(f"{res['name']}.part{part}.safetensors")
        used += size
        print(f"export: {res['name']}: {len(changed)} changed tensors, {size / 2**20:.1f} MiB")
    return written


def run(args) -> int:
    import torch

    t_start = time.perf_counter()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data = unpack(Path(args.bundle), work)
    print(f"unpacked in {time.perf_counter() - t_start:.0f}s; device {args.device}"
          + (f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else ""), flush=True)
    variants = []
    for spec in args.variant:
        name, _, rest = spec.partition("=")
        if not name.replace("-", "").replace("_", "").isalnum():
            print(f"--variant {spec!r}: NAME=ARGS with a name of letters, digits, - and _", file=sys.stderr)
            return 2
        variants.append((name, shlex.split(args.common) + shlex.split(rest)))
    if not variants:
        print("no --variant given", file=sys.stderr)
        return 2
    procs = []
    for name, extra in variants:
        out = work / name
        cmd = [sys.executable, "-u", str(REPO / "scripts" / "train_verifier.py"), "--out", str(out), "--data", str(data),
               "--base", args.base, "--device", args.device, "--time-budget", str(args.time_budget), *extra]
        log = (work / f"{name}.log").open("w")
        print(f"[{name}] {' '.join(shlex.quote(c) for c in cmd[2:])}", flush=True)
        procs.append((name, out, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
    for name, _, p, log in procs:
        p.wait()
        log.close()
        print(f"[{name}] exit {p.returncode} after {time.perf_counter() - t_start:.0f}s", flush=True)

    with lzma.open(Path(args.bundle) / "eval.jsonl.xz", "rt", encoding="utf-8") as f:
        eval_rows = [json.loads(line) for line in f]
    results = []
    for name, out, p, _ in procs:
        res = {"name": name, "dir": str(out), "exit": p.returncode,
               "log_tail": (work / f"{name}.log").read_text().splitlines()[-40:]}
        if p.returncode == 0 and (out / "model.safetensors").exists():
            rows = heldout_rows(data, out) + eval_rows
            t = time.perf_counter()
            probs = scores(out, rows, args.device)
            res["eval"] = report(rows, probs)
            res["eval_seconds"] = round(time.perf_counter() - t, 1)
            ev = res["eval"]
            res["select"] = round((ev["heldout"]["balanced_accuracy"] + ev["minimal"]["balanced_accuracy"]) / 2, 4)
            res["training_info"] = json.loads((out / "training_info.json").read_text())
            res["inference"] = json.loads((out / "inference.json").read_text())
        results.append(res)
        print(json.dumps({k: v for k, v in res.items() if k not in ("log_tail", "training_info")}), flush=True)
    ok = sorted((r for r in results if "select" in r), key=lambda r: -r["select"])
    if args.export:
        exp = Path(args.export)
        exp.mkdir(parents=True, exist_ok=True)
        written = export(ok, Path(args.base), exp, args.export_mb)
        summary = {"results": results, "ranked": [r["name"] for r in ok], "exported": written,
                   "seconds": round(time.perf_counter() - t_start, 1)}
        (exp / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        with (exp / "sweep.log").open("w") as f:
            for name, *_ in procs:
                f.write(f"==== {name}\n" + (work / f"{name}.log").read_text())
    print(f"ranked (held-out + minimal): {[(r['name'], r['select']) for r in ok]}; "
          f"{time.perf_counter() - t_start:.0f}s in all")
    return 0 if ok else 1


# ---- 3. import (here) ---------------------------------------------------------------------------
def import_variant(args) -> int:
    import torch
    from safetensors.torch import load_file, save_file

    chunks, base, out = Path(args.chunks), Path(args.base), Path(args.out)
    parts = sorted(chunks.glob(f"{args.name}.part*.safetensors"))
    summary = json.loads((chunks / "summary.json").read_text())
    res = next((r for r in summary["results"] if r["name"] == args.name), None)
    if not parts or res is None or "training_info" not in res:
        print(f"no chunks or results for {args.name!r} in {chunks}", file=sys.stderr)
        return 2
    tensors = load_file(str(base / "model.safetensors"))
    blocks = collections.defaultdict(dict)
    for part in parts:
        for k, v in load_file(str(part)).items():
            if SPLIT in k:
                name, _, b = k.partition(SPLIT)
                blocks[name][int(b)] = v
            else:
                tensors[k] = v
    for name, bl in blocks.items():
        tensors[name] = torch.cat([bl[b] for b in sorted(bl)], 0)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "heldout_split.json"):
        shutil.copy(base / name, out / name)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "training_info.json").write_text(json.dumps(res["training_info"], indent=2) + "\n")
    (out / "inference.json").write_text(json.dumps(res["inference"]) + "\n")
    (out / "sweep_eval.json").write_text(json.dumps(res["eval"], indent=2) + "\n")
    print(f"{out}: {len(parts)} chunks over {base}")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return {"bundle": bundle, "run": run, "import": import_variant}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
