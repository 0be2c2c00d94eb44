"""Entailment verifier: P(premise entails hypothesis) for attribution checks.

Backends, chosen by ``spec``:

* ``default`` -- our cross-encoder fine-tuned from all-MiniLM-L6-v2 (``citegraph/assets/verifier``,
  see its MODEL_CARD.md); binary head ``{0: not_entailment, 1: entailment}``.
* ``hf-classifier:<id-or-path>`` -- MNLI-style sequence classifiers (2- or 3-way); the entailment
  index is read from ``config.id2label``; a folder with an ``inference.json`` (as
  ``scripts/train_verifier.py`` writes one) keeps its sequence length and window policy.
* ``hf-seq2seq:<id-or-path>`` -- TRUE-style T5: input ``"premise: {p} hypothesis: {h}"``,
  probability = softmax over the logits of the tokens ``"1"`` vs ``"0"`` at the first decoder step.
* ``llm-judge`` / ``llm-judge:<chat spec>`` -- Yes/No judge on a chat model through
  ``citegraph.tools.models.yes_probability(chat_spec, prompt)``. A last segment naming a judge
  prompt picks it: ``llm-judge:<chat spec>:table16`` (or ``llm-judge:table16``, the local model)
  asks RAAC's Table 16 evaluator question (a data annotator: does the passage fully support the
  sentence, "Yes." or "No."), the prompt RAAC's Table 4 reports its citation metrics under;
  ``:ours`` (the default) is our own wording (``JUDGE_PROMPT``).
* ``<any spec above>+checks`` -- that verifier with structural checks (``checks``): a claim that
  negates, flips, renumbers, renames or swaps the roles of what its premise says is capped at 0.1.
* ``lm-check`` -- the first 12 layers of the packaged Qwen2.5 0.5B (its GGUF) with the LoRA adapter and
  head of ``citegraph/assets/verifier_lm`` (``lmcheck``, ``lm``); a few pairs per second on 2 cores.
  ``lm-check:<folder>`` runs another adapter ``scripts/train_lm_checker.py`` wrote.
* ``<any spec above>+lm`` -- that verifier, with ``lm-check``'s second opinion averaged in where its score
  is above 0.1 (a score capped by ``+checks`` at 0.1 stands); ``+lm:<folder>`` with another adapter.

``score`` returns what the model gives. Where ``assets/verifier/calibration.json`` has an entry for the spec
(fitted on held-out development pairs, docs/verifier.md), ``get_verifier`` sets its calibration: ``shown``
is the score a reader is shown (temperature scaling: the same decisions at 0.5, the same order) and
``partial`` the attribution stage's default partial threshold on that scale.

Every backend is batched (pairs sorted by length), cached on ``(premise, hypothesis)`` and counts
what it did in :class:`VerifierStats`. Premises longer than ``max_premise_tokens`` are split into
overlapping token windows and the maximum over windows is returned, so a concatenation of several
documents is not silently truncated.

Everything runs offline: model specs must resolve to local folders (or files already in the local
Hugging Face cache -- ``HF_HUB_OFFLINE=1`` is set before loading).

The package: ``base`` (the protocol: Verifier, VerifierStats, FunctionVerifier), ``hf`` (the two
Hugging Face backends), ``judge`` (the LLM judge; its prompts in ``citegraph.prompts.judge``) and
``checks`` (rule-based conflicts, CheckedVerifier), ``lmcheck``/``lm`` (the language-model checker,
LMCheckVerifier, SecondOpinionVerifier) and ``registry`` (get_verifier, register_verifier, check_verifier_spec, with_threshold). Every public
name is importable from here.
"""

from citegraph.prompts.judge import JUDGE_PROMPT, JUDGE_PROMPTS, TABLE16_PROMPT
from citegraph.tools.verifier.checks import CheckedVerifier, Finding, find_conflicts
from citegraph.tools.verifier.base import DEFAULT_THRESHOLD, FunctionVerifier, Pair, Verifier, VerifierStats
from citegraph.tools.verifier.hf import (
    HFClassifierVerifier,
    HFSeq2SeqVerifier,
    _HFVerifier,
    entailment_index,
    top_windows,
)
from citegraph.tools.verifier.judge import LLMJudgeVerifier, parse_judge_spec
from citegraph.tools.verifier.lm import LM_ASSET_DIR, LMCheckVerifier, SecondOpinionVerifier
from citegraph.tools.verifier.registry import (
    _REGISTRY,
    ASSET_DIR,
    DEFAULT_SETTINGS,
    ThresholdedVerifier,
    check_verifier_spec,
    clear_verifier_cache,
    default_settings,
    get_verifier,
    register_verifier,
    with_threshold,
)

__all__ = [
    "CheckedVerifier",
    "Finding",
    "find_conflicts",
    "ASSET_DIR",
    "DEFAULT_SETTINGS",
    "DEFAULT_THRESHOLD",
    "JUDGE_PROMPT",
    "JUDGE_PROMPTS",
    "TABLE16_PROMPT",
    "FunctionVerifier",
    "HFClassifierVerifier",
    "HFSeq2SeqVerifier",
    "LLMJudgeVerifier",
    "LMCheckVerifier",
    "LM_ASSET_DIR",
    "SecondOpinionVerifier",
    "Pair",
    "ThresholdedVerifier",
    "Verifier",
    "VerifierStats",
    "check_verifier_spec",
    "clear_verifier_cache",
    "default_settings",
    "entailment_index",
    "get_verifier",
    "parse_judge_spec",
    "register_verifier",
    "top_windows",
    "with_threshold",
]
