#!/usr/bin/env python
"""Train the language-model checker (``citegraph/tools/verifier/lmcheck.py``): the first layers of the
packaged Qwen2.5 0.5B with a LoRA adapter and a one-logit head, on a lent GPU, shipped as the adapter.

A lent GPU machine has PyTorch, transformers and peft but none of citegraph's dependencies, nothing
from outside, and takes at most 64 MiB per call. So the run has three steps:

    # 1. here: the training pairs, the evaluation pairs, the tokenizer and the GGUF tensors the
    #    checker needs (its layers, and only the embedding rows of tokens the pairs use), in parts
    #    of at most --part-mb that travel one call each
    python scripts/train_lm_checker.py payload --out .lmgpu --layers 12
    # 2. there: each part copied to one folder (a call each), then the last call trains and scores;
    #    scripts/train_lm_checker_gpu.sh does this, two variants (--parts base / all) side by side
    python scripts/train_lm_checker.py train --payload /tmp/lmpay --out $OUT --device cuda --time-budget 4
    # 3. here: the returned adapter becomes the asset (citegraph/assets/verifier_lm)
    # and, optionally, adapters of one base averaged: the mean of their weight changes, exactly
    python scripts/train_lm_checker.py soup citegraph/assets/verifier_lm runs/lmcpu/d --out runs/lmcpu/soup

The repository's own tracked files travel with every call and count towards its 64 MiB: take the two
weight files out of the index for the calls (``git rm --cached`` them and ignore them in
``.git/info/exclude``; ``git reset`` them afterwards), or a 56 MiB part does not fit.

Rehearse step 2 on the CPU first: ``train --payload .lmgpu/all --device cpu --max-steps 2 --batch 2
--eval-max 16``. Nothing here reads the sets kept apart for acceptance (../shared/data/README.md): the
training pairs are the pool's training part (its held-out split and ExpertQA left out), FEVER-NLI dev,
FactCG and minimal-pair negatives made by rules from supported training pairs; the evaluation pairs are
the pool's held-out split, FEVER-NLI test (a sample), ExpertQA and our minimal-pair suite.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import importlib.util
import json
import lzma
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
DATA = REPO.parent / "shared" / "data"
SEED = 13


def lmcheck():
    """``citegraph/tools/verifier/lmcheck.py`` by path: the GPU machine cannot import citegraph."""
    path = REPO / "citegraph" / "tools" / "verifier" / "lmcheck.py"
    spec = importlib.util.spec_from_file_location("lmcheck", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lmcheck"] = mod
    spec.loader.exec_module(mod)
    return mod


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("payload", help="write what the GPU machine needs, in parts")
    p.add_argument("--out", required=True)
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--gguf", default="", help="the packaged 0.5B GGUF (default: the embedded model local-small)")
    p.add_argument("--layers", type=int, default=12, help="first N transformer layers the checker keeps")
    p.add_argument("--nli", type=int, default=60000, help="NLI pool pairs sampled into training (-1 = all)")
    p.add_argument("--minimal-pairs", type=int, default=16000, help="rule-made minimal-pair negatives")
    p.add_argument("--long-premise", type=int, default=3000)
    p.add_argument("--recipe", choices=("v1", "v2"), default="v2", help="v1: the rows above (the shipped adapter's); "
                   "v2: those rows, then extra rows marked part=extra (train --parts chooses)")
    p.add_argument("--extra-hard", type=int, default=8000, help="v2: role-swap and negation negatives requested "
                   "from every supported pair (those v1 already has dropped)")
    p.add_argument("--extra-long", type=int, default=4000, help="v2: those and their supported pairs in long premises")
    p.add_argument("--sub-claims", type=int, default=3000, help="v2: supported claims shorter than their sentence")
    p.add_argument("--fever-sample", type=int, default=2000, help="FEVER-NLI test pairs scored (seed 0)")
    p.add_argument("--part-mb", type=float, default=56.0, help="MiB per part (one call carries one)")
    p.add_argument("--written", nargs="*", default=[], help="written pairs files (benchmarks/data/written_pairs*.jsonl, "
                   "joined to the pool by scripts/written_pairs.py) added as rows marked part=written")
    p.add_argument("--pairs", default="", help="JSON lines {split: train|eval, set, group, premise, claim, y} "
                   "instead of the recipe above (the smoke test's few pairs)")
    t = sub.add_parser("train", help="train, score and export the adapter (on the GPU machine)")
    t.add_argument("--payload", required=True, help="folder holding every part's files")
    t.add_argument("--out", required=True)
    t.add_argument("--device", default="cuda")
    t.add_argument("--max-len", type=int, default=320)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--epochs", type=float, default=1.0)
    t.add_argument("--lr", type=float, default=2e-4)
    t.add_argument("--warmup", type=float, default=0.03)
    t.add_argument("--rank", type=int, default=16)
    t.add_argument("--alpha", type=int, default=32)
    t.add_argument("--time-budget", type=float, default=0, help="minutes of training at most; the schedule is "
                   "refitted after 60 s of steps so that the learning rate still decays to zero")
    t.add_argument("--max-steps", type=int, default=0)
    t.add_argument("--eval-max", type=int, default=0, help="score at most N pairs per evaluation set (0 = all)")
    t.add_argument("--train-max", type=int, default=0, help="train on a sample of N pairs (0 = all; for rehearsals)")
    t.add_argument("--init", default="", help="an adapter folder (adapter.safetensors) to continue from, "
                   "e.g. citegraph/assets/verifier_lm; its rank and alpha are kept")
    t.add_argument("--written-repeat", type=int, default=1, help="--parts written: each written row this often")
    t.add_argument("--eval-sets", default="", help="comma-separated evaluation sets to score (default: all)")
    t.add_argument("--parts", choices=("base", "all", "written"), default="all", help="train on the payload's base rows "
                   "(recipe v1), on all of them (v2's extra rows and written rows too), or on written rows beside "
                   "a sample of the base rows (--train-max)")
    t.add_argument("--seed", type=int, default=SEED)
    t.add_argument("--workers", type=int, default=8, help="processes that tokenize")
    u = sub.add_parser("soup", help="one adapter whose weight change is the mean of several adapters' (here)")
    u.add_argument("adapters", nargs="+", help="adapter folders (adapter.safetensors + checker.json) of one "
                   "base: the same GGUF, layers, prompt, length and target modules")
    u.add_argument("--out", required=True)
    return ap.parse_args(argv)


# ---- 1. payload (here) --------------------------------------------------------------------------
def training_rows(data: Path, args, rng: random.Random) -> tuple[list[dict], dict]:
    import train_verifier as tv
    import verifier_data as vd

    nli_dir = data / "nli_train"
    attr = tv.read_jsonl(nli_dir / "attribution_pairs.jsonl")
    held = tv.heldout_split(attr, 0.10, SEED)  # the default verifier's held-out lines
    attr_train = [{**r, "y": tv.binary(r["label"], "neg")} for i, r in enumerate(attr)
                  if i not in held and r["source"] not in tv.EXCLUDED_SOURCES]
    nli = [{**r, "y": tv.binary(r["label"], "neg")} for r in tv.read_jsonl(nli_dir / "nli_pairs.jsonl")]
    rng.shuffle(nli)
    nli = nli if args.nli < 0 else nli[: args.nli]
    fever = vd.read_fever_nli(nli_dir / "extra" / "fever_nli" / "dev.txt", -1, rng)
    factcg = vd.read_factcg(nli_dir / "extra" / "factcg", -1, rng)
    rows = attr_train + nli + fever + factcg
    minimal, by_rule = vd.minimal_pair_negatives(rows, args.minimal_pairs, rng)
    long_rows = vd.long_premises(attr_train + fever, args.long_premise, rng)
    base = rows + minimal + long_rows

    def count(rs):
        c = collections.Counter(r["y"] for r in rs)
        return {"total": len(rs), "entailed": c[1], "not_entailed": c[0]}

    counts = {"attribution_train": count(attr_train), "nli": count(nli), "fever_nli_dev": count(fever),
              "factcg": count(factcg), "minimal_pair_negatives": {"total": len(minimal), "by_rule": by_rule},
              "long_premise": count(long_rows), "total": count(base), "heldout_seed": SEED}
    extra = []
    if args.recipe == "v2":  # after the v1 rows, from a generator of its own: the v1 rows stay as they were
        xrng = random.Random(SEED + 1)
        # more of the two rules the checker missed most (role swaps 33%, negations 55% at 797d400): role
        # swaps fit few claims, so every supported pair is tried again and a negative v1 already has is
        # dropped
        have = {(r["premise"], r["hypothesis"]) for r in minimal}
        hard, _ = vd.minimal_pair_negatives(rows, args.extra_hard, xrng, rules=("role_swap", "negation"))
        hard = [r for r in hard if (r["premise"], r["hypothesis"]) not in have]
        hard_by_rule = dict(collections.Counter(r["source"].split("/")[-1] for r in hard))
        # those negatives and the supported pairs they came from, inside 150-380 words of other premises
        # (a negation two sentences from the claim's subject: "eased symptoms in adults. It had no
        # effect in children" -> "eased symptoms in children")
        hard_long = vd.long_premises([{**r, "source": "hard"} for r in hard]
                                     + [{**rows[r["pair_of"]], "source": "hard"} for r in hard],
                                     args.extra_long, xrng)
        # supported claims that say less than their sentence (a paraphrase by omission)
        subs = vd.sub_claims(attr_train + fever + nli, args.sub_claims, xrng)
        extra = hard + hard_long + subs
        counts["v2_extra"] = {"hard_negatives": {"total": len(hard), "by_rule": hard_by_rule},
                              "hard_long_premise": count(hard_long), "sub_claims": count(subs),
                              "total": count(extra), "seed": SEED + 1}
    rows = ([{"premise": r["premise"], "claim": r["hypothesis"], "y": int(r["y"]), "part": "base"} for r in base]
            + [{"premise": r["premise"], "claim": r["hypothesis"], "y": int(r["y"]), "part": "extra"} for r in extra])
    counts["recipe"] = args.recipe
    return rows, counts


def evaluation_rows(data: Path, fever_sample: int,
                    suites: tuple[str, ...] = ("minimal", "minimal-blind", "minimal-third")) -> list[dict]:
    """The evaluation pairs: the pool's held-out split, FEVER-NLI test (a sample), ``suites`` (names of
    ``bench_verifier.MINIMAL_SUITES``; by default not the fourth or later ones, which each judge a finished
    change and stay unscored till then) and ExpertQA."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    sys.path.insert(0, str(REPO))
    import bench_verifier as bv
    import verifier_sweep as vs
    from citegraph.eval.verifier_sets import read_fever_nli, read_minimal_pairs, stratified_sample

    rows = vs.heldout_rows(data / "nli_train", REPO / "citegraph" / "assets" / "verifier")
    fever = stratified_sample(read_fever_nli(data / "nli_train" / "extra" / "fever_nli" / "test.txt"), fever_sample, 0)
    rows += [{"set": "fever", "group": "", "premise": p.premise, "claim": p.claim, "y": p.label} for p in fever]
    for name in suites:
        for p in read_minimal_pairs(REPO / "benchmarks" / "data" / f"{bv.MINIMAL_SUITES[name][2]}.jsonl"):
            rows.append({"set": name, "group": p.group, "premise": p.premise, "claim": p.claim, "y": p.label})
    eqa, _ = bv.expertqa_pairs(data)
    rows += [{"set": "expertqa", "group": lab, "premise": p, "claim": h, "y": y} for p, h, y, lab, _ in eqa]
    return rows


