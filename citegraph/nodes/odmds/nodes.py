"""Nodes of graph-augmented ODMDS (Shen & Chai).

retrieve (first retrieval of candidate_factor·K chunks, the corpus's cached cluster assignment,
Eq. 8-10 re-rank, top K) → cluster_topic per cluster among the K (fan-out) → reflect per chunk
(fan-out) → route (chunk relevance combined with its cluster's, tier) → refine per chunk (fan-out)
→ summarize (refined text as context, numbered like the ORIGINAL chunks) → attribute (the answer's
documents are the original chunks, so every citation can be checked against what was retrieved).
"""

from __future__ import annotations

import threading
from dataclasses import fields
from typing import Any, Sequence

from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send

from citegraph.corpus import open_corpus
from citegraph.errors import InputError
from citegraph.nodes.common import answer_from_text, constrained_reply
from citegraph.prompts.odmds import (TOPIC_SYSTEM, ReflectReply, TopicReply, grounding, refine_prompt,
                                     reflect_prompt, summary_prompt, topic_prompt)
from citegraph.state.odmds import (
    Candidate, ChunkNote, ChunkTask, ClusterTask, ClusterTopic, OdmdsContext, OdmdsState, Routing,
)
from citegraph.nodes.odmds.graph_cluster import GraphSettings, cluster_chunks, cluster_key, cluster_rerank
from citegraph.tools.models import chat_text, structured

_lock = threading.Lock()
_labels: dict[Any, tuple[dict[str, int], dict[str, Any]]] = {}  # by content key, and by (index stamp, settings)


# --------------------------------------------------------------------------- corpus + clusters
# GraphSettings fields read from a knob of another name; every other field reads the knob of its own name
KNOB_OF_SETTING = {"dim": "feature_dim", "alpha": "tfidf_weight", "beta": "embedding_weight", "layers": "gae_layers",
                   "hidden": "gae_hidden", "out_dim": "gae_out", "dropout": "gae_dropout", "epochs": "gae_epochs",
                   "lr": "gae_lr", "weight_decay": "gae_weight_decay", "loss": "gae_loss", "method": "cluster_method",
                   "eps": "dbscan_eps"}


def graph_settings(ctx: OdmdsContext) -> GraphSettings:
    """The knobs that change the cluster assignment (the cache key besides the content hash)."""
    return GraphSettings(**{f.name: getattr(ctx, KNOB_OF_SETTING.get(f.name, f.name)) for f in fields(GraphSettings)})


def corpus_clusters(corpus: Any, settings: GraphSettings, cache_dir: str, embed_fn=None) -> tuple[dict[str, int], dict[str, Any]]:
    """chunk id → cluster label (−1 noise) for the whole corpus, computed offline once: cached on
    disk (``cache_dir``) and in memory by the corpus content hash + the settings, so a changed
    corpus (or setting) is clustered afresh and an unchanged one never is."""
    import os

    # an index's change stamp identifies its content: a repeated query skips the pass over every chunk
    stamp = getattr(corpus, "stamp", "")
    by_stamp = (stamp, settings.key()) if stamp else None
    with _lock:
        if by_stamp in _labels:
            labels, stats = _labels[by_stamp]
            return labels, {**stats, "from_cache": "memory"}
    chunks = list(corpus.chunks())
    key = cluster_key(chunks, settings)
    with _lock:
        if key in _labels:
            labels, stats = _labels[key]
            if by_stamp:
                _labels[by_stamp] = (labels, stats)
            return labels, {**stats, "from_cache": "memory"}
    if embed_fn is None and _stored_embeddings_match(corpus, settings):
        ids = [c.id for c in chunks]
        embed_fn = lambda _texts: corpus.embeddings(ids)  # noqa: E731 - the index holds them: never embed twice
    res = cluster_chunks(chunks, settings, cache_dir=os.path.expanduser(cache_dir) if cache_dir else None,
                         embed_fn=embed_fn)
    stats = {**res.stats, "key": res.key, "from_cache": "disk" if res.from_cache else "computed"}
    labels = res.label_of()
    with _lock:
        _labels[key] = (labels, stats)
        if by_stamp:
            _labels[by_stamp] = (labels, stats)
    return labels, stats


def _stored_embeddings_match(corpus: Any, settings: GraphSettings) -> bool:
    """The index's stored vectors are what the node features need: the same embedder, of
    ``title\ntext`` (what cluster_chunks embeds)."""
    cs = getattr(corpus, "settings", None) or {}
    return (callable(getattr(corpus, "embeddings", None)) and cs.get("embedder") == settings.embedding
            and bool(cs.get("title_in_index")))


