"""CitationAgent nodes: Validator, Simplifier, Discovery.

* Validator: for each cited sentence, every non-empty subset of its citations (at most the first
  3, so at most 7 subsets) is scored by the verifier with the concatenated cited documents as the
  premise -- all sentences in one batched ``score`` call; the verifier de-duplicates and caches.
* Simplifier: keep the minimum-cardinality entailing subset; ties -> the smallest sum of indices
  (then the lexicographically smallest). A sentence with no entailing subset loses its citations.
* Discovery: for each sentence left without a citation, rank the documents by embedding
  similarity (packaged MiniLM; the paper uses DPR), show the top ``discovery_top_n`` to the LLM with
  the AddCitation prompt (Table 15), drop ids outside the candidates / document set, keep at most 3,
  and (``verify_discovered``) keep the minimum entailing subset of them, checked like the Validator's.
  When none entails and ``discovery_joint`` is on, the proposal plus one more shown candidate is
  checked too (a sentence joining two facts needs both documents); none entails -> the sentence
  stays uncited.
"""

from __future__ import annotations

import math
import re
from typing import Any

from langgraph.runtime import Runtime

from citegraph.errors import ModelError
from citegraph.nodes.attribution import MAX_CITATIONS, minimal_subset, premise, subset_checks, subsets
from citegraph.prompts.raac import AddCitationModel, add_citation_prompt
from citegraph.state import AttributedAnswer, CitedSentence, Document
from citegraph.state.raac import DiscoveryRecord, RaacContext, RaacState, SubsetCheck, ValidationRecord
from citegraph.tools.models import structured
from citegraph.tools.verifier import get_verifier, with_threshold


def raac_verifier(ctx: RaacContext):
    """The verifier deciding at ``verifier_threshold`` (its own threshold when that is 0); the
    Validator, Discovery and the calibration gate all use this one view."""
    thr = ctx.verifier_threshold if ctx.verifier_threshold and ctx.verifier_threshold > 0 else None
    return with_threshold(get_verifier(ctx.verifier), thr)


