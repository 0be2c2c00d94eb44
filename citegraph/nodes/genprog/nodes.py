"""GenerationPrograms nodes: prepare sources → plan → (review) → execute trees (Send) → attribute."""

from __future__ import annotations

import re

from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send, interrupt

from citegraph.nodes.genprog.sources import prepare, split_documents
from citegraph.prompts import genprog as P
from citegraph.state import AttributedAnswer, CitedSentence, Evidence
from citegraph.state.genprog import (
    GenProgContext, GenProgState, ModuleExecution, SourceSentence, TreeResult, TreeTask, trace_summary,
)
from citegraph.tools.models import chat_text
from citegraph.tools.progress import emit
from citegraph.nodes.genprog.program import (
    LLM_MODULES, ParsedProgram, ProgramError, SentenceRef, cap_fusion, leaf_ids, parse_program, post_order,
)
from citegraph.tools.verifier import get_verifier


# --------------------------------------------------------------------------- sources
REVIEW_HINT = ('resume with the edited program text to replace the program, or with "accept" (or "") to keep it '
               "(LangGraph does not resume with None)")


def fresh_run() -> dict:
    """Clears what accumulates across Send results, so a second run on the same thread (Studio, a
    checkpointer) does not mix in the previous run's module executions and answer sentences."""
    return {"executions": Overwrite([]), "results": Overwrite([])}


def prepare_sources(state: GenProgState, runtime: Runtime[GenProgContext]) -> dict:
    """Split documents into S1..Sn; run the relevance filter / QFS pre-steps the Context asks for."""
    return {**prepare(runtime.context, state.question, state.documents), **fresh_run()}


# --------------------------------------------------------------------------- planning
def plan_with_retries(ctx, prompt: str, valid_ids: set[str]) -> tuple[str, ParsedProgram, int]:
    """Call the planner until a valid line parses (``ctx.plan_attempts`` calls at most).
    Errors of every attempt are kept (typed); retries sample at temperature 0.7."""
    errors: list[ProgramError] = []
    text, parsed, attempts = "", ParsedProgram(), 0
    for attempt in range(max(1, ctx.plan_attempts)):
        attempts += 1
        temp = ctx.temperature if attempt == 0 else max(ctx.temperature, 0.7)
        text = chat_text(ctx.llm, prompt, temperature=temp, max_tokens=ctx.max_new_tokens)
        parsed = parse_program(text, valid_ids)
        errors += parsed.errors
        if parsed.trees:
            break
    return text, ParsedProgram(trees=parsed.trees, errors=errors), attempts


def plan(state: GenProgState, runtime: Runtime[GenProgContext]) -> dict:
    """The planner writes one bullet per answer sentence; the program is parsed safely (ast only)."""
    ctx = runtime.context
    prompt = P.planner_prompt(state.question, state.passages, max_sentences=ctx.max_answer_sentences,
                              max_fusion_inputs=ctx.max_fusion_inputs)
    if not state.sources:
        return {"program_prompt": prompt, "program_text": "", "trees": [],
                "program_errors": [ProgramError(kind="empty", message="no source sentences to plan from", line=0)]}
    text, parsed, attempts = plan_with_retries(ctx, prompt, {s.sid for s in state.sources})
    trees, errors = cap_program(parsed, ctx)
    return {"program_prompt": prompt, "program_text": text, "trees": trees,
            "program_errors": errors, "plan_attempts": attempts}


def cap_program(parsed: ParsedProgram, ctx) -> tuple[list, list[ProgramError]]:
    """The answer-length cap (planner bullets), then the fusion-arity cap; both recorded as errors."""
    trees, errors = cap_trees(parsed, ctx.max_answer_sentences)
    trees, more = cap_fusion(trees, ctx.max_fusion_inputs, ctx.fusion_cap)
    return trees, errors + more


def cap_trees(parsed: ParsedProgram, cap: int) -> tuple[list, list[ProgramError]]:
    """At most ``cap`` trees (0 = no limit); the cut is recorded as a typed 'truncated' error."""
    trees, errors = list(parsed.trees), list(parsed.errors)
    if cap and cap > 0 and len(trees) > cap:
        errors.append(ProgramError(kind="truncated", line=0, text="",
                                   message=f"{len(trees)} valid bullets; kept the first {cap} (max_answer_sentences)"))
        trees = trees[:cap]
    return trees, errors


