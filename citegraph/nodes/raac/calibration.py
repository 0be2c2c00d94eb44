"""Summary Calibration (parent graph): prepare the documents, assess citation F1, gate, restrict the
documents to D_adp, finalize.

Assessment uses the evaluator's RAAC sentence metric (``citegraph.metrics.raac_citation_f1``),
never a copy. The gate: F1 >= tau ends the run; otherwise the documents are restricted to the union
of the citations in the TextAgent output (D_adp) and TextAgent + CitationAgent run again; the new
answer is accepted only if its F1 is higher, else the previous one is kept and the run stops. At
most ``max_calibration_rounds`` re-runs. Every answer is remapped to the caller's documents before
it is assessed, so citations in the final answer always index the caller's original list.
"""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from citegraph.metrics import raac_citation_f1
from citegraph.state import AttributedAnswer
from citegraph.nodes.raac.citation_agent import raac_verifier
from citegraph.state.raac import CalibrationRecord, RaacContext, RaacState, trace_summary
from citegraph.tools.progress import emit


def citation_f1(answer: AttributedAnswer, verifier: str):
    """RAAC's citation F1 from the evaluator (indirection so tests can substitute it)."""
    return raac_citation_f1(answer, verifier)


def prepare(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Take the top-N ranked documents as D and reset the trace (a thread may be re-invoked)."""
    n = runtime.context.top_docs
    working = list(state.documents[:n] if n and n > 0 else state.documents)
    return {
        "working_documents": working, "doc_map": {i: i for i in range(1, len(working) + 1)},
        "calibration_round": 0, "text_round": 0, "summary": "", "text_stop": "", "draft": None, "cited": None,
        "rounds": [], "validations": [], "discoveries": [], "calibrations": [], "best_answer": None,
        "best_f1": None, "next_documents": [], "answer": None,
    }


def route_text_agent(state: RaacState, runtime: Runtime[RaacContext]) -> Literal["text_agent", "vanilla_generate"]:
    return "text_agent" if runtime.context.use_text_agent else "vanilla_generate"


def route_citation_agent(state: RaacState, runtime: Runtime[RaacContext]) -> Literal["citation_agent", "skip_citation_agent"]:
    return "citation_agent" if runtime.context.use_citation_agent else "skip_citation_agent"


def to_original(answer: AttributedAnswer | None, state: RaacState) -> AttributedAnswer:
    """A working-documents answer with its citations mapped into the caller's documents."""
    if answer is None:
        answer = AttributedAnswer(question=state.question, documents=state.working_documents)
    out = answer.remap(list(state.documents), dict(state.doc_map))
    if any(k != v for k, v in state.doc_map.items()) and out.warnings:
        # parse warnings speak of the working numbering: say which
        where = f"calibration round {state.calibration_round}, numbering of D_adp={sorted(state.doc_map.values())}"
        out.warnings = [f"{w} ({where})" for w in out.warnings]
    return out


def _cited_originals(answer: AttributedAnswer | None, doc_map: dict[int, int]) -> list[int]:
    if answer is None:
        return []
    return sorted({doc_map[c] for c in answer.cited_documents() if c in doc_map})


def assess(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Score this pass's answer, accept or revert it, and decide: finalize or restrict to D_adp."""
    ctx = runtime.context
    r = state.calibration_round
    cand = to_original(state.cited or state.draft, state)
    used = sorted(state.doc_map.values())
    rec = CalibrationRecord(calibration_round=r, documents=used)
    update: dict = {}
    if not ctx.use_calibration:
        rec.decision, rec.next, rec.reason = "disabled", "finalize", "Summary Calibration disabled"
        update.update(best_answer=cand, best_f1=None)
        return {**update, "calibrations": [*state.calibrations, rec], "next_documents": []}

    # the gate decides entailment at the same threshold as the Validator and Discovery
    m = citation_f1(cand, raac_verifier(ctx))
    rec.recall, rec.precision, rec.f1 = float(m.recall), float(m.precision), float(m.f1)
    best, best_f1 = state.best_answer, state.best_f1
    if r == 0 or best is None or best_f1 is None:
        rec.decision = "initial"
        best, best_f1 = cand, rec.f1
    elif rec.f1 > best_f1:
        rec.decision = "accept"
        rec.reason = f"F1 {rec.f1:.3f} > previous {best_f1:.3f}"
        best, best_f1 = cand, rec.f1
    else:
        rec.decision, rec.next = "revert", "finalize"
        rec.reason = f"F1 {rec.f1:.3f} <= previous {best_f1:.3f}: keep the previous summary and stop"
    update.update(best_answer=best, best_f1=best_f1)
    next_docs: list[int] = []
    if rec.decision != "revert":
        if best_f1 >= ctx.tau:
            rec.next, rec.reason = "finalize", (rec.reason + "; " if rec.reason else "") + f"F1 {best_f1:.3f} >= tau {ctx.tau}"
        elif r >= ctx.max_calibration_rounds:
            rec.next = "finalize"
            rec.reason = (rec.reason + "; " if rec.reason else "") + f"M={ctx.max_calibration_rounds} calibration round(s) done"
        else:
            d_adp = _cited_originals(state.draft, state.doc_map)
            source = "TextAgent output"
            if not d_adp:
                d_adp, source = _cited_originals(state.cited, state.doc_map), "CitationAgent output (TextAgent cited none)"
            if not d_adp:
                rec.next, rec.reason = "finalize", "no document is cited: D_adp would be empty"
            elif d_adp == used and not ctx.temperature:
                rec.next, rec.reason = "finalize", "D_adp equals the current documents: a greedy re-run would repeat this one"
            else:
                rec.next = "restrict"
                rec.reason = f"F1 {best_f1:.3f} < tau {ctx.tau}: re-run on D_adp={d_adp} (citations of the {source})"
                next_docs = d_adp
    emit("raac_calibration", calibration_round=r, of=ctx.max_calibration_rounds, f1=rec.f1, decision=rec.decision,
         next=rec.next, reason=rec.reason)
    return {**update, "calibrations": [*state.calibrations, rec], "next_documents": next_docs}


def route_after_assess(state: RaacState) -> Literal["restrict", "finalize"]:
    return "restrict" if state.calibrations and state.calibrations[-1].next == "restrict" else "finalize"


def restrict(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Make D_adp the working documents (renumbered 1..n, mapped back to the caller's indices)."""
    orig = list(state.next_documents)
    return {
        "working_documents": [state.documents[i - 1] for i in orig],
        "doc_map": {j: o for j, o in enumerate(orig, 1)},
        "calibration_round": state.calibration_round + 1,
        "text_round": 0, "summary": "", "text_stop": "", "draft": None, "cited": None, "next_documents": [],
    }


def finalize(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Write the answer (the best accepted one) with a compact summary of the trace in its metadata."""
    ctx = runtime.context
    ans = state.best_answer or to_original(state.cited or state.draft, state)
    accepted = [c.calibration_round for c in state.calibrations if c.decision in ("initial", "accept", "disabled")]
    kept = accepted[-1] if accepted else 0
    meta = dict(ans.metadata)
    meta.update({
        "method": "raac",
        # the final text in the caller's numbering (the TextAgent's own text, in its pass's working
        # numbering, stays in the trace): ALCE-mode scoring reads this
        "raw_output": ans.render(),
        "raac": {
            "citation_f1": state.best_f1,
            "accepted_calibration_round": kept,
            "calibration_rounds_run": state.calibration_round,
            "text_rounds": len(state.rounds),
            "validated_sentences": len(state.validations),
            "discoveries": len(state.discoveries),
            # the counts above span every pass; these are the pass whose answer was kept
            "accepted_pass": {
                "text_rounds": sum(r.calibration_round == kept for r in state.rounds),
                "validated_sentences": sum(v.calibration_round == kept for v in state.validations),
                "discoveries": sum(d.calibration_round == kept for d in state.discoveries),
            },
            "calibration": [c.model_dump() for c in state.calibrations],
            "ablation": {"text_agent": ctx.use_text_agent, "citation_agent": ctx.use_citation_agent,
                         "calibration": ctx.use_calibration},
        },
        "trace": trace_summary(state),
    })
    return {"answer": ans.model_copy(update={"metadata": meta})}
