"""SQuAI nodes: decompose → retrieve (Send per sub-question) → collect → answer each document (Send)
→ judge each document → adaptive filter → merge → compose → attach evidence."""

from __future__ import annotations

import logging
import math
import re
import threading

from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite, Send

from citegraph.corpus import open_corpus
from citegraph.nodes.common import answer_from_text, composed
from citegraph.nodes.squai.retrieval import candidates_for
from citegraph.prompts import squai as P
from citegraph.state import AttributedAnswer, Evidence
from citegraph.state.squai import (
    Candidate, CitationCheck, Decomposition, DocAnswer, DocTask, Judgement, MergedDoc, SquaiContext, SquaiState,
    SubQuestionFilter, SubQuestionTask,
)
from citegraph.tools.loops import clean_loops
from citegraph.tools.models import NoLogprobsError, chat_text, structured, yes_no_log_odds
from citegraph.tools.progress import emit
from citegraph.tools.sentences import split_sentences
from citegraph.tools.verifier import get_verifier

log = logging.getLogger(__name__)

_no_logprobs: set[str] = set()
_no_logprobs_lock = threading.Lock()


def fresh_run() -> dict:
    """Clears what the Send fan-outs accumulate, so a second run on the same thread (Studio, a
    checkpointer) does not mix in the previous run's candidates, answers and judgements."""
    return {"candidates": Overwrite([]), "doc_answers": Overwrite([]), "judgements": Overwrite([])}


# --------------------------------------------------------------------------- Agent 1
def _norm(q: str) -> str:
    return re.sub(r"[\s?.!]+$", "", re.sub(r"\s+", " ", q.strip().lower()))


def decomposition_from(question: str, reply: P.DecompositionReply | None, problems: list[str], cap: int) -> Decomposition:
    """The sub-questions to retrieve for: split only into >= 2 distinct sub-questions (at most
    ``cap``), otherwise the question stays whole; every repair is recorded."""
    problems = list(problems)
    if reply is None:
        problems.append("malformed decomposition: kept the question whole")
        return Decomposition(split=False, sub_questions=[question], problems=problems)
    raw = reply.model_dump_json()
    subs, seen = [], set()
    for s in reply.sub_questions:
        s = (s or "").strip()
        if s and _norm(s) not in seen:
            seen.add(_norm(s))
            subs.append(s)
    if len(subs) < len(reply.sub_questions):
        problems.append(f"dropped {len(reply.sub_questions) - len(subs)} empty or duplicate sub-question(s)")
    if not reply.split:
        if subs:
            problems.append("split=false with sub-questions listed: kept the question whole")
        return Decomposition(split=False, sub_questions=[question], raw=raw, problems=problems)
    if len(subs) < 2:
        problems.append(f"split=true with {len(subs)} distinct sub-question(s): kept the question whole")
        return Decomposition(split=False, sub_questions=[question], raw=raw, problems=problems)
    if len(subs) > cap:
        problems.append(f"{len(subs)} sub-questions; kept the first {cap} (max_sub_questions)")
        subs = subs[:cap]
    return Decomposition(split=True, sub_questions=subs, raw=raw, problems=problems)


def decompose(state: SquaiState, runtime: Runtime[SquaiContext]) -> dict:
    """Agent 1: structured {"split", "sub_questions"}; malformed output → the question itself."""
    ctx = runtime.context
    reply, problems = structured(ctx.llm, P.decompose_prompt(state.question, ctx.max_sub_questions),
                                 P.DecompositionReply, retries=1, fallback=lambda: None,
                                 temperature=0.0, max_tokens=200)
    d = decomposition_from(state.question, reply, problems, ctx.max_sub_questions)
    emit("squai_decompose", split=len(d.sub_questions) > 1, sub_questions=list(d.sub_questions))
    return {"decomposition": d, "sub_questions": d.sub_questions, "filters": [], "merged": [], "fallback": "",
            "notes": [], "prompt": "", "generation": "", "truncated": False, "citation_checks": [], "answer": None, **fresh_run()}


def fan_out_retrieval(state: SquaiState):
    return [Send("retrieve", SubQuestionTask(sub_q=i, question=q, documents=state.documents))
            for i, q in enumerate(state.sub_questions)]


