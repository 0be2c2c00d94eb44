"""RAAC (Reflective Agents with Adaptive Collaboration): Context knobs and the traced state.

The parent graph keeps the whole trace in :class:`RaacState` so LangGraph Studio shows every
TextAgent round (summary, feedback scores, total), every Validator check, every Discovery decision
and every Summary-Calibration decision. Trace lists are replaced (never reduced) by the nodes,
because the TextAgent and CitationAgent subgraphs share this schema and return the full state.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from citegraph.state.answer import AttributedAnswer, Document
from citegraph.state.attribution import SubsetCheck
from citegraph.state.base import BaseContext, InputState, OutputState, RunContextState, context_dataclass, knob

@context_dataclass
class RaacContext(BaseContext):
    """Knobs of RAAC (defaults follow the paper: k=5, tau=0.8, M=1, top-5 documents)."""

    top_docs: int = knob(5, "Use the first N ranked documents (0 = all).")
    k: int = knob(5, "TextAgent: at most k rounds (one summary + its feedback each); stops early when every aspect scores 3.", ge=1)
    tau: float = knob(0.8, "Summary Calibration gate: citation F1 >= tau ends the run.", ge=0.0, le=1.0)
    max_calibration_rounds: int = knob(1, "Summary Calibration: at most M re-runs on the adapted documents D_adp (the paper's Table 7: M = 1 on ASQA, 2 on ELI5; `--preset eli5` sets 2).")
    use_text_agent: bool = knob(True, "Ablation 'w/o TextAgent' when false: a single VANILLA (ALCE) generation instead.")
    use_citation_agent: bool = knob(True, "Ablation 'w/o CitationAgent' when false: keep the TextAgent's citations as written.")
    use_calibration: bool = knob(True, "Ablation 'w/o SC' when false: no F1 assessment and no re-run on D_adp.")
    verify_discovered: bool = knob(True, "Discovery: keep citations proposed by the LLM only if the verifier says they entail the sentence.")
    discovery_joint: bool = knob(True, "Discovery (with verify_discovered): when no subset of the LLM's proposal entails the sentence, also check the proposal plus one more of the candidates shown (a sentence joining two facts needs two documents; a small LLM often proposes one). Off = the paper's Discovery.")
    discovery_top_n: int = knob(3, "Discovery: how many documents (ranked by embedding similarity) the LLM may choose from.", ge=1)
    embedding: str = knob("minilm", "Embedding spec used to rank documents for Discovery (citegraph.tools.embeddings).")
    verifier_threshold: float = knob(0.0, "Entailment threshold for Validator/Discovery (0 = the verifier's own threshold).", ge=0.0, le=1.0)
    objective_checks: bool = knob(True, "Feedback: overrule the LLM on the measurable aspects -- Length capped below min_words, Citation Recall when a sentence cites nothing, Citation Precision when a sentence cites more than 3 or unknown ids -- with a concrete suggestion (small judges rate everything 3).")
    min_words: int = knob(50, "Length aspect: the summary should have at least this many words (the paper's 50).")
    feedback_max_tokens: int = knob(512, "Maximum tokens of one feedback (JSON with six aspects) reply.", ge=1)
    max_doc_words: int = knob(0, "Truncate each document to this many words in prompts (0 = no limit).")
    attach_trailing_citations: bool = knob(True, "A citation after the period belongs to the sentence before it.")


# --------------------------------------------------------------------------- trace records
class TextRound(BaseModel):
    """One TextAgent round: a summary and the feedback it received (the summary's [n] are in the
    working numbering of its ``calibration_round``; see :class:`ValidationRecord`)."""

    calibration_round: int = 0
    round: int = Field(description="1-based round within this TextAgent run.")
    kind: str = Field(default="initial", description="initial | refine | vanilla")
    summary: str = ""
    scores: dict[str, int] = Field(default_factory=dict)
    suggestions: dict[str, str] = Field(default_factory=dict)
    total: int | None = Field(default=None, description="Sum of the six aspect scores (max 18).")
    reported_total: int | None = Field(default=None, description="The total the LLM wrote.")
    problems: list[str] = Field(default_factory=list, description="Parse problems (repairs, retries, fallbacks).")
    overruled: dict[str, str] = Field(
        default_factory=dict, description="aspect -> why the objective check lowered the LLM's score (score before -> after)."
    )


class ValidationRecord(BaseModel):
    """Validator + Simplifier for one sentence.

    Indices are into the working documents of its ``calibration_round``: 1..5 of D in round 0,
    1..n of D_adp after a restriction (that round's ``CalibrationRecord.documents`` maps them to the
    caller's indices)."""

    calibration_round: int = 0
    sentence: int
    text: str
    citations: list[int] = Field(default_factory=list, description="Citations as written (at most 3 checked).")
    checks: list[SubsetCheck] = Field(default_factory=list)
    kept: list[int] = Field(default_factory=list, description="Minimum entailing subset (empty when none entails).")
    note: str = ""


class DiscoveryRecord(BaseModel):
    """Discovery for one uncited sentence (indices numbered as in :class:`ValidationRecord`)."""

    calibration_round: int = 0
    sentence: int
    text: str
    candidates: list[int] = Field(default_factory=list)
    similarities: list[float] = Field(default_factory=list)
    proposed: list[int] = Field(default_factory=list)
    rejected: dict[str, str] = Field(default_factory=dict, description="id -> reason")
    verified: bool | None = Field(default=None, description="Some subset of the proposal entails (None: not verified).")
    verifier_score: float | None = Field(default=None, description="Verifier score of the whole proposal.")
    checks: list[SubsetCheck] = Field(default_factory=list, description="Every subset of the proposal, as the Validator checks.")
    joint_checks: list[SubsetCheck] = Field(default_factory=list, description="discovery_joint: the proposal plus one more candidate, checked when no subset of the proposal entails.")
    kept: list[int] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


class CalibrationRecord(BaseModel):
    """One Summary-Calibration assessment and the gate's decision."""

    calibration_round: int
    documents: list[int] = Field(default_factory=list, description="Original 1-based indices of the documents used.")
    recall: float | None = None
    precision: float | None = None
    f1: float | None = None
    decision: str = Field(default="", description="initial | accept | revert | disabled")
    next: str = Field(default="", description="finalize | restrict")
    reason: str = ""


class RaacState(InputState, OutputState, RunContextState):
    """RAAC's working state and full trace."""

    # working documents (D, then D_adp) and the map back to the caller's documents
    working_documents: list[Document] = Field(default_factory=list)
    doc_map: dict[int, int] = Field(default_factory=dict, description="working 1-based index -> caller's 1-based index")
    calibration_round: int = 0
    # TextAgent
    text_round: int = 0
    summary: str = Field(default="", description="The current TextAgent summary (cited as [id]).")
    text_stop: str = Field(default="", description="Why the TextAgent loop stopped.")
    rounds: list[TextRound] = Field(default_factory=list)
    draft: AttributedAnswer | None = Field(default=None, description="TextAgent output (working documents).")
    # CitationAgent
    cited: AttributedAnswer | None = Field(default=None, description="CitationAgent output (working documents).")
    validations: list[ValidationRecord] = Field(default_factory=list)
    discoveries: list[DiscoveryRecord] = Field(default_factory=list)
    # Summary Calibration
    best_answer: AttributedAnswer | None = Field(default=None, description="Best answer so far (caller's documents).")
    best_f1: float | None = None
    next_documents: list[int] = Field(default_factory=list, description="D_adp as caller's 1-based indices.")
    calibrations: list[CalibrationRecord] = Field(default_factory=list)


def trace_summary(state: RaacState) -> dict[str, Any]:
    """A compact, JSON-able digest of the trace for ``answer.metadata["trace"]`` (what ``citegraph
    show`` renders without re-running): every TextAgent round's per-aspect scores and total, the
    Validator's kept/dropped citations, Discovery's decisions and each calibration decision. Texts
    (summaries, suggestions) stay in the full state; indices are in each pass's working numbering,
    mapped back to the caller's documents by that pass's ``calibrations[i].documents``."""
    return {
        "method": "raac",
        "rounds": [
            {"pass": r.calibration_round, "round": r.round, "kind": r.kind, "scores": dict(r.scores),
             "total": r.total, "overruled": sorted(r.overruled)}
            for r in state.rounds
        ],
        "text_stop": state.text_stop,
        "validations": [
            {"pass": v.calibration_round, "sentence": v.sentence, "cited": list(v.citations), "kept": list(v.kept),
             "dropped": [c for c in v.citations if c not in v.kept]}
            for v in state.validations
        ],
        "discoveries": [
            {"pass": d.calibration_round, "sentence": d.sentence, "proposed": list(d.proposed), "kept": list(d.kept),
             "verified": d.verified}
            for d in state.discoveries
        ],
        "calibrations": [
            {"pass": c.calibration_round, "documents": list(c.documents),
             "f1": None if c.f1 is None else round(c.f1, 4), "decision": c.decision, "next": c.next,
             "reason": c.reason}
            for c in state.calibrations
        ],
    }
