"""GINGER nodes: prepare → detect nuggets (Send per passage) → cluster → rank → summarize (budget,
citations) → rewrite (optional)."""

from __future__ import annotations

import re

from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from citegraph.nodes.ginger.clustering import cluster_texts
from citegraph.nodes.ginger.ranking import bm25_scores, get_duot5, pairwise_preferences, sym_sum
from citegraph.prompts import ginger as P
from citegraph.state import AttributedAnswer, CitedSentence, Evidence
from citegraph.state.ginger import (
    BudgetDecision, Cluster, DetectionTrace, GingerContext, GingerState, Nugget, NuggetTask, PairScore,
    RewriteTrace, Summary,
)
from citegraph.tools.models import chat_text, structured, yes_probability
from citegraph.tools.sentences import split_sentences
from citegraph.tools.verifier import get_verifier


# --------------------------------------------------------------------------- prepare / fan-out
def prepare(state: GingerState, runtime: Runtime[GingerContext]) -> dict:
    """The first top_n documents are the passages; what accumulates across Sends is reset, so a second
    run on the same thread does not inherit the first run's nuggets."""
    n = len(state.documents)
    top = runtime.context.top_n
    passages = list(range(1, (min(n, top) if top else n) + 1))
    return {"passages": passages, "nuggets": Overwrite([]), "detections": Overwrite([]), "clusters": [],
            "pair_scores": [], "order": [], "budget": [], "summaries": [], "rewrite": None,
            "clustering_note": "", "ranking_note": "", "clustering_seconds": 0.0}


def fan_out(state: GingerState):
    """One Send per passage (detection is independent per passage); no passage → cluster (empty)."""
    if not state.passages:
        return "cluster"
    return [Send("detect", NuggetTask(passage=p, question=state.question, title=state.documents[p - 1].title,
                                      text=state.documents[p - 1].text))
            for p in state.passages]


# --------------------------------------------------------------------------- detection
_TAGGED = re.compile(re.escape(P.TAG_OPEN) + r"(.*?)(?:" + re.escape(P.TAG_CLOSE) + r"|$)", re.S | re.I)


def parse_tagged(reply: str) -> list[str]:
    """The spans between <IN> and </IN> (an unclosed last tag runs to the end of the reply)."""
    return [m.group(1).strip() for m in _TAGGED.finditer(reply or "") if m.group(1).strip()]


def _coerce_spans(data):
    if isinstance(data, list):
        return {"nuggets": [x if isinstance(x, str) else str(x) for x in data]}
    if isinstance(data, dict):
        for key in ("nuggets", "spans", "items"):
            if isinstance(data.get(key), list):
                return {"nuggets": [x if isinstance(x, str) else str(x) for x in data[key]]}
    return data


def locate(span: str, passage: str, threshold: float) -> tuple[int, int, str, float] | None:
    """Where ``span`` is in ``passage``: exact, case-insensitive, or fuzzy (rapidfuzz partial-ratio
    alignment at least ``threshold``). Returns (start, end, match, score) or None."""
    span = " ".join((span or "").split())
    if not span:
        return None
    i = passage.find(span)
    if i < 0:
        i = passage.lower().find(span.lower())
    if i >= 0:
        start, end = i, i + len(span)
        while start > 0 and passage[start - 1].isalnum():  # whole words of the passage
            start -= 1
        while end < len(passage) and passage[end].isalnum():
            end += 1
        return start, end, "exact", 100.0
    from rapidfuzz import fuzz

    if len(span) > 1.3 * len(passage):
        return None
    al = fuzz.partial_ratio_alignment(span, passage)
    if al is None:
        return None
    # the alignment window has the span's length; refine it over the passage's word boundaries so an
    # inserted or dropped word does not cut the nugget (score: plain similarity of span and window)
    words_at = [(m.start(), m.end()) for m in re.finditer(r"\S+", passage)]
    slack = max(25, int(0.3 * len(span)))
    starts = [a for a, _ in words_at if al.dest_start - slack <= a <= al.dest_start + slack]
    ends = [b for _, b in words_at if al.dest_end - slack <= b <= al.dest_end + slack]
    best = (0.0, 0, 0)
    for a in starts:
        for b in ends:
            if b > a:
                r = fuzz.ratio(span, passage[a:b])
                if r > best[0]:
                    best = (r, a, b)
    score, start, end = best
    if score < threshold:
        return None
    while end > start and passage[end - 1] in ",;:." and not span.endswith(passage[end - 1]):
        end -= 1  # trailing punctuation the span did not have
    return start, end, "fuzzy", float(score)