# --------------------------------------------------------------------------- retrieval
def retrieve(task: SubQuestionTask, runtime: Runtime[SquaiContext]) -> dict:
    """Hybrid retrieval for one sub-question: top_k documents through the corpus layer."""
    ctx = runtime.context
    corpus = open_corpus(ctx.corpus, task.documents)
    cands = candidates_for(corpus, task.sub_q, task.question, k=ctx.top_k, mode=ctx.retrieval_mode,
                           alpha=ctx.retrieval_alpha, candidate_factor=ctx.candidate_factor)
    emit("squai_retrieve", sub_q=task.sub_q + 1, sub_question=task.question, retrieved=len(cands))
    return {"candidates": cands}


def collect(state: SquaiState) -> dict:
    """Barrier after the retrieval fan-out: candidates in (sub-question, rank) order."""
    cands = sorted(state.candidates, key=lambda c: (c.sub_q, c.rank))
    notes = [f"sub-question {i + 1}: nothing retrieved" for i in range(len(state.sub_questions))
             if not any(c.sub_q == i for c in cands)]
    return {"candidates": Overwrite(cands), "notes": notes}


def fan_out_documents(state: SquaiState):
    if not state.candidates:
        return "filter"
    return [Send("answer_doc", DocTask(candidate=c)) for c in state.candidates]


# --------------------------------------------------------------------------- Agents 2 and 3
def answer_doc(task: DocTask, runtime: Runtime[SquaiContext]) -> Command:
    """Agent 2: a short answer to the sub-question from this document alone; then its judge."""
    ctx = runtime.context
    c = task.candidate
    text = chat_text(ctx.llm, P.doc_answer_prompt(c.sub_question, c.document, ctx.max_doc_words),
                     temperature=ctx.temperature, max_tokens=ctx.answer_tokens).strip()
    return Command(update={"doc_answers": [DocAnswer(sub_q=c.sub_q, rank=c.rank, answer=text)]},
                   goto=Send("judge_doc", DocTask(candidate=c, answer=text)))


def verbal_rel_score(spec: str, prompt: str) -> float | None:
    """The verbal judgement (for models without logprobs): +1 for Yes, -1 for No, None otherwise."""
    reply = chat_text(spec, prompt, temperature=0.0, max_tokens=3).strip().lower()
    word = re.match(r"[a-z]+", reply)
    word = word.group(0) if word else ""
    return 1.0 if word == "yes" else -1.0 if word == "no" else None


def rel_score(spec: str, mode: str, prompt: str) -> tuple[float | None, str, str]:
    """(RelScore, method, note) for one judge prompt."""
    if mode == "verbal":
        return verbal_rel_score(spec, prompt), "verbal", ""
    with _no_logprobs_lock:
        known_missing = spec in _no_logprobs and mode == "auto"
    if not known_missing:
        try:
            return yes_no_log_odds(spec, prompt), "logodds", ""
        except NoLogprobsError as e:
            if mode == "logodds":
                raise
            with _no_logprobs_lock:
                first = spec not in _no_logprobs
                _no_logprobs.add(spec)
            if first:
                log.warning("%s returns no logprobs: SQuAI's judge falls back to the verbal Yes/No judgement", spec)
            note = f"no logprobs ({e}); verbal judgement"
            return verbal_rel_score(spec, prompt), "verbal", note
    return verbal_rel_score(spec, prompt), "verbal", "no logprobs; verbal judgement"


def judge_doc(task: DocTask, runtime: Runtime[SquaiContext]) -> dict:
    """Agent 3: RelScore = log p("Yes") − log p("No") for "is this document relevant"."""
    ctx = runtime.context
    c = task.candidate
    score, method, note = rel_score(ctx.llm, ctx.judge, P.judge_prompt(c.sub_question, c.document, task.answer, ctx.max_doc_words))
    if score is not None and not math.isfinite(score):
        score, note = None, f"non-finite RelScore {score}"
    emit("squai_judge", sub_q=c.sub_q + 1, rank=c.rank, rel_score=score, method=method)
    return {"judgements": [Judgement(sub_q=c.sub_q, rank=c.rank, rel_score=score, method=method, note=note)]}


# --------------------------------------------------------------------------- filter and merge
def adaptive_filter(scores: list[float | None], n: float) -> tuple[float | None, float | None, float | None, list[bool]]:
    """(tau_q, sigma, threshold, kept) over one sub-question's candidates: keep iff
    RelScore >= mean − n·std (population std). A failed score (None) is never kept and does not
    count in the statistics. Equal scores are kept whatever n (a rounding tolerance, since the
    mean of equal floats may exceed them by an ulp)."""
    valid = [s for s in scores if s is not None]
    if not valid:
        return None, None, None, [False] * len(scores)
    tau = sum(valid) / len(valid)
    sigma = math.sqrt(sum((s - tau) ** 2 for s in valid) / len(valid))
    threshold = tau - n * sigma
    eps = 1e-9 * max(1.0, abs(threshold))
    return tau, sigma, threshold, [s is not None and s >= threshold - eps for s in scores]


