"""Verifier registry and factory: :func:`get_verifier` builds a backend from its spec once per
``(spec, kw)`` in this process; :func:`register_verifier` makes a name return a given object (test
stubs); :func:`check_verifier_spec` validates a spec without loading it; :func:`with_threshold`
is a view deciding at another threshold."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Sequence

from citegraph.errors import InputError
from citegraph.tools.models import check_chat_spec
from citegraph.tools.verifier.base import Pair, Verifier
from citegraph.tools.verifier.checks import CheckedVerifier
from citegraph.tools.verifier.hf import HFClassifierVerifier, HFSeq2SeqVerifier, _load_error
from citegraph.tools.verifier.judge import LLMJudgeVerifier, parse_judge_spec
from citegraph.tools.verifier.lm import LMCheckVerifier, SecondOpinionVerifier
from citegraph.prompts.judge import JUDGE_PROMPTS

ASSET_DIR = Path(__file__).resolve().parents[2] / "assets" / "verifier"

_REGISTRY: dict[str, Verifier] = {}
_INSTANCES: dict[tuple, Verifier] = {}
_FACTORY_LOCK = threading.RLock()  # re-entrant: a "+checks" spec builds its base inside

# settings of the bundled model (see citegraph/assets/verifier/MODEL_CARD.md); the training run
# writes its sequence length and inference settings to inference.json beside the weights
DEFAULT_SETTINGS: dict[str, Any] = {"max_length": 256, "batch_size": 32, "window_overlap": 64}


def default_settings() -> dict[str, Any]:
    """DEFAULT_SETTINGS updated by ``assets/verifier/inference.json`` (max_length, quantize, ...)."""
    return {**DEFAULT_SETTINGS, **folder_settings(ASSET_DIR)}


CALIBRATION_FILE = ASSET_DIR / "calibration.json"


def calibrations() -> dict[str, dict]:
    """The shipped calibrations, by spec (``assets/verifier/calibration.json``: a temperature for the score
    shown and the stage's partial threshold, chosen on held-out development pairs by
    ``benchmarks/bench_verifier.py --calibrate``; docs/verifier.md)."""
    if not CALIBRATION_FILE.is_file():
        return {}
    return {k: v for k, v in json.loads(CALIBRATION_FILE.read_text(encoding="utf-8")).items() if not k.startswith("_")}


def folder_settings(folder: str | Path) -> dict[str, Any]:
    """The inference settings a trained model folder carries (``inference.json``: the sequence length
    it was trained at, its window policy), or none."""
    f = Path(folder).expanduser() / "inference.json"
    return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}


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


CHECKS_SUFFIX = "+checks"
LM_SUFFIX = "+lm"
SPECS_HELP = ("use default, lm-check[:<adapter folder>], hf-classifier:<path>, hf-seq2seq:<path>, llm-judge[:<chat spec>][:table16] "
              "or a registered name, each optionally followed by +checks, then +lm[:<adapter folder>]")


def _split_lm(spec: str) -> tuple[str, str] | None:
    """``<first>+lm`` -> (first, "lm-check"); ``<first>+lm:<folder>`` -> (first, "lm-check:<folder>")."""
    head, sep, tail = spec.rpartition(LM_SUFFIX)
    if sep and head and (not tail or tail.startswith(":")):
        return head, "lm-check" + tail
    return None


def _build(spec: str, kw: dict[str, Any]) -> Verifier:
    if (lm := _split_lm(spec)) is not None:
        # the language-model checker as a second opinion inside the first verifier's band (lm.py)
        return SecondOpinionVerifier(get_verifier(lm[0], **kw), get_verifier(lm[1]), spec=spec)
    if spec == "lm-check":
        return LMCheckVerifier(spec, **kw)
    if spec.startswith("lm-check:") and len(spec) > len("lm-check:"):  # an adapter folder of train_lm_checker.py
        return LMCheckVerifier(spec, folder=spec.partition(":")[2], **kw)
    if spec.endswith(CHECKS_SUFFIX) and len(spec) > len(CHECKS_SUFFIX):
        # structural checks over another verifier (citegraph.tools.verifier.checks); knobs go to the base
        return CheckedVerifier(get_verifier(spec[: -len(CHECKS_SUFFIX)], **kw))
    name, _, arg = spec.partition(":")
    if spec == "default":
        if not (ASSET_DIR / "config.json").exists():
            raise _load_error(spec, FileNotFoundError(f"{ASSET_DIR} has no trained model"))
        return HFClassifierVerifier(spec, str(ASSET_DIR), **{**default_settings(), **kw})
    if name == "hf-classifier" and arg:  # a folder written by scripts/train_verifier.py keeps its settings
        return HFClassifierVerifier(spec, arg, **{**folder_settings(arg), **kw})
    if name == "hf-seq2seq" and arg:
        return HFSeq2SeqVerifier(spec, arg, **kw)
    if name == "llm-judge":
        chat_spec, prompt_name = parse_judge_spec(arg)
        kw.setdefault("prompt", JUDGE_PROMPTS[prompt_name])
        return LLMJudgeVerifier(spec, chat_spec=chat_spec, **kw)
    raise ValueError(f"unknown verifier spec {spec!r}; {SPECS_HELP}")


def check_verifier_spec(spec: str, where: str = "verifier") -> str:
    """``spec`` when it names a verifier :func:`get_verifier` can build (a registered name, ``default``,
    ``hf-classifier:<x>``, ``hf-seq2seq:<x>``, ``llm-judge[...]`` with a valid chat spec), without
    loading it; else a one-line ``InputError`` naming ``where``."""
    spec = (spec or "default").strip()
    with _FACTORY_LOCK:
        if spec in _REGISTRY:
            return spec
    if (lm := _split_lm(spec)) is not None:
        check_verifier_spec(lm[0], where)
        check_verifier_spec(lm[1], where)
        return spec
    if spec.endswith(CHECKS_SUFFIX) and len(spec) > len(CHECKS_SUFFIX):
        check_verifier_spec(spec[: -len(CHECKS_SUFFIX)], where)
        return spec
    name, _, arg = spec.partition(":")
    if spec in ("default", "lm-check") or (name in ("hf-classifier", "hf-seq2seq", "lm-check") and arg):
        return spec
    if name == "llm-judge":
        check_chat_spec(parse_judge_spec(arg)[0], f"{where} {spec!r}")
        return spec
    raise InputError(f"{where}: unknown verifier spec {spec!r}; {SPECS_HELP}")


def get_verifier(spec: str = "default", **kw) -> Verifier:
    """The verifier for ``spec``, created once per ``(spec, kw)`` in this process."""
    spec = (spec or "default").strip()
    with _FACTORY_LOCK:
        if spec in _REGISTRY:
            return _REGISTRY[spec]
        key = (spec, _freeze(kw))
        v = _INSTANCES.get(key)
        if v is None:
            v = _build(spec, dict(kw))
            cal = calibrations().get(spec)
            if cal:  # the same scores; the figure shown and the stage's partial threshold as calibrated
                v.set_calibration(cal)
            _INSTANCES[key] = v
        return v
