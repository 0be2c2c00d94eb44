"""TextAgent nodes: initial generation (Table 12), feedback (Table 13), refine (Table 14), and the
selection of the best-scoring summary of all rounds (Algorithm 1's pool + argmax).

A *round* is one summary plus the feedback it received. After round t's feedback the loop stops
when every aspect has the maximum score or t == k; otherwise the summary is refined into round t+1.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from langgraph.runtime import Runtime

from citegraph.nodes.common import answer_from_text
from citegraph.prompts.alce import build_prompt
from citegraph.prompts.raac import (
    ASPECTS, MAX_SCORE, MIN_SCORE, AspectFeedback, FeedbackModel, RefineModel,
    feedback_prompt, generate_prompt, refine_prompt,
)
from citegraph.state.raac import RaacContext, RaacState, TextRound
from citegraph.state.marks import extract_citations, strip_citations
from citegraph.tools.citations import parse_cited_text
from citegraph.tools.loops import cut_phrase_loops, drop_repeats
from citegraph.tools.models import TRUNCATED, chat_reply, chat_text, structured
from citegraph.tools.progress import emit

_LABEL = re.compile(r"^\s*(?:\*\*)?(?:revised\s+summary|summary|answer|revised)(?:\*\*)?\s*:\s*", re.I)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.S)
_CITE = re.compile(r"\[\d+")
#: a reference header copied from the prompt: "[1]: Title<|>" (the paper's format) or "Document [1](Title: t):"
_ECHOED_REF = re.compile(r"^\s*:?\s*(?:\[\d+\]\s*:[^\n]*?<\|>|Document\s*\[\d+\]\s*\(Title:[^)\n]*\)\s*:)\s*")

def clean_summary(text: str, truncated: bool = False, notes: list[str] | None = None) -> str:
    """Strip code fences, a leading 'Summary:' label, wrapping quotes and a JSON wrapper; drop
    looping repeats and, in a reply cut at max_tokens, its unfinished last sentence (see
    :func:`drop_repeats`; what was dropped is appended to ``notes``)."""
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
    echoed = _ECHOED_REF.match(t)
    if echoed and echoed.end() < len(t):
        if notes is not None:
            notes.append(f"stripped a reference header copied from the prompt: {echoed.group(0).strip()[:80]!r}")
        t = t[echoed.end():].strip()
    t = cut_phrase_loops(t, notes)
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
    return drop_repeats(t, truncated, notes)


def _max_words(ctx: RaacContext) -> int | None:
    return ctx.max_doc_words or None


def _this_pass(state: RaacState) -> list[TextRound]:
    return [r for r in state.rounds if r.calibration_round == state.calibration_round]


# --------------------------------------------------------------------------- generate
def generate(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Round 1: the initial attributed summary (Table 12)."""
    ctx = runtime.context
    prompt = generate_prompt(state.question, state.working_documents, _max_words(ctx))
    reply = chat_reply(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
    notes: list[str] = []
    text = clean_summary(reply.text, reply.truncated, notes)
    rnd = TextRound(calibration_round=state.calibration_round, round=1, kind="initial", summary=text, problems=notes)
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
_PLACEHOLDER = re.compile(r"^(?:[\s.…\-–—_*?!]*|n/?a|none|null|suggestion)$", re.IGNORECASE)
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
    """Used when every attempt failed (the feedback node then records no scores and a total of None)."""
    tip = "feedback unavailable (the reviewer's reply could not be parsed)"
    return FeedbackModel(**{a: AspectFeedback(score=MIN_SCORE, suggestion=tip) for a in ASPECTS}, total=None)


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def objective_checks(
    summary: str, n_docs: int, min_words: int = 50, attach_trailing: bool = True,
) -> dict[str, tuple[int, str]]:
    """The measurable part of the rubric, checked without the LLM: ``aspect -> (highest score the
    summary can get, suggestion)`` for each aspect the summary fails.

    * Length: fewer than ``min_words`` words (citations not counted) -> at most 2 (1 below half).
    * Citation Recall: sentences citing no document -> at most 2 (1 when most of them are uncited).
    * Citation Precision: a sentence citing more than 3 documents or an id outside 1..n_docs -> at most 2.
    """
    out: dict[str, tuple[int, str]] = {}
    words = len(strip_citations(summary).split())
    if words < min_words:
        cap = MIN_SCORE if words < min_words / 2 else MAX_SCORE - 1
        out["length"] = (cap, f"The summary has {words} words; write at least {min_words} by adding more specific "
                              "facts from the documents, each sentence with its [id] citation.")
    parsed = parse_cited_text(summary, n_docs=n_docs, attach_trailing=attach_trailing)
    sentences = parsed.sentences
    if sentences:
        uncited = [s.text for s in sentences if not s.citations]
        if uncited:
            cap = MIN_SCORE if len(uncited) * 2 > len(sentences) else MAX_SCORE - 1
            out["citation_recall"] = (cap, f"{len(uncited)} of {len(sentences)} sentence(s) cite no document; add the "
                                           f"[id] of the supporting document(s) to: \"{_clip(uncited[0])}\"")
    over = [s.text for s in sentences if len(s.citations) > 3]
    unknown = sorted({i for i in extract_citations(summary) if not 1 <= i <= n_docs})
    if over or unknown:
        what = []
        if over:
            what.append(f"{len(over)} sentence(s) cite more than 3 documents; keep only the 1-3 that support each")
        if unknown:
            what.append(f"cite only documents 1-{n_docs} (not {', '.join(map(str, unknown))})")
        out["citation_precision"] = (MAX_SCORE - 1, "; ".join(what) + ".")
    return out


def feedback(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Score the current summary on six aspects (Table 13) and decide whether the loop stops.

    With ``objective_checks`` the measurable aspects (length, uncited or over-cited sentences) are
    checked in code and the LLM's score is lowered where it is contradicted (recorded in
    ``TextRound.overruled``), so the loop does not stop on a short or uncited summary because a
    small judge rated it 3 everywhere."""
    ctx = runtime.context
    prompt = feedback_prompt(state.question, state.working_documents, state.summary, _max_words(ctx))
    fb, problems = structured(
        ctx.llm, prompt, FeedbackModel, fallback=fallback_feedback, coerce=coerce_feedback,
        temperature=ctx.temperature, max_tokens=ctx.feedback_max_tokens,
    )
    failed = any("fallback" in p for p in problems)
    # no feedback: an honest empty record (no made-up scores), which never wins the argmax
    scores, suggestions = ({}, {}) if failed else (fb.scores(), fb.suggestions())
    # small judges copy the prompt's example ("...") instead of a suggestion: that is no suggestion
    copied = sorted(a for a, t in suggestions.items() if t and _PLACEHOLDER.match(t.strip()))
    for a in copied:
        suggestions[a] = ""
    if copied:
        problems = [*problems, f"placeholder suggestion(s) dropped: {', '.join(copied)}"]
    overruled: dict[str, str] = {}
    if ctx.objective_checks and not failed:
        for aspect, (cap, tip) in objective_checks(state.summary, len(state.working_documents), ctx.min_words,
                                                      ctx.attach_trailing_citations).items():
            if scores[aspect] > cap:
                overruled[aspect] = f"{scores[aspect]} -> {cap}: {tip}"
                scores[aspect] = cap
                suggestions[aspect] = tip
    rounds = list(state.rounds)
    last = rounds[-1].model_copy(update={
        "scores": scores, "suggestions": suggestions, "total": sum(scores.values()) if scores else None,
        "overruled": overruled,
        "reported_total": fb.total, "problems": [*rounds[-1].problems, *problems],
    })
    rounds[-1] = last
    stop = ""
    if failed:
        stop = "feedback failed"  # nothing to refine from: another round would repeat this one
    elif all(v == MAX_SCORE for v in scores.values()):
        stop = "max score"
    elif state.text_round >= max(1, ctx.k):
        stop = f"k={ctx.k} rounds"
    emit("raac_round", round=state.text_round, of=max(1, ctx.k), calibration_round=state.calibration_round,
         scores=scores, total=last.total, stop=stop or None)
    return {"rounds": rounds, "text_stop": stop}


def route_after_feedback(state: RaacState) -> Literal["refine", "select_best"]:
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
    revised = clean_summary(out.revised, any(p.endswith(TRUNCATED) for p in problems), problems)
    if not revised:
        rounds = list(state.rounds)
        rounds[-1] = last.model_copy(update={"problems": [*last.problems, *problems, "refine: no revised summary"]})
        return {"rounds": rounds, "text_stop": "refine failed"}
    if any(_same(revised, r.summary) for r in _this_pass(state)):
        # a greedy model given the same feedback writes the same text again: its feedback would be
        # the same too, so another round cannot change the pool
        rounds = list(state.rounds)
        rounds[-1] = last.model_copy(update={"problems": [*last.problems, *problems]})
        return {"rounds": rounds, "text_stop": "refine repeated an earlier summary"}
    rnd = TextRound(calibration_round=state.calibration_round, round=state.text_round + 1, kind="refine",
                    summary=revised, problems=problems)
    return {"summary": revised, "text_round": state.text_round + 1, "rounds": [*state.rounds, rnd]}


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


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


def route_after_refine(state: RaacState) -> Literal["feedback", "select_best"]:
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