def payload(args) -> int:
    import gguf
    import numpy as np

    sys.path.insert(0, str(REPO))
    from citegraph.tools.local_model import embedded_model_path
    from citegraph.tools.verifier.lm import gguf_tokenizer

    lm = lmcheck()
    gguf_path = Path(args.gguf) if args.gguf else embedded_model_path("local-small")
    data, out = Path(args.data), Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    (out / "all").mkdir(parents=True)
    rng = random.Random(SEED)
    if args.pairs:
        given = [json.loads(line) for line in Path(args.pairs).read_text(encoding="utf-8").splitlines() if line.strip()]
        train = [{"part": r.get("part", "base"), **{k: r[k] for k in ("premise", "claim", "y")}}
                 for r in given if r["split"] == "train"]
        evals = [{k: r.get(k, "") for k in ("set", "group", "premise", "claim", "y")} for r in given if r["split"] == "eval"]
        counts = {"pairs_file": Path(args.pairs).name, "total": len(train)}
    else:
        train, counts = training_rows(data, args, rng)
        evals = evaluation_rows(data, args.fever_sample)
    if args.written:
        import written_pairs

        pool = written_pairs.pool_rows(data)  # read once for every file
        written = [r for f in args.written for r in written_pairs.rows(Path(f), attr=pool)]
        train += [{"premise": r["premise"], "claim": r["hypothesis"], "y": r["y"], "part": "written"} for r in written]
        counts["written"] = {"files": [Path(f).name for f in args.written], "total": len(written),
                             "by_category": dict(collections.Counter(r["category"] for r in written))}
    print(json.dumps(counts), f"eval {collections.Counter(r['set'] for r in evals)}", flush=True)
    tok = gguf_tokenizer(gguf_path)  # the verifier's own, from the same cache
    used = set()
    for s in range(0, len(train) + len(evals), 4096):
        part = (train + evals)[s: s + 4096]
        for ids in tok([r["premise"] for r in part] + [r["claim"] for r in part], add_special_tokens=False)["input_ids"]:
            used.update(ids)
    for text in (lm.PROMPT_HEAD, lm.PROMPT_MID, lm.PROMPT_TAIL, " Yes", " No"):
        used.update(tok(text, add_special_tokens=False)["input_ids"])
    rows = np.array(sorted(used), dtype=np.int64)
    reader = gguf.GGUFReader(str(gguf_path))
    meta = lm.gguf_meta(reader)
    tensors, types = {}, {}
    yes, no = (tok(w, add_special_tokens=False)["input_ids"][0] for w in (" Yes", " No"))
    for t in reader.tensors:
        layer = lm.layer_of(t.name)
        if (layer is not None and layer >= args.layers) or (lm.hf_name(t.name) is None and t.name != "output.weight"):
            continue
        if t.name == "output.weight":
            w = lm.head_rows(t, [yes, no])
            tensors["head_init"], types["head_init"] = (w[0] - w[1]).astype(np.float32), -1
            continue
        arr = np.array(t.data)
        if t.name == "token_embd.weight":
            arr = arr[rows]
        tensors[t.name], types[t.name] = arr, int(t.tensor_type)
    tensors["token_rows"], types["token_rows"] = rows, -1
    # parts: the tensors by size, each part under --part-mb; the small files go with the last part
    limit = args.part_mb * 2**20
    parts: list[list[str]] = [[]]
    size = 0
    for name in sorted(tensors, key=lambda k: -tensors[k].nbytes):
        if parts[-1] and size + tensors[name].nbytes > limit:
            parts.append([])
            size = 0
        parts[-1].append(name)
        size += tensors[name].nbytes
    for k, names in enumerate(parts, 1):
        folder = out / f"p{k}"
        folder.mkdir()
        np.savez(folder / f"weights{k}.npz", **{n: tensors[n] for n in names})
        (out / "all" / f"weights{k}.npz").symlink_to(folder.resolve() / f"weights{k}.npz")
    last = out / f"p{len(parts)}"
    tok.save_pretrained(str(last / "tokenizer"))
    raw = last / "tokenizer" / "tokenizer.json"  # 11 MB; 2-3 as xz
    with lzma.open(raw.with_suffix(".json.xz"), "wb", preset=9) as f:
        f.write(raw.read_bytes())
    raw.unlink()
    with lzma.open(last / "pairs.jsonl.xz", "wt", encoding="utf-8") as f:
        for r in train:
            f.write(json.dumps({"split": "train", **r}) + "\n")
        for r in evals:
            f.write(json.dumps({"split": "eval", **r}) + "\n")
    (last / "payload.json").write_text(json.dumps({"meta": meta, "layers": args.layers, "types": types,
                                                   "parts": len(parts), "counts": counts, "yes_no": [yes, no],
                                                   "gguf": gguf_path.name}, indent=1) + "\n")
    for name in ("tokenizer", "pairs.jsonl.xz", "payload.json"):
        (out / "all" / name).symlink_to((last / name).resolve())
    for k in range(1, len(parts) + 1):
        mb = sum(f.stat().st_size for f in (out / f"p{k}").rglob("*") if f.is_file()) / 2**20
        print(f"{out / f'p{k}'}: {mb:.1f} MiB")
    print(f"{len(rows)} of {meta['vocab']} embedding rows; layers 0-{args.layers - 1}")
    return 0


