"""Post-hoc GenerationPrograms: the planner writes a program that reconstructs each sentence of a
given answer; the program's leaves are that sentence's attributions (no module is executed)."""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from citegraph.errors import InputError
from citegraph.nodes.genprog.nodes import REVIEW_HINT, _resume_text, cite, fresh_run, plan_with_retries
from citegraph.nodes.genprog.sources import prepare, split_documents
from citegraph.prompts import genprog as P
from citegraph.state import AttributedAnswer, CitedSentence
from citegraph.state.genprog import GenProgPosthocContext, GenProgPosthocState, trace_summary
from citegraph.nodes.genprog.program import Call, ParsedProgram, ProgramError, ProgramTree, parse_program
from citegraph.tools.sentences import split_sentences


def prepare_posthoc(state: GenProgPosthocState, runtime: Runtime[GenProgPosthocContext]) -> dict:
    """Source sentences S1..Sn plus the answer split into sentences."""
    given = [s.strip() for s in state.answer_sentences if s and s.strip()]
    sents = given or [s.strip() for s in split_sentences(state.answer_text or "") if s.strip()]
    if not sents:
        raise InputError("genprog-posthoc attributes an existing answer: the input has no answer_text "
                         "(citegraph ask: --answer TEXT or --answer-file FILE)")
    out = prepare(runtime.context, state.question, state.documents, extra_query=" ".join(sents))
    out["answer_sentences"] = sents
    return {**out, **fresh_run()}


def map_trees(trees: list[ProgramTree], n_sentences: int, per_sentence: bool) -> list[int]:
    """Answer sentence (0-based) of each tree: by bullet number (per-sentence programs are written one
    bullet per sentence, a bare '-' for a sentence without a program; fences, blank lines and prose in an
    edited program do not shift it) or by order (a joint program); -1 when there is no such sentence."""
    if per_sentence:
        return [t.item - 1 if 0 < t.item <= n_sentences else -1 for t in trees]
    return [i if i < n_sentences else -1 for i in range(len(trees))]


def plan_posthoc(state: GenProgPosthocState, runtime: Runtime[GenProgPosthocContext]) -> dict:
    ctx = runtime.context
    sents = state.answer_sentences
    valid = {s.sid for s in state.sources}
    if not sents or not state.sources:
        why = "the answer has no sentences" if not sents else "no source sentences"
        return {"trees": [], "program_errors": [ProgramError(kind="empty", message=why, line=0)]}
    if not ctx.per_sentence:
        prompt = P.posthoc_prompt(state.question, state.passages, sents)
        text, parsed, attempts = plan_with_retries(ctx, prompt, valid)
        return {"program_prompt": prompt, "program_text": text, "trees": parsed.trees, "program_errors": parsed.errors,
                "plan_attempts": attempts, "tree_sentence": map_trees(parsed.trees, len(sents), False)}
    # one planner call per sentence; the combined program has line i = sentence i
    lines: list[str] = []
    errors: list[ProgramError] = []
    attempts = 0
    for i, sent in enumerate(sents, 1):
        prompt = P.posthoc_prompt(state.question, state.passages, [sent])
        text, parsed, a = plan_with_retries(ctx, prompt, valid)
        attempts += a
        for e in parsed.errors:
            errors.append(e.model_copy(update={"line": i, "message": f"sentence {i} (reply line {e.line}): {e.message}"}))
        roots = [t.root for t in parsed.trees]
        if not roots:
            lines.append("-")
            continue
        root = roots[0] if len(roots) == 1 else Call(fn="fusion", args=roots, instruction="Combine into one sentence.")
        lines.append(f"- {root.render()}")
    program = "\n".join(lines)
    parsed = parse_program(program, valid)  # the combined program, re-validated like any other
    errors += [e for e in parsed.errors if e.kind != "empty"]
    return {"program_text": program, "trees": parsed.trees, "program_errors": errors, "plan_attempts": attempts,
            "tree_sentence": map_trees(parsed.trees, len(sents), True)}


def review_posthoc(state: GenProgPosthocState, runtime: Runtime[GenProgPosthocContext]) -> dict:
    ctx = runtime.context
    if not ctx.review_program:
        return {"reviewed": False}
    value = interrupt({
        "program": state.program_text,
        "parsed": ParsedProgram(trees=state.trees).render(),
        "answer_sentences": state.answer_sentences,
        "errors": [str(e) for e in state.program_errors],
        "sources": {s.sid: s.text for s in state.sources},
        "hint": REVIEW_HINT + ("; one bullet per answer sentence, in order, a bare '-' for none" if ctx.per_sentence else ""),
    })
    edited = _resume_text(value)
    if edited is None:
        return {"reviewed": True}
    parsed = parse_program(edited, {s.sid for s in state.sources})
    return {"reviewed": True, "program_text": edited, "trees": parsed.trees, "program_errors": parsed.errors,
            "tree_sentence": map_trees(parsed.trees, len(state.answer_sentences), ctx.per_sentence)}


def attribute_posthoc(state: GenProgPosthocState, runtime: Runtime[GenProgPosthocContext]) -> dict:
    """The given sentences, each cited by the leaves of the program(s) that reconstruct it."""
    known = {s.sid for s in state.sources}
    pool = list(state.sources) + [s for s in split_documents(state.documents) if s.sid not in known]
    leaves: dict[int, list[str]] = {}
    warnings = [f"program {e}" for e in state.program_errors]
    for tree, idx in zip(state.trees, state.tree_sentence):
        if idx < 0:
            warnings.append(f"program line {tree.line}: no answer sentence to attribute it to; ignored")
            continue
        for sid in tree.leaves():
            if sid not in leaves.setdefault(idx, []):
                leaves[idx].append(sid)
    sentences = []
    for i, text in enumerate(state.answer_sentences):
        cites, ev = cite(leaves.get(i, []), pool)
        if not cites:
            warnings.append(f"sentence {i + 1}: no valid program, left uncited")
        sentences.append(CitedSentence(text=text, citations=cites, evidence=ev))
    ans = AttributedAnswer(
        question=state.question, documents=state.documents, sentences=sentences, warnings=warnings,
        metadata={
            "method": "genprog-posthoc",
            "program": state.program_text,
            "program_parsed": ParsedProgram(trees=state.trees).render(),
            "program_errors": [e.model_dump() for e in state.program_errors],
            "tree_sentence": state.tree_sentence,
            "plan_attempts": state.plan_attempts,
            "prestep_notes": state.prestep_notes,
            "reviewed": state.reviewed,
            "trace": trace_summary(state),
        },
    )
    return {"answer": ans}