def candidates_from_hits(hits: Sequence[Any], labels: dict[str, int]) -> list[Candidate]:
    out = []
    for r, h in enumerate(hits, 1):
        c = h.chunk
        out.append(Candidate(chunk_id=str(c.id), doc_id=str(c.doc_id), document=c.to_document(), rank=r, score=float(h.score),
                             dense_score=getattr(h, "dense_score", None), sparse_score=getattr(h, "sparse_score", None),
                             cluster=labels.get(str(c.id), -1)))
    return out


def select(candidates: list[Candidate], k: int, *, rerank: bool, include_self: bool) -> list[Candidate]:
    """Top K, by R_i (Eq. 8-10) with ``rerank`` or by first-retrieval rank without; stable on ties."""
    if not rerank:
        return [c.model_copy() for c in candidates[:k]]
    r = cluster_rerank([c.score for c in candidates], [c.cluster for c in candidates], include_self=include_self)
    scored = [c.model_copy(update={"rerank_score": v}) for c, v in zip(candidates, r)]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].rerank_score, i))
    return [scored[i] for i in order[:k]]


def retrieve(state: OdmdsState, runtime: Runtime[OdmdsContext]) -> dict:
    """Candidates (candidate_factor·K), their clusters from the offline graph, re-rank, top K."""
    ctx = runtime.context
    spec = state.corpus or ctx.corpus  # a named corpus wins over the input documents
    if not spec and not state.documents:
        raise InputError("odmds needs a corpus (input field `corpus` or the `corpus` knob) or input documents")
    corpus = open_corpus(spec) if spec else open_corpus("", state.documents, chunk_tokens=ctx.chunk_tokens)
    hits = corpus.search(state.question, k=ctx.top_k * ctx.candidate_factor, mode=ctx.retrieval_mode,
                         alpha=ctx.retrieval_alpha)
    labels, stats = corpus_clusters(corpus, graph_settings(ctx), ctx.cache_dir)
    cands = candidates_from_hits(hits, labels)
    selected = select(cands, ctx.top_k, rerank=ctx.rerank, include_self=ctx.include_self)
    return {"candidates": cands, "selected": selected, "graph_stats": stats,
            "topics": Overwrite([]), "reflections": Overwrite([]), "refinements": Overwrite([]),
            "routing": [], "prompt": "", "generation": "", "answer": None}


# --------------------------------------------------------------------------- summarizer
def _members(state: OdmdsState) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(state.selected, 1):
        if c.cluster >= 0:
            groups.setdefault(c.cluster, []).append(i)
    return groups


def fan_out_topics(state: OdmdsState, runtime: Runtime[OdmdsContext]) -> list[Send] | str:
    if not runtime.context.reflection or not state.selected:
        return "summarize"
    groups = _members(state)
    if not groups:
        return "topics_done"
    return [Send("cluster_topic", ClusterTask(question=state.question, cluster=label,
                                              chunks=[state.selected[i - 1].document.text for i in idx]))
            for label, idx in groups.items()]


def cluster_topic(task: ClusterTask, runtime: Runtime[OdmdsContext]) -> dict:
    """Fig. 9: a topic for the cluster and its 1-10 relevance to the question (JSON)."""
    ctx = runtime.context

    prompt = topic_prompt(task.question, task.cluster, task.chunks, ctx.topic_chunk_words)
    reply, problems = structured(ctx.llm, prompt, TopicReply, system=TOPIC_SYSTEM, temperature=ctx.temperature,
                                 max_tokens=ctx.step_max_tokens, fallback=lambda: TopicReply(topic="", relevance=5.0))
    return {"topics": [ClusterTopic(cluster=task.cluster, topic=reply.topic.strip(), relevance=reply.relevance,
                                    problems=problems)]}


def topics_done(state: OdmdsState) -> dict:
    """Join point after the per-cluster calls; records each topic's members among the K."""
    groups = _members(state)
    topics = [t.model_copy(update={"members": groups.get(t.cluster, [])}) for t in state.topics]
    return {"topics": Overwrite(sorted(topics, key=lambda t: t.cluster))}


def _topic_of(state: OdmdsState) -> dict[int, ClusterTopic]:
    return {t.cluster: t for t in state.topics}


def fan_out_reflect(state: OdmdsState) -> list[Send]:
    topics = _topic_of(state)
    return [Send("reflect", ChunkTask(question=state.question, index=i, text=c.document.text,
                                      topic=topics[c.cluster].topic if c.cluster in topics else ""))
            for i, c in enumerate(state.selected, 1)]


