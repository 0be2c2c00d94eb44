"""GINGER (Łajewska & Balog, 2025): Context knobs and working state, with the full trace (nuggets per
passage with offsets, clusters, pairwise scores, the order, the budget decisions, the rewrite)."""

from __future__ import annotations

import operator
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field

from citegraph.state.base import AttributionMode, BaseContext, InputState, OutputState, RunContextState, RunRecord, attribution_knob, context_dataclass, knob, simplify_knob

DetectFormat = Literal["json", "tagged"]
DETECT_FORMATS = get_args(DetectFormat)
Clustering = Literal["bertopic", "lsa"]
CLUSTERINGS = get_args(Clustering)
Ranker = Literal["llm", "bm25", "size", "duot5"]
RANKERS = get_args(Ranker)


@context_dataclass
class GingerContext(BaseContext):
    """Knobs of GINGER."""

    attribution: AttributionMode = attribution_knob("repair")
    # a sentence keeps the passages its nuggets came from while together they support it (docs/methods/ginger.md)
    attribution_simplify: bool = simplify_knob(False)

    max_new_tokens: int = knob(400, "Maximum tokens per LLM call (detection copies a passage in the tagged format, so it needs room).", ge=1)
    top_n: int = knob(20, "Use the first top_n documents as the passages (the paper: 5, 10 or 20). 0 = all given.")
    detect_format: DetectFormat = knob("json", "Nugget detection output: json (a JSON list of verbatim spans, which a small model follows more reliably than the tagged copy) or tagged (the paper's: the passage copied with nuggets inside <IN>...</IN>).")
    fuzzy_threshold: float = knob(90.0, "A span the LLM returns is kept only when found in its passage: exactly, or (rapidfuzz partial ratio) at least this similar; the passage's own text at the aligned offsets is kept.", ge=0.0, le=100.0)
    min_nugget_words: int = knob(3, "Drop detected spans shorter than this many words (stray words the model tags).", ge=1)
    clustering: Clustering = knob("bertopic", "Facet clustering: bertopic (UMAP + HDBSCAN on our MiniLM embeddings, offline) or lsa (TF-IDF + TruncatedSVD, the paper's ablation).")
    min_nuggets_to_cluster: int = knob(4, "Fewer nuggets than this: each nugget is its own cluster (the paper's footnote: 4).", ge=1)
    umap_n_neighbors: int = knob(50, "UMAP n_neighbors (capped at N-1 nuggets).", ge=2)
    umap_n_components: int = knob(2, "UMAP n_components.", ge=1)
    umap_min_dist: float = knob(0.01, "UMAP min_dist.", ge=0.0)
    hdbscan_min_cluster_size: int = knob(2, "HDBSCAN min_cluster_size.", ge=2)
    hdbscan_min_samples: int = knob(1, "HDBSCAN min_samples.", ge=1)
    seed: int = knob(42, "Random state of UMAP / TruncatedSVD (deterministic clusters).")
    ranker: Ranker = knob("llm", "Cluster ranking, pairwise and summed over all ordered pairs: llm (the chat model's Yes/No log-odds as the pairwise judge; duoT5's weights are not bundled), duot5 (a duoT5 checkpoint at duot5_model, the paper's), or pointwise bm25 / size (what the released code effectively does: largest cluster first).")
    duot5_model: str = knob("", "Path to a local duoT5 checkpoint (e.g. castorini/duot5-base-msmarco downloaded by you) for ranker=duot5.")
    max_pairwise_clusters: int = knob(12, "Pairwise ranking compares at most this many clusters (the largest); the rest follow, ordered by size. Cost grows as k*(k-1) calls. 0 = no limit.")
    summary_words: int = knob(35, "Words asked for per cluster summary (one sentence; the paper: about 35).", ge=5)
    max_words: int = knob(400, "Response budget in words: stop adding cluster summaries when the next would exceed it (the paper: 400 for the top-10/20 settings).", ge=1)
    max_sentences: int = knob(0, "At most this many summaries (the paper's top-5 setting: 3, the baseline's length). 0 = only max_words limits.")
    prune_citations: bool = knob(True, "Cite only the cluster's passages the verifier says support the summary (each passage alone); when none does alone, the best-scoring one is kept and the sentence is flagged.")
    fluency_rewrite: bool = knob(False, "Rephrase the response for fluency (the paper's best rows are without it). Each rewritten sentence is re-cited from the response's passages and re-verified; a rewrite that drops a cited fact or adds an unsupported sentence is rejected and recorded.")
    entailment_threshold: float = knob(0.5, "Verifier P(entailed) needed to keep a citation or accept a rewrite.", ge=0.0, le=1.0)


class Nugget(BaseModel):
    """A span of one passage that answers the question (verbatim: the passage's own text at start:end)."""

    passage: int = Field(description="1-based index into the caller's documents.")
    text: str
    start: int
    end: int
    match: str = Field(default="exact", description="exact | fuzzy (then `score` is the rapidfuzz similarity)")
    score: float = 100.0
    proposed: str = Field(default="", description="The span as the LLM wrote it.")


class DetectionTrace(BaseModel):
    passage: int
    reply: str = ""
    proposed: int = 0
    kept: int = 0
    rejected: list[str] = Field(default_factory=list, description="Spans not found in the passage (or too short).")
    problems: list[str] = Field(default_factory=list)


class NuggetTask(RunRecord):
    """Payload of one Send: detect the nuggets of one passage."""

    passage: int
    question: str
    title: str = ""
    text: str


class Cluster(BaseModel):
    id: int
    nuggets: list[int] = Field(description="Indices into state.nuggets.")
    outliers: bool = Field(default=False, description="HDBSCAN's noise group, kept as one cluster.")
    score: float = 0.0


class PairScore(BaseModel):
    a: int
    b: int
    p: float = Field(description="P(cluster a is more relevant than cluster b).")


class BudgetDecision(BaseModel):
    cluster: int
    rank: int
    action: str = Field(description="kept | stop_words | stop_sentences | empty")
    words: int = 0
    total_words: int = 0


class Summary(BaseModel):
    cluster: int
    rank: int
    text: str
    candidates: list[int] = Field(default_factory=list, description="Passages of the cluster's nuggets.")
    citations: list[int] = Field(default_factory=list, description="Passages kept after verification.")
    scores: dict[int, float] = Field(default_factory=dict, description="Verifier P(entailed) per candidate passage.")
    supported: bool = True


class RewriteTrace(BaseModel):
    text: str = ""
    accepted: bool = False
    reason: str = ""
    dropped: list[str] = Field(default_factory=list, description="Original sentences the rewrite no longer entails.")
    unsupported: list[str] = Field(default_factory=list, description="Rewritten sentences no passage supports.")


class GingerState(InputState, OutputState, RunContextState):
    """Working state of GINGER."""

    passages: list[int] = Field(default_factory=list, description="1-based documents used as passages (top_n).")
    nuggets: Annotated[list[Nugget], operator.add] = Field(default_factory=list)
    detections: Annotated[list[DetectionTrace], operator.add] = Field(default_factory=list)
    clusters: list[Cluster] = Field(default_factory=list)
    clustering_note: str = ""
    clustering_seconds: float = 0.0
    pair_scores: list[PairScore] = Field(default_factory=list)
    order: list[int] = Field(default_factory=list, description="Cluster ids, best first.")
    ranking_note: str = ""
    budget: list[BudgetDecision] = Field(default_factory=list)
    summaries: list[Summary] = Field(default_factory=list)
    rewrite: RewriteTrace | None = None