# ---- 2. train (there) ---------------------------------------------------------------------------
def load_payload(folder: Path, lm):
    import gguf
    import numpy as np

    info = json.loads((folder / "payload.json").read_text())
    meta, tensors = info["meta"], {}
    for k in range(1, info["parts"] + 1):
        with np.load(folder / f"weights{k}.npz") as z:
            for name in z.files:
                typ = info["types"][name]
                arr = z[name]
                tensors[name] = arr if typ < 0 else np.asarray(
                    gguf.quants.dequantize(arr, gguf.GGMLQuantizationType(typ)), dtype=np.float32)
    rows = tensors.pop("token_rows")
    head = tensors.pop("head_init")
    emb = np.zeros((meta["vocab"], meta["hidden"]), dtype=np.float32)  # unused tokens: never looked up
    emb[rows] = tensors.pop("token_embd.weight")
    weights = {"embed_tokens.weight": emb}
    for name, arr in tensors.items():
        weights[lm.hf_name(name)] = arr
    return info, weights, head


_TOK = None  # the tokenizer the forked workers of encode_all inherit (loaded once, in the parent)


def _encode_chunk(job):
    pairs, max_len = job
    return sys.modules["lmcheck"].encode_pairs(_TOK, pairs, max_len)


def encode_all(tok, pairs: list[tuple[str, str]], max_len: int, workers: int) -> list[list[int]]:
    import multiprocessing as mp

    global _TOK
    if workers <= 1:
        return sys.modules["lmcheck"].encode_pairs(tok, pairs, max_len)
    _TOK = tok
    step = max(1, math.ceil(len(pairs) / (workers * 4)))
    jobs = [(pairs[s: s + step], max_len) for s in range(0, len(pairs), step)]
    with mp.get_context("fork").Pool(workers) as pool:
        return [ids for part in pool.map(_encode_chunk, jobs) for ids in part]