def filter_documents(state: SquaiState, runtime: Runtime[SquaiContext]) -> dict:
    """The adaptive filter per sub-question; every decision recorded with its reason."""
    n = runtime.context.filter_n
    by_key = {(j.sub_q, j.rank): j for j in state.judgements}
    filters = []
    for i, q in enumerate(state.sub_questions):
        cands = [c for c in state.candidates if c.sub_q == i]
        scores = [by_key[(c.sub_q, c.rank)].rel_score if (c.sub_q, c.rank) in by_key else None for c in cands]
        tau, sigma, thr, kept = adaptive_filter(scores, n)
        reasons = []
        for c, s, k in zip(cands, scores, kept):
            if s is None:
                reasons.append(f"rank {c.rank} ({c.key}): dropped, no RelScore")
            else:
                reasons.append(f"rank {c.rank} ({c.key}): RelScore {s:.3f} {'>=' if k else '<'} threshold {thr:.3f} -> "
                               f"{'kept' if k else 'dropped'}")
        filters.append(SubQuestionFilter(sub_q=i, sub_question=q, n=n, tau=tau, sigma=sigma, threshold=thr,
                                         kept=[c.rank for c, k in zip(cands, kept) if k], reasons=reasons))
    verbal = [j for j in state.judgements if j.method == "verbal"]
    notes = [f"verbal judgement (no logprobs) for {len(verbal)} of {len(state.judgements)} documents"] if verbal else []
    return {"filters": filters, "notes": list(state.notes) + notes}


def merge_documents(kept: list[tuple[Candidate, float | None, str]], dedupe_by: str = "chunk") -> list[MergedDoc]:
    """De-duplicate by id (the chunk's, or its source document's; first occurrence wins), then order
    by RelScore (highest first; stable)."""
    seen, merged = set(), []
    for c, score, answer in kept:
        key = (c.doc_id or c.key) if dedupe_by == "document" else c.key
        if key in seen:
            continue
        seen.add(key)
        merged.append(MergedDoc(key=c.key, document=c.document, rel_score=score, sub_q=c.sub_q, rank=c.rank, answer=answer))
    return sorted(merged, key=lambda m: -(m.rel_score if m.rel_score is not None else -math.inf))


def merge(state: SquaiState, runtime: Runtime[SquaiContext]) -> dict:
    """Merge the kept documents of all sub-questions; if none passed, fall back to the original
    question's first ``fallback_keep`` retrieved documents (the SQuAI code's fallback)."""
    ctx = runtime.context
    scores = {(j.sub_q, j.rank): j.rel_score for j in state.judgements}
    answers = {(a.sub_q, a.rank): a.answer for a in state.doc_answers}
    kept_ranks = {(f.sub_q, r) for f in state.filters for r in f.kept}
    kept = [(c, scores.get((c.sub_q, c.rank)), answers.get((c.sub_q, c.rank), ""))
            for c in state.candidates if (c.sub_q, c.rank) in kept_ranks]
    merged = merge_documents(kept, ctx.dedupe_by)
    if merged:
        return {"merged": merged, "fallback": ""}
    reason = ("no document passed the filter" if state.candidates else "nothing was retrieved") + \
        f"; retrieved for the original question and kept its first {ctx.fallback_keep}"
    try:
        corpus = open_corpus(ctx.corpus, state.documents)
        cands = candidates_for(corpus, -1, state.question, k=max(ctx.fallback_keep, 1), mode=ctx.retrieval_mode,
                               alpha=ctx.retrieval_alpha, candidate_factor=ctx.candidate_factor)[: ctx.fallback_keep]
    except Exception as e:  # noqa: BLE001 - a broken index must not crash the answer; recorded
        cands, reason = [], f"{reason}; fallback retrieval failed: {type(e).__name__}: {e}"
    merged = merge_documents([(c, None, "") for c in cands])
    return {"merged": merged, "fallback": reason}