def _resume_text(value) -> str | None:
    """Edited program text from a resume value, or None to accept the program as is."""
    if value is None or value is True:
        return None
    if isinstance(value, dict):
        if value.get("accept") or value.get("approve"):
            return None
        value = value.get("program", value.get("program_text"))
        if value is None:
            return None
    if isinstance(value, str):
        v = value.strip()
        return None if v.lower() in ("", "accept", "ok", "yes", "approve") else value
    return None


def review(state: GenProgState, runtime: Runtime[GenProgContext]) -> dict:
    """interrupt() with the parsed program when review_program is on; an edited text is re-parsed."""
    if not runtime.context.review_program:
        return {"reviewed": False}
    value = interrupt({
        "program": state.program_text,
        "parsed": ParsedProgram(trees=state.trees).render(),
        "errors": [str(e) for e in state.program_errors],
        "sources": {s.sid: s.text for s in state.sources},
        "hint": REVIEW_HINT,
    })
    edited = _resume_text(value)
    if edited is None:
        return {"reviewed": True}
    trees, errors = cap_program(parse_program(edited, {s.sid for s in state.sources}), runtime.context)
    return {"reviewed": True, "program_text": edited, "trees": trees, "program_errors": errors}


def fan_out(state: GenProgState):
    """One Send per tree (independent trees run concurrently); no tree → straight to attribute."""
    if not state.trees:
        return "attribute"
    by_sid = {s.sid: s.text for s in state.sources}
    return [
        Send("execute_tree", TreeTask(tree=i, program_tree=t, question=state.question,
                                      sources={sid: by_sid[sid] for sid in t.leaves() if sid in by_sid}))
        for i, t in enumerate(state.trees)
    ]


# --------------------------------------------------------------------------- execution
_PREFIX = re.compile(r"^\s*(?:\*\*)?(?:output|paraphrase[d]?|compressed(?: sentence)?|fused(?: sentence)?|sentence|answer)(?:\*\*)?\s*:\s*", re.I)


def clean_module_output(text: str) -> str:
    """First paragraph of the reply, without 'Output:' labels, bullets or wrapping quotes."""
    text = (text or "").strip()
    paras = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    first = paras[0] if paras else ""
    lines = [l for l in first.splitlines() if l.strip()]
    if lines and _PREFIX.match(lines[0]) and not _PREFIX.sub("", lines[0]).strip() and len(lines) > 1:
        lines = lines[1:]
    out = " ".join(l.strip() for l in lines)
    out = _PREFIX.sub("", out).strip()
    out = re.sub(r"^[-*•]\s+", "", out)
    if len(out) > 1 and out[0] in "\"“'" and out[-1] in "\"”'":
        out = out[1:-1].strip()
    return out


def run_module(ctx, fn: str, inputs: list[str], instruction: str | None, question: str, temperature: float) -> str:
    prompt = P.module_prompt(fn, inputs, instruction, question if getattr(ctx, "module_with_question", False) else None)
    return clean_module_output(chat_text(ctx.llm, prompt, temperature=temperature, max_tokens=ctx.max_new_tokens))


def execute_tree(task: TreeTask, runtime: Runtime[GenProgContext]) -> dict:
    """Post-order execution of one tree; with ``refine`` every module output is checked against its
    inputs by the verifier and resampled (up to max_candidates, refine_temperature) when not entailed."""
    ctx = runtime.context
    root = task.program_tree.root
    values: dict[str, str] = {}
    execs: list[ModuleExecution] = []
    verifier = None
    if ctx.refine:
        verifier = get_verifier(ctx.verifier)
    n_modules = sum(not isinstance(node, SentenceRef) for _, node in post_order(root))
    for path, node in post_order(root):
        if isinstance(node, SentenceRef):
            values[path] = task.sources.get(node.id, "")
            continue
        emit("genprog_module", tree=task.tree, module=len(execs) + 1, of=n_modules, fn=node.fn, leaves=leaf_ids(node))
        inputs = [values[f"{path}.{i}"] for i in range(len(node.args))]
        ex = ModuleExecution(tree=task.tree, path=path, fn=node.fn, instruction=node.instruction,
                             inputs=inputs, leaves=leaf_ids(node))
        if node.fn not in LLM_MODULES:  # extract: the input verbatim
            ex.output = inputs[0]
        else:
            out = run_module(ctx, node.fn, inputs, node.instruction, task.question, ctx.temperature)
            if not out:
                out = " ".join(inputs) if node.fn == "fusion" else inputs[0]
                ex.fallback = "empty module output; input kept"
            ex.candidates = [out]
            if verifier is not None:
                premise = " ".join(inputs)
                thr = ctx.entailment_threshold
                score = verifier.score([(premise, out)])[0]
                ex.score_before = ex.score_after = score
                ex.entailed_before = ex.entailed_after = score >= thr
                while not ex.entailed_after and len(ex.candidates) < max(1, ctx.max_candidates):
                    cand = run_module(ctx, node.fn, inputs, node.instruction, task.question, ctx.refine_temperature)
                    if not cand:
                        ex.candidates.append("")
                        continue
                    ex.candidates.append(cand)
                    s = verifier.score([(premise, cand)])[0]
                    if s >= thr:
                        out, ex.score_after, ex.entailed_after = cand, s, True
            ex.output = out
        values[path] = ex.output
        execs.append(ex)
    result = TreeResult(tree=task.tree, line=task.program_tree.line, output=values["0"], leaves=task.program_tree.leaves())
    return {"executions": execs, "results": [result]}


