"""Nodes of the ALCE baselines.

SUMM / SNIPPET: ``fan_out`` sends one :class:`DocTask` per document (LangGraph ``Send``) to
``summarize`` / ``extract``; their :class:`DocNote` s are concatenated by the state's reducer;
``generate`` shows the relevant notes (renumbered 1..k, as ALCE does) to ALCE's answer prompt and
``attribute`` maps the citations back to the caller's ORIGINAL document positions.

RERANK: ``sample`` draws ``n_samples`` VANILLA answers at ``temperature`` > 0, ``rerank`` scores
them all with ALCE citation recall (one batched verifier round per check) and keeps the best.
"""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send

from citegraph.metrics import alce_citation_job, run_jobs
from citegraph.nodes.common import answer_from_text, constrained_reply
from citegraph.prompts.alce import build_prompt
from citegraph.prompts.alce_baselines import build_shorter_prompt, is_irrelevant, per_document_prompt
from citegraph.state import Document
from citegraph.state.alce_baselines import (
    Candidate, DocNote, DocTask, RerankContext, RerankState, ShorterState, SnippetContext, SummContext,
)
from citegraph.state.answer import Evidence
from citegraph.tools.models import chat_text


# --------------------------------------------------------------------------- SUMM / SNIPPET
def prepare_notes(state: ShorterState) -> dict:
    """Start a run from a clean slate: a thread may be re-invoked (Studio, any checkpointer), and
    ``notes`` is a concatenation reducer, so the previous run's notes are overwritten, not extended."""
    return {"notes": Overwrite([]), "kept": [], "prompt": "", "generation": "", "answer": None}


def _fan_out(worker: str):
    def fan_out(state: ShorterState) -> list[Send] | str:
        if not state.documents:
            return "generate"
        return [Send(worker, DocTask(question=state.question, index=i, document=d))
                for i, d in enumerate(state.documents, 1)]

    fan_out.__name__ = f"fan_out_{worker}"
    return fan_out


fan_out_summarize = _fan_out("summarize")
fan_out_extract = _fan_out("extract")


def _note(kind: str, task: DocTask, ctx) -> dict:
    prompt, system = per_document_prompt(kind, task.question, task.document, ctx.note_doc_words or None)
    raw = chat_text(ctx.llm, prompt, system=system, temperature=ctx.temperature, max_tokens=ctx.note_max_tokens)
    text = raw.strip()
    relevant = not is_irrelevant(text)
    return {"notes": [DocNote(index=task.index, text=text if relevant else "", relevant=relevant, raw=raw)]}


def summarize(task: DocTask, runtime: Runtime[SummContext]) -> dict:
    """One document → a query-focused summary of at most 50 words, or "irrelevant"."""
    return _note("summary", task, runtime.context)


def extract(task: DocTask, runtime: Runtime[SnippetContext]) -> dict:
    """One document → an extracted span that answers the question, or "irrelevant"."""
    return _note("extraction", task, runtime.context)


def _shown(state: ShorterState) -> tuple[list[int], list[Document]]:
    """Original positions and shortened documents shown to the answer prompt."""
    notes = {n.index: n for n in state.notes}
    kept = [i for i in sorted(notes) if notes[i].relevant and 1 <= i <= len(state.documents)]
    if not kept and state.documents:
        # ALCE: "if there aren't any documents, at least provide one (using full text)"
        return [1], [state.documents[0]]
    short = [Document(id=state.documents[i - 1].id, title=state.documents[i - 1].title, text=notes[i].text) for i in kept]
    return kept, short


def _generate(kind: str, state: ShorterState, ctx) -> dict:
    kept, short = _shown(state)
    prompt = build_shorter_prompt(state.question, short, kind=kind, demos_file=ctx.demos_file or None, ndemo=ctx.ndemo)
    if ctx.cite_format == "constrained" and short:
        reply, mode, notes = constrained_reply(ctx.llm, prompt, len(short), ctx)
        return {"prompt": prompt, "generation": reply.text, "kept": kept, "cite_mode": mode, "cite_notes": notes}
    text = chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
    return {"prompt": prompt, "generation": text, "kept": kept, "cite_mode": "", "cite_notes": []}


def generate_from_summaries(state: ShorterState, runtime: Runtime[SummContext]) -> dict:
    """ALCE's answer prompt over the relevant summaries (renumbered 1..k)."""
    return _generate("summary", state, runtime.context)


