"""GINGER benchmarks (2-core CPU, embedded model).

  formats     nugget detection: JSON list vs tagged copy (<IN>...</IN>) on the first ELI5 passages
              (spans proposed, kept exact / fuzzy, rejected, seconds per passage)
  clustering  BERTopic (offline, our embeddings) and LSA time on a realistic nugget count
  one         the graph end to end on one ELI5 item, with its trace
  eli5        the ELI5 comparison: ginger (top-5, 3 sentences), ginger (400 words), vanilla, raac:
              claim recall, V_strict with the 3 gold claims as vital nuggets, citation recall/precision/F1,
              words, LLM calls, tokens, seconds per question; 95% bootstrap intervals. Resumable: the
              generation is `citegraph bench` (journalled per item) and the nugget assignments are
              journalled per (method, item) in OUT/nuggets.jsonl.

  OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/bench_ginger.py formats --passages 6
  OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/bench_ginger.py eli5 --limit 20 --out runs/eli5_24
  (the eli5 preset by default, so the vanilla and raac outputs of #24's ELI5 bench in runs/eli5_24 are re-used)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
ELI5 = REPO.parent / "shared" / "data" / "alce" / "eli5_dev60.json"
ELI5_METHODS = ["ginger:top_n=5:max_sentences=3", "ginger:top_n=5", "vanilla", "raac"]


def _items(path: Path, limit: int):
    from citegraph.run.datasets import load_items

    return load_items(path, limit=limit)


def cmd_formats(a) -> None:
    from citegraph.nodes.ginger.nodes import _coerce_spans, parse_tagged, spans_to_nuggets
    from citegraph.prompts import ginger as P
    from citegraph.state.ginger import GingerContext
    from citegraph.tools.models import chat_reply, structured
    ctx = GingerContext(llm=a.llm)
    items = _items(Path(a.data), None)
    passages = [(it.question, d) for it in items for d in it.documents[: a.per_item]][: a.passages]
    rows = {f: {"proposed": 0, "exact": 0, "fuzzy": 0, "rejected": 0, "empty": 0, "seconds": 0.0, "tokens": 0} for f in a.formats}
    for q, d in passages:
        for f in a.formats:
            t0 = time.perf_counter()
            if f == "tagged":
                reply = chat_reply(a.llm, P.tagged_prompt(q, d.title, d.text), temperature=0, max_tokens=ctx.max_new_tokens)
                spans = parse_tagged(reply.text)
            else:
                obj, _ = structured(a.llm, P.json_prompt(q, d.title, d.text), P.SpanList, fallback=P.SpanList,
                                    coerce=_coerce_spans, retries=1, temperature=0, max_tokens=ctx.max_new_tokens)
                spans = obj.nuggets
            dt = time.perf_counter() - t0
            kept, rejected = spans_to_nuggets(spans, 1, d.text, ctx)
            r = rows[f]
            r["proposed"] += len(spans)
            r["exact"] += sum(n.match == "exact" for n in kept)
            r["fuzzy"] += sum(n.match == "fuzzy" for n in kept)
            r["rejected"] += len(rejected)
            r["empty"] += not kept
            r["seconds"] += dt
            print(json.dumps({"format": f, "passage": d.text[:60], "spans": spans[:6], "kept": [n.text for n in kept],
                              "rejected": rejected[:6], "seconds": round(dt, 1)}), flush=True)
    n = len(passages)
    print(f"\n{n} ELI5 passages (first {a.per_item} of each item), model {a.llm}\n")
    print("| format | spans proposed | kept exact | kept fuzzy | rejected | kept % | passages without a nugget | s/passage |")
    print("|---|---|---|---|---|---|---|---|")
    for f, r in rows.items():
        kept = r["exact"] + r["fuzzy"]
        pct = 100 * kept / r["proposed"] if r["proposed"] else 0.0
        print(f"| {f} | {r['proposed']} | {r['exact']} | {r['fuzzy']} | {r['rejected']} | {pct:.0f} | {r['empty']} | {r['seconds'] / n:.1f} |")


def cmd_clustering(a) -> None:
    """Time BERTopic / LSA on N 'nuggets' (sentences of ELI5 documents stand in for them)."""
    from citegraph.nodes.ginger.clustering import cluster_texts
    from citegraph.tools.embeddings import embed
    from citegraph.tools.sentences import split_sentences

    texts = []
    for it in _items(Path(a.data), None):
        for d in it.documents:
            texts += [s for s in split_sentences(d.text) if len(s.split()) >= 4]
        if len(texts) >= max(a.sizes):
            break
    print("| nuggets | embed s | bertopic s (first call, incl. numba JIT) | bertopic s (warm) | clusters | lsa s | lsa clusters |")
    print("|---|---|---|---|---|---|---|")
    first = True
    for n in a.sizes:
        sub = texts[:n]
        t0 = time.perf_counter()
        emb = embed(sub)
        te = time.perf_counter() - t0
        r1 = cluster_texts(sub, method="bertopic", embeddings=emb)
        r2 = cluster_texts(sub, method="bertopic", embeddings=emb)
        r3 = cluster_texts(sub, method="lsa")
        print(f"| {n} | {te:.2f} | {r1.seconds:.2f}{'' if first else ' (JIT done)'} | {r2.seconds:.2f} | {len(r2.clusters)} | {r3.seconds:.3f} | {len(r3.clusters)} |")
        first = False


def cmd_one(a) -> None:
    from citegraph.graphs.registry import build_graph, make_context
    from citegraph.tools.usage import UsageTracker

    it = _items(Path(a.data), a.index + 1)[a.index]
    ctx = make_context("ginger", llm=a.llm, top_n=a.top_n, max_sentences=a.max_sentences)
    tracker = UsageTracker()
    t0 = time.perf_counter()
    g = build_graph("ginger")
    final = None
    for chunk in g.stream({"question": it.question, "documents": it.documents}, context=ctx,
                          config={"callbacks": [tracker]}, stream_mode="values"):
        final = chunk
    dt = time.perf_counter() - t0
    st = final
    print("question:", it.question)
    print(f"nuggets: {len(st['nuggets'])} from {len(st['passages'])} passages")
    for d in st["detections"]:
        print(f"  passage {d.passage}: proposed {d.proposed}, kept {d.kept}, rejected {d.rejected[:3]}")
    for n in st["nuggets"]:
        print(f"  [{n.passage}] {n.start}:{n.end} {n.match} {n.text!r}")
    print("clusters:", [(c.id, c.nuggets, round(c.score, 3)) for c in st["clusters"]], st["clustering_note"],
          f"{st['clustering_seconds']} s")
    print("pairwise:", [(p.a, p.b, p.p) for p in st["pair_scores"]])
    print("order:", st["order"], "budget:", [(b.cluster, b.action, b.words) for b in st["budget"]])
    print("answer:", st["answer"].render())
    print("usage:", json.dumps(tracker.summary() if hasattr(tracker, "summary") else {}, default=str)[:600])
    print(f"seconds: {dt:.1f}")


def journal_scores(res: dict, out: Path, journal: Path, judge: str) -> dict[str, dict[str, float]]:
    """V_strict/V/A per (method, item) with the item's gold claims as its vital nuggets (our assigner);
    journalled, so a re-run only judges what is new. Returns method -> item id -> scores."""
    from citegraph.eval.nuggets import evaluate_topic

    done: dict[tuple[str, str], dict] = {}
    if journal.exists():
        for line in journal.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[(r["method"], r["id"])] = r["scores"]
    for m, sc in res["scores"].items():
        wanted = {it["id"] for it in sc["items"] if "id" in it}
        records = json.loads((out / "raw" / f"{m}.json").read_text()).get("data", [])
        for rec in records:
            iid = str((rec.get("citegraph") or {}).get("item_id"))
            if (m, iid) in done or (wanted and iid not in wanted):
                continue
            claims = [str(c) for c in rec.get("claims", [])]
            r = evaluate_topic(rec.get("question", ""), rec.get("output", ""), nuggets=claims,
                               importance=["vital"] * len(claims), judge=judge)
            done[(m, iid)] = r.scores
            with journal.open("a") as f:
                f.write(json.dumps({"method": m, "id": iid, "judge": judge, "scores": r.scores,
                                    "assignment": r.assignment, "problems": r.problems}) + "\n")
            print(f"nuggets {m} {iid}: v_strict {r.scores['v_strict']:.2f}", file=sys.stderr, flush=True)
    table: dict[str, dict[str, dict]] = {}
    for (m, iid), scores in done.items():
        table.setdefault(m, {})[iid] = scores
    return table


COLUMNS = [("claims_nli", "Claim recall", 1), ("v_strict", "V_strict (gold claims)", 1), ("citation_rec", "Cit. recall", 1),
           ("citation_prec", "Cit. precision", 1), ("citation_f1", "Cit. F1", 1), ("length", "Words", 1),
           ("llm_calls", "LLM calls", 2), ("tokens", "Tokens", 0), ("seconds", "s/question", 1)]


def eli5_table(res: dict, nug: dict[str, dict[str, dict]]) -> str:
    from citegraph.eval.scoring import bootstrap, summarize

    lines = ["| method | N | " + " | ".join(h for _, h, _ in COLUMNS) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for m, sc in res["scores"].items():
        items = []
        for it in sc["items"]:
            it = dict(it)
            v = nug.get(m, {}).get(str(it.get("id")))
            it["v_strict"] = None if v is None else 100 * v["v_strict"]
            items.append(it)
        summ, ci = summarize(items), bootstrap(items)
        cells = []
        for k, _, d in COLUMNS:
            v = summ.get(k)
            cells.append("–" if v is None else (f"{v:.{d}f} [{ci[k][0]:.{d}f}, {ci[k][1]:.{d}f}]" if k in ci else f"{v:.{d}f}"))
        lines.append(f"| {m} | {int(summ.get('n_items', 0))} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cmd_eli5(a) -> None:
    from citegraph.eval.bench import run_bench

    out = Path(a.out)
    methods = a.methods.split(",") if a.methods else ELI5_METHODS
    res = run_bench(methods, a.data, out, limit=a.limit, llm=a.llm, verifier=a.verifier, preset=a.preset or None,
                    progress=lambda m, i, n: print(f"{m}: {i}/{n}", file=sys.stderr, flush=True))
    nug = journal_scores(res, out, out / "nuggets.jsonl", a.judge)
    table = eli5_table(res, nug)
    head = (f"ELI5 ({a.data}), first {a.limit} items, 5 documents each, llm={a.llm}, verifier={a.verifier}, "
            f"preset={a.preset or 'none'}, "
            f"nugget judge={a.judge}; mean [95% bootstrap interval]; V_strict: the 3 gold claims as vital nuggets")
    (out / "ginger_table.md").write_text(head + "\n\n" + table + "\n")
    print(head + "\n\n" + table)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("formats")
    f.add_argument("--passages", type=int, default=6)
    f.add_argument("--per-item", type=int, default=3)
    f.add_argument("--formats", nargs="+", default=["json", "tagged"])
    c = sub.add_parser("clustering")
    c.add_argument("--sizes", type=int, nargs="+", default=[20, 60, 120])
    o = sub.add_parser("one")
    o.add_argument("--index", type=int, default=0)
    o.add_argument("--top-n", type=int, default=5)
    o.add_argument("--max-sentences", type=int, default=3)
    e = sub.add_parser("eli5")
    e.add_argument("--limit", type=int, default=20)
    e.add_argument("--out", default="runs/ginger_eli5")
    e.add_argument("--methods", default="", help="comma-separated; default: " + ",".join(ELI5_METHODS))
    e.add_argument("--verifier", default="default")
    e.add_argument("--judge", default="local", help="chat spec of the nugget assigner")
    e.add_argument("--preset", default="eli5",
                   help="settings preset (default eli5: RAAC with M = 2, its Table 7; GINGER and vanilla are "
                        "unchanged); with --out runs/eli5_24 the vanilla and raac outputs of "
                        "`citegraph bench --methods vanilla,raac --preset eli5` are re-used; '' for none")
    for s in (f, c, o, e):
        s.add_argument("--data", default=str(ELI5))
        s.add_argument("--llm", default="local")
    a = p.parse_args(argv)
    {"formats": cmd_formats, "clustering": cmd_clustering, "one": cmd_one, "eli5": cmd_eli5}[a.cmd](a)


if __name__ == "__main__":
    main()
