"""Retrieval benchmark of the corpus layer (``citegraph.corpus``): quality on ODSum-Story and SQuAI's data,
build time / size / latency at >= 100k chunks, locally and through a Chroma server on loopback.

    OMP_NUM_THREADS=1 python benchmarks/bench_retrieval.py --part odsum
    OMP_NUM_THREADS=1 python benchmarks/bench_retrieval.py --part squai [--embedder minilm-int8]
    OMP_NUM_THREADS=1 python benchmarks/bench_retrieval.py --part scale          # builds runs/bench_retrieval/scale_idx once
    OMP_NUM_THREADS=1 python benchmarks/bench_retrieval.py --part scale-server   # needs the scale index; starts `chroma run`

Every index is cached under ``runs/bench_retrieval/`` (a second run reuses it: the build is a no-op by
content hashes). Metrics: ranx (precision, recall, ndcg@10, mrr) over the runs; F1@K is the harmonic
mean of the MEAN precision and the MEAN recall, as the Graph-ODMDS paper computes it. Hybrid runs
are fused per query by ``Corpus.search`` (numpy, the same formulas as ranx ``wsum``/``min-max``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "runs" / "bench_retrieval"

PAPER_HYBRID = {3: (72.18, 28.63, 41.00), 8: (52.64, 50.30, 51.44), 10: (45.23, 53.13, 48.86)}


def _torch_threads() -> None:
    try:
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    except ImportError:
        pass


def _progress(label: str):
    last = [0.0]
    t0 = time.perf_counter()

    def cb(rep) -> None:
        now = time.perf_counter()
        if now - last[0] > 30:
            last[0] = now
            print(f"  [{label}] {rep.docs_seen} docs, {rep.chunks_added} chunks added, {now - t0:.0f} s "
                  f"({time.strftime('%H:%M:%S', time.gmtime())} UTC)", flush=True)

    return cb


def _dir_size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def _table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def _evaluate(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], metrics: list[str]) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    run = {q: (r if r else {"__none__": 0.0}) for q, r in run.items()}
    res = evaluate(Qrels(qrels), Run(run), metrics, make_comparable=True)
    return {m: float(res[m]) for m in metrics} if isinstance(res, dict) else {metrics[0]: float(res)}


# ------------------------------------------------------------------------------------------ ODSum
def odsum_docs_and_queries():
    docs, queries, qrels = [], {}, {}
    for name in ("documents_dev.jsonl", "documents_train_corpus.jsonl", "documents_test_corpus.jsonl"):
        split = name.split("_")[1].split(".")[0]
        for n, line in enumerate(open(DATA / "odsum_story" / name, encoding="utf-8")):
            r = json.loads(line)
            story = f"{split}{n}"
            for c, text in enumerate(r["divided_document"]):
                if text.strip():
                    docs.append({"id": f"{story}-ch{c}", "title": r["title"].strip(), "text": text,
                                 "story": story, "split": split})
    gold_by_title: dict[str, list[str]] = {}
    for d in docs:
        if d["split"] == "dev":
            gold_by_title.setdefault(d["title"], []).append(d["id"])
    for line in open(DATA / "odsum_story" / "queries_dev.jsonl", encoding="utf-8"):
        for q in json.loads(line):
            qid = f"{q['title'].strip()}#{q['question_number']}"
            queries[qid] = q["question_text"]
            qrels[qid] = {d: 1 for d in gold_by_title[q["title"].strip()]}
    return docs, queries, qrels


def doc_ranking(ranked: list[tuple[str, float]], k: int) -> dict[str, float]:
    """Chunk ranking -> document ranking: a document takes its best chunk's place (chunk ids are
    "{doc_id}#{order}"); scores are rank-preserving positive numbers."""
    out: dict[str, float] = {}
    for cid, _ in ranked:
        doc = cid.rsplit("#", 1)[0]
        if doc not in out:
            out[doc] = float(len(ranked) - len(out))
            if len(out) == k:
                break
    return out


def sweep(c, queries: dict[str, str], configs, depth: int, k: int, cache: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Each query's candidate lists (top ``depth`` of BM25 and of dense) fetched once, then ranked
    (bm25 / dense) or fused (hybrid at each alpha, rrf) exactly as Corpus.search does, and rolled up
    to documents. Cached in ``cache``."""
    from citegraph.corpus.index import rank

    cands = json.loads(cache.read_text()) if cache.exists() else {}
    todo = [q for q in queries if q not in cands]
    for i, qid in enumerate(todo, 1):
        sp, de = c.candidates_for(queries[qid], depth)
        cands[qid] = [sp, de]
        if i % 50 == 0 or i == len(todo):
            cache.write_text(json.dumps(cands))
    return {label: {qid: doc_ranking(rank(cands[qid][0], cands[qid][1], mode, a), k) for qid in queries}
            for label, mode, a in configs}


