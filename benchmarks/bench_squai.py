"""SQuAI vs standard RAG vs VANILLA-over-top-10 on SQuAI's unarXive Simple questions (resumable).

Corpus: the context chunks of the data set's questions (every golden's 2-3 chunks; ``--corpus-items``
limits how many goldens contribute), each chunk a document ``q<i>-c<j>``; questions: the first
``--limit``. Per method and question the answer is journalled (``answers.jsonl``) and then scored
(``scores.jsonl``): DeepEval's answer relevancy, faithfulness and contextual relevancy (our prompts,
``citegraph.eval.deepeval_metrics``; judge ``--judge``), their mean, RAAC citation F1 and the
supporting-sentence precision (share of attached supporting sentences that entail their answer
sentence) by ``--verifier``, LLM calls, tokens and seconds. Re-running the same command resumes.

``--filter-table N``: no final answers; for the first N questions (stopping when ``--minutes`` is
spent) SQuAI runs up to its filter (decompose, retrieve, Agent 2, Agent 3) and the table says how
often the filter keeps each question's own chunks at n = 0, 0.5, 1 (journal ``filter.jsonl``). The main
run journals SQuAI's own filter trace there as well (sub-question count, candidates, RelScores), so after it
``--filter-table`` runs only the questions it has not answered. A question whose score is journalled is
not answered again, so ``scores.jsonl`` and ``filter.jsonl`` alone (``answers.jsonl`` holds the data
set's chunks and is not kept) let a later session on another machine finish the table; the kept journals
hold ids, numbers and our outputs, not the data set's questions. ``--judge-check`` and ``--support-check``
check the judges themselves (see their help).

    python benchmarks/bench_squai.py --write-corpus runs/squai_corpus.jsonl
    citegraph index build --corpus runs/squai_corpus.jsonl --index runs/squai_index
    OMP_NUM_THREADS=1 python benchmarks/bench_squai.py --limit 30 --index runs/squai_index --out benchmarks/results/squai_simple
    OMP_NUM_THREADS=1 python benchmarks/bench_squai.py --filter-table 30 --out benchmarks/results/squai_simple
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("LANGGRAPH_STRICT_MSGPACK", "true")  # our state types are in the schemas (tests/test_checkpoint.py)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "squai" / "arxiv_deepeval_simple.json"
METHODS = ("squai", "rag", "vanilla")
PAPER = {  # Table 1, unarXive Simple (LLaMA 3.3 70B judge and generator)
    "Standard RAG (paper)": {"answer_relevancy": 0.750, "contextual_relevancy": 0.562, "faithfulness": 0.965, "mean": 0.759},
    "SQuAI abstract (paper)": {"answer_relevancy": 0.903, "contextual_relevancy": 0.739, "faithfulness": 0.966, "mean": 0.828},
    "SQuAI full text (paper)": {"answer_relevancy": 0.937, "contextual_relevancy": 0.677, "faithfulness": 0.984, "mean": 0.847},
}
METRICS = ("answer_relevancy", "faithfulness", "contextual_relevancy", "mean", "citation_f1",
           "support_precision", "llm_calls", "tokens", "seconds")


def load(path: Path, limit: int, corpus_items: int):
    from citegraph.state import Document

    goldens = json.loads(path.read_text())["goldens"]
    pool = goldens if corpus_items <= 0 else goldens[: max(corpus_items, limit)]
    docs = [Document(id=f"q{i}-c{j}", title="", text=c) for i, g in enumerate(pool) for j, c in enumerate(g["context"])]
    questions = [(f"q{i}", g["input"]) for i, g in enumerate(goldens[:limit])]
    return questions, docs


class Journal:
    """Append-only JSONL keyed by ``key``; what is there is done."""

    def __init__(self, path: Path):
        self.path = path
        self.rows: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.rows[row["key"]] = row

    def add(self, row: dict) -> None:
        self.rows[row["key"]] = row
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())


def top10(question: str, docs, index: str = "", k: int = 10):
    from citegraph.corpus import open_corpus
    from citegraph.nodes.squai.retrieval import candidates_for
    from citegraph.state.squai import RagContext

    ctx = RagContext()
    corpus = open_corpus(index) if index else open_corpus("", docs)
    return [c.document for c in candidates_for(corpus, 0, question, k=k, mode=ctx.retrieval_mode,
                                               alpha=ctx.retrieval_alpha, candidate_factor=ctx.candidate_factor)]


def answer(method: str, qid: str, question: str, docs, args) -> dict:
    from citegraph.graphs.registry import build_graph, make_context
    from citegraph.run.datasets import Item
    from citegraph.run.runner import answer_item
    from citegraph.tools.models import reset_local_models

    reset_local_models()
    knobs = {"llm": args.llm, "verifier": args.verifier, "attribution": args.attribution}
    if method == "vanilla":
        item = Item(id=qid, question=question, documents=top10(question, docs, args.index))
    elif args.index:  # squai and rag retrieve from the index themselves
        item, knobs["corpus"] = Item(id=qid, question=question, documents=[]), args.index
    else:
        item = Item(id=qid, question=question, documents=docs)
    t0 = time.perf_counter()
    if method == "squai":  # on a checkpointed thread, so that its filter trace can be read back afterwards
        from langgraph.checkpoint.memory import InMemorySaver

        graph, thread = build_graph(method, checkpointer=InMemorySaver()), uuid.uuid4().hex
        ans, usage = answer_item(graph, item, make_context(method, **knobs), thread=thread)
        trace = filter_trace(qid, graph.get_state({"configurable": {"thread_id": thread}}).values)
    else:
        ans, usage, trace = *answer_item(build_graph(method), item, make_context(method, **knobs)), None
    usage["seconds"] = round(time.perf_counter() - t0, 3)
    return {"key": f"{method}/{qid}", "method": method, "id": qid, "question": question, "commit": COMMIT,
            "answer": ans.model_dump(mode="json"), "usage": usage, "filter_trace": trace}


def filter_trace(qid: str, st: dict) -> dict:
    """What the filter table needs from a SQuAI state: how many sub-questions, the candidates and their RelScores
    (not the question or the sub-questions' text, which may repeat it: the journals that are kept hold ids and
    numbers, not the data set's text)."""
    scores = {(j.sub_q, j.rank): j.rel_score for j in st["judgements"]}
    cands = [{"sub_q": c.sub_q, "rank": c.rank, "doc_id": c.doc_id or c.key, "rel_score": scores.get((c.sub_q, c.rank))}
             for c in st["candidates"]]
    filters = [{k: v for k, v in f.model_dump(mode="json").items() if k != "sub_question"} for f in st["filters"]]
    return {"key": qid, "id": qid, "commit": COMMIT, "n_sub_questions": len(st["sub_questions"]),
            "candidates": cands, "filters": filters}


def _commit() -> str:
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


COMMIT = _commit()


#: contextual-relevancy judgements of this process, keyed by (judge, question, context document): rag and
#: vanilla are given the same top-10, and SQuAI's kept documents are mostly among them
CONTEXT_CACHE: dict = {}


def score(row: dict, args) -> dict:
    from citegraph.eval.deepeval_metrics import context_texts, deepeval_scores
    from citegraph.metrics import judge, raac_citation_f1
    from citegraph.state import AttributedAnswer

    ans = AttributedAnswer.model_validate(row["answer"])
    t0 = time.perf_counter()
    de = deepeval_scores(row["question"], ans.text, context_texts(ans.documents), args.judge or args.llm,
                         context_cache=CONTEXT_CACHE, context_mode=args.context_judge)
    cf = raac_citation_f1(ans, args.verifier)
    pairs = [(e.text, s.text) for s in ans.sentences for e in s.evidence]
    support = (sum(judge(args.verifier, pairs)) / len(pairs)) if pairs else None
    u = row["usage"]
    return {"key": row["key"], "method": row["method"], "id": row["id"], **{k: v for k, v in de.as_dict().items()
            if k in ("answer_relevancy", "faithfulness", "contextual_relevancy", "mean")},
            "commit": row.get("commit"), "score_commit": COMMIT, "context_judge": args.context_judge,
            "context_ids": [d.id.split("#")[0] for d in ans.documents],
            "citation_f1": cf.f1, "support_precision": support, "llm_calls": u.get("llm_calls"),
            "tokens": u.get("tokens"), "seconds": u.get("seconds"), "problems": de.problems,
            "score_seconds": round(time.perf_counter() - t0, 3), "details": de.details}


def interval(values: list[float], n_resamples: int = 1000, seed: int = 0) -> tuple[float, float, float] | None:
    import numpy as np

    v = np.array([x for x in values if x is not None], dtype=float)
    if not len(v):
        return None
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_resamples, len(v)))].mean(axis=1)
    return float(v.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def table(scores: list[dict], methods) -> str:
    head = "| system | n | " + " | ".join(METRICS) + " |"
    lines = [head, "|" + "---|" * (len(METRICS) + 2)]
    for m in methods:
        rows = [r for r in scores if r["method"] == m]
        cells = []
        for k in METRICS:
            iv = interval([r.get(k) for r in rows])
            if iv is None:
                cells.append("n/a")
            elif k in ("llm_calls", "tokens", "seconds"):
                cells.append(f"{iv[0]:.1f}")
            else:
                cells.append(f"{iv[0]:.3f} [{iv[1]:.3f}, {iv[2]:.3f}]")
        lines.append(f"| {m} | {len(rows)} | " + " | ".join(cells) + " |")
    for name, p in PAPER.items():
        lines.append(f"| {name} | 500 | " + " | ".join(f"{p[k]:.3f}" if k in p else "" for k in METRICS) + " |")
    return "\n".join(lines)


def context_judge_check(scores: list[dict]) -> str:
    """How the contextual-relevancy judge tells a question's own chunks from other questions' chunks: the
    share of statements judged relevant in each (every (question, chunk) once; the chunks of other
    questions are mostly unrelated, though some may be relevant)."""
    seen: dict[tuple, tuple[int, int]] = {}
    for r in scores:
        per = (r.get("details") or {}).get("contextual_relevancy", {}).get("per_context", [])
        for doc_id, d in zip(r.get("context_ids") or [], per):
            seen[(r["id"], doc_id, r.get("context_judge"))] = (d["relevant"], d["statements"])
    lines = ["| judge mode | chunks | own: relevant / statements | other questions': relevant / statements |",
             "|---|---|---|---|"]
    for mode in sorted({k[2] for k in seen}, key=str):
        own = [v for (q, doc, m), v in seen.items() if m == mode and doc.startswith(f"{q}-")]
        oth = [v for (q, doc, m), v in seen.items() if m == mode and not doc.startswith(f"{q}-")]

        def share(xs):
            rel, tot = sum(x[0] for x in xs), sum(x[1] for x in xs)
            return f"{rel / tot:.3f} ({rel}/{tot}, {len(xs)} chunks)" if tot else "n/a"
        lines.append(f"| {mode} | {len(own) + len(oth)} | {share(own)} | {share(oth)} |")
    return "\n".join(lines)


def judge_check_row(row: dict, other_id: str, other_question: str, args) -> dict:
    """Answer relevancy of a scored answer's statements against ANOTHER question of the data set: a judge
    that tells relevant from irrelevant statements gives far less here than on the answer's own question."""
    from citegraph.eval.deepeval_metrics import statements_relevancy

    statements = row["details"]["answer_relevancy"].get("statements") or []
    r = statements_relevancy(other_question, statements, args.judge or args.llm)
    return {"key": row["key"], "method": row["method"], "id": row["id"], "own": row["answer_relevancy"],
            "other": r.score, "other_id": other_id, "verdicts": r.details.get("verdicts"),
            "problems": r.problems, "commit": COMMIT}


def judge_check_table(rows: list[dict]) -> str:
    lines = ["| system | answers | answer relevancy, own question | answer relevancy, the next question |", "|---|---|---|---|"]
    for m in METHODS:
        rs = [r for r in rows if r["method"] == m and r["own"] is not None and r["other"] is not None]
        if rs:
            own, oth = interval([r["own"] for r in rs]), interval([r["other"] for r in rs])
            lines.append(f"| {m} | {len(rs)} | {own[0]:.3f} [{own[1]:.3f}, {own[2]:.3f}] | "
                         f"{oth[0]:.3f} [{oth[1]:.3f}, {oth[2]:.3f}] |")
    return "\n".join(lines)


def support_check_row(row: dict, spec: str) -> dict:
    """A second verifier's view of one answer's attributions: does each attached supporting sentence entail
    its answer sentence, and does each cited document as a whole entail the sentence citing it? (The
    supporting sentences were chosen by ``--verifier``, so the table's support precision by that same
    verifier is 1 by construction; this asks ``spec`` instead.) ``evidence_found`` is None for an answer
    from a method that attaches no supporting sentences (no evidence and no ``unsupported_citations``)."""
    from citegraph.metrics import judge
    from citegraph.state import AttributedAnswer

    ans = AttributedAnswer.model_validate(row["answer"])
    ev = [(e.text, s.text) for s in ans.sentences for e in s.evidence]
    cites = [(i, c) for i, s in enumerate(ans.sentences) for c in s.citations]
    attaches = bool(ev) or "unsupported_citations" in ans.metadata
    unsupported = {tuple(u) for u in ans.metadata.get("unsupported_citations") or []}
    verdicts = judge(spec, ev + [(ans.documents[c - 1].text, ans.sentences[i].text) for i, c in cites])
    return {"key": row["key"], "method": row["method"], "id": row["id"], "spec": spec, "commit": COMMIT,
            "evidence_entailed": verdicts[:len(ev)],
            "citations": [{"sentence": i, "doc": c, "evidence_found": (i, c) not in unsupported if attaches else None,
                           "doc_entails": v} for (i, c), v in zip(cites, verdicts[len(ev):])]}


def support_check_table(rows: list[dict]) -> str:
    def share(xs):
        return f"{sum(xs) / len(xs):.3f} ({sum(xs)}/{len(xs)})" if xs else "n/a"

    lines = ["| system | verifier | answers | supporting sentences it judges entailing | citations whose document it "
             "judges entailing: all | where `--verifier` found a supporting sentence | where it found none |",
             "|---|---|---|---|---|---|---|"]
    for m in METHODS:
        for spec in sorted({r["spec"] for r in rows if r["method"] == m}):
            rs = [r for r in rows if r["method"] == m and r["spec"] == spec]
            ev = [bool(x) for r in rs for x in r["evidence_entailed"]]
            cs = [c for r in rs for c in r["citations"]]
            found = [c["doc_entails"] for c in cs if c["evidence_found"] is True]
            none = [c["doc_entails"] for c in cs if c["evidence_found"] is False]
            lines.append(f"| {m} | {spec} | {len(rs)} | {share(ev)} | {share([c['doc_entails'] for c in cs])} | "
                         f"{share(found)} | {share(none)} |")
    return "\n".join(lines)


def filter_row(qid: str, question: str, docs, args) -> dict:
    """SQuAI up to its filter (interrupt before merge): the sub-questions, candidates and RelScores."""
    from langgraph.checkpoint.memory import InMemorySaver

    from citegraph.graphs.squai import build
    from citegraph.state.squai import SquaiContext
    from citegraph.tools.models import reset_local_models
    from citegraph.tools.usage import UsageTracker

    reset_local_models()
    g = build(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    tracker = UsageTracker()
    t0 = time.perf_counter()
    with tracker.active():
        g.invoke({"question": question, "documents": [] if args.index else docs}, {**cfg, "callbacks": [tracker]},
                 context=SquaiContext(llm=args.llm, verifier=args.verifier, corpus=args.index),
                 interrupt_before=None if args.full_answers else ["merge"])
    st = g.get_state(cfg).values
    row = {**filter_trace(qid, st), "doc_answers": [a.model_dump(mode="json") for a in st["doc_answers"]],
           "llm_calls": tracker.totals()["llm_calls"], "tokens": tracker.totals()["tokens"],
           "nodes": tracker.per_node(), "seconds": round(time.perf_counter() - t0, 3)}
    if args.full_answers and st.get("answer") is not None:
        ans = st["answer"]
        row.update({"answer": ans.render(), "merged": [m.key for m in st["merged"]], "fallback": st["fallback"],
                    "evidence": [[e.model_dump(mode="json") for e in s.evidence] for s in ans.sentences],
                    "citation_checks": [c.model_dump(mode="json") for c in st["citation_checks"]],
                    "warnings": ans.warnings})
    return row


def filter_table(rows: list[dict]) -> str:
    from citegraph.nodes.squai.nodes import adaptive_filter

    lines = ["| n | questions | own chunks retrieved / question | own chunks kept / question | own kept / own retrieved | "
             "other chunks kept / other retrieved | documents kept / question |", "|---|---|---|---|---|---|---|"]
    for n in (0.0, 0.5, 1.0):
        own_ret = own_kept = oth_ret = oth_kept = kept_docs = 0
        for r in rows:
            own = f"{r['id']}-"
            kept_ids, ret_ids = set(), set()
            for i in range(r["n_sub_questions"]):
                cands = [c for c in r["candidates"] if c["sub_q"] == i]
                _, _, _, kept = adaptive_filter([c["rel_score"] for c in cands], n)
                ret_ids |= {c["doc_id"] for c in cands}
                kept_ids |= {c["doc_id"] for c, k in zip(cands, kept) if k}
            own_ret += sum(d.startswith(own) for d in ret_ids)
            own_kept += sum(d.startswith(own) for d in kept_ids)
            oth_ret += sum(not d.startswith(own) for d in ret_ids)
            oth_kept += sum(not d.startswith(own) for d in kept_ids)
            kept_docs += len(kept_ids)
        q = max(1, len(rows))
        lines.append(f"| {n} | {len(rows)} | {own_ret / q:.2f} | {own_kept / q:.2f} | "
                     f"{own_kept / own_ret if own_ret else float('nan'):.3f} | "
                     f"{oth_kept / oth_ret if oth_ret else float('nan'):.3f} | {kept_docs / q:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--limit", type=int, default=30, help="first N questions")
    ap.add_argument("--corpus-items", type=int, default=0, help="goldens whose chunks form the corpus (0 = all)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--llm", default="local")
    ap.add_argument("--judge", default="", help="judge model spec for the DeepEval metrics (default: --llm)")
    ap.add_argument("--verifier", default="default")
    ap.add_argument("--attribution", default="off", choices=("off", "repair", "strict"),
                    help="the shared attribution stage after each method (off: the methods as their papers print them, "
                         "as the journals in benchmarks/results/squai_simple were made)")
    ap.add_argument("--context-judge", default="logodds", choices=("logodds", "json"),
                    help="contextual relevancy: logodds = each sentence of a context document judged by first-token "
                         "Yes/No log-odds (default); json = DeepEval's one call per document (the 1.5B judge says "
                         "yes to everything there)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "squai_simple")
    ap.add_argument("--no-score", action="store_true", help="answer only; score later")
    ap.add_argument("--filter-table", type=int, default=0, metavar="N", help="the judge-filter table on N questions")
    ap.add_argument("--minutes", type=float, default=0.0, help="stop starting new questions after this long (0 = no limit)")
    ap.add_argument("--skip", type=int, default=0, help="filter table: start at this question (another process may do the first)")
    ap.add_argument("--full-answers", action="store_true",
                    help="filter table: run SQuAI to the end and journal the cited answer and its evidence too")
    ap.add_argument("--report-only", action="store_true", help="print the tables from the journals; run nothing")
    ap.add_argument("--judge-check", action="store_true",
                    help="after scoring: judge each scored answer's statements against the NEXT question of the data "
                         "set (answer relevancy there should be low; journal judge_check.jsonl, one judge call each)")
    ap.add_argument("--support-check", default="", metavar="VERIFIER",
                    help="after scoring: a second verifier (e.g. llm-judge:local) judges every attached supporting "
                         "sentence and every cited document against its answer sentence (needs answers.jsonl; journal "
                         "support_check.jsonl, one verifier call per pair)")
    ap.add_argument("--write-corpus", type=Path, metavar="JSONL",
                    help="write the corpus (one chunk of the data set per line, id q<i>-c<j>) and exit; index it once with "
                         "`citegraph index build --corpus JSONL --index DIR` and pass --index DIR (an in-memory index of "
                         "all 1,473 chunks takes minutes to build in every process)")
    ap.add_argument("--index", default="", help="retrieve from this index (see --write-corpus) instead of an in-memory one")
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"data not found: {args.data}", file=sys.stderr)
        return 2
    if args.write_corpus:
        _, docs = load(args.data, 0, args.corpus_items)
        args.write_corpus.parent.mkdir(parents=True, exist_ok=True)
        with args.write_corpus.open("w") as f:
            for d in docs:
                f.write(json.dumps({"id": d.id, "title": d.title, "text": d.text}) + "\n")
        print(f"wrote {len(docs)} documents to {args.write_corpus}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    def time_left() -> bool:
        return not args.minutes or (time.perf_counter() - t_start) < 60 * args.minutes

    if args.filter_table:
        questions, docs = load(args.data, args.filter_table, args.corpus_items)
        j = Journal(args.out / "filter.jsonl")
        for qid, q in questions[args.skip:]:
            if qid in j.rows or args.report_only:
                continue
            if not time_left():
                break
            row = filter_row(qid, q, docs, args)
            j.add(row)
            print(f"{qid}: {len(row['candidates'])} candidates, {row['llm_calls']} LLM calls, {row['seconds']:.0f} s", flush=True)
        rows = [j.rows[qid] for qid, _ in questions if qid in j.rows]
        print(f"\nJudge filter on {len(rows)} question(s), corpus of {len(docs)} chunks:")
        print(filter_table(rows))
        return 0

    questions, docs = load(args.data, args.limit, args.corpus_items)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad:
        print(f"unknown method(s) {bad}; choose from {METHODS}", file=sys.stderr)
        return 2
    answers, scores = Journal(args.out / "answers.jsonl"), Journal(args.out / "scores.jsonl")
    filters = Journal(args.out / "filter.jsonl")
    for qid, q in questions:
        for m in methods:
            key = f"{m}/{qid}"
            if args.report_only:
                continue
            if key not in answers.rows and key not in scores.rows:  # a scored row is done, answer or not
                if not time_left():
                    break
                answers.add(answer(m, qid, q, docs, args))
                print(f"{key}: answered in {answers.rows[key]['usage']['seconds']:.0f} s", flush=True)
                trace = answers.rows[key].get("filter_trace")
                if trace and qid not in filters.rows:  # SQuAI's own run gives the filter table's row
                    filters.add(trace)
            if not args.no_score and key not in scores.rows and time_left():
                scores.add(score(answers.rows[key], args))
                print(f"{key}: scored in {scores.rows[key]['score_seconds']:.0f} s", flush=True)
    done = [scores.rows[f"{m}/{qid}"] for qid, _ in questions for m in methods if f"{m}/{qid}" in scores.rows]
    print(f"\nunarXive Simple, first {args.limit} questions, corpus of {len(docs)} chunks; llm={args.llm}, "
          f"judge={args.judge or args.llm}, verifier={args.verifier}; mean [95% bootstrap interval]:")
    print(table(done, methods))
    print("\nContextual-relevancy judge: share of statements judged relevant in a question's own chunks and in "
          "other questions' chunks (each retrieved (question, chunk) once):")
    print(context_judge_check(done))
    if args.judge_check:
        checks = Journal(args.out / "judge_check.jsonl")
        nxt = {qid: questions[(i + 1) % len(questions)] for i, (qid, _) in enumerate(questions)}
        for r in done:
            if r["key"] not in checks.rows and not args.report_only and time_left():
                checks.add(judge_check_row(r, *nxt[r["id"]], args))
        print("\nAnswer-relevancy judge: each answer's statements judged against its own question (the table's "
              "figure) and against the next question of the data set:")
        print(judge_check_table([checks.rows[r["key"]] for r in done if r["key"] in checks.rows]))
    if args.support_check:
        sup = Journal(args.out / "support_check.jsonl")
        skey = {r["key"]: f"{r['key']}|{args.support_check}" for r in done}   # one row per answer and verifier
        for r in done:
            if skey[r["key"]] not in sup.rows and r["key"] in answers.rows and not args.report_only and time_left():
                sup.add({**support_check_row(answers.rows[r["key"]], args.support_check), "key": skey[r["key"]]})
        checked = [sup.rows[k] for k in skey.values() if k in sup.rows]
        print(f"\nAttributions checked by a second verifier ({len(done) - len(checked)} scored answer(s) not checked: "
              "not in answers.jsonl):")
        print(support_check_table(checked))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
