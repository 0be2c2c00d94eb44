"""Graph-augmented open-domain multi-document summarization (Shen & Chai): Context knobs and state.

The paper leaves many settings unstated and prints a few that cannot work; each such choice is a
knob below whose description says so ("unstated" / "as printed ... fails")."""

from __future__ import annotations

import operator
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, Field

from citegraph.state.answer import Document
from citegraph.state.base import AttributionMode, BaseContext, CITE_FORMAT_HELP, CiteFormat, CiteFormatKnobs, InputState, OutputState, RunContextState, RunRecord, attribution_knob, context_dataclass, knob

ClusterMethod = Literal["dbscan", "hdbscan", "kmeans"]
CLUSTER_METHODS = get_args(ClusterMethod)
GaeLoss = Literal["negative_sampling", "frobenius"]
GAE_LOSSES = get_args(GaeLoss)


@context_dataclass
class OdmdsContext(CiteFormatKnobs, BaseContext):
    """Knobs of graph-augmented ODMDS."""

    documents_are_a_corpus: ClassVar[bool] = True  # the input documents are retrieved from, not all prompted
    attribution: AttributionMode = attribution_knob("repair")

    corpus: str = knob("", "Corpus to summarize from (odmds always retrieves): an index folder, chroma+http://HOST:PORT/COLLECTION or retriever:<name>; the input field `corpus` wins. Neither: the input documents become an in-memory corpus.")
    chunk_tokens: int = knob(256, "In-memory corpus from the input documents: tokens per chunk (the corpus layer's default).", ge=16)
    max_new_tokens: int = knob(400, "Maximum tokens of the final summary.", ge=1)
    cite_format: CiteFormat = knob("constrained", CITE_FORMAT_HELP + " The final summary uses it; constrained by default "
                                           "because every summary sentence must be checkable against the K chunks.")
    cite_max_sentences: int = knob(8, "cite_format=constrained: the summary has at most this many sentences.", ge=1, le=30)
    # retrieval + re-rank (Sec. 3.1.3, App. C.3)
    top_k: int = knob(20, "K: chunks given to the summarizer (the paper found 20 best on ODSum-Story; 3/8/10 in its retrieval table).", ge=1)
    candidate_factor: int = knob(10, "The candidate set is the top candidate_factor·K chunks of the first retrieval (the paper: 10K).", ge=1)
    retrieval_alpha: float = knob(0.4, "Hybrid: weight of the dense score (the paper: BM25 0.6, embedding 0.4), each min-max normalised per query over the union of candidates.", ge=0.0, le=1.0)
    rerank: bool = knob(True, "Cluster re-rank (Eq. 8-10). false = the 'no re-rank' ablation: top K of the first retrieval.")
    include_self: bool = knob(True, "Eq. 8: whether chunk i itself belongs to W_i (unstated). true: all members of a cluster get the same bonus, so the order inside a cluster is kept; false: the bonus comes from the other members only and can reorder a cluster.")
    # offline graph (Sec. 3.1.1-3.1.2, App. C.1-C.2)
    use_graph: bool = knob(True, "Train the graph autoencoder and cluster its embeddings. false = the 'no graph' ablation: cluster the raw node features.")
    link_field: str = knob("links", "Document metadata field naming linked (cited) document ids; each link adds a citation edge (first chunk to first chunk). Empty: no citation edges.")
    collection_field: str = knob("", "Document metadata field naming an ordered collection (e.g. the story of a chapter); set, consecutive documents of a collection are joined by an edge. WARNING: on ODSum-Story the collection IS the gold grouping (a query's gold documents are its story's chapters), so this edge leaks the answer into the graph; report results with and without it.")
    position_field: str = knob("", "With collection_field: metadata field giving a document's position in its collection (corpus order when empty).")
    embedding: str = knob("minilm", "Embedding model of the node features (the paper: OpenAI ada-002; we ship MiniLM offline). Spec of tools/embeddings.py.")
    feature_dim: int = knob(500, "d of Eq. 1-2 (the paper: 500), capped by the data at min(d, n-1, each block's dim).", ge=1)
    tfidf_weight: float = knob(0.5, "α of Eq. 3 (unstated in the paper). Each block is centred and scaled to unit mean squared norm first, so α and β weigh equal-variance blocks.", ge=0.0)
    embedding_weight: float = knob(0.5, "β of Eq. 3 (unstated in the paper).", ge=0.0)
    tfidf_max_features: int = knob(50000, "TF-IDF vocabulary cap (unstated; bounds the sparse PCA's cost). 0 = no cap.")
    gae_layers: int = knob(3, "GCN layers of the encoder (App. C.2 implies >= 3: BatchNorm + dropout after the first two, the last linear).", ge=3)
    gae_hidden: int = knob(64, "Hidden width of the GCN layers (unstated; 64 keeps 300 epochs on a 50,000-chunk graph within minutes on 2 CPU cores: the first layer's N×d×hidden product dominates an epoch).", ge=1)
    gae_out: int = knob(32, "Embedding width Z (unstated).", ge=1)
    gae_dropout: float = knob(0.5, "Dropout after the first GCN layers (App. C.2: 50%).", ge=0.0, le=1.0)
    gae_epochs: int = knob(300, "Training epochs (App. C.2: 300).", ge=1)
    gae_lr: float = knob(0.01, "Adam learning rate (App. C.2: 0.01).", ge=0.0)
    gae_weight_decay: float = knob(5e-4, "Adam weight decay (App. C.2: 0.0005).", ge=0.0)
    gae_loss: GaeLoss = knob("negative_sampling", "Reconstruction loss: negative_sampling (BCE on the edges and as many sampled non-edges; O(E), any N) or frobenius (Eq. 7 as printed, dense N×N; refused above frobenius_max_nodes).")
    frobenius_max_nodes: int = knob(4000, "Largest N the dense Frobenius loss may run on (an N×N float matrix is 4·N² bytes; ~10 GB at N = 50,000).", ge=3)
    seed: int = knob(0, "Seed of PCA, the GAE and KMeans.")
    cluster_method: ClusterMethod = knob("dbscan", "Clustering of the L2-normalised node embeddings (App. C.3: DBSCAN was best). Noise points have no cluster.")
    dbscan_eps: float = knob(0.5, "DBSCAN eps (App. C.3: 0.5).", ge=0.0)
    min_samples: int = knob(2, "DBSCAN/HDBSCAN min_samples (App. C.3: 2).", ge=1)
    n_clusters: int = knob(0, "KMeans clusters (0 = round(sqrt(N/2))).")
    min_cluster_size: int = knob(5, "HDBSCAN min_cluster_size.", ge=2)
    cache_dir: str = knob("~/.cache/citegraph/odmds", "Where cluster assignments are cached, keyed by the corpus content hash and the settings above. Empty: no disk cache.")
    # summarizer (Sec. 3.2, App. B)
    reflection: bool = knob(True, "Cluster topics + chunk reflection + tiered refinement. false = the 'no reflection' ablation: the final prompt sees the original chunks.")
    chunk_weight: float = knob(0.5, "Weight of the chunk's own relevance (1-10) in its combined score (unstated: 'weighted sum').", ge=0.0)
    cluster_weight: float = knob(0.5, "Weight of its cluster's relevance (1-10) in the combined score; a chunk without a cluster (noise) uses its own relevance alone.", ge=0.0)
    high_tier: float = knob(7.0, "Combined score from which a chunk only gets minor edits (Fig. 10: 7-10).", ge=0.0, le=10.0)
    medium_tier: float = knob(4.0, "Combined score from which a chunk is refocused on the question (Fig. 10: 4-6); below it, cut to its core or rewritten (1-3).", ge=0.0, le=10.0)
    min_grounding: float = knob(0.6, "A rewrite is kept only if at least this share of its words (4+ letters) occur in the chunk; otherwise the original chunk is used (unstated in the paper; a small model's rewrite of a partly relevant chunk often says what the chunk lacks instead of condensing it). 0 = keep every rewrite.", ge=0.0, le=1.0)
    prompt_chunk_words: int = knob(300, "Words of a chunk shown in the topic / reflection / refinement prompts (0 = all).")
    topic_chunk_words: int = knob(80, "Words of each chunk shown in the cluster-topic prompt (a cluster may hold many chunks).", ge=1)
    step_max_tokens: int = knob(200, "Maximum tokens of a topic, reflection or refinement reply.", ge=1)