def part_odsum(args) -> None:
    from citegraph.corpus import Corpus, build_index

    docs, queries, qrels = odsum_docs_and_queries()
    n_gold = [len(v) for v in qrels.values()]
    print(f"ODSum-Story: {len(docs)} non-empty chapters as documents, {len(queries)} dev queries, "
          f"gold chapters per query {min(n_gold)}-{max(n_gold)} (mean {statistics.mean(n_gold):.1f})")
    idx = OUT / "odsum_idx"
    t0 = time.perf_counter()
    rep = build_index(docs, idx, chunk_tokens=256, on_progress=_progress("odsum"))
    print(f"index: {rep.summary()} ({time.perf_counter() - t0:.0f} s incl. load)")
    c = Corpus.open(idx)
    alphas = [round(a * 0.1, 1) for a in range(11)]
    configs = [("bm25", "bm25", 0.0), ("dense", "dense", 1.0)] + [(f"hybrid a={a}", "hybrid", a) for a in alphas] \
        + [("rrf", "rrf", 0.5)]
    # chunk hits are rolled up to chapters: 200 candidates of each retriever leave >= 10 distinct chapters
    store = sweep(c, queries, configs, depth=200, k=10, cache=OUT / "odsum_candidates.json")
    # the queries name the story ("What is the plot of <title>?") and the index embeds/BM25-indexes each
    # chunk with its chapter's title line: BM25 over the chunk texts alone shows how much that gives
    from citegraph.corpus.index import _Sparse, rank

    chunks = list(c.chunks())
    bare = _Sparse.build([x.id for x in chunks], [x.text for x in chunks])
    store["bm25 (no titles)"] = {qid: doc_ranking(rank(bare.search(q, 200), {}, "bm25"), 10) for qid, q in queries.items()}
    configs = configs + [("bm25 (no titles)", "bm25", 0.0)]
    metrics = [f"precision@{k}" for k in (3, 8, 10)] + [f"recall@{k}" for k in (3, 8, 10)] + ["ndcg@10"]
    results = {label: _evaluate(qrels, store[label], metrics) for label, _, _ in configs}
    best = max((f"hybrid a={a}" for a in alphas), key=lambda l: results[l]["ndcg@10"] + results[l]["recall@10"])
    print("\nalpha sweep (dev queries; alpha = weight of the dense score), nDCG@10 / F1@10:")
    print(_table(["alpha"] + [str(a) for a in alphas],
                 [["nDCG@10"] + [f"{100 * results[f'hybrid a={a}']['ndcg@10']:.2f}" for a in alphas],
                  ["F1@10"] + [f"{100 * _f1(results[f'hybrid a={a}'], 10):.2f}" for a in alphas]]))
    rows = []
    show = [("bm25", "bm25"), ("bm25, chapter titles not indexed", "bm25 (no titles)"), ("dense", "dense"), ("hybrid a=0.4 (paper's 0.4 dense / 0.6 sparse)", "hybrid a=0.4"),
            (f"hybrid best ({best.split()[1]}, picked on these dev queries by nDCG@10+R@10)", best), ("rrf (k=60)", "rrf")]
    for name, label in show:
        r = results[label]
        row = [name]
        for k in (3, 8, 10):
            row += [f"{100 * r[f'precision@{k}']:.2f}", f"{100 * r[f'recall@{k}']:.2f}", f"{100 * _f1(r, k):.2f}"]
        rows.append(row + [f"{100 * r['ndcg@10']:.2f}"])
    rows.append(["paper Table 2 hybrid (test split, GPT embeddings)"]
                + [f"{x:.2f}" for k in (3, 8, 10) for x in PAPER_HYBRID[k]] + ["-"])
    print(f"\nODSum-Story retrieval, {len(queries)} dev queries; corpus: the {len(docs)} non-empty of ODSum's 1,190 chapters "
          "(chapter = document; chunk hits rolled up to chapters)")
    print(_table(["retriever", "P@3", "R@3", "F1@3", "P@8", "R@8", "F1@8", "P@10", "R@10", "F1@10", "nDCG@10"], rows))