# --------------------------------------------------------------------------- attribution
def cite(leaves: list[str], sources: list[SourceSentence]) -> tuple[list[int], list[Evidence]]:
    """Document citations and sentence evidence of a set of leaf ids (abstractive sentences resolve
    to their verbatim origins; without origins only their document is cited)."""
    by_sid = {s.sid: s for s in sources}
    cites: list[int] = []
    evidence: list[Evidence] = []
    seen: set[str] = set()

    def add(doc: int, sid: str | None, text: str | None):
        if doc not in cites:
            cites.append(doc)
        if sid and text is not None and sid not in seen:
            seen.add(sid)
            evidence.append(Evidence(doc=doc, text=text, sentence_id=sid))

    for sid in leaves:
        s = by_sid.get(sid)
        if s is None:
            continue
        if s.verbatim:
            add(s.doc, s.sid, s.text)
        else:
            add(s.doc, None, None)
            for o in s.origins:
                src = by_sid.get(o)
                if src is not None:
                    add(src.doc, src.sid, src.text)
    return cites, evidence



def rates(execs: list[ModuleExecution]) -> tuple[float | None, float | None]:
    checked = [e for e in execs if e.entailed_before is not None]
    if not checked:
        return None, None
    return (round(sum(bool(e.entailed_before) for e in checked) / len(checked), 4),
            round(sum(bool(e.entailed_after) for e in checked) / len(checked), 4))


def attribute(state: GenProgState, runtime: Runtime[GenProgContext]) -> dict:
    """Each root's output is an answer sentence, cited by the documents of its leaf sentences."""
    # abstractive pre-steps keep the verbatim origins out of `sources`; recover them from the documents
    all_sources = split_documents(state.documents)
    known = {s.sid for s in state.sources}
    pool = list(state.sources) + [s for s in all_sources if s.sid not in known]
    sentences = []
    for r in sorted(state.results, key=lambda r: r.tree):
        cites, ev = cite(r.leaves, pool)
        if r.output.strip():
            sentences.append(CitedSentence(text=r.output.strip(), citations=cites, evidence=ev))
    before, after = rates(state.executions)
    warnings = [f"program {e}" for e in state.program_errors]
    if not sentences:  # the run reports it (an answer with no sentence is no success)
        warnings.append(f"no answer: no program line gave a sentence ({state.plan_attempts} planner attempt(s))")
    ans = AttributedAnswer(
        question=state.question, documents=state.documents, sentences=sentences,
        warnings=warnings,
        metadata={
            "method": "genprog",
            "program": state.program_text,
            "program_parsed": ParsedProgram(trees=state.trees).render(),
            "program_errors": [e.model_dump() for e in state.program_errors],
            "plan_attempts": state.plan_attempts,
            "modules": len(state.executions),
            "llm_modules": sum(e.fn in LLM_MODULES for e in state.executions),
            "entailment_rate_before": before,
            "entailment_rate_after": after,
            "dropped_documents": state.dropped_documents,
            "prestep_notes": state.prestep_notes,
            "reviewed": state.reviewed,
            "trace": trace_summary(state),
        },
    )
    return {"answer": ans, "entailment_rate_before": before, "entailment_rate_after": after}