# --------------------------------------------------------------------------- Validator
def validate(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Score every citation subset of every cited sentence in one batched verifier call."""
    ctx = runtime.context
    docs = state.working_documents
    draft = state.draft or AttributedAnswer(question=state.question, documents=docs)
    plan: list[tuple[int, CitedSentence, list[tuple[int, ...]]]] = []
    pairs: list[tuple[str, str]] = []
    for i, s in enumerate(draft.sentences):
        if not s.citations:
            continue
        subs = subsets(s.citations)
        plan.append((i, s, subs))
        pairs.extend((premise(docs, sub), s.text.strip()) for sub in subs)
    records = []
    if pairs:
        verifier = raac_verifier(ctx)
        scores = verifier.score(pairs)
        thr = verifier.threshold
        pos = 0
        for i, s, subs in plan:
            checks = []
            for sub in subs:
                sc = float(scores[pos])
                pos += 1
                checks.append(SubsetCheck(subset=list(sub), score=round(sc, 4), entails=sc >= thr))
            note = f"only the first {MAX_CITATIONS} citations checked" if len(s.citations) > MAX_CITATIONS else ""
            records.append(ValidationRecord(calibration_round=state.calibration_round, sentence=i, text=s.text,
                                            citations=list(s.citations), checks=checks, note=note))
    return {"validations": [*state.validations, *records]}


# --------------------------------------------------------------------------- Simplifier
def simplify(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Keep each sentence's minimum entailing subset (the Validator's scores, nothing re-scored)."""
    draft = state.draft or AttributedAnswer(question=state.question, documents=state.working_documents)
    mine = {r.sentence: r for r in state.validations if r.calibration_round == state.calibration_round}
    validations = list(state.validations)
    sentences = []
    for i, s in enumerate(draft.sentences):
        rec = mine.get(i)
        if rec is None:
            sentences.append(s.model_copy())
            continue
        kept = minimal_subset(rec.checks)
        idx = validations.index(rec)
        validations[idx] = rec.model_copy(update={"kept": kept, "note": rec.note or ("" if kept else "no subset entails")})
        sentences.append(CitedSentence(text=s.text, citations=kept,
                                       evidence=[e for e in s.evidence if e.doc in kept]))
    cited = draft.model_copy(update={"sentences": sentences, "warnings": list(draft.warnings),
                                     "metadata": dict(draft.metadata)})
    return {"cited": cited, "validations": validations}


def skip_citation_agent(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Ablation 'w/o CitationAgent': the TextAgent's citations are kept as written."""
    draft = state.draft or AttributedAnswer(question=state.question, documents=state.working_documents)
    return {"cited": draft.model_copy(deep=True)}


# --------------------------------------------------------------------------- Discovery
def _embed(texts: list[str], spec: str):
    """Indirection for tests; L2-normalised rows from the packaged MiniLM."""
    from citegraph.tools.embeddings import embed  # deferred: it loads chromadb (0.4 s)

    return embed(texts, spec=spec)


_WORD = re.compile(r"[a-z0-9]+")


def _lexical_similarity(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / (len(wa) ** 0.5 * len(wb) ** 0.5) if wa and wb else 0.0


def rank_documents(sentences: list[str], documents: list[Document], spec: str) -> tuple[list[list[float]], str]:
    """Cosine similarity of each sentence to each document; returns (rows, problem or '')."""
    texts = [d.as_premise() for d in documents]
    try:
        vecs = _embed(list(sentences) + texts, spec)
    except (ImportError, ModelError) as e:  # e.g. the packaged MiniLM is not installed
        problem = f"embeddings unavailable ({e}); ranked by word overlap"
        return [[_lexical_similarity(s, t) for t in texts] for s in sentences], problem
    import numpy as np

    vecs = np.asarray(vecs, dtype=float)
    sims = vecs[: len(sentences)] @ vecs[len(sentences):].T
    return [[float(x) for x in row] for row in sims], ""


def _coerce_ids(data: Any) -> Any:
    """Accept {"citations": ["[2]", "3"]}, a bare list, {"ids": ...} or {"documents": ...}."""
    if isinstance(data, list):
        data = {"citations": data}
    if isinstance(data, dict):
        raw = None
        for key in ("citations", "ids", "documents", "docs", "citation"):
            if key in data:
                raw = data[key]
                break
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raw = [raw]
        ids = []
        for x in raw:
            if isinstance(x, bool):
                continue
            if isinstance(x, int):
                ids.append(x)
            elif isinstance(x, float):
                if math.isfinite(x) and x == int(x):  # 2.0 is 2; 2.7, NaN and Infinity are no id
                    ids.append(int(x))
            else:
                ids.extend(int(m) for m in re.findall(r"-?\d+", str(x)))  # "-1" stays -1 and is rejected
        return {"citations": ids}
    return data


def discover(state: RaacState, runtime: Runtime[RaacContext]) -> dict:
    """Add citations to sentences left without any (Table 15), verified when ``verify_discovered``."""
    ctx = runtime.context
    docs = state.working_documents
    cited = state.cited or state.draft
    if cited is None or not docs:
        return {}
    todo = [i for i, s in enumerate(cited.sentences) if not s.citations and s.text.strip()]
    if not todo:
        return {}
    sims, rank_problem = rank_documents([cited.sentences[i].text for i in todo], docs, ctx.embedding)
    n = max(1, ctx.discovery_top_n)
    verifier = raac_verifier(ctx) if ctx.verify_discovered else None
    sentences = [s.model_copy() for s in cited.sentences]
    records = []
    for row, i in zip(sims, todo):
        text = sentences[i].text
        order = sorted(range(len(docs)), key=lambda j: (-row[j], j))[:n]
        candidates = [j + 1 for j in order]
        rec = DiscoveryRecord(calibration_round=state.calibration_round, sentence=i, text=text,
                              candidates=candidates, similarities=[round(row[j], 4) for j in order],
                              problems=[rank_problem] if rank_problem else [])
        prompt = add_citation_prompt(text, [(c, docs[c - 1]) for c in candidates], ctx.max_doc_words or None)
        out, problems = structured(ctx.llm, prompt, AddCitationModel, fallback=AddCitationModel, coerce=_coerce_ids,
                                   temperature=ctx.temperature, max_tokens=64)
        rec.problems.extend(problems)
        rec.proposed = list(out.citations)
        chosen: list[int] = []
        for c in out.citations:
            if not 1 <= c <= len(docs):
                rec.rejected[str(c)] = f"outside the document set (1-{len(docs)})"
            elif c not in candidates:
                rec.rejected[str(c)] = "not among the candidates shown"
            elif c in chosen:
                continue
            elif len(chosen) >= MAX_CITATIONS:
                rec.rejected[str(c)] = f"more than {MAX_CITATIONS} citations"
            else:
                chosen.append(c)
        if chosen and verifier is not None:
            # verified like the Validator's citations: every subset in one batch, then the
            # Simplifier's minimum entailing subset (a small LLM rarely picks the smallest one)
            rec.checks = subset_checks(verifier, docs, text, subsets(chosen))
            rec.verifier_score = next(c.score for c in rec.checks if len(c.subset) == len(chosen))
            proposal, chosen = chosen, minimal_subset(rec.checks)
            if not chosen and ctx.discovery_joint and len(proposal) < MAX_CITATIONS:
                # joint support: the proposal plus one more candidate (most similar first)
                joint = [tuple(sorted([*proposal, c])) for c in candidates if c not in proposal]
                rec.joint_checks = subset_checks(verifier, docs, text, joint)
                chosen = minimal_subset(rec.joint_checks)
            rec.verified = bool(chosen)
        rec.kept = sorted(chosen)
        if chosen:
            sentences[i] = CitedSentence(text=text, citations=sorted(chosen))
        records.append(rec)
    new = cited.model_copy(update={"sentences": sentences})
    return {"cited": new, "discoveries": [*state.discoveries, *records]}