def _f1(r: dict[str, float], k: int) -> float:
    p, rc = r[f"precision@{k}"], r[f"recall@{k}"]
    return 2 * p * rc / (p + rc) if p + rc else 0.0


# ------------------------------------------------------------------------------------------ SQuAI
def part_squai(args) -> None:
    from citegraph.corpus import Corpus, build_index

    data = json.load(open(DATA / "squai" / "arxiv_deepeval_simple.json", encoding="utf-8"))["goldens"]
    docs, queries, qrels = [], {}, {}
    for i, g in enumerate(data):
        chunks = [c for c in g["context"] if c.strip()]
        docs.append({"id": f"q{i}", "title": "", "text": "\n\n".join(chunks)})
        queries[f"q{i}"] = g["input"]
        qrels[f"q{i}"] = {f"q{i}": 1}
    emb = args.embedder
    idx = OUT / ("squai_idx" if emb == "minilm" else f"squai_idx_{emb}")
    t0 = time.perf_counter()
    rep = build_index(docs, idx, chunk_tokens=256, embedder=emb, on_progress=_progress("squai"))
    wall = time.perf_counter() - t0
    print(f"SQuAI: {len(docs)} documents (each question's context chunks), {len(queries)} questions; embedder {emb}; "
          f"index: {rep.summary()}" + (f"; built in {wall:.1f} s = {rep.chunks_added / wall:.1f} chunks/s "
                                       f"(the embedder's load included)" if rep.chunks_added else ""))
    c = Corpus.open(idx)
    configs = [("bm25", "bm25", 0.0), ("dense", "dense", 1.0), ("hybrid a=0", "hybrid", 0.0),
               ("hybrid a=0.35", "hybrid", 0.35), ("hybrid a=0.65", "hybrid", 0.65), ("hybrid a=1", "hybrid", 1.0),
               ("rrf", "rrf", 0.5)]
    store = sweep(c, queries, configs, depth=100, k=10,
                  cache=OUT / ("squai_candidates.json" if emb == "minilm" else f"squai_candidates_{emb}.json"))
    rows = []
    for label, _, _ in configs:
        r = _evaluate(qrels, store[label], ["recall@5", "mrr@10"])
        rows.append([label, f"{100 * r['recall@5']:.2f}", f"{r['mrr@10']:.4f}"])
    print("\nSQuAI arxiv_deepeval_simple: each question's own context (one document per question)")
    print(_table(["retriever", "Recall@5", "MRR@10"], rows))


