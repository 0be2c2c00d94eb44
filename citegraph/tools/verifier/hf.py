"""Hugging Face backends: ``hf-classifier:<id-or-path>`` (MNLI-style 2- or 3-way classifiers and
our bundled cross-encoder) and ``hf-seq2seq:<id-or-path>`` (TRUE-style T5). Shared tokenisation,
premise windowing (max over overlapping token windows) and length-sorted batching. Offline only:
a spec resolves to a local folder or the local Hugging Face cache."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Sequence

from citegraph.errors import ModelError
from citegraph.tools.progress import emit
from citegraph.tools.verifier.base import Pair, Verifier


def _resolve_device(device: str) -> tuple[str, Any]:
    import torch

    if device in (None, "", "auto"):
        if torch.cuda.is_available():
            return "cuda", torch.bfloat16
        return "cpu", torch.float32
    if device.startswith("cuda"):
        return device, torch.bfloat16
    return device, torch.float32


def _dtype_kw(dtype) -> dict[str, Any]:
    """``dtype=`` for transformers >= 4.56, ``torch_dtype=`` before."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}


def _resolve_model_path(name: str) -> str:
    """A local folder, or an id that must already be in the local HF cache (never downloads)."""
    p = Path(name).expanduser()
    if p.exists():
        return str(p)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return name


def _load_error(spec: str, exc: Exception) -> ModelError:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return ModelError(f"cannot load verifier {spec!r}: {type(exc).__name__}: {first}")


def entailment_index(id2label: dict | None, num_labels: int) -> int:
    """Index of the 'entailment' class from a config's id2label (2- or 3-way heads).

    Labels are matched case-insensitively: ``entailment``/``entailed``/``supported``/``yes``/
    ``true``/``consistent`` count, ``not_entailment``/``non-entailment``/``unsupported`` do not.
    Generic ``LABEL_k`` names fall back to index 1 for 2-way heads (the GLUE/RTE convention is
    0=entailment, but binary fine-tunes of ours and most factuality models use 1=positive) and to
    0 for 3-way heads (MNLI order entailment, neutral, contradiction).
    """
    labels = {int(k): str(v).strip().lower().replace("-", "_").replace(" ", "_") for k, v in (id2label or {}).items()}
    for i, lab in sorted(labels.items()):
        if lab.startswith(("not", "non", "un", "no_")):
            continue
        if lab.startswith(("entail", "support", "consistent", "faithful")) or lab in ("yes", "true"):
            return i
    if num_labels == 2:
        return 1
    if num_labels == 3:
        return 0
    raise ValueError(f"cannot find the entailment class in id2label={id2label!r}")


