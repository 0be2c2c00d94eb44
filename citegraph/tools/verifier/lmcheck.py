"""A small language model as the entailment checker: the first layers of the packaged Qwen2.5 0.5B
(its GGUF weights, dequantized), a LoRA adapter and a one-logit head on the last token, trained by
``scripts/train_lm_checker.py`` on a lent GPU and shipped as the adapter alone.

This module imports numpy, torch, transformers, safetensors and gguf only, so that the training
script can load it by path on a machine where citegraph's other dependencies are missing; the
verifier backend that uses it lives in ``lm.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

# a GGUF tensor name (llama.cpp's qwen2 names) -> the transformers Qwen2Model name
_PARTS = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
          "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
          "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
_BLK = re.compile(r"^blk\.(\d+)\.(\w+)\.(weight|bias)$")
PROMPT_HEAD = "Document:\n"
PROMPT_MID = "\n\nClaim: "
PROMPT_TAIL = "\n\nDoes the document support every part of the claim? Answer:"
_WORD = re.compile(r"\w+")


def hf_name(name: str) -> str | None:
    """The Qwen2Model parameter a GGUF tensor fills, or None (the LM head, which the checker replaces)."""
    if name == "token_embd.weight":
        return "embed_tokens.weight"
    if name == "output_norm.weight":
        return "norm.weight"
    m = _BLK.match(name)
    if m and m.group(2) in _PARTS:
        return f"layers.{m.group(1)}.{_PARTS[m.group(2)]}.{m.group(3)}"
    return None


def layer_of(name: str) -> int | None:
    m = _BLK.match(name)
    return int(m.group(1)) if m else None


def gguf_meta(reader) -> dict[str, Any]:
    """The qwen2 hyper-parameters of a GGUF file (``gguf.GGUFReader``)."""
    def val(key):
        f = reader.fields[key]
        return f.parts[f.data[0]].tolist()[0]
    vocab = next(int(t.shape[1]) for t in reader.tensors if t.name == "token_embd.weight")
    return {"hidden": val("qwen2.embedding_length"), "intermediate": val("qwen2.feed_forward_length"),
            "heads": val("qwen2.attention.head_count"), "kv_heads": val("qwen2.attention.head_count_kv"),
            "layers": val("qwen2.block_count"), "rope_theta": float(val("qwen2.rope.freq_base")),
            "rms_eps": float(val("qwen2.attention.layer_norm_rms_epsilon")), "vocab": vocab}


def qwen_config(meta: dict[str, Any], n_layers: int, attn: str = "sdpa"):
    from transformers import Qwen2Config

    return Qwen2Config(vocab_size=meta["vocab"], hidden_size=meta["hidden"], intermediate_size=meta["intermediate"],
                       num_hidden_layers=n_layers, num_attention_heads=meta["heads"],
                       num_key_value_heads=meta["kv_heads"], rope_theta=meta["rope_theta"],
                       rms_norm_eps=meta["rms_eps"], max_position_embeddings=32768, tie_word_embeddings=False,
                       use_sliding_window=False, attn_implementation=attn)


def gguf_tensors(path: str | Path, n_layers: int) -> tuple[dict[str, Any], dict[str, np.ndarray], Any]:
    """(meta, the Qwen2Model tensors of the first ``n_layers`` layers as float32, the GGUF's LM head
    tensor still quantized: :func:`head_rows` reads the rows a caller needs)."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    meta = gguf_meta(reader)
    out, head = {}, None
    for t in reader.tensors:
        layer = layer_of(t.name)
        if layer is not None and layer >= n_layers:
            continue
        if t.name == "output.weight":
            head = t
            continue
        name = hf_name(t.name)
        if name is None:
            continue
        out[name] = np.array(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)  # a writable copy
    return meta, out, head


def head_rows(head, rows: Sequence[int]) -> np.ndarray:
    """Rows of the GGUF LM head tensor (quantized rows are dequantized one by one)."""
    import gguf

    return np.stack([np.asarray(gguf.quants.dequantize(head.data[r:r + 1], head.tensor_type), dtype=np.float32)[0]
                     for r in rows])


class CheckerModule(torch.nn.Module):
    """Qwen2Model (its first layers) + the last real token's normed hidden state -> one logit."""

    def __init__(self, body, hidden: int):
        super().__init__()
        self.body = body
        self.head = torch.nn.Linear(hidden, 1)

    def forward(self, input_ids, attention_mask):
        h = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        last = attention_mask.sum(1) - 1  # right-padded: the last real token
        h = h[torch.arange(h.shape[0], device=h.device), last]
        return self.head(h.to(self.head.weight.dtype)).squeeze(-1)


