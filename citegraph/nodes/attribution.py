"""The attribution stage every graph ends with (Context knob ``attribution``: off / repair / strict).

RAAC's CitationAgent (Validator + Simplifier + Discovery) generalised to any answer, with the
verifier alone (no LLM call):

1. **Keep** what the verifier supports: every non-empty subset of a sentence's citations (at most
   ``max_docs``) is scored with the concatenated cited documents as the premise (ALCE's joint
   semantics); the smallest entailing subset is kept (ties: smallest sum of indices, as RAAC's
   Simplifier).
2. **Re-point / add**: a sentence whose citations do not entail it (or that has none) is scored
   against each document alone; the best entailing document becomes its citation. When no single
   document entails it, pairs (and the triple) of its three best documents are checked jointly — a
   sentence that joins two facts needs both.
3. **Status**: ``supported`` (the kept set entails the sentence), ``partial`` (the best set scores at
   least ``partial`` but below the verifier's threshold: that set is cited and marked),
   ``unsupported`` (nothing comes close: the sentence keeps no citation and is flagged). ``strict``
   then drops the unsupported sentences; the trace keeps them.
4. **Evidence**: for each kept citation the document sentence that best supports the answer
   sentence becomes an :class:`~citegraph.state.answer.Evidence` with its score (evidence a method
   attached itself, e.g. SQuAI's supporting sentences, is kept while its document stays cited).

All scoring goes through at most three batched ``verifier.score`` calls per answer (the verifier
de-duplicates and caches pairs). What was done to each sentence is recorded in
``answer.metadata["attribution"]`` (``SentenceAttribution`` records plus the counts).
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from langgraph.runtime import Runtime

from citegraph.state import AttributedAnswer, CitedSentence, Document, Evidence
from citegraph.state.attribution import SentenceAttribution, SubsetCheck
from citegraph.tools.sentences import split_sentences
from citegraph.tools.verifier import get_verifier

MAX_CITATIONS = 3
JOINT_POOL = 3  # the best single documents whose pairs/triple are checked jointly


# --------------------------------------------------------------------------- shared with RAAC
def premise(documents: list[Document], subset: Sequence[int]) -> str:
    """The verifier premise for a set of 1-based document indices (sorted, newline-joined)."""
    return "\n".join(documents[i - 1].as_premise() for i in sorted(subset))


def subsets(citations: list[int], cap: int = MAX_CITATIONS) -> list[tuple[int, ...]]:
    """Every non-empty subset of (at most the first ``cap``) citations, ordered by the Simplifier's
    preference: fewer documents first, then the smallest sum of indices, then lexicographic."""
    cits = sorted(dict.fromkeys(citations[:cap]))
    out = [c for r in range(1, len(cits) + 1) for c in itertools.combinations(cits, r)]
    return sorted(out, key=lambda s: (len(s), sum(s), s))


def _preference(s: Sequence[int]) -> tuple:
    return (len(s), sum(s), tuple(s))


def minimal_subset(checks: list[SubsetCheck]) -> list[int]:
    """The Simplifier's choice among the entailing subsets (empty when none entails)."""
    ok = [tuple(c.subset) for c in checks if c.entails]
    return list(min(ok, key=_preference)) if ok else []


def subset_checks(verifier, documents: list[Document], text: str, subs: list[tuple[int, ...]]) -> list[SubsetCheck]:
    """One sentence against each document subset as the premise, in one batched verifier call."""
    scores = verifier.score([(premise(documents, sub), text.strip()) for sub in subs])
    return [SubsetCheck(subset=list(sub), score=round(float(sc), 4), entails=sc >= verifier.threshold)
            for sub, sc in zip(subs, scores)]


