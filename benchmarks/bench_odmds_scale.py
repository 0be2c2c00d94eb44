"""Scale of the odmds offline part: GAE training + clustering on a >= 50,000-chunk graph.

The graph is synthetic but shaped like a corpus: documents are chains of ``--chunks-per-doc``
chunks (neighbour edges), ``--citations`` random citation edges join documents' first chunks, and
the node features (``--dim``, the paper's d = 500) are drawn around ``--topics`` topic centres (a
document's chunks share its topic), so the clustering has structure to find. It measures cost,
not quality: training time per epoch and for all epochs, clustering time, peak memory (the
process's max RSS), beside the memory one dense N×N float32 matrix (the paper's Eq. 5-7 form)
would need.

    OMP_NUM_THREADS=1 python benchmarks/bench_odmds_scale.py --nodes 50000 --epochs 300
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def synthetic_graph(nodes: int, per_doc: int, citations: int, dim: int, topics: int, seed: int):
    rng = np.random.default_rng(seed)
    docs = nodes // per_doc
    n = docs * per_doc
    ids = np.arange(n).reshape(docs, per_doc)
    a, b = ids[:, :-1].ravel(), ids[:, 1:].ravel()
    src = rng.integers(0, docs, citations)
    dst = rng.integers(0, docs, citations)
    keep = src != dst
    a = np.concatenate([a, ids[src[keep], 0]])
    b = np.concatenate([b, ids[dst[keep], 0]])
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)]), axis=1)
    edges = np.concatenate([pairs, pairs[::-1]], axis=1).astype(np.int64)
    centres = rng.normal(size=(topics, dim)).astype(np.float32)
    doc_topic = rng.integers(0, topics, docs)
    x = centres[np.repeat(doc_topic, per_doc)] + 1.5 * rng.normal(size=(n, dim)).astype(np.float32)
    return x, edges


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=50000)
    ap.add_argument("--chunks-per-doc", type=int, default=10)
    ap.add_argument("--citations", type=int, default=20000)
    ap.add_argument("--dim", type=int, default=500)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--out-dim", type=int, default=32)
    ap.add_argument("--method", default="dbscan", choices=["dbscan", "hdbscan", "kmeans"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the figures to this JSON file")
    args = ap.parse_args(argv)

    import torch

    from citegraph.nodes.odmds.graph_cluster import GraphSettings, cluster_embeddings, train_gae

    torch.set_num_threads(args.threads)
    base = peak_rss_mib()
    load_start = os.getloadavg()[0]
    t = time.perf_counter()
    x, edges = synthetic_graph(args.nodes, args.chunks_per_doc, args.citations, args.dim, args.topics, args.seed)
    build_s = time.perf_counter() - t
    n = x.shape[0]
    s = GraphSettings(epochs=args.epochs, hidden=args.hidden, out_dim=args.out_dim, method=args.method, seed=args.seed)
    epoch_times: list[float] = []
    last = [time.perf_counter()]

    cpu_marks: list[float] = []

    def log(epoch, loss):
        cpu_marks.append(time.process_time())
        now = time.perf_counter()
        epoch_times.append(now - last[0])
        last[0] = now

    last[0] = time.perf_counter()
    cpu0 = time.process_time()
    z, info = train_gae(x, edges, s, log=log)
    train_cpu_s = time.process_time() - cpu0
    after_gae = peak_rss_mib()
    t = time.perf_counter()
    labels = cluster_embeddings(z, s)
    cluster_s = time.perf_counter() - t
    sizes = np.bincount(labels[labels >= 0]) if (labels >= 0).any() else np.zeros(0, int)
    res = {
        "nodes": n, "undirected_edges": int(edges.shape[1] // 2), "feature_dim": args.dim, "epochs": args.epochs,
        "hidden": args.hidden, "out_dim": args.out_dim, "threads": args.threads, "loss": s.loss,
        "graph_build_s": round(build_s, 2),
        "epoch_s_median": round(float(np.median(epoch_times)), 4), "import_setup_and_first_epoch_s": round(epoch_times[0], 2),
        "train_s_total": round(info["train_s"], 1),
        "train_cpu_s_incl_setup": round(train_cpu_s, 1),
        "cpu_s_per_epoch": round(float(np.median(np.diff(cpu_marks))) if len(cpu_marks) > 1 else train_cpu_s, 4),
        "cluster_method": args.method, "cluster_s": round(cluster_s, 1), "clusters": int(len(sizes)),
        "noise": int((labels < 0).sum()), "largest_cluster": int(sizes.max()) if len(sizes) else 0,
        "peak_rss_mib_before": round(base), "peak_rss_mib_after_gae": round(after_gae),
        "peak_rss_mib_total": round(peak_rss_mib()),
        "dense_nxn_float32_gib": round(n * n * 4 / 2**30, 2),
        "loss_first": round(info["loss_first"], 4), "loss_last": round(info["loss_last"], 4),
        "loadavg_1min_start": round(load_start, 1), "loadavg_1min_end": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(), "torch": torch.__version__, "cpu": platform.processor() or platform.machine(),
    }
    print(f"| N | edges | d | epochs | threads | s/epoch (median) | {args.epochs} epochs (s) | CPU s/epoch (median) | {args.method} (s) "
          f"| clusters | noise | peak RSS (MiB) | dense N×N float32 (GiB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {n:,} | {res['undirected_edges']:,} | {args.dim} | {args.epochs} | {args.threads} | {res['epoch_s_median']} "
          f"| {res['train_s_total']} | {res['cpu_s_per_epoch']} | {res['cluster_s']} | {res['clusters']} | {res['noise']} "
          f"| {res['peak_rss_mib_total']:,} | {res['dense_nxn_float32_gib']} |")
    print(f"(load average {res['loadavg_1min_start']} at the start, {res['loadavg_1min_end']} at the end, "
          f"on {res['cpus']} CPUs: other processes share the machine)")
    print(json.dumps(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
