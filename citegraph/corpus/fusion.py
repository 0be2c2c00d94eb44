"""Fusing the sparse and dense rankings of one query.

``hybrid``: each retriever's scores are min-max normalised over its own candidate list for the query
(its best candidate scores 1, its worst 0; a list whose scores are all equal, or a single candidate,
scores 0, as in ranx), a candidate that the other retriever did not return scores 0 there, and the
fused score is ``alpha * dense + (1 - alpha) * sparse`` over the union of both lists (``alpha`` = the
weight of the DENSE score: 0 = pure BM25 order, 1 = pure dense order). This is ranx's
``fuse(norm="min-max", method="wsum")``. ``rrf``: ``sum over retrievers of 1 / (rrf_k + rank)`` with
``rrf_k`` = 60 as in Cormack et al. (2009): ranx's ``fuse(method="rrf")``.

Why not call ranx per query: its fusion is numba-compiled and costs ~18 s of JIT compilation in every
new process and ~5 ms per single-query call afterwards (measured on this 2-core machine), against a
50 ms latency goal and a CLI that answers one query. :func:`fuse` computes the same formulas for
one query in numpy; :func:`fuse_ranx` is ranx itself for many queries at once (the benchmark's batch
fusion), and ``tests/test_corpus.py`` checks that the two agree. Ties are broken by chunk id.
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "citegraph", "numba"))

RRF_K = 60
_EMPTY = "__citegraph_no_candidates__"
METHODS = ("hybrid", "rrf")


def _min_max(scores: np.ndarray) -> np.ndarray:
    # ranx's min_max_norm: (s - min) / max(max - min, 1e-9)
    lo, hi = float(scores.min()), float(scores.max())
    return (scores - lo) / max(hi - lo, 1e-9)


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    order = sorted(scores, key=lambda k: (-scores[k], k))
    return {k: i + 1 for i, k in enumerate(order)}


def fuse(sparse: dict[str, float], dense: dict[str, float], *, method: str = "hybrid", alpha: float = 0.5,
         rrf_k: int = RRF_K) -> list[tuple[str, float]]:
    """(chunk id, fused score), best first, over the union of both candidate lists."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    fused: dict[str, float] = {}
    if method == "hybrid":
        for run, w in ((sparse, 1.0 - alpha), (dense, alpha)):
            if not run:
                continue
            ids = list(run)
            norm = _min_max(np.fromiter((run[i] for i in ids), dtype=np.float64, count=len(ids)))
            for i, v in zip(ids, norm):
                fused[i] = fused.get(i, 0.0) + w * float(v)
    elif method == "rrf":
        for run in (sparse, dense):
            for i, r in _ranks(run).items():
                fused[i] = fused.get(i, 0.0) + 1.0 / (rrf_k + r)
    else:
        raise ValueError(f"unknown fusion method {method!r} (one of {', '.join(METHODS)})")
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def fuse_ranx(sparse: dict[str, dict[str, float]], dense: dict[str, dict[str, float]], *,
              method: str = "hybrid", alpha: float = 0.5, rrf_k: int = RRF_K) -> dict[str, dict[str, float]]:
    """ranx's fusion of many queries at once: ``{query id: {chunk id: score}}`` runs in, the fused
    run out (the same formulas as :func:`fuse`)."""
    from ranx import Run
    from ranx import fuse as ranx_fuse

    qids = sorted(set(sparse) | set(dense))
    # ranx needs every query in every run: an empty list gets one placeholder that scores 0
    runs = [Run({q: ({k: float(v) for k, v in r[q].items()} if r.get(q) else {_EMPTY: 0.0}) for q in qids})
            for r in (sparse, dense)]
    if method == "hybrid":
        out = ranx_fuse(runs=runs, norm="min-max", method="wsum", params={"weights": [1.0 - alpha, alpha]})
    elif method == "rrf":
        out = ranx_fuse(runs=runs, norm=None, method="rrf", params={"k": rrf_k})
    else:
        raise ValueError(f"unknown fusion method {method!r} (one of {', '.join(METHODS)})")
    return {q: {k: float(v) for k, v in d.items() if k != _EMPTY} for q, d in out.to_dict().items()}