# --------------------------------------------------------------------------- Agent 4 and evidence
def compose(state: SquaiState, runtime: Runtime[SquaiContext]) -> dict:
    """Agent 4: the cited answer over the merged documents ([n] = position in the merged list)."""
    ctx = runtime.context
    docs = [m.document for m in state.merged]
    if not docs:
        return {"prompt": "", "generation": "", "truncated": False, "citation_retry": [], "cite_mode": "", "cite_notes": []}
    prompt = P.compose_prompt(state.question, state.sub_questions, docs, ctx.max_doc_words)
    return composed(ctx, prompt, len(docs), P.CITE_REMINDER)


def supporting_sentences(answer: AttributedAnswer, verifier, max_evidence: int) -> tuple[AttributedAnswer, list[CitationCheck]]:
    """For every citation, the cited document's sentences that entail the answer sentence (one
    batched verifier call); the best ``max_evidence`` become Evidence. A citation with none is
    recorded as unsupported (the citation stays)."""
    plan: list[tuple[int, int, list[str]]] = []
    pairs = []
    for i, s in enumerate(answer.sentences):
        for c in s.citations:
            doc_sents = [x for x in split_sentences(answer.documents[c - 1].text) if x.strip()]
            plan.append((i, c, doc_sents))
            pairs += [(x, s.text) for x in doc_sents]
    if not pairs:
        return answer, [CitationCheck(sentence=i, doc=c, supported=False) for i, c, _ in plan]
    probs = verifier.score(pairs)
    entailed = verifier.entails_many(pairs)
    checks, pos = [], 0
    out = answer.model_copy(deep=True)
    for i, c, doc_sents in plan:
        span = list(zip(doc_sents, probs[pos: pos + len(doc_sents)], entailed[pos: pos + len(doc_sents)]))
        pos += len(doc_sents)
        good = sorted([(p, x) for x, p, ok in span if ok], key=lambda t: -t[0])[:max_evidence]
        best = max((p for _, p, _ in span), default=None)
        checks.append(CitationCheck(sentence=i, doc=c, supported=bool(good), evidence=[x for _, x in good],
                                    best_score=None if best is None else float(best)))
        out.sentences[i].evidence += [Evidence(doc=c, text=x) for _, x in good]
    return out, checks


_ECHOED_HEADING = re.compile(r"\s*" + r"\s+".join(map(re.escape, P.SUB_QUESTIONS_HEADING.split())) + r"\s*", re.IGNORECASE)


def drop_echoed_heading(text: str) -> tuple[str, int]:
    """Agent 4's prompt introduces the sub-questions with :data:`~citegraph.prompts.squai.SUB_QUESTIONS_HEADING`;
    the embedded 1.5B composer opened 3 of 20 ASQA answers by copying it ("The question has these parts;
    answer each: Who played the Weasley brothers in Harry Potter? [4]"). The copied heading is no part of
    the answer: removed, with how many times it was there."""
    out, n = _ECHOED_HEADING.subn(" ", text)
    return (out.strip(), n) if n else (text, 0)


def attach_evidence(state: SquaiState, runtime: Runtime[SquaiContext]) -> dict:
    """Parse the cited answer (citations only into the merged list) and attach supporting sentences."""
    ctx = runtime.context
    docs = [m.document for m in state.merged]
    loops: list[str] = []
    text = clean_loops(state.generation, state.truncated, loops)
    text, echoed = drop_echoed_heading(text)
    ans = answer_from_text(
        text, state.question, docs, method="squai", sub_questions=list(state.sub_questions),
        fallback=state.fallback, rel_scores=[m.rel_score for m in state.merged], raw_output=state.generation,
    )
    ans.warnings += [f"Agent 4 looped: {n}" for n in loops]
    if echoed:
        ans.warnings.append(f"Agent 4 copied its prompt's line {P.SUB_QUESTIONS_HEADING!r} into the answer (removed)")
    ans.warnings += [f"Agent 4 citation retry: {n}" for n in state.citation_retry]
    ans.warnings += [f"Agent 4 {n}" for n in state.cite_notes]
    if state.cite_mode:
        ans.metadata["cite_format"] = state.cite_mode
    if not docs:
        ans.warnings.append("no documents to answer from")
    ans, checks = supporting_sentences(ans, get_verifier(ctx.verifier), ctx.max_evidence)
    unsupported = [(k.sentence, k.doc) for k in checks if not k.supported]
    if unsupported:
        ans.metadata["unsupported_citations"] = [list(u) for u in unsupported]
    return {"answer": ans, "citation_checks": checks}
