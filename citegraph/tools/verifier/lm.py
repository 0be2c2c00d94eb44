"""``lm-check``: the language-model checker on the CPU -- the first layers of the packaged Qwen2.5 0.5B
(``local-small``), dequantized from its GGUF, with the LoRA adapter and head trained by
``scripts/train_lm_checker.py`` folded in (``citegraph/assets/verifier_lm``; the model code is in
``lmcheck.py``). About 3 pairs/s for a 200-token premise on 2 cores without native bf16 (fp32; bf16 is
4 times slower there): a second opinion on the pairs a first verifier is unsure of, not a first stage."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Sequence

from citegraph.errors import ModelError
from citegraph.tools.verifier.base import Pair, Verifier

LM_ASSET_DIR = Path(__file__).resolve().parents[2] / "assets" / "verifier_lm"


def gguf_tokenizer(gguf_path: Path):
    """The GGUF's own tokenizer as a transformers tokenizer, converted once into the cache."""
    from transformers import AutoTokenizer

    from citegraph.tools.local_model import cache_dir

    folder = cache_dir() / f"{gguf_path.stem}-tokenizer"
    if not (folder / "tokenizer.json").exists():  # written aside, then moved: a reader never sees half of it
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tokenizer-"))
        AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name).save_pretrained(str(tmp))
        try:
            os.replace(tmp, folder)
        except OSError:  # another process moved its copy first
            shutil.rmtree(tmp, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(str(folder))
    tok.model_max_length = 1 << 30  # premises are cut into windows by lmcheck.encode_pairs, not by the tokenizer
    return tok


def native_bf16() -> bool:
    """The CPU computes in bf16 itself (AVX512-BF16 or AMX); without it torch emulates bf16 matrix
    products, about 4 times slower than fp32 on the 2-core machines here."""
    import torch

    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:  # an older torch: fp32, the safe choice
        return False


class LMCheckVerifier(Verifier):
    """P(supported) from the Qwen checker; loaded on first use (10-30 s: the GGUF's first layers are
    dequantized and the adapter folded in; the tokenizer is converted once into the cache). ``dtype``:
    ``auto`` (bf16 where the CPU has it natively, else fp32; both give the same decisions on the
    minimal pairs), ``bfloat16`` or ``float32``."""

    def __init__(self, spec: str = "lm-check", folder: str | Path = LM_ASSET_DIR, batch_size: int = 8,
                 threads: int | None = None, dtype: str = "auto", **kw: Any):
        super().__init__(spec=spec, batch_size=batch_size, **kw)
        if dtype not in ("auto", "bfloat16", "float32"):
            raise ValueError(f"lm-check dtype must be auto, bfloat16 or float32, got {dtype!r}")
        self.folder, self.threads, self.dtype = Path(folder), threads, dtype
        self._model = self._tok = self._card = None
        self._load_lock = threading.Lock()

    def _load(self) -> None:
        with self._load_lock:
            if self._model is not None:
                return
            import torch
            from safetensors.torch import load_file

            from citegraph.tools.local_model import embedded_model_path
            from citegraph.tools.verifier import lmcheck

            if not (self.folder / "checker.json").is_file():
                raise ModelError(f"verifier {self.spec!r}: {self.folder} has no checker.json (a trained adapter)")
            card = lmcheck.read_card(self.folder)
            gguf_path = embedded_model_path("local-small")
            if gguf_path.name != card["base_gguf"]:
                raise ModelError(f"verifier {self.spec!r}: the adapter was trained on {card['base_gguf']}, "
                                 f"local-small is {gguf_path.name}")
            meta, tensors, _ = lmcheck.gguf_tensors(gguf_path, card["layers"])
            head = lmcheck.merge_adapter(tensors, load_file(str(self.folder / "adapter.safetensors")), card["lora"])
            model = lmcheck.build_checker(meta, tensors, card["layers"], head)
            del tensors
            if self.threads:
                torch.set_num_threads(int(self.threads))
            bf16 = self.dtype == "bfloat16" or (self.dtype == "auto" and native_bf16())
            self._model = model.to(torch.bfloat16 if bf16 else torch.float32).eval()  # trained with bf16 autocast
            self._tok, self._card = gguf_tokenizer(gguf_path), card

    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:
        import torch

        from citegraph.tools.verifier import lmcheck

        self._load()
        ids = lmcheck.encode_pairs(self._tok, list(pairs), self._card["max_len"])
        pad = self._tok.pad_token_id
        out = [0.0] * len(ids)
        with torch.inference_mode():
            for idx, x, m in lmcheck.batches(ids, self.batch_size, pad):
                p = torch.sigmoid(self._model(torch.tensor(x), torch.tensor(m)).float()).tolist()
                for i, v in zip(idx, p):
                    out[i] = v
        return out


#: where ``+lm`` asks the second verifier: every score of the first above 0.1 (a score a structural check
#: capped at 0.1, or one the first is sure of below it, stands). With the first adapter it was (0.1, 0.9):
#: that adapter seldom scored a pair under 0.1, so averaging it with a first score above 0.9 changed no
#: decision; the second adapter does (docs/verifier.md, "Written hard pairs")
SECOND_BAND = (0.1, math.inf)

class SecondOpinionVerifier(Verifier):
    """``<spec>+lm``: the first verifier's score, except strictly inside ``band`` -- by default every score
    above 0.1 -- where it is the mean of its score and the second verifier's. A score the first capped
    with a structural check (at most 0.1) is outside the band and stands; a score at or below 0.1 on a
    premise longer than the first verifier's window, with no check's finding, is replaced by the second
    verifier's (the first read only its best window). The band was chosen on the
    held-out split and the second and third minimal-pair suites (docs/verifier.md) and judged on the
    fourth. ``score`` does this for every pair it is given; the attribution stage scores the pairs it
    tries with :meth:`first_opinion` and asks :meth:`second_opinion` only about the pair each sentence's
    status rests on."""

    def __init__(self, first: Verifier, second: Verifier, band: tuple[float, float] = SECOND_BAND,
                 spec: str | None = None):
        super().__init__(spec=spec or f"{first.spec}+lm", threshold=first.threshold, batch_size=first.batch_size)
        self.first, self.second, self.band = first, second, (float(band[0]), float(band[1]))
        if hasattr(first, "explain"):  # the stage asks a checked verifier what it found (vetoes, conflicts)
            self.explain = first.explain

    def clear_cache(self) -> None:
        super().clear_cache()
        self.first.clear_cache()
        self.second.clear_cache()

    def first_opinion(self, pairs: Sequence[Pair]) -> list[float]:
        """The first verifier's scores alone (the attribution stage scores every pair it tries with
        these, and asks :meth:`second_opinion` only about the pairs that decide a sentence)."""
        return self.first.score(pairs)

    def second_opinion(self, pairs: Sequence[Pair], scores: Sequence[float]) -> dict[int, float]:
        """For the pairs whose first ``scores`` are strictly inside the band: index -> the mean of that score
        and the second verifier's. Below the band, a pair whose premise the first verifier could not read
        whole (longer than its window) and that no structural check capped: index -> the second's score
        alone (:meth:`_unread`)."""
        lo, hi = self.band
        asked = [k for k, v in enumerate(scores) if lo < v < hi]
        alone = self._unread(pairs, scores)
        if not asked and not alone:
            return {}
        second = self.second.score([pairs[k] for k in asked + alone])
        out = {k: float(v) for k, v in zip(alone, second[len(asked):])}
        out.update({k: (float(scores[k]) + v) / 2 for k, v in zip(asked, second)})
        return out

    def _unread(self, pairs: Sequence[Pair], scores: Sequence[float]) -> list[int]:
        """The pairs the first verifier scored at or below the band's floor without reading their premise
        whole (it scores the best-matching window of a long premise; the checker reads a span about twice
        as long) and without a structural check's finding: there the checker's score stands alone. A
        first verifier that cannot tell (no ``premise_cut``) keeps every such score."""
        low = [k for k, v in enumerate(scores) if v <= self.band[0]]
        cut = getattr(self.first, "premise_cut", None)
        if not low or cut is None:
            return []
        explain = getattr(self.first, "explain", None)
        flags = cut([pairs[k] for k in low])
        return [k for k, c in zip(low, flags) if c and not (explain and explain(*pairs[k]))]

    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:
        out = list(self.first_opinion(pairs))
        for k, v in self.second_opinion(pairs, out).items():
            out[k] = v
        return out
