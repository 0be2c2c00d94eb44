"""TextAgent nodes: initial generation (Table 12), feedback (Table 13), refine (Table 14), and the
selection of the best-scoring summary of all rounds (Algorithm 1's pool + argmax).

A *round* is one summary plus the feedback it received. After round t's feedback the loop stops
when every aspect has the maximum score or t == k; otherwise the summary is refined into round t+1.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langgraph.runtime import Runtime

from citegraph.nodes.common import answer_from_text
from citegraph.prompts.alce import build_prompt
from citegraph.prompts.raac import feedback_prompt, generate_prompt, refine_prompt
from citegraph.state.raac import (
    ASPECTS, MIN_SCORE, AspectFeedback, FeedbackModel, RaacContext, RaacState, RefineModel, TextRound,
)
from citegraph.tools.models import chat_text, structured

_LABEL = re.compile(r"^\s*(?:\*\*)?(?:revised\s+summary|summary|answer|revised)(?:\*\*)?\s*:\s*", re.I)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.S)
_CITE = re.compile(r"\[\d+")


def clean_summary(text: str) -> str:
    """Strip code fences, a leading 'Summary:' label, wrapping quotes and a JSON wrapper."""
    t = (text or "").strip()
    m = _FENCE.match(t)
    if m:
        t = m.group(1).strip()
    if t.startswith("{") and t.endswith("}"):
        try:
            obj = json.loads(t)
            if isinstance(obj, dict):
                for key in ("summary", "revised", "answer", "text"):
                    if isinstance(obj.get(key), str):
                        t = obj[key].strip()
                        break
        except json.JSONDecodeError:
            pass
    t = _LABEL.sub("", t, count=1).strip()
    lines = t.splitlines()
    # chatty wrappers: "Here is the revised summary:" before, "Note: ..." after (no citations in them)
    if len(lines) > 1 and lines[0].rstrip().endswith(":") and not _CITE.search(lines[0]):
        lines = lines[1:]
    while len(lines) > 1 and re.match(r"\s*(\*\*)?(note|explanation|changes made)\b", lines[-1], re.I) \
            and not _CITE.search(lines[-1]):
        lines = lines[:-1]
    t = "\n".join(lines).strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
    return t


def _max_words(ctx: RaacContext) -> int | None:
    return ctx.max_doc_words or None


def _this_pass(state: RaacState) -> list[TextRound]:
    return [r for r in state.rounds if r.calibration_round == state.calibration_round]


# --------------------------------------------------------------------------- generate
def generate(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Round 1: the initial attributed summary (Table 12)."""
    ctx = runtime.context
    prompt = generate_prompt(state.question, state.working_documents, _max_words(ctx))
    text = clean_summary(chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens))
    rnd = TextRound(calibration_round=state.calibration_round, round=1, kind="initial", summary=text)
    return {"summary": text, "text_round": 1, "text_stop": "", "rounds": [*state.rounds, rnd]}