# --------------------------------------------------------------------------- the stage
def _score_sets(verifier, documents: list[Document], plan: list[tuple[int, str, list[tuple[int, ...]]]]
                ) -> dict[int, list[SubsetCheck]]:
    """Score every (sentence, document set) of ``plan`` in one batched call."""
    pairs = [(premise(documents, sub), text.strip()) for _, text, subs in plan for sub in subs]
    scores = verifier.score(pairs) if pairs else []
    thr = verifier.threshold
    out: dict[int, list[SubsetCheck]] = {}
    pos = 0
    for i, _, subs in plan:
        for sub in subs:
            sc = float(scores[pos])
            pos += 1
            out.setdefault(i, []).append(SubsetCheck(subset=list(sub), score=round(sc, 4), entails=sc >= thr))
    return out


def _best(checks: list[SubsetCheck]) -> SubsetCheck | None:
    """The highest-scoring set (ties: the smaller / earlier one)."""
    return min(checks, key=lambda c: (-c.score, *_preference(c.subset))) if checks else None


def _evidence(verifier, documents: list[Document], sentences: list[CitedSentence], max_evidence: int) -> None:
    """For each citation without evidence of its document, the document sentence(s) scoring highest
    for the answer sentence, with their scores (one batched call)."""
    split_cache: dict[int, list[str]] = {}
    plan: list[tuple[int, int, list[str]]] = []
    for i, s in enumerate(sentences):
        have = {e.doc for e in s.evidence}
        for c in s.citations:
            if c in have:
                continue
            if c not in split_cache:
                split_cache[c] = [x for x in split_sentences(documents[c - 1].text) if x.strip()] or [documents[c - 1].text]
            plan.append((i, c, split_cache[c]))
    pairs = [(x, sentences[i].text.strip()) for i, _, xs in plan for x in xs]
    scores = verifier.score(pairs) if pairs else []
    pos = 0
    for i, c, xs in plan:
        ranked = sorted(zip(scores[pos: pos + len(xs)], range(len(xs))), key=lambda t: (-t[0], t[1]))[:max_evidence]
        pos += len(xs)
        sentences[i].evidence += [Evidence(doc=c, text=xs[k].strip(), score=round(float(p), 4)) for p, k in ranked]


