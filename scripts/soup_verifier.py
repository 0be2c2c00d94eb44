#!/usr/bin/env python
"""Average the weights of sibling verifier runs (a uniform "model soup", Wortsman et al. 2022).

    python scripts/soup_verifier.py --out citegraph/assets/verifier run4 run5 run6
    python scripts/soup_verifier.py --out v2 citegraph/assets/verifier run6     # a run and its parent

Each input is an output folder of scripts/train_verifier.py. The runs must continue the same
parent (``--base``) with other data orders, so their weights lie in one basin and their mean is a
model of its own (a soup of unrelated runs is not). Or the first input is that parent and the others
continue it: the mean then lies halfway between the parent and its fine-tuned child (WiSE-FT,
Wortsman et al. 2022), which keeps much of what the child learned and of what the parent knew.
The inputs must share the held-out split and the sequence length; the script refuses otherwise.
The soup costs nothing at inference: one model, the same size and speed as each input.

Writes fp16 safetensors, the tokenizer, ``inference.json`` and ``heldout_split.json`` of the
first input, and a ``training_info.json`` recording every input's own training record. It does
not evaluate: run benchmarks/bench_verifier.py (or train_verifier.py's held-out evaluation) after.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("runs", nargs="+", help="output folders of train_verifier.py (at least two)")
    return ap.parse_args(argv)


def _read(run: Path, name: str) -> dict:
    f = run / name
    if not f.exists():
        raise FileNotFoundError(f"{run}: no {name} (not an output folder of scripts/train_verifier.py)")
    return json.loads(f.read_text(encoding="utf-8"))


def main(argv=None) -> int:
    args = parse_args(argv)
    runs = [Path(r) for r in args.runs]
    if len(runs) < 2:
        print("a soup needs at least two runs", file=sys.stderr)
        return 2
    try:
        infos = [_read(r, "training_info.json") for r in runs]
        splits = [_read(r, "heldout_split.json") for r in runs]
        inference = [_read(r, "inference.json") for r in runs]
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    if any(s["lines"] != splits[0]["lines"] for s in splits):
        print("the runs hold out different pairs: their held-out figures would not be comparable", file=sys.stderr)
        return 2
    if any(i != inference[0] for i in inference):
        print("the runs differ in inference settings (max_length ...): not one model family", file=sys.stderr)
        return 2
    parents = {json.dumps(i.get("continued_from"), sort_keys=True) for i in infos}
    with_parent = all(i.get("continued_from") == infos[0] for i in infos[1:])
    if not with_parent and (len(parents) != 1 or infos[0].get("continued_from") is None):
        print("the runs must continue the same parent run (--base), or continue the first: weights of "
              "unrelated runs do not average",
              file=sys.stderr)
        return 2

    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    states = [load_file(str(r / "model.safetensors")) for r in runs]
    keys = set(states[0])
    if any(set(s) != keys for s in states):
        print("the runs have different parameters: not one architecture", file=sys.stderr)
        return 2
    soup = {k: (sum(s[k].float() for s in states) / len(states)).to(torch.float16).contiguous() for k in sorted(keys)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(soup, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text((runs[0] / "config.json").read_text(encoding="utf-8"), encoding="utf-8")
    AutoTokenizer.from_pretrained(str(runs[0])).save_pretrained(str(out))
    (out / "inference.json").write_text(json.dumps(inference[0]) + "\n")
    (out / "heldout_split.json").write_text(json.dumps(splits[0]) + "\n")
    digests = [hashlib.sha256((r / "model.safetensors").read_bytes()).hexdigest() for r in runs]
    info = {
        "base_model": infos[0]["base_model"],
        "soup": ("uniform mean of the weights of the runs below, the first the parent of the others (WiSE-FT)"
                 if with_parent else "uniform mean of the weights of the runs below") + " (fp32 mean, saved fp16)",
        "continued_from": infos[0]["continued_from"],
        "runs": [{**{k: v for k, v in i.items() if k != "continued_from"}, "model_sha256": d}
                 for i, d in zip(infos, digests)],
        "train_seconds": round(sum(i["train_seconds"] for i in infos), 1),
    }
    (out / "training_info.json").write_text(json.dumps(info, indent=2) + "\n")
    print(f"soup of {len(runs)} runs ({len(soup)} tensors, {sum(t.numel() for t in soup.values()):,} parameters) "
          f"saved to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
