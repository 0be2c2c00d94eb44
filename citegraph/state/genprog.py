"""GenerationPrograms (Wan et al., 2025): Context knobs and working state, including the full trace
(source sentences, program text, parsed trees, typed parse errors, every module execution)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field

from citegraph.state.base import AttributionMode, BaseContext, InputState, OutputState, RunContextState, RunRecord, attribution_knob, context_dataclass, knob
from citegraph.state.program import FusionCap, ProgramError, ProgramTree


QfsMode = Literal["none", "extractive", "abstractive", "extract_then_generate"]
QFS_MODES = get_args(QfsMode)


@context_dataclass
class GenProgContext(BaseContext):
    """Knobs of GenerationPrograms."""

    max_new_tokens: int = knob(400, "Maximum tokens per LLM call (planner, modules, pre-steps).", ge=1)
    relevance_filter: bool = knob(False, "Pre-step: ask the LLM whether each document is relevant; drop irrelevant ones (all kept if none is relevant).")
    qfs_mode: QfsMode = knob("none", "Pre-step per document: none | extractive | abstractive | extract_then_generate (query-focused summarization, paper Fig. 8).")
    qfs_sentences: int = knob(3, "QFS pre-step: the n of Figure 8: sentences the extractive step copies, or the summary's sentences (abstractive, extract-then-generate), per document.", ge=1)
    max_source_sentences: int = knob(0, "Keep at most this many source sentences in the planner prompt, ranked by word overlap with the question (and answer, post-hoc); ids stay the original ones. 0 = all.")
    refine: bool = knob(False, "Module-level refinement: check each module output against its inputs with the verifier; resample non-entailed ones.")
    max_candidates: int = knob(5, "Refinement: at most this many candidates per module output (the original counts as the first).", ge=1)
    refine_temperature: float = knob(1.0, "Refinement: sampling temperature of the resampled candidates.", ge=0.0)
    entailment_threshold: float = knob(0.5, "Refinement: P(entailed) needed to accept a module output.", ge=0.0, le=1.0)
    review_program: bool = knob(False, "Human review: interrupt() after planning with the parsed program; resume with edited program text, or 'accept' to keep it. Needs a checkpointer.")
    plan_attempts: int = knob(2, "Planner calls allowed until at least one valid program line is parsed.", ge=1)
    max_answer_sentences: int = knob(5, "Planner: at most this many bullets (answer sentences); the prompt says so and valid trees beyond it are dropped with a recorded 'truncated' error (counted before fusion_cap splits a bullet). Small models otherwise tend to extract() every source sentence. 0 = no limit (the paper's prompt).")
    module_with_question: bool = knob(False, "Show the question to the paraphrase/compression/fusion modules.")
    max_fusion_inputs: int = knob(3, "Cap on a fusion's inputs (0 = no cap, the paper's programs). The planner prompt states it, and a program that exceeds it is changed as fusion_cap says, each change recorded in program_errors (answer warnings, trace). 3 because the papers' prompts cite at most three documents per sentence (ALCE, RAAC Table 12) and the paper's example programs fuse two; on ASQA the embedded model fused ~3.4 documents' sentences into one ~70-word sentence.")
    fusion_cap: FusionCap = knob("split", "What max_fusion_inputs does to a larger fusion: split = a bullet whose root is the fusion becomes several bullets of at most max_fusion_inputs inputs each, in order, each without the planner's instruction= (written for all the inputs, it would make every piece state the whole claim under the citations of its part; named in the recorded error; no input is lost; a nested fusion, which cannot be split, is cut); cut = keep only its first max_fusion_inputs inputs.")


class SourceSentence(BaseModel):
    """A sentence the planner may reference by ``sid``.

    Verbatim source sentences carry their own id in ``origins``; sentences written by an abstractive
    pre-step are not verbatim and point to the verbatim sentences they were generated from (possibly
    none, then only their document is cited)."""

    sid: str
    doc: int = Field(description="1-based index into the caller's documents.")
    text: str
    verbatim: bool = True
    origins: list[str] = Field(default_factory=list)


class ModuleExecution(BaseModel):
    """One executed module call (the trace that makes the attribution inspectable)."""

    tree: int = Field(description="Index of the tree (answer sentence) in the parsed program.")
    path: str = Field(description="Position in the tree, '0' is the root, '0.1' its second argument.")
    fn: str
    instruction: str | None = None
    inputs: list[str] = Field(default_factory=list)
    leaves: list[str] = Field(default_factory=list, description="Source-sentence ids below this call.")
    output: str = ""
    candidates: list[str] = Field(default_factory=list, description="All candidates tried (refinement).")
    entailed_before: bool | None = Field(default=None, description="Was the first output entailed by the inputs (refinement only).")
    entailed_after: bool | None = Field(default=None, description="Is the kept output entailed by the inputs (refinement only).")
    score_before: float | None = None
    score_after: float | None = None
    fallback: str | None = Field(default=None, description="Why the output is not the LLM's (empty output → input kept).")


class TreeResult(BaseModel):
    tree: int
    line: int
    output: str
    leaves: list[str]


class TreeTask(RunRecord):
    """Payload of one Send: execute one tree."""

    tree: int
    program_tree: ProgramTree
    question: str = ""
    sources: dict[str, str] = Field(default_factory=dict)


class GenProgState(InputState, OutputState, RunContextState):
    """Working state of GenerationPrograms."""

    sources: list[SourceSentence] = Field(default_factory=list, description="Source sentences with global ids S1..Sn.")
    dropped_documents: list[int] = Field(default_factory=list, description="Documents the relevance filter removed (1-based).")
    prestep_notes: list[str] = Field(default_factory=list, description="What the pre-steps did (and what they rejected).")
    passages: str = Field(default="", description="The 'Passage i:' blocks shown to the planner.")
    program_prompt: str = ""
    program_text: str = Field(default="", description="The program as the planner wrote it (or as the reviewer edited it).")
    plan_attempts: int = 0
    trees: list[ProgramTree] = Field(default_factory=list, description="Parsed, validated program trees.")
    program_errors: list[ProgramError] = Field(default_factory=list, description="Typed errors of dropped program lines.")
    reviewed: bool = False
    executions: Annotated[list[ModuleExecution], operator.add] = Field(default_factory=list)
    results: Annotated[list[TreeResult], operator.add] = Field(default_factory=list)
    entailment_rate_before: float | None = None
    entailment_rate_after: float | None = None


class GenProgPosthocInput(InputState):
    """Post-hoc attribution input: an existing answer to attribute to the documents."""

    answer_text: str = Field(default="", description="The answer to attribute (split into sentences).")
    answer_sentences: list[str] = Field(default_factory=list, description="Optional: the answer already split into sentences (overrides splitting answer_text).")


class GenProgPosthocState(GenProgState):
    answer_text: str = ""
    answer_sentences: list[str] = Field(default_factory=list)
    tree_sentence: list[int] = Field(default_factory=list, description="For each tree, the 0-based answer sentence it reconstructs.")


def as_dict(obj: Any) -> Any:
    return obj.model_dump() if isinstance(obj, BaseModel) else obj


@context_dataclass
class GenProgPosthocContext(BaseContext):
    """Knobs of post-hoc GenerationPrograms attribution (the planner reconstructs a given answer)."""

    attribution: AttributionMode = attribution_knob("repair")

    max_new_tokens: int = knob(400, "Maximum tokens per planner call.", ge=1)
    per_sentence: bool = knob(True, "One planner call per answer sentence (unambiguous mapping); False: one program for the whole answer, bullets mapped in order.")
    max_source_sentences: int = knob(0, "Keep at most this many source sentences in the prompt, ranked by word overlap with the question and answer (ids stay the original ones). 0 = all.")
    plan_attempts: int = knob(2, "Planner calls allowed (per sentence when per_sentence) until a valid program line is parsed.", ge=1)
    review_program: bool = knob(False, "Human review: interrupt() after planning; resume with edited program text, or 'accept' to keep it. Needs a checkpointer.")


def trace_summary(state: GenProgState) -> dict[str, Any]:
    """A compact, JSON-able digest of the trace for ``answer.metadata["trace"]`` (what ``citegraph
    show`` renders without re-running): the program as written and, per bullet, its parsed call,
    the S-ids below it and the answer sentence (1-based) it produced (None: dropped as empty).
    Post-hoc runs map bullets to the sentences they reconstruct (``tree_sentence``)."""
    tree_sentence = getattr(state, "tree_sentence", None)
    if tree_sentence is not None:
        sentence_of = {i: (s + 1 if s >= 0 else None) for i, s in enumerate(tree_sentence)}
    else:  # the answer keeps the non-empty tree outputs in tree order
        sentence_of, n = {}, 0
        for r in sorted(state.results, key=lambda r: r.tree):
            if r.output.strip():
                n += 1
                sentence_of[r.tree] = n
            else:
                sentence_of[r.tree] = None
    by_tree: dict[int, list[str]] = {}
    for e in state.executions:
        by_tree.setdefault(e.tree, []).append(e.fn)
    return {
        "method": "genprog-posthoc" if tree_sentence is not None else "genprog",
        "program": state.program_text,
        "bullets": [
            {"line": t.line, "program": t.render(), "sids": t.leaves(), "sentence": sentence_of.get(i),
             "repaired": t.repaired, "modules": by_tree.get(i, [])}
            for i, t in enumerate(state.trees)
        ],
        "errors": [str(e) for e in state.program_errors],
    }