def build_checker(meta: dict[str, Any], tensors: dict[str, np.ndarray], n_layers: int,
                  head: np.ndarray, attn: str = "sdpa") -> CheckerModule:
    """The checker in float32 on the CPU from dequantized tensors; ``head`` is [weight..., bias]
    (or a weight row alone, the bias then 0)."""
    from transformers import Qwen2Model

    cfg = qwen_config(meta, n_layers, attn)
    body = Qwen2Model(cfg)
    missing, unexpected = body.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    if missing or unexpected:
        raise ValueError(f"checker weights: missing {missing[:5]}, unexpected {unexpected[:5]}")
    model = CheckerModule(body, meta["hidden"])
    head = np.asarray(head, dtype=np.float32).reshape(-1)
    with torch.no_grad():
        model.head.weight.copy_(torch.from_numpy(head[: meta["hidden"]].reshape(1, -1)))
        model.head.bias.fill_(float(head[meta["hidden"]]) if head.size > meta["hidden"] else 0.0)
    return model.eval()


# ---- the pair as tokens (the same at training and inference) -----------------------------------
def _best_span(premise: str, offs: list, claim_words: set[str], room: int, overlap: int = 64) -> tuple[int, int]:
    """The token span [start, end) of at most ``room`` premise tokens sharing the most words with the
    claim (the whole premise when it fits; the first such span on a tie)."""
    n = len(offs)
    if n <= room:
        return 0, n
    step = max(room - min(overlap, room // 2), 1)
    best, best_score, start = (0, room), -1, 0
    while True:
        end = min(start + room, n)
        score = len(claim_words & {x.lower() for x in _WORD.findall(premise[offs[start][0]: offs[end - 1][1]])})
        if score > best_score:
            best, best_score = (start, end), score
        if end >= n:
            return best
        start += step


def encode_pairs(tok, pairs: Sequence[tuple[str, str]], max_len: int, claim_max: int = 96,
                 chunk: int = 2048) -> list[list[int]]:
    """Token ids of each (premise, claim): the prompt's fixed parts, the claim cut to ``claim_max``
    tokens and the premise's best window in the room left, so that every pair fits in ``max_len``.
    The same function makes the training inputs and the verifier's."""
    head = tok(PROMPT_HEAD, add_special_tokens=False)["input_ids"]
    mid = tok(PROMPT_MID, add_special_tokens=False)["input_ids"]
    tail = tok(PROMPT_TAIL, add_special_tokens=False)["input_ids"]
    fixed = len(head) + len(mid) + len(tail)
    out: list[list[int]] = []
    for s in range(0, len(pairs), chunk):
        part = pairs[s: s + chunk]
        claims = tok([c for _, c in part], add_special_tokens=False)["input_ids"]
        prem = tok([p for p, _ in part], add_special_tokens=False, return_offsets_mapping=True)
        for k, (premise, claim) in enumerate(part):
            c = claims[k][:claim_max]
            room = max(max_len - fixed - len(c), 16)
            a, b = _best_span(premise, prem["offset_mapping"][k], {w.lower() for w in _WORD.findall(claim)}, room)
            out.append(head + prem["input_ids"][k][a:b] + mid + c + tail)
    return out


def batches(ids: list[list[int]], batch: int, pad: int):
    """Length-sorted batches: (positions, input_ids, attention_mask) as lists, right-padded."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for s in range(0, len(order), batch):
        idx = order[s: s + batch]
        n = max(len(ids[i]) for i in idx)
        yield idx, [ids[i] + [pad] * (n - len(ids[i])) for i in idx], [[1] * len(ids[i]) + [0] * (n - len(ids[i])) for i in idx]


# ---- the adapter ------------------------------------------------------------------------------
def merge_adapter(tensors: dict[str, np.ndarray], adapter: dict[str, Any], config: dict[str, Any]) -> np.ndarray:
    """Fold a peft LoRA adapter (torch tensors, as ``safetensors.torch.load_file`` reads them) into
    ``tensors`` (in place; W += B @ A * alpha / r) and return the head saved beside it as [weight..., bias]."""
    scale = config["lora_alpha"] / config["r"]
    for key, a in adapter.items():
        if ".lora_A." in key:
            # base_model.model.body.layers.3.self_attn.q_proj.lora_A.weight -> layers.3.self_attn.q_proj.weight
            target = key.split("body.", 1)[1].replace(".lora_A.weight", ".weight")
            b = adapter[key.replace(".lora_A.", ".lora_B.")]
            tensors[target] = tensors[target] + (b.float() @ a.float()).numpy() * scale
    return np.concatenate([adapter["head.weight"].float().numpy().reshape(-1),
                           adapter["head.bias"].float().numpy().reshape(-1)])


def read_card(folder: str | Path) -> dict[str, Any]:
    return json.loads((Path(folder) / "checker.json").read_text(encoding="utf-8"))