# ------------------------------------------------------------------------------------------ scale
def scale_corpus(path: Path, target: int) -> int:
    """Real text from ../shared/data: NLI premises, attribution claims, NLI hypotheses (deduplicated,
    at least 20 characters), one document each, until ``target`` documents."""
    if path.exists():
        return sum(1 for _ in open(path))
    seen: set[str] = set()
    n = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        def emit(text: str, source: str) -> None:
            nonlocal n
            t = " ".join(text.split())
            if len(t) < 20 or t in seen or n >= target:
                return
            seen.add(t)
            out.write(json.dumps({"id": f"s{n}", "text": t, "source": source}) + "\n")
            n += 1

        # short texts first: embedding cost grows with length, and this machine's 2 cores are shared
        nli = [json.loads(l) for l in open(DATA / "nli_train" / "nli_pairs.jsonl", encoding="utf-8")]
        for r in nli:
            emit(r["premise"], "nli:premise")
        pairs = [json.loads(l) for l in open(DATA / "nli_train" / "attribution_pairs.jsonl", encoding="utf-8")]
        for r in pairs:
            emit(r["hypothesis"], "attribution:claim")
        for r in nli:
            emit(r["hypothesis"], "nli:hypothesis")
    return n


def latency(c, queries: list[str], k: int = 10) -> tuple[float, float, float]:
    c.search(queries[0], k=k, mode="hybrid", alpha=0.5)  # warm-up (model load), not counted
    ts = []
    for q in queries:
        t = time.perf_counter()
        c.search(q, k=k, mode="hybrid", alpha=0.5)
        ts.append(1000 * (time.perf_counter() - t))
    ts.sort()
    return ts[len(ts) // 2], ts[int(0.95 * len(ts)) - 1], statistics.mean(ts)


def latency_queries(n: int = 200) -> list[str]:
    """NLI hypotheses that are not in the scale corpus."""
    indexed = {json.loads(l)["text"] for l in open(OUT / "scale_corpus.jsonl", encoding="utf-8")}
    qs: list[str] = []
    for l in open(DATA / "nli_train" / "nli_pairs.jsonl", encoding="utf-8"):
        h = " ".join(json.loads(l)["hypothesis"].split())
        if h not in indexed and h not in qs and len(h) > 20:
            qs.append(h)
        if len(qs) == n:
            break
    return qs


def part_scale(args) -> None:
    from citegraph.corpus import Corpus, build_index

    corpus = OUT / "scale_corpus.jsonl"
    n = scale_corpus(corpus, args.scale_docs)
    idx = OUT / "scale_idx"
    print(f"scale corpus: {n} documents ({corpus})", flush=True)
    timing = OUT / "scale_build.json"
    if args.measure_only:  # the index as it stands (e.g. a build stopped early); its build time comes from its log
        rep = None
        built = {"seconds": args.build_seconds or float("nan"), "summary": "build stopped early; time from its log"}
    else:
        t0 = time.perf_counter()
        rep = build_index(corpus, idx, chunk_tokens=256, on_progress=_progress("scale"), batch_docs=512)
        wall = time.perf_counter() - t0
        if rep.chunks_added:
            timing.write_text(json.dumps({"seconds": wall, "summary": rep.summary(), "chunks": rep.total_chunks,
                                          "chunks_added": rep.chunks_added}))
        built = json.loads(timing.read_text()) if timing.exists() else {"seconds": float("nan"), "summary": "?"}
        print(f"this run: {rep.summary()}")
    c = Corpus.open(idx)
    size_chroma, size_bm25 = _dir_size(idx / "chroma"), _dir_size(idx / "bm25")
    p50, p95, mean = latency(c, latency_queries())
    print("\nScale, local index (embedded Chroma PersistentClient + bm25s mmap), OMP_NUM_THREADS=1")
    # a build resumed after a stop: its seconds and rate are those of the chunks that run added
    rate = built.get("chunks_added", len(c)) / built["seconds"]
    print(_table(["chunks", "build s (last build run)", "chunks/s (that run)", "Chroma MB", "bm25s MB", "hybrid top-10 p50 ms", "p95 ms", "mean ms"],
                 [[len(c), f"{built['seconds']:.0f}", f"{rate:.0f}", f"{size_chroma / 1e6:.0f}",
                   f"{size_bm25 / 1e6:.0f}", f"{p50:.1f}", f"{p95:.1f}", f"{mean:.1f}"]]))
    if rep is not None:
        print(f"(first build: {built['summary']}; this run: {rep.seconds:.1f} s)")
    else:
        print(f"({built['summary']})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_chroma_server(path: Path, timeout: float = 120.0):
    """`chroma run` on a free loopback port; (process, port). Raises RuntimeError if it does not come up."""
    import urllib.request

    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = _free_port()
    log = open(path.parent / f"chroma_{port}.log", "w")
    proc = subprocess.Popen([exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"chroma run exited with status {proc.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2)
            return proc, port
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("chroma run did not answer its heartbeat")


def part_scale_server(args) -> None:
    """The scale index's chunks (embeddings included, copied from the local index: the embedding
    cost is the local build's) into a Chroma server on loopback, then the same latency run."""
    import numpy as np

    import chromadb
    from citegraph.corpus import Corpus
    from citegraph.corpus.index import _STAMP_KEY, _chroma_settings, _create_collection, _settings_of

    idx = OUT / "scale_idx"
    src = chromadb.PersistentClient(path=str(idx / "chroma"), settings=_chroma_settings()).get_collection("citegraph")
    settings = _settings_of(src, str(idx))
    server_dir = OUT / "chroma_server"
    shutil.rmtree(server_dir, ignore_errors=True)
    server_dir.mkdir(parents=True)
    proc, port = start_chroma_server(server_dir)
    try:
        spec = f"chroma+http://127.0.0.1:{port}/scale"
        client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=_chroma_settings())
        dst = _create_collection(client, "scale", settings)
        t0 = time.perf_counter()
        page, total = 2000, src.count()
        for off in range(0, total, page):
            r = src.get(include=["embeddings", "documents", "metadatas"], limit=page, offset=off)
            dst.add(ids=r["ids"], embeddings=np.asarray(r["embeddings"], dtype=np.float32), documents=r["documents"],
                    metadatas=r["metadatas"])
        dst.modify(metadata={**settings, _STAMP_KEY: "copied"})
        copy_s = time.perf_counter() - t0
        local = OUT / "scale_server_local"
        shutil.rmtree(local, ignore_errors=True)
        t0 = time.perf_counter()
        c = Corpus.open(spec, local_dir=local)  # builds the bm25s side from the server's chunks
        open_s = time.perf_counter() - t0
        p50, p95, mean = latency(c, latency_queries())
        print("\nScale, Chroma server (`chroma run` on 127.0.0.1) through chroma+http://, OMP_NUM_THREADS=1")
        print(_table(["chunks", "copy into server s", "first open (bm25s from server) s", "server dir MB",
                      "hybrid top-10 p50 ms", "p95 ms", "mean ms"],
                     [[len(c), f"{copy_s:.0f}", f"{open_s:.0f}", f"{_dir_size(server_dir) / 1e6:.0f}",
                       f"{p50:.1f}", f"{p95:.1f}", f"{mean:.1f}"]]))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["odsum", "squai", "scale", "scale-server", "all"], default="all")
    ap.add_argument("--embedder", default="minilm", help="squai: the index's embedder (minilm, minilm-int8)")
    ap.add_argument("--scale-docs", type=int, default=102_000, help="documents in the scale corpus")
    ap.add_argument("--measure-only", action="store_true", help="scale: measure the index as it is, do not build")
    ap.add_argument("--build-seconds", type=float, default=None, help="scale --measure-only: the build's wall time, from its log")
    args = ap.parse_args()
    _torch_threads()
    OUT.mkdir(parents=True, exist_ok=True)
    parts = ["odsum", "squai", "scale", "scale-server"] if args.part == "all" else [args.part]
    for p in parts:
        {"odsum": part_odsum, "squai": part_squai, "scale": part_scale, "scale-server": part_scale_server}[p](args)
        print(flush=True)


if __name__ == "__main__":
    main()