def reflect(task: ChunkTask, runtime: Runtime[OdmdsContext]) -> dict:
    """The chunk's own 1-10 relevance to the question (the paper does not print this prompt)."""
    ctx = runtime.context
    reply, problems = structured(ctx.llm, reflect_prompt(task.question, task.text, task.topic, ctx.prompt_chunk_words),
                                 ReflectReply, temperature=ctx.temperature, max_tokens=ctx.step_max_tokens,
                                 fallback=lambda: ReflectReply(relevance=5.0))
    return {"reflections": [ChunkNote(index=task.index, relevance=reply.relevance, problems=problems)]}


def tier(score: float, high: float, medium: float) -> str:
    """Fig. 10's routing: >= high → minor edits, >= medium → refocus, else cut / rewrite."""
    return "high" if score >= high else "medium" if score >= medium else "low"


def combine(chunk: float, cluster: float | None, w_chunk: float, w_cluster: float) -> float:
    """Weighted mean of the chunk's and its cluster's 1-10 scores (a chunk without a cluster, or
    both weights 0 on the cluster side: the chunk's own score)."""
    if cluster is None or w_cluster <= 0:
        return chunk
    if w_chunk + w_cluster <= 0:
        return chunk
    return (w_chunk * chunk + w_cluster * cluster) / (w_chunk + w_cluster)


def route(state: OdmdsState, runtime: Runtime[OdmdsContext]) -> dict:
    ctx = runtime.context
    topics = _topic_of(state)
    notes = {n.index: n for n in state.reflections}
    out = []
    for i, c in enumerate(state.selected, 1):
        own = notes[i].relevance if i in notes and notes[i].relevance is not None else 5.0
        cl = topics[c.cluster].relevance if c.cluster in topics else None
        score = combine(own, cl, ctx.chunk_weight, ctx.cluster_weight)
        out.append(Routing(index=i, chunk_relevance=own, cluster_relevance=cl, combined=score,
                           tier=tier(score, ctx.high_tier, ctx.medium_tier)))
    return {"routing": out}


def fan_out_refine(state: OdmdsState) -> list[Send]:
    topics = _topic_of(state)
    tiers = {r.index: r.tier for r in state.routing}
    return [Send("refine", ChunkTask(question=state.question, index=i, text=c.document.text, tier=tiers.get(i, "medium"),
                                     topic=topics[c.cluster].topic if c.cluster in topics else ""))
            for i, c in enumerate(state.selected, 1)]


def refine(task: ChunkTask, runtime: Runtime[OdmdsContext]) -> dict:
    """Fig. 10: rewrite the chunk as its tier says; an empty reply keeps the original text."""
    ctx = runtime.context
    text = chat_text(ctx.llm, refine_prompt(task.question, task.text, task.tier, task.topic, ctx.prompt_chunk_words),
                     temperature=ctx.temperature, max_tokens=ctx.step_max_tokens).strip()
    problems = []
    if not text:
        problems.append("empty refinement; the original chunk is used")
    elif (g := grounding(text, task.text)) < ctx.min_grounding:
        problems.append(f"rewrite not grounded in the chunk ({g:.2f} of its words occur there): {text[:200]!r}; "
                        "the original chunk is used")
        text = ""
    return {"refinements": [ChunkNote(index=task.index, text=text or task.text, problems=problems)]}


def summarize(state: OdmdsState, runtime: Runtime[OdmdsContext]) -> dict:
    """The final summary over the K chunks, numbered [1..K] like the original chunks; with
    reflection each is shown as its refined text (context only)."""
    ctx = runtime.context
    refined = {n.index: n.text for n in state.refinements} if ctx.reflection else {}
    contexts = [(c.document.title, refined.get(i, c.document.text)) for i, c in enumerate(state.selected, 1)]
    prompt = summary_prompt(state.question, contexts)
    if ctx.cite_format == "constrained" and contexts:
        reply, mode, notes = constrained_reply(ctx.llm, prompt, len(contexts), ctx)
        return {"prompt": prompt, "generation": reply.text, "cite_mode": mode, "cite_notes": notes}
    text = chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens) if contexts else ""
    return {"prompt": prompt, "generation": text, "cite_mode": "", "cite_notes": []}


def attribute(state: OdmdsState, runtime: Runtime[OdmdsContext]) -> dict:
    """Parse the cited summary; its documents are the ORIGINAL selected chunks."""
    ctx = runtime.context
    docs = [c.document for c in state.selected]
    ans = answer_from_text(state.generation, state.question, docs, method="odmds",
                           chunk_ids=[c.chunk_id for c in state.selected],
                           refined=bool(ctx.reflection and state.refinements),
                           **({"cite_format": state.cite_mode} if state.cite_mode else {}))
    ans.warnings += state.cite_notes
    return {"answer": ans}