class Candidate(BaseModel):
    """A retrieved chunk with its first-retrieval score, cluster and re-rank score."""

    chunk_id: str
    doc_id: str = Field(default="", description="The chunk's source document.")
    document: Document = Field(description="The ORIGINAL chunk as a document (what the answer cites).")
    rank: int = Field(description="1-based rank in the first retrieval.")
    score: float = Field(description="S_i: first-retrieval score (hybrid: weighted min-max normalised).")
    dense_score: float | None = None
    sparse_score: float | None = None
    cluster: int = Field(default=-1, description="Cluster label (-1: noise, no cluster).")
    rerank_score: float | None = Field(default=None, description="R_i of Eq. 8 (None without re-rank).")


class ClusterTask(RunRecord):
    """Payload of one cluster-topic call (Send)."""

    question: str
    cluster: int
    chunks: list[str]


class ClusterTopic(BaseModel):
    cluster: int
    topic: str = ""
    relevance: float = Field(default=5.0, description="1-10 relevance of the topic to the question.")
    members: list[int] = Field(default_factory=list, description="1-based positions among the K selected chunks.")
    problems: list[str] = Field(default_factory=list)
    raw: str = ""


class ChunkTask(RunRecord):
    """Payload of one per-chunk reflection or refinement call (Send)."""

    question: str
    index: int = Field(description="1-based position among the K selected chunks.")
    text: str
    topic: str = ""
    tier: str = ""