def attribute_answer(answer: AttributedAnswer, verifier, *, mode: str = "repair", partial: float = 0.2,
                     max_docs: int = MAX_CITATIONS, candidates: list[list[int]] | None = None,
                     max_evidence: int = 1, verifier_spec: str | None = None) -> AttributedAnswer:
    """The stage on one answer (``mode`` repair or strict); returns a new answer. ``candidates[i]``
    limits the documents sentence ``i`` may be re-pointed to (default: all of the answer's)."""
    if mode not in ("repair", "strict"):
        raise ValueError(f"attribution mode must be repair or strict here, got {mode!r}")
    docs = answer.documents
    n = len(docs)
    thr = float(verifier.threshold)
    sents = [s.model_copy(deep=True) for s in answer.sentences]
    todo = [i for i, s in enumerate(sents) if s.text.strip()]
    cands = {i: [c for c in (candidates[i] if candidates is not None and i < len(candidates) else range(1, n + 1))
                 if 1 <= c <= n] for i in todo}
    # phase 1: the written citations' subsets and every candidate document alone
    plan = []
    for i in todo:
        own = subsets([c for c in sents[i].citations if 1 <= c <= n], max_docs)
        singles = [(c,) for c in cands[i] if (c,) not in own]
        plan.append((i, sents[i].text, own + singles))
    checks = _score_sets(verifier, docs, plan) if n else {}
    decided: dict[int, tuple[list[int], float, str]] = {}
    joint_plan = []
    for i in todo:
        mine = checks.get(i, [])
        written = set(sents[i].citations)
        own = [c for c in mine if set(c.subset) <= written]
        kept = minimal_subset(own)
        if kept:
            sc = next(c.score for c in own if c.subset == kept)
            decided[i] = (kept, sc, "kept" if set(kept) == written else "simplified")
            continue
        singles = sorted([c for c in mine if len(c.subset) == 1], key=lambda c: (-c.score, c.subset))
        if singles and singles[0].entails:
            decided[i] = (list(singles[0].subset), singles[0].score, "re-pointed" if written else "added")
            continue
        pool = sorted(c.subset[0] for c in singles[:JOINT_POOL])
        joint = [t for r in range(2, min(max_docs, len(pool)) + 1) for t in itertools.combinations(pool, r)]
        joint = [t for t in joint if not any(c.subset == list(t) for c in mine)]
        if joint:
            joint_plan.append((i, sents[i].text, joint))
    # phase 2: joint support among each undecided sentence's best documents
    joint_checks = _score_sets(verifier, docs, joint_plan) if joint_plan else {}
    records: list[SentenceAttribution] = []
    for i in todo:
        if i in decided:
            continue
        jc = joint_checks.get(i, [])
        written = bool(sents[i].citations)
        kept = minimal_subset(jc)
        if kept:
            sc = next(c.score for c in jc if c.subset == kept)
            decided[i] = (kept, sc, "re-pointed" if written else "added")
            continue
        best = _best(checks.get(i, []) + jc)
        if best is not None and best.score >= partial:
            decided[i] = (list(best.subset), best.score, "partial")
        else:
            decided[i] = ([], best.score if best is not None else 0.0, "flagged")
    out_sents: list[CitedSentence] = []
    dropped: list[dict[str, Any]] = []
    for i, s in enumerate(sents):
        if i not in decided:  # an empty sentence: nothing to check
            out_sents.append(s)
            continue
        cits, sc, action = decided[i]
        support = "supported" if sc >= thr and action not in ("partial", "flagged") else (
            "partial" if action == "partial" else "unsupported")
        rec = SentenceAttribution(sentence=i, text=s.text, before=list(s.citations), after=list(cits),
                                  action=action, support=support, score=round(sc, 4))
        if support == "unsupported" and mode == "strict":
            rec.action = "dropped"
            dropped.append({"sentence": i, "text": s.text, "citations": list(s.citations), "score": round(sc, 4)})
            records.append(rec)
            continue
        records.append(rec)
        out_sents.append(CitedSentence(text=s.text, citations=sorted(cits),
                                       evidence=[e for e in s.evidence if e.doc in cits],
                                       support=support, support_score=round(sc, 4)))
    if n:
        _evidence(verifier, docs, out_sents, max(1, max_evidence))
    out = answer.model_copy(update={"sentences": out_sents, "warnings": list(answer.warnings),
                                    "metadata": dict(answer.metadata)})
    counts = out.support_counts()
    changed = sum(r.action in ("simplified", "re-pointed", "added") for r in records)
    flagged = sum(r.support == "unsupported" for r in records)
    out.metadata["attribution"] = {
        "mode": mode, "verifier": verifier_spec or getattr(verifier, "spec", str(verifier)), "threshold": thr,
        "partial": partial, "counts": counts, "changed": changed, "dropped": dropped,
        "sentences": [r.model_dump() for r in records],
    }
    if flagged and mode == "repair":
        out.warnings.append(f"attribution: {flagged} sentence(s) no document supports (flagged unsupported)")
    if dropped:
        out.warnings.append(f"attribution (strict): dropped {len(dropped)} unsupported sentence(s); "
                            "the trace keeps them")
    return out


def attribution(state: Any, runtime: Runtime) -> dict:
    """Graph node: the stage on ``state.answer`` as the Context's ``attribution`` knob says."""
    ctx = runtime.context
    mode = getattr(ctx, "attribution", "off")
    answer = getattr(state, "answer", None)
    if mode == "off" or answer is None or not answer.sentences:
        return {}
    verifier = get_verifier(ctx.verifier)
    # a graph that retrieved evidence per sentence (cite) limits each sentence to its own candidates
    candidates = getattr(state, "attribution_candidates", None) or None
    return {"answer": attribute_answer(answer, verifier, mode=mode, partial=ctx.attribution_partial,
                                       max_docs=ctx.attribution_max_docs, candidates=candidates,
                                       verifier_spec=ctx.verifier)}