def vanilla_generate(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Ablation 'w/o TextAgent': a single VANILLA generation (same prompt and one-shot demo as the vanilla graph)."""
    ctx = runtime.context
    prompt = build_prompt(state.question, state.working_documents, ndemo=1, max_doc_words=_max_words(ctx))
    text = chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens).strip()
    rnd = TextRound(calibration_round=state.calibration_round, round=1, kind="vanilla", summary=text)
    draft = answer_from_text(text, state.question, state.working_documents, method="raac",
                             attach_trailing=ctx.attach_trailing_citations)
    return {"summary": text, "text_round": 1, "text_stop": "text agent disabled", "rounds": [*state.rounds, rnd],
            "draft": draft}


# --------------------------------------------------------------------------- feedback
_ALIASES = {
    "recall": "citation_recall", "citationrecall": "citation_recall", "citation_recal": "citation_recall",
    "precision": "citation_precision", "citationprecision": "citation_precision",
    "total_score": "total", "overall": "total", "sum": "total", "overall_score": "total",
}
_SCORE_KEYS = ("score", "rating", "value", "grade", "points")
_TIP_KEYS = ("suggestion", "suggestions", "feedback", "comment", "comments", "advice", "improvement", "reason")


def _norm(key: Any) -> str:
    k = re.sub(r"[^a-z]+", "_", str(key).lower()).strip("_")
    return _ALIASES.get(k, k)


def coerce_feedback(data: Any) -> Any:
    """Repair common shapes of a feedback reply before validation: capitalised or spaced aspect
    names, a wrapper object, bare scores, ``<aspect>_score`` / ``<aspect>_suggestion`` flat keys,
    ``[score, suggestion]`` pairs and alternative inner key names."""
    if isinstance(data, list):
        merged: dict = {}
        for part in data:
            if isinstance(part, dict):
                if "aspect" in part:
                    merged[part["aspect"]] = part
                else:
                    merged.update(part)
        data = merged
    if not isinstance(data, dict):
        return data
    top = {_norm(k): v for k, v in data.items()}
    if not any(a in top for a in ASPECTS):
        for v in top.values():
            if isinstance(v, dict) and any(_norm(k) in ASPECTS for k in v):
                top = {**top, **{_norm(k): x for k, x in v.items()}}
                break
    out: dict[str, Any] = {}
    flat_scores: dict[str, Any] = {}
    flat_tips: dict[str, Any] = {}
    for k, v in top.items():
        for suffix, bucket in (("_score", flat_scores), ("_suggestion", flat_tips), ("_feedback", flat_tips)):
            if k.endswith(suffix) and _norm(k[: -len(suffix)]) in ASPECTS:
                bucket[_norm(k[: -len(suffix)])] = v
                break
        else:
            out[k] = v
    for a in ASPECTS:
        v = out.get(a, flat_scores.get(a))
        if isinstance(v, dict):
            inner = {_norm(k): x for k, x in v.items()}
            score = next((inner[k] for k in _SCORE_KEYS if k in inner), None)
            tip = next((inner[k] for k in _TIP_KEYS if k in inner), flat_tips.get(a, ""))
            if isinstance(tip, list):
                tip = " ".join(map(str, tip))
            out[a] = {"score": score, "suggestion": tip}
        elif isinstance(v, (list, tuple)) and v:
            out[a] = {"score": v[0], "suggestion": " ".join(map(str, v[1:]))}
        elif v is not None:
            out[a] = {"score": v, "suggestion": flat_tips.get(a, "")}
        if a in out and (not isinstance(out[a], dict) or out[a].get("score") is None):
            out.pop(a)  # nothing to score (e.g. "length": null): let validation ask again
    return out


def fallback_feedback() -> FeedbackModel:
    """Used when every attempt failed: minimum scores, so this round never wins the argmax."""
    tip = "feedback unavailable (the reviewer's reply could not be parsed)"
    return FeedbackModel(**{a: AspectFeedback(score=MIN_SCORE, suggestion=tip) for a in ASPECTS}, total=None)


def feedback(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Score the current summary on six aspects (Table 13) and decide whether the loop stops."""
    ctx = runtime.context
    prompt = feedback_prompt(state.question, state.working_documents, state.summary, _max_words(ctx))
    fb, problems = structured(
        ctx.llm, prompt, FeedbackModel, fallback=fallback_feedback, coerce=coerce_feedback,
        temperature=ctx.temperature, max_tokens=ctx.feedback_max_tokens,
    )
    rounds = list(state.rounds)
    last = rounds[-1].model_copy(update={
        "scores": fb.scores(), "suggestions": fb.suggestions(), "total": fb.computed_total(),
        "reported_total": fb.total, "problems": [*rounds[-1].problems, *problems],
    })
    rounds[-1] = last
    stop = ""
    if any("fallback" in p for p in problems):
        stop = "feedback failed"  # nothing to refine from: another round would repeat this one
    elif fb.all_max():
        stop = "max score"
    elif state.text_round >= max(1, ctx.k):
        stop = f"k={ctx.k} rounds"
    return {"rounds": rounds, "text_stop": stop}


def route_after_feedback(state: RaacState) -> str:
    return "select_best" if state.text_stop else "refine"


# --------------------------------------------------------------------------- refine
def refine(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Rewrite the summary from the aspect suggestions (Table 14); a failed rewrite ends the loop."""
    ctx = runtime.context
    last = state.rounds[-1]
    prompt = refine_prompt(state.question, state.working_documents, state.summary, last.scores, last.suggestions,
                           _max_words(ctx))
    out, problems = structured(ctx.llm, prompt, RefineModel, fallback=lambda: RefineModel(revised=""),
                               coerce=coerce_refine, coerce_text=refine_from_text,
                               temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
    revised = clean_summary(out.revised)
    if not revised:
        rounds = list(state.rounds)
        rounds[-1] = last.model_copy(update={"problems": [*last.problems, *problems, "refine: no revised summary"]})
        return {"rounds": rounds, "text_stop": "refine failed"}
    rnd = TextRound(calibration_round=state.calibration_round, round=state.text_round + 1, kind="refine",
                    summary=revised, problems=problems)
    return {"summary": revised, "text_round": state.text_round + 1, "rounds": [*state.rounds, rnd]}


def coerce_refine(data: Any) -> Any:
    """``{"summary": ...}``, ``{"revised_summary": ...}`` or a bare string → ``{"revised": ...}``."""
    if isinstance(data, str):
        return {"revised": data}
    if isinstance(data, dict) and not isinstance(data.get("revised"), str):
        for key in ("revised_summary", "summary", "revision", "answer", "text"):
            if isinstance(data.get(key), str):
                return {"revised": data[key]}
    return data


def refine_from_text(text: str) -> dict | None:
    """A refine reply written as plain text: keep it if it reads like a cited summary."""
    t = clean_summary(text)
    if len(t.split()) >= 8 and _CITE.search(t):
        return {"revised": t}
    return None


def route_after_refine(state: RaacState) -> str:
    return "select_best" if state.text_stop else "feedback"


# --------------------------------------------------------------------------- select
def best_round(rounds: list[TextRound]) -> TextRound | None:
    """Argmax of the total over the pool; ties go to the earliest round."""
    best: TextRound | None = None
    for r in rounds:
        score = -1 if r.total is None else r.total
        if best is None or score > (-1 if best.total is None else best.total):
            best = r
    return best


def select_best(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Return the best-scoring summary of all rounds of this pass, parsed into the answer contract."""
    best = best_round(_this_pass(state))
    text = best.summary if best else state.summary
    draft = answer_from_text(
        text, state.question, state.working_documents, method="raac",
        attach_trailing=runtime.context.attach_trailing_citations,
        text_agent={"best_round": best.round if best else None, "best_total": best.total if best else None,
                    "rounds": len(_this_pass(state)), "stop": state.text_stop},
    )
    return {"summary": text, "draft": draft}