class _HFVerifier(Verifier):
    """Shared tokenisation, premise windowing and length-sorted batching."""

    _reports_batches = True

    def __init__(
        self,
        spec: str,
        model_path: str,
        device: str = "auto",
        max_length: int = 512,
        max_premise_tokens: int | None = None,
        window_overlap: int = 64,
        batch_size: int = 32,
        num_threads: int | None = None,
        quantize: str | None = None,
        max_windows: int | None = None,
        temperature: float = 1.0,
        **kw,
    ):
        if not float(temperature) > 0:
            raise ValueError(f"temperature must be above 0, got {temperature}")
        self.temperature = float(temperature)
        if max_windows is not None and int(max_windows) < 0:
            raise ValueError(f"max_windows must be 0 (every window) or more, got {max_windows}")
        super().__init__(spec=spec, batch_size=batch_size, **kw)
        import torch

        if quantize not in (None, "", "none", "int8"):
            raise ValueError(f"quantize must be 'int8' or none, got {quantize!r}")

        if num_threads:
            torch.set_num_threads(int(num_threads))
        self.device, self.dtype = _resolve_device(device)
        self.model_path = _resolve_model_path(model_path)
        self.max_length = int(max_length)
        self.max_premise_tokens = max_premise_tokens
        self.window_overlap = int(window_overlap)
        self.max_windows = int(max_windows) if max_windows else None
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in CLI output
        try:
            self._load()
        except Exception as exc:  # noqa: BLE001
            raise _load_error(spec, exc) from exc
        self.model.eval()
        self.quantized = False
        if quantize == "int8" and self.device == "cpu":
            # dynamic int8 for every Linear layer (fbgemm/VNNI kernels); CUDA keeps bf16
            self.model = torch.ao.quantization.quantize_dynamic(self.model, {torch.nn.Linear}, dtype=torch.qint8)
            self.quantized = True

    def _load(self) -> None:  # pragma: no cover
        raise NotImplementedError

    # how many tokens the template/special tokens take around premise + hypothesis
    _overhead: int = 3

    def _windows(self, premise: str, hyp_len: int) -> list[str]:
        """Split the premise into overlapping windows that fit next to the hypothesis."""
        room = max(self.max_length - hyp_len - self._overhead, 16)  # a huge hypothesis gets truncated later
        if self.max_premise_tokens:
            room = min(room, max(int(self.max_premise_tokens), 1))
        enc = self.tokenizer(premise, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        n = len(offsets)
        if n <= room:
            return [premise]
        overlap = min(self.window_overlap, room // 2)
        step = room - overlap
        out: list[str] = []
        start = 0
        while True:
            end = min(start + room, n)
            out.append(premise[offsets[start][0]: offsets[end - 1][1]])
            if end >= n:
                break
            start += step
        return out

    def premise_cut(self, pairs: Sequence[Pair]) -> list[bool]:
        """For each pair, whether its premise does not fit in one window beside the hypothesis: the model
        never read it whole (``+lm`` then trusts its checker, which reads a longer span, on such a pair
        the model rejects outright; docs/verifier.md). Under the verifier's lock: scoring in another thread
        sets the shared tokenizer's truncation."""
        out, hyp_lens = [], {}
        with self._lock:
            for p, h in pairs:
                if h not in hyp_lens:
                    hyp_lens[h] = len(self.tokenizer(h, add_special_tokens=False)["input_ids"])
                out.append(len(self._windows(p, hyp_lens[h])) > 1)
        return out

    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:
        import torch

        hyp_lens: dict[str, int] = {}
        for _, h in pairs:
            if h not in hyp_lens:
                hyp_lens[h] = len(self.tokenizer(h, add_special_tokens=False)["input_ids"])
        # (pair index, premise window, hypothesis, approx length)
        items: list[tuple[int, str, str, int]] = []
        for i, (p, h) in enumerate(pairs):
            hl = hyp_lens[h]
            windows = self._windows(p, hl)
            if self.max_windows and len(windows) > self.max_windows:
                windows = top_windows(windows, h, self.max_windows)
                self.stats.windows_skipped += 1
            for w in windows:
                items.append((i, w, h, len(w) + 4 * hl))
        items.sort(key=lambda it: it[3])
        best = [-math.inf] * len(pairs)
        with torch.inference_mode():
            for b in range(0, len(items), self.batch_size):
                chunk = items[b: b + self.batch_size]
                probs = self._forward([(w, h) for _, w, h, _ in chunk])
                self.stats.batches += 1
                emit("verifier_batch", verifier=self.spec, done=min(b + self.batch_size, len(items)), total=len(items))
                for (i, _, _, _), pr in zip(chunk, probs):
                    if pr > best[i]:
                        best[i] = pr
        return [float(x) for x in best]

    def _forward(self, pairs: list[Pair]) -> list[float]:  # pragma: no cover
        raise NotImplementedError


_WORD = re.compile(r"\w+")


def top_windows(windows: list[str], hypothesis: str, k: int) -> list[str]:
    """The ``k`` windows sharing the most words with the hypothesis (ties: the earlier window).

    The default model was trained on the best-overlap window of each long premise, so scoring only
    the top windows keeps its accuracy and bounds the cost of a long premise."""
    hyp = {w.lower() for w in _WORD.findall(hypothesis)}
    ranked = sorted(range(len(windows)), key=lambda i: (-len(hyp & {w.lower() for w in _WORD.findall(windows[i])}), i))
    return [windows[i] for i in sorted(ranked[:k])]


class HFClassifierVerifier(_HFVerifier):
    """Cross-encoder sequence classifier (MNLI-style 3-way or binary)."""

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.model = AutoModelForSequenceClassification.from_pretrained(self.model_path, **_dtype_kw(self.dtype)).to(self.device)
        cfg = self.model.config
        self.max_length = min(self.max_length, int(getattr(cfg, "max_position_embeddings", self.max_length) or self.max_length))
        self.num_labels = int(cfg.num_labels)
        self.entail_idx = entailment_index(getattr(cfg, "id2label", None), self.num_labels) if self.num_labels > 1 else 0
        self._overhead = self.tokenizer.num_special_tokens_to_add(pair=True)
        self._torch = torch

    def _forward(self, pairs: list[Pair]) -> list[float]:
        torch = self._torch
        enc = self.tokenizer(
            [p for p, _ in pairs], [h for _, h in pairs],
            truncation=True, max_length=self.max_length, padding=True, return_tensors="pt",
        ).to(self.device)
        # temperature scaling (inference.json, fitted on held-out pairs): the same decisions at 0.5 for
        # a binary head, a score that reads as a probability
        logits = self.model(**enc).logits.float() / self.temperature
        if self.num_labels == 1:
            return torch.sigmoid(logits[:, 0]).tolist()
        return torch.softmax(logits, dim=-1)[:, self.entail_idx].tolist()


class HFSeq2SeqVerifier(_HFVerifier):
    """TRUE-style T5: ``premise: {p} hypothesis: {h}`` -> softmax over logits of "1" vs "0"."""

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.model = AutoModelForSeq2SeqLM.from_pretrained(self.model_path, **_dtype_kw(self.dtype)).to(self.device)
        self.one_id = self._token_id("1")
        self.zero_id = self._token_id("0")
        start = self.model.config.decoder_start_token_id
        if start is None:
            start = self.tokenizer.pad_token_id
        self.start_id = int(start)
        self._overhead = len(self.tokenizer("premise: hypothesis:")["input_ids"]) + 1
        self._torch = torch

    def _token_id(self, text: str) -> int:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        # sentencepiece may emit a bare "▁" piece first; the digit is the last piece
        if not ids:
            raise ValueError(f"tokenizer has no token for {text!r}")
        tid = int(ids[-1])
        if tid == self.tokenizer.unk_token_id:
            raise ValueError(f"tokenizer maps {text!r} to the unknown token")
        return tid

    def _forward(self, pairs: list[Pair]) -> list[float]:
        torch = self._torch
        texts = [f"premise: {p} hypothesis: {h}" for p, h in pairs]
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt").to(self.device)
        dec = torch.full((len(texts), 1), self.start_id, dtype=torch.long, device=self.device)
        logits = self.model(**enc, decoder_input_ids=dec).logits[:, 0, :].float()
        two = torch.stack([logits[:, self.one_id], logits[:, self.zero_id]], dim=-1)
        return torch.softmax(two, dim=-1)[:, 0].tolist()
