"""Clustering short texts (GINGER's information nuggets) by facet.

``bertopic``: BERTopic on precomputed embeddings (``embedding_model=None`` and ``embeddings=``, so
BERTopic never loads a sentence-transformers model), UMAP + HDBSCAN with GINGER's settings; the
outlier topic (-1) is kept as one cluster. ``lsa``: TF-IDF + TruncatedSVD, then the same HDBSCAN
(the paper's LSA ablation). Fewer than ``min_items`` texts: one cluster each (the paper's footnote).

Both return clusters as lists of indices into the input, in order of first appearance.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

METHODS = ("bertopic", "lsa")


@dataclass
class Clustering:
    clusters: list[list[int]]
    method: str
    seconds: float = 0.0
    outliers: list[int] = field(default_factory=list)  # indices HDBSCAN called noise (kept as one cluster)
    note: str = ""


def _group(labels: Sequence[int]) -> tuple[list[list[int]], list[int]]:
    """Indices per label in order of first appearance; -1 (noise) becomes one cluster too."""
    order: list[int] = []
    by: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        lab = int(lab)
        if lab not in by:
            by[lab] = []
            order.append(lab)
        by[lab].append(i)
    return [by[lab] for lab in order], list(by.get(-1, []))


def _hdbscan(min_cluster_size: int, min_samples: int):
    from hdbscan import HDBSCAN

    return HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples, metric="euclidean",
                   cluster_selection_method="eom", prediction_data=False)


def _umap(n: int, n_neighbors: int, n_components: int, min_dist: float, seed: int):
    from umap import UMAP

    return UMAP(n_neighbors=max(2, min(n_neighbors, n - 1)), n_components=n_components, min_dist=min_dist,
                metric="cosine", random_state=seed, low_memory=False)


def cluster_bertopic(texts: Sequence[str], embeddings: np.ndarray, *, n_neighbors: int = 50, n_components: int = 2,
                     min_dist: float = 0.01, min_cluster_size: int = 2, min_samples: int = 1,
                     seed: int = 42) -> tuple[list[int], str]:
    """BERTopic topic labels of ``texts`` from the given embeddings (nothing is downloaded or loaded)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bertopic import BERTopic
    from sklearn.feature_extraction.text import CountVectorizer

    n = len(texts)
    model = BERTopic(
        embedding_model=None,
        umap_model=_umap(n, n_neighbors, n_components, min_dist, seed),
        hdbscan_model=_hdbscan(min_cluster_size, min_samples),
        # the default vectorizer drops nothing; min_df=1 keeps tiny topics describable
        vectorizer_model=CountVectorizer(stop_words="english", min_df=1),
        calculate_probabilities=False,
        verbose=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels, _ = model.fit_transform(list(texts), embeddings=np.asarray(embeddings, dtype=np.float32))
    return [int(x) for x in labels], "bertopic"


def cluster_lsa(texts: Sequence[str], *, n_components: int = 2, min_cluster_size: int = 2, min_samples: int = 1,
                seed: int = 42) -> tuple[list[int], str]:
    """LSA (TF-IDF + TruncatedSVD, L2-normalised) then HDBSCAN."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    tfidf = TfidfVectorizer(stop_words="english").fit_transform(list(texts))
    k = max(1, min(n_components, tfidf.shape[1] - 1, len(texts) - 1))
    if tfidf.shape[1] < 2:
        return [0] * len(texts), "lsa: vocabulary too small, one cluster"
    z = normalize(TruncatedSVD(n_components=k, random_state=seed).fit_transform(tfidf))
    labels = _hdbscan(min_cluster_size, min_samples).fit_predict(z)
    return [int(x) for x in labels], "lsa"


def cluster_texts(texts: Sequence[str], *, method: str = "bertopic", embeddings: np.ndarray | None = None,
                  min_items: int = 4, lsa_components: int = 2, **kw) -> Clustering:
    """Cluster ``texts``; ``embeddings`` (one row per text) are required for ``bertopic``."""
    t0 = time.perf_counter()
    n = len(texts)
    if method not in METHODS:
        raise ValueError(f"unknown clustering method {method!r}; use one of {', '.join(METHODS)}")
    if n < min_items:
        return Clustering([[i] for i in range(n)], "singletons", time.perf_counter() - t0,
                          note=f"{n} nuggets < {min_items}: one cluster each")
    if method == "bertopic":
        if embeddings is None or len(embeddings) != n:
            raise ValueError("bertopic clustering needs one embedding per text")
        labels, note = cluster_bertopic(texts, embeddings, **kw)
    else:
        labels, note = cluster_lsa(texts, n_components=lsa_components,
                                   **{k: v for k, v in kw.items() if k in ("min_cluster_size", "min_samples", "seed")})
    clusters, outliers = _group(labels)
    return Clustering(clusters, method, time.perf_counter() - t0, outliers=outliers, note=note)