def spans_to_nuggets(spans: list[str], passage: int, text: str, ctx: GingerContext) -> tuple[list[Nugget], list[str]]:
    """Keep the spans found in the passage (with offsets), at least min_nugget_words long, once each."""
    kept: list[Nugget] = []
    rejected: list[str] = []
    seen: set[tuple[int, int]] = set()
    for span in spans:
        hit = locate(span, text, ctx.fuzzy_threshold)
        if hit is None:
            rejected.append(span)
            continue
        start, end, how, score = hit
        found = text[start:end].strip()
        if len(found.split()) < ctx.min_nugget_words or any(a <= start and end <= b for a, b in seen):
            rejected.append(span)  # too short, or inside a span already kept
            continue
        inner = [n for n in kept if start <= n.start and n.end <= end]  # a longer span replaces those inside it
        for n in inner:
            kept.remove(n)
            seen.discard((n.start, n.end))
            rejected.append(n.proposed)
        seen.add((start, end))
        kept.append(Nugget(passage=passage, text=found, start=start, end=end, match=how, score=score, proposed=span))
    return sorted(kept, key=lambda n: n.start), rejected


def detect(task: NuggetTask, runtime: Runtime[GingerContext]) -> dict:
    """The LLM marks the passage's spans that answer the question; only spans found in the passage stay."""
    ctx = runtime.context
    problems: list[str] = []
    if ctx.detect_format == "tagged":
        reply = chat_text(ctx.llm, P.tagged_prompt(task.question, task.title, task.text),
                          temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
        spans = parse_tagged(reply)
    else:
        obj, problems = structured(ctx.llm, P.json_prompt(task.question, task.title, task.text), P.SpanList,
                                   fallback=P.SpanList, coerce=_coerce_spans, retries=1,
                                   temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
        spans = obj.nuggets
        reply = "\n".join(spans)
    kept, rejected = spans_to_nuggets(spans, task.passage, task.text, ctx)
    trace = DetectionTrace(passage=task.passage, reply=reply, proposed=len(spans), kept=len(kept),
                           rejected=rejected, problems=problems)
    return {"nuggets": kept, "detections": [trace]}


# --------------------------------------------------------------------------- clustering
def cluster(state: GingerState, runtime: Runtime[GingerContext]) -> dict:
    """Facet clusters of the nuggets (BERTopic on our MiniLM embeddings, or LSA); noise is one cluster."""
    ctx = runtime.context
    nuggets = ordered_nuggets(state.nuggets)
    texts = [n.text for n in nuggets]
    if not texts:
        return {"nuggets": Overwrite(nuggets), "clusters": [], "clustering_note": "no nuggets"}
    emb = None
    if ctx.clustering == "bertopic" and len(texts) >= ctx.min_nuggets_to_cluster:
        from citegraph.tools.embeddings import embed  # deferred: it loads chromadb (0.4 s)

        emb = embed(texts)
    res = cluster_texts(texts, method=ctx.clustering, embeddings=emb, min_items=ctx.min_nuggets_to_cluster,
                        lsa_components=ctx.umap_n_components,
                        **({"n_neighbors": ctx.umap_n_neighbors, "n_components": ctx.umap_n_components,
                            "min_dist": ctx.umap_min_dist} if ctx.clustering == "bertopic" else {}),
                        min_cluster_size=ctx.hdbscan_min_cluster_size, min_samples=ctx.hdbscan_min_samples,
                        seed=ctx.seed)
    outl = set(res.outliers)
    clusters = [Cluster(id=i, nuggets=members, outliers=bool(outl) and set(members) == outl)
                for i, members in enumerate(res.clusters)]
    return {"nuggets": Overwrite(nuggets), "clusters": clusters, "clustering_note": res.note,
            "clustering_seconds": round(res.seconds, 3)}


def ordered_nuggets(nuggets: list[Nugget]) -> list[Nugget]:
    """Nuggets in passage order, then position (Send results arrive in any order)."""
    return sorted(nuggets, key=lambda n: (n.passage, n.start, n.end))


# --------------------------------------------------------------------------- ranking
def cluster_text(c: Cluster, nuggets: list[Nugget]) -> str:
    return " ".join(nuggets[i].text for i in c.nuggets)


def rank(state: GingerState, runtime: Runtime[GingerContext]) -> dict:
    """Order the clusters: pairwise preferences summed over all ordered pairs (llm / duot5), or
    pointwise bm25 / size. Ties go to the larger cluster, then the earlier one."""
    ctx = runtime.context
    clusters = list(state.clusters)
    if not clusters:
        return {"order": [], "pair_scores": [], "ranking_note": "no clusters"}
    texts = [cluster_text(c, state.nuggets) for c in clusters]
    scores = [float(len(c.nuggets)) for c in clusters]
    pairs: list[PairScore] = []
    note = ctx.ranker
    if ctx.ranker == "bm25":
        scores = bm25_scores(state.question, texts)
    elif ctx.ranker in ("llm", "duot5") and len(clusters) > 1:
        by_size = sorted(range(len(clusters)), key=lambda i: (-len(clusters[i].nuggets), i))
        cap = ctx.max_pairwise_clusters
        compared = sorted(by_size[:cap]) if cap and cap < len(clusters) else list(range(len(clusters)))
        if len(compared) < len(clusters):
            note += f"; compared the {len(compared)} largest of {len(clusters)} clusters, the rest follow by size"
        if ctx.ranker == "duot5":
            duo = get_duot5(ctx.duot5_model)
            pref = lambda a, b: duo.prob(state.question, a, b)  # noqa: E731
        else:
            pref = lambda a, b: yes_probability(ctx.llm, P.pairwise_prompt(state.question, a, b))  # noqa: E731
        sub = pairwise_preferences([texts[i] for i in compared], pref)
        agg = sym_sum(len(compared), sub)
        pairs = [PairScore(a=clusters[compared[i]].id, b=clusters[compared[j]].id, p=round(p, 4)) for (i, j), p in sub.items()]
        floor = min(agg) - 1.0
        scores = [floor - by_size.index(i) * 1e-3 for i in range(len(clusters))]  # not compared: after, by size
        for k, i in enumerate(compared):
            scores[i] = agg[k]
    ranked = sorted(range(len(clusters)), key=lambda i: (-scores[i], -len(clusters[i].nuggets), i))
    out = [c.model_copy(update={"score": round(scores[i], 4)}) for i, c in enumerate(clusters)]
    return {"clusters": out, "order": [clusters[i].id for i in ranked], "pair_scores": pairs, "ranking_note": note}


# --------------------------------------------------------------------------- summaries + citations
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:summary|sentence|answer|response)(?:\*\*)?\s*:\s*", re.I)


def clean_sentence(text: str) -> str:
    """The first non-empty line, without a 'Summary:' label, bullet or wrapping quotes."""
    lines = [l.strip() for l in (text or "").strip().splitlines() if l.strip()]
    out = _LABEL.sub("", lines[0]) if lines else ""
    if not out and len(lines) > 1:
        out = lines[1]
    out = re.sub(r"^[-*•]\s+", "", out).strip()
    if len(out) > 1 and out[0] in "\"“'" and out[-1] in "\"”'":
        out = out[1:-1].strip()
    return out


def words(text: str) -> int:
    return len(text.split())


def verify_citations(sentence: str, candidates: list[int], documents, ctx: GingerContext) -> tuple[list[int], dict[int, float], bool]:
    """The candidates that support ``sentence`` each on their own (verifier); none → the best one, flagged."""
    if not candidates:
        return [], {}, False
    if not ctx.prune_citations:
        return list(candidates), {}, True

    v = get_verifier(ctx.verifier)
    probs = v.score([(documents[d - 1].as_premise(), sentence) for d in candidates])
    scores = {d: round(float(p), 4) for d, p in zip(candidates, probs)}
    kept = [d for d in candidates if scores[d] >= ctx.entailment_threshold]
    if kept:
        return kept, scores, True
    return [max(candidates, key=lambda d: scores[d])], scores, False


def summarize(state: GingerState, runtime: Runtime[GingerContext]) -> dict:
    """One sentence per cluster in rank order until the budget (max_words, max_sentences); each cites the
    passages of its cluster's nuggets that the verifier says support it."""
    ctx = runtime.context
    by_id = {c.id: c for c in state.clusters}
    budget: list[BudgetDecision] = []
    summaries: list[Summary] = []
    total = 0
    for rank_pos, cid in enumerate(state.order, 1):
        c = by_id[cid]
        if ctx.max_sentences and len(summaries) >= ctx.max_sentences:
            budget.append(BudgetDecision(cluster=cid, rank=rank_pos, action="stop_sentences", total_words=total))
            break
        texts = [state.nuggets[i].text for i in c.nuggets]
        reply = chat_text(ctx.llm, P.summary_prompt(state.question, texts, ctx.summary_words),
                          temperature=ctx.temperature, max_tokens=max(32, ctx.summary_words * 3))
        sent = clean_sentence(reply)
        n = words(sent)
        if not sent:
            budget.append(BudgetDecision(cluster=cid, rank=rank_pos, action="empty", total_words=total))
            continue
        if total + n > ctx.max_words:
            budget.append(BudgetDecision(cluster=cid, rank=rank_pos, action="stop_words", words=n, total_words=total))
            break
        total += n
        budget.append(BudgetDecision(cluster=cid, rank=rank_pos, action="kept", words=n, total_words=total))
        cands = sorted({state.nuggets[i].passage for i in c.nuggets})
        cites, scores, ok = verify_citations(sent, cands, state.documents, ctx)
        summaries.append(Summary(cluster=cid, rank=rank_pos, text=sent, candidates=cands, citations=cites,
                                 scores=scores, supported=ok))
    state = state.model_copy(update={"budget": budget})
    return {"budget": budget, "summaries": summaries, "answer": build_answer(state, summaries, ctx)}


def build_answer(state: GingerState, summaries: list[Summary], ctx: GingerContext,
                 sentences: list[CitedSentence] | None = None, rewrite: RewriteTrace | None = None) -> AttributedAnswer:
    by_id = {c.id: c for c in state.clusters}
    if sentences is None:
        sentences = []
        for s in summaries:
            ev = [Evidence(doc=state.nuggets[i].passage, text=state.nuggets[i].text)
                  for i in by_id[s.cluster].nuggets if state.nuggets[i].passage in s.citations]
            sentences.append(CitedSentence(text=s.text, citations=s.citations, evidence=ev))
    warnings = [f"summary of cluster {s.cluster}: no single passage supports it; cited the best one"
                for s in summaries if not s.supported]
    if rewrite is not None and not rewrite.accepted:
        warnings.append(f"fluency rewrite rejected: {rewrite.reason}")
    if not state.nuggets:
        proposed = sum(d.proposed for d in state.detections)
        warnings.insert(0, f"no nugget found: the model marked {proposed} span(s) in {len(state.passages)} passage(s), "
                           f"none found verbatim in its passage, so there is nothing to summarize "
                           f"(see the detection trace; detect_format={ctx.detect_format})")
    return AttributedAnswer(
        question=state.question, documents=state.documents, sentences=sentences, warnings=warnings,
        metadata={
            "method": "ginger",
            "passages": len(state.passages),
            "nuggets": len(state.nuggets),
            "clusters": len(state.clusters),
            "clustering": state.clustering_note,
            "ranker": state.ranking_note,
            # Yes/No log-odds calls are prompt evaluations, not chat calls: the usage counters miss them
            "pairwise_judgements": len(state.pair_scores),
            "order": list(state.order),
            "summaries": len(summaries),
            "rewrite": None if rewrite is None else {"accepted": rewrite.accepted, "reason": rewrite.reason},
            "trace": {  # compact; the full trace is the graph state
                "nuggets": [[n.passage, n.start, n.end, n.match, n.text] for n in state.nuggets],
                "clusters": [[c.id, c.nuggets, c.score] for c in state.clusters],
                "pairwise": [[p.a, p.b, p.p] for p in state.pair_scores],
                "budget": [[b.cluster, b.action, b.words] for b in (state.budget or [])],
                "citation_scores": [{str(k): v for k, v in s.scores.items()} for s in summaries],
            },
        },
    )


# --------------------------------------------------------------------------- fluency rewrite
def rewrite(state: GingerState, runtime: Runtime[GingerContext]) -> dict:
    """Rephrase for fluency; re-cite each new sentence from the response's passages (verifier) and
    reject the rewrite when it loses a cited fact or adds a sentence no passage supports."""
    ctx = runtime.context
    if not ctx.fluency_rewrite or not state.answer or not state.answer.sentences:
        return {}

    original = state.answer
    reply = chat_text(ctx.llm, P.rewrite_prompt(state.question, original.text), temperature=ctx.temperature,
                      max_tokens=ctx.max_new_tokens)
    new = [s.strip() for s in split_sentences(reply.strip()) if s.strip()]
    trace = RewriteTrace(text=reply.strip())
    if not new:
        trace.reason = "empty rewrite"
        return {"rewrite": trace, "answer": build_answer(state, state.summaries, ctx, original.sentences, trace)}
    v = get_verifier(ctx.verifier)
    thr = ctx.entailment_threshold
    rewritten = " ".join(new)
    kept_facts = v.score([(rewritten, s.text) for s in original.sentences])
    trace.dropped = [s.text for s, p in zip(original.sentences, kept_facts) if p < thr]
    pool = original.cited_documents()
    sentences: list[CitedSentence] = []
    for s in new:
        probs = v.score([(state.documents[d - 1].as_premise(), s) for d in pool])
        cites = [d for d, p in zip(pool, probs) if p >= thr]
        if not cites:
            trace.unsupported.append(s)
        sentences.append(CitedSentence(text=s, citations=cites))
    if trace.dropped or trace.unsupported:
        parts = []
        if trace.dropped:
            parts.append(f"{len(trace.dropped)} cited sentence(s) no longer entailed")
        if trace.unsupported:
            parts.append(f"{len(trace.unsupported)} rewritten sentence(s) supported by no passage")
        trace.reason = "; ".join(parts)
        return {"rewrite": trace, "answer": build_answer(state, state.summaries, ctx, original.sentences, trace)}
    trace.accepted, trace.reason = True, "every cited fact kept and every sentence supported"
    return {"rewrite": trace, "answer": build_answer(state, state.summaries, ctx, sentences, trace)}
