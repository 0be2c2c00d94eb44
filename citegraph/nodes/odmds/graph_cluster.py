"""Offline part of graph-augmented ODMDS (Shen & Chai): chunk graph → node features → graph
autoencoder → clustering, cached by the corpus content hash; plus the cluster re-rank (Eq. 8-10).

Everything here takes a plain sequence of chunk-like records (attributes ``id``, ``doc_id``,
``text``, ``order``, ``metadata``; :class:`ChunkRecord` is one), so it does not depend on how the
corpus is stored or searched.

- :func:`build_edges`: neighbouring chunks of one document, citation links between documents
  (a metadata field naming linked document ids), optionally consecutive documents of an ordered
  collection. Undirected, unweighted, both directions listed once each.
- :func:`node_features`: α·PCA(TF-IDF) + β·PCA(embedding) (Eq. 1-3). TF-IDF stays sparse (PCA with
  the ARPACK solver centres it implicitly); d = min(d, n−1, dims).
- :func:`train_gae`: torch_geometric GCN encoder (self-loops + symmetric normalisation), BatchNorm
  + dropout after all but the last layer, a linear last layer, inner-product decoder; loss with
  negative sampling (O(E)) or the paper's Frobenius loss (Eq. 7) for small N only.
- :func:`cluster_embeddings`: DBSCAN / HDBSCAN / KMeans on L2-normalised embeddings (−1 = noise).
- :func:`cluster_chunks`: all of the above, cached under ``cache_dir`` by content hash + settings.
- :func:`cluster_rerank`: R_i = S_i + Σ_{j∈W_i} S_j·P_j·F_j.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from citegraph.errors import InputError


@dataclass
class ChunkRecord:
    """A chunk as the offline part needs it (the corpus layer's ``Chunk`` has the same attributes)."""

    id: str
    doc_id: str
    text: str
    order: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    title: str = ""


@dataclass(frozen=True)
class GraphSettings:
    """Everything that changes the cluster assignment (part of the cache key)."""

    # graph
    link_field: str = "links"
    collection_field: str = ""
    position_field: str = ""
    # features
    embedding: str = "minilm"
    dim: int = 500
    alpha: float = 0.5
    beta: float = 0.5
    tfidf_max_features: int = 50000
    # GAE
    use_graph: bool = True
    layers: int = 3
    hidden: int = 64
    out_dim: int = 32
    dropout: float = 0.5
    epochs: int = 300
    lr: float = 0.01
    weight_decay: float = 5e-4
    loss: str = "negative_sampling"
    frobenius_max_nodes: int = 4000
    seed: int = 0
    # clustering
    method: str = "dbscan"
    eps: float = 0.5
    min_samples: int = 2
    n_clusters: int = 0
    min_cluster_size: int = 5

    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


# --------------------------------------------------------------------------- graph
def _links(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.replace(";", ",").split(",") if v.strip()]
    if isinstance(value, (list, tuple, set)):
        return [str(v) for v in value if v is not None and str(v) != ""]
    return [str(value)]


def _by_document(chunks: Sequence[Any]) -> dict[str, list[int]]:
    docs: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        docs.setdefault(str(c.doc_id), []).append(i)
    for idx in docs.values():
        idx.sort(key=lambda i: (getattr(chunks[i], "order", 0) or 0, i))
    return docs


def _position(value: Any) -> tuple:
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


def build_edges(
    chunks: Sequence[Any], *, link_field: str = "links", collection_field: str = "", position_field: str = "",
) -> tuple[np.ndarray, dict[str, int]]:
    """Undirected edges of the chunk graph as a ``(2, 2E)`` int64 array (each edge both ways, no
    self-loops, no duplicates) and counts per kind.

    - neighbours: consecutive chunks (by ``order``) of one document;
    - citations: a document whose ``metadata[link_field]`` names other documents' ids (a list, or
      a comma-separated string) is joined to each of them, first chunk to first chunk (a document
      is a chain of chunks already, so one edge links the two chains; all chunk pairs would add
      |A|·|B| edges per link). Unknown ids are counted as ``dangling_links`` and skipped;
    - consecutive documents (``collection_field`` set): documents sharing that metadata value are
      ordered by ``metadata[position_field]`` (or corpus order) and the last chunk of each is
      joined to the first chunk of the next.
    """
    docs = _by_document(chunks)
    pairs: set[tuple[int, int]] = set()
    counts = {"neighbour": 0, "citation": 0, "consecutive_doc": 0, "dangling_links": 0}

    def add(a: int, b: int, kind: str) -> None:
        if a == b:
            return
        e = (min(a, b), max(a, b))
        if e not in pairs:
            pairs.add(e)
            counts[kind] += 1

    for idx in docs.values():
        for a, b in zip(idx, idx[1:]):
            add(a, b, "neighbour")
    if link_field:
        for doc_id, idx in docs.items():
            meta = getattr(chunks[idx[0]], "metadata", None) or {}
            for target in _links(meta.get(link_field)):
                if target in docs:
                    add(idx[0], docs[target][0], "citation")
                elif target != doc_id:
                    counts["dangling_links"] += 1
    if collection_field:
        groups: dict[str, list[tuple[tuple, int, str]]] = {}
        for n, (doc_id, idx) in enumerate(docs.items()):
            meta = getattr(chunks[idx[0]], "metadata", None) or {}
            if meta.get(collection_field) in (None, ""):
                continue
            pos = _position(meta.get(position_field)) if position_field else (0, float(n), "")
            groups.setdefault(str(meta[collection_field]), []).append((pos, n, doc_id))
        for members in groups.values():
            members.sort()
            for (_, _, d1), (_, _, d2) in zip(members, members[1:]):
                add(docs[d1][-1], docs[d2][0], "consecutive_doc")
    if not pairs:
        return np.zeros((2, 0), dtype=np.int64), counts
    e = np.array(sorted(pairs), dtype=np.int64).T
    return np.concatenate([e, e[::-1]], axis=1), counts


# --------------------------------------------------------------------------- features
def feature_dim(n: int, requested: int, *dims: int) -> int:
    """d = min(requested, n−1, every block's dim): PCA cannot give more components than that."""
    return max(1, min([requested, n - 1, *dims]))


def _block(x: np.ndarray) -> np.ndarray:
    """Centre a block and divide it by its root-mean-square, so both blocks carry the same total
    variance before α/β mix them (z-scoring every component would blow the noise components up)."""
    x = x - x.mean(axis=0, keepdims=True)
    rms = float(np.sqrt((x ** 2).sum(axis=1).mean()))
    return x / rms if rms > 0 else x


def node_features(
    texts: Sequence[str], embeddings: np.ndarray, *, dim: int = 500, alpha: float = 0.5, beta: float = 0.5,
    tfidf_max_features: int = 50000, seed: int = 0,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Eq. 1-3: α·PCA(TF-IDF, d) + β·PCA(embedding, d), each block standardised first. The TF-IDF
    matrix stays sparse (ARPACK PCA centres it implicitly)."""
    from sklearn.decomposition import PCA
    from sklearn.feature_extraction.text import TfidfVectorizer

    n = len(texts)
    if n < 3:
        raise InputError(f"the chunk graph needs at least 3 chunks, got {n}")
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.shape[0] != n:
        raise InputError(f"{emb.shape[0]} embeddings for {n} chunks")
    tfidf = TfidfVectorizer(max_features=tfidf_max_features or None, sublinear_tf=True,
                            stop_words="english", dtype=np.float32).fit_transform(texts)
    vocab = tfidf.shape[1]
    # ARPACK needs d < min(n, vocab); the dense embedding block takes d <= min(n, dim)
    d = feature_dim(n, dim, vocab - 1, emb.shape[1])
    if vocab < 2:
        raise InputError("the chunks have fewer than 2 distinct words; no TF-IDF features")
    t = PCA(n_components=d, svd_solver="arpack", random_state=seed).fit_transform(tfidf)
    g = PCA(n_components=d, svd_solver="full", random_state=seed).fit_transform(emb)
    x = alpha * _block(t) + beta * _block(g)
    return x.astype(np.float32), {"d": d, "vocab": vocab, "tfidf_nnz": int(tfidf.nnz)}


# --------------------------------------------------------------------------- graph autoencoder
def make_encoder(in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float):
    import torch
    from torch_geometric.nn import GCNConv

    if layers < 3:
        raise InputError(f"the GAE needs at least 3 GCN layers, got {layers}")

    class Encoder(torch.nn.Module):
        """GCN layers (self-loops, symmetric normalisation); BatchNorm + ReLU + dropout after every
        layer but the last, which stays linear: a ReLU there makes every z_i·z_j >= 0, so every
        decoded edge probability >= 0.5."""

        def __init__(self) -> None:
            super().__init__()
            dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
            self.convs = torch.nn.ModuleList(GCNConv(a, b, add_self_loops=True, normalize=True, cached=True)
                                             for a, b in zip(dims, dims[1:]))
            self.norms = torch.nn.ModuleList(torch.nn.BatchNorm1d(h) for h in dims[1:-1])
            self.dropout = dropout

        def forward(self, x, edge_index):
            for conv, norm in zip(self.convs[:-1], self.norms):
                x = conv(x, edge_index)
                x = torch.nn.functional.dropout(torch.relu(norm(x)), p=self.dropout, training=self.training)
            return self.convs[-1](x, edge_index)

    return Encoder()


def train_gae(
    x: np.ndarray, edge_index: np.ndarray, s: GraphSettings, *, log: Callable[[int, float], None] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Train the GAE (Adam, ``s.epochs``) and return the encoder's node embeddings (eval mode).

    ``s.loss``: ``negative_sampling`` — BCE on every edge plus as many uniformly sampled node pairs
    per epoch (O(E) memory and time); ``frobenius`` — Eq. 7, ‖(A+I) − σ(ZZᵀ)‖²_F
    over the dense N×N matrix (the diagonal is 1 because σ(z_i·z_i) >= 0.5 can never reach 0),
    refused above ``s.frobenius_max_nodes``."""
    import torch
    from torch_geometric.nn import GAE

    n = x.shape[0]
    if s.loss not in ("negative_sampling", "frobenius"):
        raise InputError(f"unknown GAE loss {s.loss!r}; use negative_sampling or frobenius")
    if s.loss == "frobenius" and n > s.frobenius_max_nodes:
        raise InputError(
            f"the Frobenius loss builds dense {n}x{n} matrices ({n * n * 4 / 2**30:.1f} GiB each); "
            f"it is allowed up to {s.frobenius_max_nodes} nodes: use loss=negative_sampling")
    # torch_geometric's negative sampling draws from Python's, NumPy's and torch's generators
    random.seed(s.seed)
    np.random.seed(s.seed)
    torch.manual_seed(s.seed)
    from torch_geometric.utils import to_torch_csr_tensor

    xt = torch.as_tensor(x, dtype=torch.float32)
    ei = torch.as_tensor(edge_index, dtype=torch.long)
    # the encoder propagates over a sparse CSR adjacency (one sparse matmul per layer, several
    # times faster on CPU than PyG's scatter over the edge list); the loss samples from edge_index
    with warnings.catch_warnings():  # "sparse CSR support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        adj = to_torch_csr_tensor(ei, size=(n, n)) if ei.numel() else ei
    model = GAE(make_encoder(x.shape[1], s.hidden, s.out_dim, s.layers, s.dropout))
    opt = torch.optim.Adam(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    target = None
    pos = ei[:, ei[0] < ei[1]] if ei.numel() else ei  # each undirected edge once
    gen = torch.Generator().manual_seed(s.seed)
    if s.loss == "frobenius":
        target = torch.eye(n)
        if ei.numel():
            target[ei[0], ei[1]] = 1.0
    t0 = time.perf_counter()
    losses = []
    for epoch in range(s.epochs):
        model.train()
        opt.zero_grad()
        z = model.encode(xt, adj)
        if target is not None:
            loss = ((target - torch.sigmoid(z @ z.T)) ** 2).sum()
        elif ei.numel():
            loss = _sampled_loss(z, pos, n, gen)
        else:  # no edges: nothing to reconstruct but the features' own structure; keep z bounded
            loss = (z ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log is not None:
            log(epoch, losses[-1])
    train_s = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        z = model.encode(xt, adj).numpy()
    return z, {"train_s": train_s, "epochs": s.epochs, "loss_first": losses[0] if losses else None,
               "loss_last": losses[-1] if losses else None}


def _sampled_loss(z, pos, n: int, gen):
    """BCE of σ(z_i·z_j) on every edge (target 1) and on as many uniformly drawn node pairs
    (target 0) — the GAE reconstruction loss with negative sampling, O(E) per epoch. The pairs are
    not checked against the edge set (PyG's exact sampler costs more than the rest of an epoch at
    N = 50,000); for a sparse graph a drawn pair is an edge with probability ~E/N²."""
    import torch
    import torch.nn.functional as F

    neg = torch.randint(0, n, (2, pos.shape[1]), generator=gen)
    pos_logit = (z[pos[0]] * z[pos[1]]).sum(-1)
    neg_logit = (z[neg[0]] * z[neg[1]]).sum(-1)
    return -F.logsigmoid(pos_logit).mean() - F.logsigmoid(-neg_logit).mean()


# --------------------------------------------------------------------------- clustering
def cluster_embeddings(z: np.ndarray, s: GraphSettings) -> np.ndarray:
    """Cluster labels (−1 = noise, no cluster) of L2-normalised embeddings."""
    from sklearn.cluster import DBSCAN, HDBSCAN, KMeans

    norm = np.linalg.norm(z, axis=1, keepdims=True)
    zn = z / np.where(norm > 0, norm, 1.0)
    if s.method == "dbscan":
        return DBSCAN(eps=s.eps, min_samples=s.min_samples).fit_predict(zn)
    if s.method == "hdbscan":
        return HDBSCAN(min_cluster_size=max(2, s.min_cluster_size), min_samples=s.min_samples).fit_predict(zn)
    if s.method == "kmeans":
        k = s.n_clusters or max(2, int(round(math.sqrt(len(zn) / 2))))
        return KMeans(n_clusters=min(k, len(zn)), n_init=4, random_state=s.seed).fit_predict(zn)
    raise InputError(f"unknown clustering method {s.method!r}; use dbscan, hdbscan or kmeans")


# --------------------------------------------------------------------------- cache
def content_hash(chunks: Iterable[Any]) -> str:
    """sha256 over every chunk's id, document, order, text and metadata (what the graph reads)."""
    h = hashlib.sha256()
    for c in chunks:
        meta = getattr(c, "metadata", None) or {}
        h.update(json.dumps([str(c.id), str(c.doc_id), getattr(c, "order", 0), c.text, meta],
                            sort_keys=True, default=str).encode())
        h.update(b"\x00")
    return h.hexdigest()


def cluster_key(chunks: Sequence[Any], settings: GraphSettings) -> str:
    """The cache key: the corpus content hash and every setting that changes the assignment."""
    return hashlib.sha256((content_hash(chunks) + settings.key()).encode()).hexdigest()[:24]


@dataclass
class ClusterResult:
    ids: list[str]
    labels: np.ndarray
    key: str
    from_cache: bool
    stats: dict[str, Any]

    def label_of(self) -> dict[str, int]:
        return {i: int(label) for i, label in zip(self.ids, self.labels)}


def cluster_chunks(
    chunks: Sequence[Any], settings: GraphSettings, *, cache_dir: str | Path | None = None,
    embeddings: np.ndarray | None = None, embed_fn: Callable[[list[str]], np.ndarray] | None = None,
) -> ClusterResult:
    """Graph → features → GAE (or, with ``use_graph=False``, the raw features) → clusters.

    With ``cache_dir`` the result is stored as ``<key>.npz`` + ``<key>.json``, key = sha256 of the
    corpus content hash and the settings; an unchanged corpus with the same settings loads it."""
    chunks = list(chunks)
    key = cluster_key(chunks, settings)
    ids = [str(c.id) for c in chunks]
    if cache_dir is not None:
        npz, meta = Path(cache_dir) / f"{key}.npz", Path(cache_dir) / f"{key}.json"
        if npz.exists() and meta.exists():
            data = np.load(npz, allow_pickle=False)
            return ClusterResult([str(i) for i in data["ids"]], data["labels"], key, True, json.loads(meta.read_text()))
    if len(chunks) < 3:  # no PCA, no graph to speak of: every chunk is noise (no cluster)
        labels = np.full(len(chunks), -1, dtype=np.int64)
        return ClusterResult(ids, labels, key, False, {"nodes": len(chunks), "edges": 0, "clusters": 0,
                                                       "noise": len(chunks), "note": "fewer than 3 chunks"})
    t0 = time.perf_counter()
    edges, counts = build_edges(chunks, link_field=settings.link_field, collection_field=settings.collection_field,
                                position_field=settings.position_field)
    texts = [c.text for c in chunks]
    if embeddings is None:
        # the embedding sees "title\ntext", what the corpus layer embeds by default
        titled = [f"{c.title}\n{c.text}" if getattr(c, "title", "") else c.text for c in chunks]
        if embed_fn is None:
            from citegraph.tools.embeddings import embed  # deferred: it loads chromadb (0.4 s)

            embeddings = embed(titled, settings.embedding)
        else:
            embeddings = embed_fn(titled)
    t1 = time.perf_counter()
    x, finfo = node_features(texts, embeddings, dim=settings.dim, alpha=settings.alpha, beta=settings.beta,
                             tfidf_max_features=settings.tfidf_max_features, seed=settings.seed)
    t2 = time.perf_counter()
    if settings.use_graph:
        z, ginfo = train_gae(x, edges, settings)
    else:
        z, ginfo = x, {"train_s": 0.0}
    t3 = time.perf_counter()
    labels = cluster_embeddings(z, settings)
    t4 = time.perf_counter()
    sizes = np.bincount(labels[labels >= 0]) if (labels >= 0).any() else np.zeros(0, dtype=int)
    stats = {"nodes": len(chunks), "edges": int(edges.shape[1] // 2), **counts, **finfo, **ginfo,
             "clusters": int(len(sizes)), "noise": int((labels < 0).sum()),
             "largest_cluster": int(sizes.max()) if len(sizes) else 0,
             "seconds": {"graph_and_embed": t1 - t0, "features": t2 - t1, "gae": t3 - t2, "cluster": t4 - t3}}
    if cache_dir is not None:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        np.savez(npz, ids=np.array(ids), labels=labels.astype(np.int64))
        meta.write_text(json.dumps(stats))
    return ClusterResult(ids, labels.astype(np.int64), key, False, stats)


# --------------------------------------------------------------------------- re-rank
def cluster_rerank(scores: Sequence[float], labels: Sequence[int], *, include_self: bool = True) -> list[float]:
    """Eq. 8-10 over candidates given in their initial ranking (rank_j = position + 1):

    R_i = S_i + Σ_{j∈W_i} S_j·P_j·F_j,  P_j = 1/ln(1 + rank_j),  F_j = S_j / Σ_{k∈W_i} S_k,

    W_i = the candidates in i's cluster (label < 0: no cluster, W_i empty, R_i = S_i). With
    ``include_self`` i is in W_i, so every member of a cluster gets the same bonus and the order
    inside a cluster is kept; without it the bonus comes from the others only and can flip it."""
    s = [float(v) for v in scores]
    members: dict[int, list[int]] = {}
    for j, label in enumerate(labels):
        if int(label) >= 0:
            members.setdefault(int(label), []).append(j)
    out = []
    for i, si in enumerate(s):
        label = int(labels[i])
        w = [j for j in members.get(label, []) if include_self or j != i] if label >= 0 else []
        total = sum(s[j] for j in w)
        bonus = sum(s[j] * (1.0 / math.log(2 + j)) * (s[j] / total) for j in w) if total > 0 else 0.0
        out.append(si + bonus)
    return out