def score(model, ids: list[list[int]], pad: int, device: str, batch: int = 64) -> list[float]:
    import torch

    lm = sys.modules["lmcheck"]
    probs = [0.0] * len(ids)
    model.eval()
    with torch.inference_mode(), torch.autocast(device.split(":")[0], dtype=torch.bfloat16,
                                                 enabled=device.startswith("cuda")):
        for idx, x, m in lm.batches(ids, batch, pad):
            p = torch.sigmoid(model(torch.tensor(x, device=device), torch.tensor(m, device=device)).float())
            for i, v in zip(idx, p.tolist()):
                probs[i] = v
    model.train()
    return probs


def train(args) -> int:
    import numpy as np
    import torch
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    t0 = time.perf_counter()
    lm = lmcheck()
    folder, out = Path(args.payload), Path(args.out)
    if not (folder / "payload.json").is_file():
        print(f"--payload {folder}: no payload.json (write one with the payload command)", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("--device cuda: no CUDA device is visible", file=sys.stderr)
        return 2
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    info, weights, head = load_payload(folder, lm)
    print(f"payload read and dequantized in {time.perf_counter() - t0:.0f}s", flush=True)
    tok_dir = Path(tempfile.mkdtemp()) / "tokenizer"  # the payload's, its tokenizer.json unpacked
    shutil.copytree(folder / "tokenizer", tok_dir)
    with lzma.open(tok_dir / "tokenizer.json.xz") as f:
        (tok_dir / "tokenizer.json").write_bytes(f.read())
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    pad = tok.pad_token_id if tok.pad_token_id is not None else info["yes_no"][1]
    with lzma.open(folder / "pairs.jsonl.xz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    part_of = {"base": ("base",), "all": ("base", "extra", "written"), "written": ("base",)}[args.parts]
    train_rows = [r for r in rows if r["split"] == "train" and r.get("part", "base") in part_of]
    eval_rows = [r for r in rows if r["split"] == "eval"]
    if args.eval_sets:
        eval_rows = [r for r in eval_rows if r["set"] in set(args.eval_sets.split(","))]
    if args.train_max:
        train_rows = random.Random(2).sample(train_rows, min(len(train_rows), args.train_max))
    if args.parts == "written":  # a sample of the base rows (--train-max) beside every written row
        written = [r for r in rows if r["split"] == "train" and r.get("part") == "written"]
        if not written:
            print(f"--parts written: {folder} has no written rows (payload --written)", file=sys.stderr)
            return 2
        train_rows += written * max(1, args.written_repeat)
    if args.eval_max:
        by = collections.defaultdict(list)
        for r in eval_rows:
            by[r["set"]].append(r)
        eval_rows = [r for rs in by.values() for r in random.Random(1).sample(rs, min(len(rs), args.eval_max))]
    t = time.perf_counter()
    all_ids = encode_all(tok, [(r["premise"], r["claim"]) for r in train_rows + eval_rows],
                         args.max_len, args.workers)
    train_ids, eval_ids = all_ids[: len(train_rows)], all_ids[len(train_rows):]
    print(f"tokenized {len(all_ids)} pairs in {time.perf_counter() - t:.0f}s", flush=True)

    # eager attention on CUDA: the first GPU run's SDPA path gave NaN losses from the first steps
    model = lm.build_checker(info["meta"], weights, info["layers"], head,
                             attn="eager" if args.device.startswith("cuda") else "sdpa")
    del weights
    cfg = LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.0, bias="none",
                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    if args.init:  # continue a trained adapter: its rank and alpha, its LoRA weights and head
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        init_card = lm.read_card(args.init)
        cfg.r, cfg.lora_alpha = init_card["lora"]["r"], init_card["lora"]["lora_alpha"]
        args.rank, args.alpha = cfg.r, cfg.lora_alpha
    model = get_peft_model(model, cfg)
    inner = model.base_model.model
    if args.init:
        state = load_file(str(Path(args.init) / "adapter.safetensors"))
        with torch.no_grad():
            inner.head.weight.copy_(state.pop("head.weight").float())
            inner.head.bias.copy_(state.pop("head.bias").float())
        result = set_peft_model_state_dict(model, {k: v.float() for k, v in state.items()})
        if result.unexpected_keys:
            raise ValueError(f"--init {args.init}: unexpected adapter keys {result.unexpected_keys[:3]}")
        print(f"continued from {args.init} ({len(state)} LoRA tensors)", flush=True)
    inner.head.requires_grad_(True)
    model.to(args.device)
    params = [p for p in model.parameters() if p.requires_grad]
    print(f"trainable {sum(p.numel() for p in params) / 1e6:.2f}M of {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M", flush=True)
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    y = np.array([r["y"] for r in train_rows])
    pos_weight = torch.tensor(float((y == 0).sum()) / max(1.0, float((y == 1).sum())), device=args.device)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)  # balanced: the metric is balanced accuracy

    order = list(range(len(train_ids)))
    per_epoch = math.ceil(len(order) / args.batch)
    total = max(1, int(per_epoch * args.epochs))
    if args.max_steps:
        total = min(total, args.max_steps)
    plan = {"total": total}
    warm = max(1, int(args.warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / max(1, plan["total"])))

    def epoch_batches():
        rng.shuffle(order)
        mega = args.batch * 50  # sort by length inside chunks of 50 batches: less padding
        out_b = []
        for s in range(0, len(order), mega):
            chunk = sorted(order[s: s + mega], key=lambda i: len(train_ids[i]))
            out_b += [chunk[k: k + args.batch] for k in range(0, len(chunk), args.batch)]
        rng.shuffle(out_b)
        return out_b

    step, t_train, losses, refit, skipped = 0, time.perf_counter(), [], False, 0
    model.train()
    while step < plan["total"]:
        for b in epoch_batches():
            if step >= plan["total"]:
                break
            n = max(len(train_ids[i]) for i in b)
            x = torch.tensor([train_ids[i] + [pad] * (n - len(train_ids[i])) for i in b], device=args.device)
            m = torch.tensor([[1] * len(train_ids[i]) + [0] * (n - len(train_ids[i])) for i in b], device=args.device)
            target = torch.tensor([float(train_rows[i]["y"]) for i in b], device=args.device)
            with torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=args.device.startswith("cuda")):
                logits = model(x, m)
            loss = loss_fn(logits.float(), target)
            if not torch.isfinite(loss):  # never let one bad batch poison the adapter
                skipped += 1
                opt.zero_grad(set_to_none=True)
                if skipped > 20 and skipped > step:
                    print(f"{skipped} non-finite losses in {step + skipped} batches: stopped", flush=True)
                    return 1
                continue
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            step += 1
            elapsed = time.perf_counter() - t_train
            if args.time_budget and not refit and elapsed > 60:
                fit = int(step / elapsed * args.time_budget * 60)
                plan["total"], refit = max(step + 1, min(plan["total"], fit)), True
                print(f"refit: {step / elapsed:.2f} steps/s -> {plan['total']} steps", flush=True)
            if step % 100 == 0 or step == plan["total"]:
                print(f"step {step}/{plan['total']} loss {sum(losses[-100:]) / len(losses[-100:]):.4f} "
                      f"{elapsed:.0f}s", flush=True)
            if args.time_budget and elapsed > args.time_budget * 60 + 30:
                plan["total"] = step
                print("time budget spent: stopped", flush=True)
                break
    train_s = time.perf_counter() - t_train

    t = time.perf_counter()
    probs = score(model, eval_ids, pad, args.device)
    bad = sum(not math.isfinite(p) for p in probs)
    if bad:
        print(f"{bad} non-finite scores (counted as 0.5)", flush=True)
        probs = [p if math.isfinite(p) else 0.5 for p in probs]
    import verifier_sweep  # its per-set report; stdlib at import, sklearn when called

    rep = verifier_sweep.report(eval_rows, probs)
    print(json.dumps(rep), flush=True)
    print(f"scored {len(eval_ids)} pairs in {time.perf_counter() - t:.0f}s", flush=True)
    state = {k: v.detach().to(torch.bfloat16).contiguous().cpu() for k, v in get_peft_model_state_dict(model).items()}
    state["head.weight"] = inner.head.weight.detach().float().cpu().contiguous()
    state["head.bias"] = inner.head.bias.detach().float().cpu().contiguous()
    save_file(state, str(out / "adapter.safetensors"))
    card = {"base_gguf": info["gguf"], "layers": info["layers"], "max_len": args.max_len, "prompt":
            [lm.PROMPT_HEAD, lm.PROMPT_MID, lm.PROMPT_TAIL], "lora": {"r": args.rank, "lora_alpha": args.alpha,
            "target_modules": sorted(cfg.target_modules)}, "args": vars(args), "data_counts": info["counts"],
            "train_pairs": len(train_rows), "steps": step, "skipped_nonfinite": skipped, "train_seconds": round(train_s, 1), "device": torch.cuda.get_device_name()
            if args.device.startswith("cuda") else "cpu", "loss_last_100": sum(losses[-100:]) / max(1, len(losses[-100:])),
            "eval": rep, "threshold": 0.5}
    (out / "checker.json").write_text(json.dumps(card, indent=1) + "\n")
    with (out / "eval_scores.jsonl").open("w") as f:
        for r, p in zip(eval_rows, probs):
            f.write(json.dumps({"set": r["set"], "group": r["group"], "y": r["y"], "p": round(p, 5)}) + "\n")
    print(f"done in {time.perf_counter() - t0:.0f}s: {step} steps", flush=True)
    return 0


