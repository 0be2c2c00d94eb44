"""Retrieval on ODSum-Story (Shen & Chai, Table 2): P/R/F1@K for BM25, dense, hybrid and the
graph-augmented retriever (with and without consecutive-chapter edges) and its ablations.

Corpus: the full 1,190-chapter collection (1,138 non-empty chapters; ``../shared/data/odsum_story``)
indexed by the corpus layer (``build_index``; chunks of 256 tokens, MiniLM). Queries: the 125 dev
queries; gold = every non-empty chapter of the query's story. A ranked chunk list is mapped to its
first K DISTINCT chapters (a second chunk of a chapter already counted adds nothing); P@K = hits/K,
R@K = hits/|gold|; F1@K = 2·P̄·R̄/(P̄+R̄) of the mean P and mean R (as the paper). Every method ranks
the same number of chunks (candidate_factor·K) before the distinct-chapter cut.

No LLM. The cluster assignment of each graph setting is computed once and cached (``--cache-dir``).

    OMP_NUM_THREADS=1 python benchmarks/bench_odmds_retrieval.py --index runs/odsum_story_idx
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from odsum_story import chroma_embed_fn, distinct_documents, load  # noqa: E402

PAPER = {  # Table 2, ODSum-Story, its own split and GPT embeddings: F1@3/8/10
    "bm25": (40.35, 49.53, 48.39), "dense": (38.00, 42.43, 40.46),
    "hybrid": (41.00, 51.44, 48.86), "ours": (42.68, 54.25, 52.54),
}


def prf(ranked_docs: list[list[str]], golds: list[frozenset], k: int) -> dict[str, float]:
    ps, rs = [], []
    for docs, gold in zip(ranked_docs, golds):
        top = distinct_documents(docs, k)
        hit = len(set(top) & gold)
        ps.append(hit / k)
        rs.append(hit / len(gold))
    p, r = float(np.mean(ps)), float(np.mean(rs))
    return {"P": 100 * p, "R": 100 * r, "F1": 100 * (2 * p * r / (p + r) if p + r else 0.0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data" / "odsum_story"))
    ap.add_argument("--index", required=True, help="index folder (built here if absent)")
    ap.add_argument("--ks", default="3,8,10")
    ap.add_argument("--limit", type=int, default=0, help="first N queries (0 = all 125)")
    ap.add_argument("--cache-dir", default="runs/odmds_cache")
    ap.add_argument("--out", default="runs/odmds_retrieval.json")
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                    help="OdmdsContext knobs for the graph variants (e.g. gae_epochs=100)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from citegraph.corpus import Corpus, build_index
    from citegraph.nodes.odmds import candidates_from_hits, corpus_clusters, graph_settings, select
    from citegraph.state.base import CliText
    from citegraph.state.odmds import OdmdsContext

    docs, queries = load(args.data)
    if args.limit:
        queries = queries[: args.limit]
    ks = [int(k) for k in args.ks.split(",")]
    if not Path(args.index).exists():
        t = time.perf_counter()
        print(build_index(docs, args.index).summary(), f"({time.perf_counter() - t:.0f} s)", flush=True)
    corpus = Corpus.open(args.index)
    embed_fn = chroma_embed_fn(corpus)
    knobs = {}
    for kv in args.set:
        key, _, val = kv.partition("=")
        knobs[key] = CliText(val)
    base = OdmdsContext(**knobs)
    factor = base.candidate_factor
    variants = {  # name -> (context overrides, uses clusters)
        "ours": {},
        "ours+consecutive": {"collection_field": "story", "position_field": "chapter"},
        "ours (i not in W_i)": {"include_self": False},
        "no graph": {"use_graph": False},
    }
    golds = [q.gold for q in queries]
    results: dict[str, dict] = {}
    timing: dict[str, float] = {}

    # baselines: the same candidate_factor·K chunks, ranked by the retriever alone
    for mode in ("bm25", "dense", "hybrid"):
        t = time.perf_counter()
        results[mode] = {}
        for k in ks:
            ranked = [[h.chunk.doc_id for h in corpus.search(q.question, k=factor * k, mode=mode, alpha=base.retrieval_alpha)]
                      for q in queries]
            results[mode][k] = prf(ranked, golds, k)
        timing[mode] = (time.perf_counter() - t) / (len(queries) * len(ks))
    results["no re-rank"] = results["hybrid"]  # the ablation's retrieval IS the hybrid top K

    hybrid_hits = {k: [corpus.search(q.question, k=factor * k, mode="hybrid", alpha=base.retrieval_alpha) for q in queries]
                   for k in ks}
    graph_stats = {}
    for name, over in variants.items():
        ctx = OdmdsContext(**{**knobs, **over})
        t = time.perf_counter()
        labels, stats = corpus_clusters(corpus, graph_settings(ctx), args.cache_dir, embed_fn=embed_fn)
        graph_stats[name] = {k: v for k, v in stats.items() if k in (
            "nodes", "edges", "neighbour", "citation", "consecutive_doc", "d", "clusters", "noise",
            "largest_cluster", "train_s", "seconds", "from_cache", "key")}
        graph_stats[name]["wall_s"] = round(time.perf_counter() - t, 1)
        print(f"{name}: {graph_stats[name]}", flush=True)
        results[name] = {}
        for k in ks:
            ranked = []
            for hits in hybrid_hits[k]:
                sel = select(candidates_from_hits(hits, labels), len(hits), rerank=True, include_self=ctx.include_self)
                ranked.append([c.doc_id for c in sel])
            results[name][k] = prf(ranked, golds, k)

    order = ["bm25", "dense", "hybrid", "ours", "ours+consecutive", "ours (i not in W_i)", "no graph", "no re-rank"]
    head = " | ".join(f"P@{k} | R@{k} | F1@{k}" for k in ks)
    print(f"\nODSum-Story retrieval, {len(queries)} dev queries, corpus {len(docs)} chapters "
          f"({graph_stats['ours'].get('nodes')} chunks), candidates = {factor}·K chunks, first K distinct chapters\n")
    print(f"| method | {head} |")
    print("|---|" + "---|" * (3 * len(ks)))
    for name in order:
        cells = " | ".join(f"{results[name][k]['P']:.2f} | {results[name][k]['R']:.2f} | {results[name][k]['F1']:.2f}" for k in ks)
        print(f"| {name} | {cells} |")
    if ks == [3, 8, 10]:
        print("\nPaper (Table 2, its split, GPT embeddings), F1@3/8/10: " +
              "; ".join(f"{m} {' / '.join(str(v) for v in f)}" for m, f in PAPER.items()))
    out = {"queries": len(queries), "documents": len(docs), "ks": ks, "candidate_factor": factor, "knobs": args.set,
           "results": results, "graph": graph_stats, "search_s_per_query": timing,
           "embeddings_from_index": embed_fn.from_index}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
