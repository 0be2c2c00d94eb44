"""Summaries on ODSum-Story dev queries: graph-augmented ODMDS against hybrid top-K with the same
final prompt (``odmds`` with ``rerank=false, reflection=false``).

Queries: ``--n`` stories of the dev split, one query each (story i's query number i mod 5 + 1, so
the question types vary). Per query and method: ROUGE-2 and ROUGE-Lsum F1 (rouge_score, stemmed,
the best of the 4 reference summaries), citation F1 (RAAC's sentence-level definition, by
``--verifier``), words, LLM calls, tokens, seconds. Each finished (method, query) is appended to
``<out>/journal.jsonl`` and skipped when the command is run again (resumable).

    python benchmarks/bench_odmds_summaries.py --index runs/odsum_story_idx --n 10 --k 20 --llm local
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("LANGGRAPH_STRICT_MSGPACK", "true")  # our state types are reachable from the schema
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from odsum_story import load  # noqa: E402

METHODS = {"ours": {}, "hybrid": {"rerank": False, "reflection": False}}


def pick(queries, n: int):
    by_story: dict[str, list] = {}
    for q in queries:
        by_story.setdefault(q.story, []).append(q)
    stories = list(by_story)[:n]
    return [by_story[s][i % len(by_story[s])] for i, s in enumerate(stories)]


def rouge2(output: str, references: list[str]) -> float:
    from rouge_score import rouge_scorer

    from citegraph.metrics import remove_citations

    sc = rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True)
    hyp = remove_citations(output)
    return max(sc.score(r, hyp)["rouge2"].fmeasure for r in references if r.strip())


def run_one(graph, question: str, corpus: str, ctx) -> dict:
    """One graph run with cost accounting; the record keeps the trace (clusters of the K chunks,
    topics, routing, refined texts) read back from the run's checkpoint."""
    import uuid

    from citegraph.tools.usage import UsageTracker

    tracker = UsageTracker()
    cfg = {"callbacks": [tracker], "configurable": {"thread_id": uuid.uuid4().hex}}
    t0 = time.perf_counter()
    with tracker.active():
        out = graph.invoke({"question": question, "corpus": corpus}, context=ctx, config=cfg)
    seconds = round(time.perf_counter() - t0, 1)
    st = graph.get_state(cfg).values
    ans = out["answer"]
    trace = {
        "selected": [{"chunk": c.chunk_id, "cluster": c.cluster, "rank": c.rank, "score": round(c.score, 4),
                      "rerank_score": None if c.rerank_score is None else round(c.rerank_score, 4)}
                     for c in st.get("selected", [])],
        "topics": [t.model_dump() for t in st.get("topics", [])],
        "routing": [r.model_dump() for r in st.get("routing", [])],
        "refinements": [{"index": n.index, "text": n.text[:600], "problems": n.problems} for n in st.get("refinements", [])],
        "reflections": [n.model_dump() for n in st.get("reflections", [])],
        "graph_stats": {k: v for k, v in st.get("graph_stats", {}).items() if k in ("key", "from_cache", "nodes", "clusters")},
    }
    return {"answer": ans.model_dump(mode="json"), "output": ans.render(), "usage": tracker.totals(),
            "seconds": seconds, "trace": trace}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data" / "odsum_story"))
    ap.add_argument("--index", required=True, help="the corpus index (bench_odmds_retrieval.py builds it)")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--verifier", default="default")
    ap.add_argument("--methods", default="ours,hybrid")
    ap.add_argument("--cache-dir", default="runs/odmds_cache", help="cluster cache (shared with the retrieval benchmark)")
    ap.add_argument("--out", default="runs/odmds_summaries")
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="OdmdsContext knobs for every method")
    args = ap.parse_args(argv)

    from citegraph.graphs.registry import build_graph, make_context
    from citegraph.metrics import raac_citation_f1, rouge_lsum
    from citegraph.state.answer import AttributedAnswer
    from citegraph.state.base import CliText

    _, queries = load(args.data)
    chosen = pick(queries, args.n)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    journal = out / "journal.jsonl"
    done: dict[tuple[str, str], dict] = {}
    if journal.exists():
        for line in journal.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: that item runs again
            done[(rec["method"], rec["query_id"])] = rec
    knobs = {k: CliText(v) for k, _, v in (kv.partition("=") for kv in args.set)}
    from langgraph.checkpoint.memory import InMemorySaver

    graph = build_graph("odmds", checkpointer=InMemorySaver())
    methods = [m for m in args.methods.split(",") if m]
    for q in chosen:
        for m in methods:
            if (m, q.id) in done:
                continue
            ctx = make_context("odmds", **{**knobs, "llm": args.llm, "top_k": args.k, "cache_dir": args.cache_dir,
                                           **METHODS[m]})
            rec = run_one(graph, q.question, args.index, ctx)
            ans = AttributedAnswer.model_validate(rec["answer"])
            cit = raac_citation_f1(ans, args.verifier)
            rec.update(method=m, query_id=q.id, question=q.question, k=args.k, llm=args.llm,
                       rouge2=rouge2(rec["output"], q.references), rougeLsum=rouge_lsum(rec["output"], q.references),
                       citation_f1=cit.f1, citation_recall=cit.recall, citation_precision=cit.precision,
                       words=len(ans.render().split()), verifier=args.verifier)
            with open(journal, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
                f.flush()
            done[(m, q.id)] = rec
            print(f"{m} {q.id}: R-2 {rec['rouge2']:.3f} R-Lsum {rec['rougeLsum']:.3f} cit-F1 {cit.f1:.2f} "
                  f"{rec['usage']['llm_calls']} calls {rec['seconds']} s", flush=True)

    ids = [q.id for q in chosen if all((m, q.id) in done for m in methods)]
    print(f"\nODSum-Story, {len(ids)} dev queries (of {len(chosen)} chosen), K = {args.k}, llm = {args.llm}, "
          f"citation F1 by verifier {args.verifier}\n")
    print("| method | ROUGE-2 | ROUGE-Lsum | Cit. F1 | Words | LLM calls | Tokens | s/query |")
    print("|---|---|---|---|---|---|---|---|")
    summary = {}
    for m in methods:
        rows = [done[(m, i)] for i in ids]
        if not rows:
            continue
        mean = lambda key: float(np.mean([r[key] for r in rows]))  # noqa: E731
        summary[m] = {"rouge2": 100 * mean("rouge2"), "rougeLsum": 100 * mean("rougeLsum"),
                      "citation_f1": 100 * mean("citation_f1"), "words": mean("words"),
                      "llm_calls": float(np.mean([r["usage"]["llm_calls"] for r in rows])),
                      "tokens": float(np.mean([r["usage"]["tokens"] for r in rows])), "seconds": mean("seconds")}
        s = summary[m]
        print(f"| {m} | {s['rouge2']:.2f} | {s['rougeLsum']:.2f} | {s['citation_f1']:.1f} | {s['words']:.0f} "
              f"| {s['llm_calls']:.1f} | {s['tokens']:.0f} | {s['seconds']:.0f} |")
    (out / "summary.json").write_text(json.dumps({"queries": ids, "k": args.k, "llm": args.llm, "set": args.set,
                                                  "verifier": args.verifier, "methods": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