class ChunkNote(BaseModel):
    """A chunk's reflection (relevance) or refinement (rewritten text)."""

    index: int
    relevance: float | None = None
    text: str = ""
    problems: list[str] = Field(default_factory=list)


class Routing(BaseModel):
    index: int
    chunk_relevance: float
    cluster_relevance: float | None
    combined: float
    tier: str = Field(description="high (minor edits) | medium (refocus) | low (cut to the core / rewrite).")


class OdmdsInput(InputState):
    """A question and the corpus to search (an index spec); without one, ``documents`` become an
    in-memory corpus."""

    corpus: str = Field(default="", description="Index folder or chroma+http://host:port/collection.")


class OdmdsState(OdmdsInput, OutputState, RunContextState):
    """Working state of graph-augmented ODMDS (the whole trace)."""

    candidates: list[Candidate] = Field(default_factory=list, description="The candidate set, in first-retrieval order.")
    selected: list[Candidate] = Field(default_factory=list, description="The K chunks given to the summarizer, best first.")
    graph_stats: dict[str, Any] = Field(default_factory=dict, description="Offline graph: cache key, hit, sizes, timings.")
    topics: Annotated[list[ClusterTopic], operator.add] = Field(default_factory=list)
    reflections: Annotated[list[ChunkNote], operator.add] = Field(default_factory=list)
    routing: list[Routing] = Field(default_factory=list)
    refinements: Annotated[list[ChunkNote], operator.add] = Field(default_factory=list)
    prompt: str = ""
    generation: str = ""
    cite_mode: str = Field(default="", description="cite_format=constrained: grammar, json_schema, or free (the server refused the schema).")
    cite_notes: list[str] = Field(default_factory=list, description="cite_format=constrained: what happened (a refused schema, dropped citations).")