def generate_from_snippets(state: ShorterState, runtime: Runtime[SnippetContext]) -> dict:
    """ALCE's answer prompt over the relevant snippets (renumbered 1..k)."""
    return _generate("extraction", state, runtime.context)


def _attribute(method: str, state: ShorterState, ctx, evidence: bool) -> dict:
    kept = state.kept or _shown(state)[0]
    _, short = _shown(state)
    ans = answer_from_text(
        state.generation, state.question, short, method=method, attach_trailing=ctx.attach_trailing_citations,
        shown_documents=kept,
        notes=[{"doc": n.index, "relevant": n.relevant, "text": n.text} for n in sorted(state.notes, key=lambda n: n.index)],
    )
    mapping = {k: orig for k, orig in enumerate(kept, 1)}
    ans = ans.remap(list(state.documents), mapping)
    ans.warnings += state.cite_notes
    if state.cite_mode:
        ans.metadata["cite_format"] = state.cite_mode
    if evidence:
        notes = {n.index: n.text for n in state.notes if n.relevant}
        for s in ans.sentences:
            for c in s.citations:
                span = notes.get(c, "")
                if span and span in state.documents[c - 1].text and not any(e.doc == c for e in s.evidence):
                    s.evidence.append(Evidence(doc=c, text=span))
    return {"answer": ans}


def attribute_summ(state: ShorterState, runtime: Runtime[SummContext]) -> dict:
    """Parse the cited text; citations point to the caller's original documents."""
    return _attribute("summ", state, runtime.context, evidence=False)


def attribute_snippet(state: ShorterState, runtime: Runtime[SnippetContext]) -> dict:
    """Parse the cited text; citations point to the caller's original documents; verbatim
    snippets become the evidence of the sentences that cite them."""
    return _attribute("snippet", state, runtime.context, evidence=True)


# --------------------------------------------------------------------------- RERANK
def sample(state: RerankState, runtime: Runtime[RerankContext]) -> dict:
    """Draw ``n_samples`` answers from ALCE's VANILLA prompt at the sampling temperature."""
    ctx = runtime.context
    prompt = build_prompt(
        state.question, state.documents, demos_file=ctx.demos_file or None, ndemo=ctx.ndemo,
        max_doc_words=ctx.max_doc_words or None,
    )
    if ctx.cite_format == "constrained" and state.documents:
        replies = [constrained_reply(ctx.llm, prompt, len(state.documents), ctx)
                   for _ in range(max(1, ctx.n_samples))]
        notes = [f"sample {i}: {n}" for i, (_, _, ns) in enumerate(replies, 1) for n in ns]
        return {"prompt": prompt, "candidates": [Candidate(text=r.text) for r, _, _ in replies],
                "cite_mode": replies[0][1], "cite_notes": notes}
    texts = [chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
             for _ in range(max(1, ctx.n_samples))]
    return {"prompt": prompt, "candidates": [Candidate(text=t) for t in texts], "cite_mode": "", "cite_notes": []}


def rerank(state: RerankState, runtime: Runtime[RerankContext]) -> dict:
    """Score every candidate by ALCE citation recall (all candidates' checks batched per round)
    and keep the highest; ties go to the earlier sample."""
    ctx = runtime.context
    answers = [
        answer_from_text(c.text, state.question, state.documents, method="rerank",
                         attach_trailing=ctx.attach_trailing_citations)
        for c in state.candidates
    ]
    jobs = [alce_citation_job(a, state.documents, attach_trailing=ctx.attach_trailing_citations,
                              at_most_citations=ctx.at_most_citations or None) for a in answers]
    scores = run_jobs(ctx.verifier, jobs) if jobs else []
    cands = [c.model_copy(update={"recall": s["recall"], "precision": s["precision"], "n_sentences": s["n_sentences"]})
             for c, s in zip(state.candidates, scores)]
    if not cands:
        return {"candidates": [], "chosen": -1, "generation": "",
                "answer": answer_from_text("", state.question, state.documents, method="rerank")}
    best = max(range(len(cands)), key=lambda i: (cands[i].recall, -i))
    ans = answers[best]
    ans.metadata.update({
        "chosen": best,
        "candidates": [{"recall": c.recall, "precision": c.precision, "text": c.text} for c in cands],
    })
    ans.warnings += state.cite_notes
    if state.cite_mode:
        ans.metadata["cite_format"] = state.cite_mode
    return {"candidates": cands, "chosen": best, "generation": cands[best].text, "answer": ans}
