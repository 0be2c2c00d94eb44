"""Entailment verifier: P(premise entails hypothesis) for attribution checks.

Backends, chosen by ``spec``:

* ``default`` -- our cross-encoder fine-tuned from all-MiniLM-L6-v2 (``citegraph/assets/verifier``,
  see its MODEL_CARD.md); binary head ``{0: not_entailment, 1: entailment}``.
* ``hf-classifier:<id-or-path>`` -- MNLI-style sequence classifiers (2- or 3-way); the entailment
  index is read from ``config.id2label``.
* ``hf-seq2seq:<id-or-path>`` -- TRUE-style T5: input ``"premise: {p} hypothesis: {h}"``,
  probability = softmax over the logits of the tokens ``"1"`` vs ``"0"`` at the first decoder step.
* ``llm-judge`` / ``llm-judge:<chat spec>`` -- Yes/No judge on a chat model through
  ``citegraph.tools.models.yes_probability(chat_spec, prompt)``. A last segment naming a judge
  prompt picks it: ``llm-judge:<chat spec>:table16`` (or ``llm-judge:table16``, the local model)
  asks RAAC's Table 16 evaluator question (a data annotator: does the passage fully support the
  sentence, "Yes." or "No."), the prompt RAAC's Table 4 reports its citation metrics under;
  ``:ours`` (the default) is our own wording (``JUDGE_PROMPT``).

Every backend is batched (pairs sorted by length), cached on ``(premise, hypothesis)`` and counts
what it did in :class:`VerifierStats`. Premises longer than ``max_premise_tokens`` are split into
overlapping token windows and the maximum over windows is returned, so a concatenation of several
documents is not silently truncated.

Everything runs offline: model specs must resolve to local folders (or files already in the local
Hugging Face cache -- ``HF_HUB_OFFLINE=1`` is set before loading).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from citegraph.errors import ModelError
from citegraph.tools.progress import emit
from citegraph.tools.usage import record_verifier

Pair = tuple[str, str]

ASSET_DIR = Path(__file__).resolve().parent.parent / "assets" / "verifier"
DEFAULT_THRESHOLD = 0.5

__all__ = [
    "VerifierStats",
    "Verifier",
    "FunctionVerifier",
    "HFClassifierVerifier",
    "HFSeq2SeqVerifier",
    "LLMJudgeVerifier",
    "get_verifier",
    "with_threshold",
    "register_verifier",
    "clear_verifier_cache",
    "entailment_index",
]


# --------------------------------------------------------------------------------------------
# Base class
# --------------------------------------------------------------------------------------------
@dataclass
class VerifierStats:
    pairs_scored: int = 0  # pairs actually sent to the backend (cache misses, after dedup)
    cache_hits: int = 0  # pairs answered from the cache (including duplicates inside one call)
    batches: int = 0  # backend batches run
    seconds: float = 0.0  # wall time spent in the backend
    windows_skipped: int = 0  # long premises of which only the max_windows best-overlap windows were scored

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Verifier:
    """Base class. Subclasses implement :meth:`_score_uncached` on de-duplicated pairs."""

    spec: str = "base"

    def __init__(
        self,
        spec: str | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        cache: bool = True,
        batch_size: int = 32,
    ):
        if spec is not None:
            self.spec = spec
        self.threshold = float(threshold)
        self.stats = VerifierStats()
        self.batch_size = int(batch_size)
        self._use_cache = bool(cache)
        self._cache: dict[Pair, float] = {}
        self._lock = threading.RLock()

    # -- to implement -------------------------------------------------------------------------
    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:  # pragma: no cover
        raise NotImplementedError

    # -- public API ---------------------------------------------------------------------------
    # progress: a backend that scores in several batches emits "verifier_batch" after each of them;
    # for the others score() emits one event per call (citegraph.tools.progress)
    _reports_batches = False

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        """Return P(entailed) for each ``(premise, hypothesis)``; repeated pairs are scored once."""
        pairs = [(str(p), str(h)) for p, h in pairs]
        if not pairs:
            return []
        with self._lock:
            todo: list[Pair] = []
            seen: set[Pair] = set()
            for pair in pairs:
                if (self._use_cache and pair in self._cache) or pair in seen:
                    self.stats.cache_hits += 1
                else:
                    seen.add(pair)
                    todo.append(pair)
            # nothing entails a claim from an empty premise (e.g. a claim with no evidence)
            fresh: dict[Pair, float] = {pair: 0.0 for pair in todo if not pair[0].strip()}
            model_todo = [pair for pair in todo if pair not in fresh]
            if model_todo:
                t0 = time.perf_counter()
                scores = self._score_uncached(model_todo)
                self.stats.seconds += time.perf_counter() - t0
                if not self._reports_batches:  # backends that batch internally report each batch themselves
                    emit("verifier_batch", verifier=self.spec, done=len(model_todo), total=len(model_todo))
                if len(scores) != len(model_todo):
                    raise RuntimeError(f"verifier {self.spec!r} returned {len(scores)} scores for {len(model_todo)} pairs")
                fresh.update({pair: float(s) for pair, s in zip(model_todo, scores)})
            self.stats.pairs_scored += len(todo)
            if self._use_cache:
                self._cache.update(fresh)
            record_verifier(len(todo), len(pairs) - len(todo))
            return [fresh[p] if p in fresh else self._cache[p] for p in pairs]

    def entails(self, premise: str, hypothesis: str, threshold: float | None = None) -> bool:
        return self.entails_many([(premise, hypothesis)], threshold)[0]

    def entails_many(self, pairs: Sequence[Pair], threshold: float | None = None) -> list[bool]:
        t = self.threshold if threshold is None else float(threshold)
        return [s >= t for s in self.score(pairs)]

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r}, threshold={self.threshold})"


class FunctionVerifier(Verifier):
    """Wraps ``fn(premise, hypothesis) -> float`` (or a batched ``fn(pairs) -> list``); for stubs."""

    def __init__(self, fn: Callable, spec: str = "function", batched: bool = False, **kw):
        super().__init__(spec=spec, **kw)
        self._fn = fn
        self._batched = batched

    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:
        self.stats.batches += 1
        if self._batched:
            return [float(s) for s in self._fn(list(pairs))]
        return [float(self._fn(p, h)) for p, h in pairs]


# --------------------------------------------------------------------------------------------
# Hugging Face backends
# --------------------------------------------------------------------------------------------
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
        **kw,
    ):
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
        logits = self.model(**enc).logits.float()
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


# --------------------------------------------------------------------------------------------
# LLM judge
# --------------------------------------------------------------------------------------------
JUDGE_PROMPT = (
    "You check whether a claim is fully supported by a source passage.\n\n"
    "Passage:\n{premise}\n\n"
    "Claim: {hypothesis}\n\n"
    "Is every part of the claim supported by the passage alone? Answer Yes or No."
)


# RAAC (Chen et al.), appendix Table 16, "LLM as the evaluator to evaluate citation metrics": the
# same role, task, two choices, output and note, in our words; the premise is the cited documents.
TABLE16_PROMPT = (
    "Role: data annotator.\n"
    "Instructions: you are given the following materials:\n"
    "- Passage: {premise}\n"
    "- Sentence: {hypothesis}\n\n"
    "Task: judge whether the passage fully supports the sentence.\n"
    "Choices:\n"
    "1. Fully supports: choose this when the passage supports every aspect of the sentence completely and clearly.\n"
    "2. Does not fully support: choose this when any discrepancy, omission or inaccuracy in the passage keeps it "
    "from fully supporting the sentence.\n"
    "Output: \"Yes.\" if the passage fully supports the sentence; \"No.\" if it does not.\n"
    "Note: add nothing that these instructions do not ask for."
)

#: judge prompts by the name a spec's last segment gives (``llm-judge:local:table16``)
JUDGE_PROMPTS: dict[str, str] = {"ours": JUDGE_PROMPT, "table16": TABLE16_PROMPT}


def parse_judge_spec(arg: str) -> tuple[str, str]:
    """``"<chat spec>[:<prompt>]"`` (what follows ``llm-judge:``) → ``(chat spec, prompt name)``.
    The prompt name is the last colon segment when it names a judge prompt; the chat spec defaults
    to ``$CITEGRAPH_JUDGE`` (else ``$CITEGRAPH_LLM``, else ``local``): ``"openai:gpt-4o:table16"`` →
    ``("openai:gpt-4o", "table16")``, ``"table16"`` → ``("local", "table16")``, ``"local"`` → ``("local", "ours")``."""
    from citegraph.state.base import default_judge

    head, sep, last = arg.rpartition(":")
    if last in JUDGE_PROMPTS:
        return (head if sep else "") or default_judge(), last
    return arg or default_judge(), "ours"


class LLMJudgeVerifier(Verifier):
    """Yes/No judge: P(Yes) from ``citegraph.tools.models.yes_probability(chat_spec, prompt)``.

    Long premises are split into overlapping character windows (``max_premise_chars``) and the
    maximum over windows is taken, as for the cross-encoders.
    """

    _reports_batches = True

    def __init__(self, spec: str = "llm-judge", chat_spec: str = "local", max_premise_chars: int = 6000,
                 window_overlap_chars: int = 500, prompt: str = JUDGE_PROMPT,
                 yes_probability: Callable[[str, str], float] | None = None, **kw):
        super().__init__(spec=spec, **kw)
        self.chat_spec = chat_spec
        self.max_premise_chars = int(max_premise_chars)
        self.window_overlap_chars = int(window_overlap_chars)
        self.prompt = prompt
        self._yes_probability = yes_probability

    def _yes(self, prompt: str) -> float:
        fn = self._yes_probability
        if fn is None:
            from citegraph.tools.models import yes_probability  # lead engineer's module

            fn = self._yes_probability = yes_probability
        return float(fn(self.chat_spec, prompt))

    def _windows(self, premise: str) -> list[str]:
        n, size = len(premise), self.max_premise_chars
        if n <= size:
            return [premise]
        step = max(size - self.window_overlap_chars, 1)
        return [premise[s: s + size] for s in range(0, n - self.window_overlap_chars, step)]

    def _score_uncached(self, pairs: Sequence[Pair]) -> list[float]:
        # pairs grouped by premise: a local model re-uses the cached passage prefix between claims
        out = [0.0] * len(pairs)
        start = self.stats.batches
        for i in sorted(range(len(pairs)), key=lambda i: pairs[i][0]):
            p, h = pairs[i]
            self.stats.batches += 1
            out[i] = max(self._yes(self.prompt.format(premise=w, hypothesis=h)) for w in self._windows(p))
            emit("verifier_batch", verifier=self.spec, done=self.stats.batches - start, total=len(pairs))
        return out


# --------------------------------------------------------------------------------------------
# Registry / factory
# --------------------------------------------------------------------------------------------
_REGISTRY: dict[str, Verifier] = {}
_INSTANCES: dict[tuple, Verifier] = {}
_FACTORY_LOCK = threading.Lock()

# settings of the bundled model (see citegraph/assets/verifier/MODEL_CARD.md); the training run
# writes its sequence length and inference settings to inference.json beside the weights
DEFAULT_SETTINGS: dict[str, Any] = {"max_length": 256, "batch_size": 32, "window_overlap": 64}


def default_settings() -> dict[str, Any]:
    """DEFAULT_SETTINGS updated by ``assets/verifier/inference.json`` (max_length, quantize, ...)."""
    f = ASSET_DIR / "inference.json"
    extra = json.loads(f.read_text(encoding="utf-8")) if f.exists() else {}
    return {**DEFAULT_SETTINGS, **extra}


class ThresholdedVerifier:
    """A view of a verifier whose ``entails``/``entails_many`` use another threshold (same model,
    same cache, same counters)."""

    def __init__(self, base: Verifier, threshold: float):
        self.base, self.threshold = base, float(threshold)

    def entails_many(self, pairs: Sequence[Pair], threshold: float | None = None) -> list[bool]:
        return self.base.entails_many(pairs, self.threshold if threshold is None else threshold)

    def entails(self, premise: str, hypothesis: str, threshold: float | None = None) -> bool:
        return self.entails_many([(premise, hypothesis)], threshold)[0]

    def __getattr__(self, name: str) -> Any:  # score, stats, spec, ...
        return getattr(self.base, name)


def with_threshold(verifier: Any, threshold: float | None) -> Any:
    """``verifier`` (object or spec) deciding at ``threshold``; unchanged when ``threshold`` is falsy."""
    v = get_verifier(verifier) if isinstance(verifier, str) else verifier
    return ThresholdedVerifier(v, threshold) if threshold else v


def register_verifier(spec: str, verifier: Verifier) -> None:
    """Make ``get_verifier(spec)`` return ``verifier`` (tests register stubs such as ``stub:keyword``)."""
    with _FACTORY_LOCK:
        _REGISTRY[spec] = verifier
        for key in [k for k in _INSTANCES if k[0] == spec]:
            del _INSTANCES[key]


def clear_verifier_cache() -> None:
    """Forget loaded verifiers and registrations (for tests)."""
    with _FACTORY_LOCK:
        _REGISTRY.clear()
        _INSTANCES.clear()


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple, set)):
        return tuple(_freeze(x) for x in v)
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def _build(spec: str, kw: dict[str, Any]) -> Verifier:
    name, _, arg = spec.partition(":")
    if spec == "default":
        if not (ASSET_DIR / "config.json").exists():
            raise _load_error(spec, FileNotFoundError(f"{ASSET_DIR} has no trained model"))
        return HFClassifierVerifier(spec, str(ASSET_DIR), **{**default_settings(), **kw})
    if name == "hf-classifier" and arg:
        return HFClassifierVerifier(spec, arg, **kw)
    if name == "hf-seq2seq" and arg:
        return HFSeq2SeqVerifier(spec, arg, **kw)
    if name == "llm-judge":
        chat_spec, prompt_name = parse_judge_spec(arg)
        kw.setdefault("prompt", JUDGE_PROMPTS[prompt_name])
        return LLMJudgeVerifier(spec, chat_spec=chat_spec, **kw)
    raise ValueError(
        f"unknown verifier spec {spec!r}; use default, hf-classifier:<path>, hf-seq2seq:<path>, "
        "llm-judge[:<chat spec>][:table16] or a registered name"
    )


def check_verifier_spec(spec: str, where: str = "verifier") -> str:
    """``spec`` when it names a verifier :func:`get_verifier` can build (a registered name, ``default``,
    ``hf-classifier:<x>``, ``hf-seq2seq:<x>``, ``llm-judge[...]`` with a valid chat spec), without
    loading it; else a one-line ``InputError`` naming ``where``."""
    from citegraph.errors import InputError
    from citegraph.tools.models import check_chat_spec

    spec = (spec or "default").strip()
    with _FACTORY_LOCK:
        if spec in _REGISTRY:
            return spec
    name, _, arg = spec.partition(":")
    if spec == "default" or (name in ("hf-classifier", "hf-seq2seq") and arg):
        return spec
    if name == "llm-judge":
        check_chat_spec(parse_judge_spec(arg)[0], f"{where} {spec!r}")
        return spec
    raise InputError(f"{where}: unknown verifier spec {spec!r}; use default, hf-classifier:<path>, hf-seq2seq:<path>, "
                     "llm-judge[:<chat spec>][:table16] or a registered name")


def get_verifier(spec: str = "default", **kw) -> Verifier:
    """The verifier for ``spec``, created once per ``(spec, kw)`` in this process."""
    spec = (spec or "default").strip()
    with _FACTORY_LOCK:
        if spec in _REGISTRY:
            return _REGISTRY[spec]
        key = (spec, _freeze(kw))
        v = _INSTANCES.get(key)
        if v is None:
            v = _INSTANCES[key] = _build(spec, dict(kw))
        return v