# ---- 4. soup (here) -----------------------------------------------------------------------------
_SAME = ("base_gguf", "layers", "max_len", "prompt")


def soup(args) -> int:
    """Write one adapter whose merged weight change is exactly the mean of the given adapters' (W + mean of
    B_i A_i alpha_i / r_i): the A matrices stacked, the B matrices side by side, each scaled by its own
    alpha / r over the soup's and divided by their number; the head is the mean of the heads. Its rank is
    the sum of theirs (the file grows with it); ``merge_adapter`` folds it like any other."""
    import torch
    from safetensors.torch import load_file, save_file

    folders = [Path(a) for a in args.adapters]
    if len(folders) < 2:
        print("a soup needs at least two adapters", file=sys.stderr)
        return 2
    missing = [str(f) for f in folders if not (f / "adapter.safetensors").is_file() or not (f / "checker.json").is_file()]
    if missing:
        print(f"not an adapter folder (adapter.safetensors + checker.json): {', '.join(missing)}", file=sys.stderr)
        return 2
    cards = [json.loads((f / "checker.json").read_text()) for f in folders]
    for key in _SAME:
        if any(c[key] != cards[0][key] for c in cards):
            print(f"the adapters differ in {key}: not one base, their weights do not average", file=sys.stderr)
            return 2
    if any(sorted(c["lora"]["target_modules"]) != sorted(cards[0]["lora"]["target_modules"]) for c in cards):
        print("the adapters differ in target modules: not one base, their weights do not average", file=sys.stderr)
        return 2
    states = [load_file(str(f / "adapter.safetensors")) for f in folders]
    if any(set(st) != set(states[0]) for st in states):
        print("the adapters hold different tensors: not one base, their weights do not average", file=sys.stderr)
        return 2
    scales = [c["lora"]["lora_alpha"] / c["lora"]["r"] for c in cards]
    rank = sum(c["lora"]["r"] for c in cards)
    n = len(states)
    out_state = {}
    for key in states[0]:
        if ".lora_A." in key:
            out_state[key] = torch.cat([st[key] for st in states], dim=0).contiguous()
        elif ".lora_B." in key:
            out_state[key] = torch.cat([(st[key].float() * (s / scales[0] / n)).to(st[key].dtype)
                                        for st, s in zip(states, scales)], dim=1).contiguous()
        else:  # the head
            out_state[key] = (sum(st[key].float() for st in states) / n).to(states[0][key].dtype).contiguous()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(out_state, str(out / "adapter.safetensors"))
    card = {k: cards[0][k] for k in _SAME}
    card["lora"] = {**cards[0]["lora"], "r": rank, "lora_alpha": scales[0] * rank}
    card["soup_of"] = [{"folder": str(f), "sha256": hashlib.sha256((f / "adapter.safetensors").read_bytes()).hexdigest(),
                        "r": c["lora"]["r"], "lora_alpha": c["lora"]["lora_alpha"]} for f, c in zip(folders, cards)]
    card["threshold"] = cards[0].get("threshold", 0.5)
    (out / "checker.json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"{out}: the mean of {n} adapters' weight changes, rank {rank}")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return {"payload": payload, "train": train, "soup": soup}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
