"""The attribution stage measured (issue #34): each method generates once per ``cite_format``
(attribution off), then the stage runs as a post-pass (repair, strict) on the SAME answers, and
every variant is scored by two verifiers: the one the stage consulted and one it did not.

    OMP_NUM_THREADS=1 python benchmarks/bench_attribution.py --data ../shared/data/alce/asqa_dev60.json \
        --methods vanilla,ginger --limit 20 --out runs/attr_asqa
    python benchmarks/bench_attribution.py ... --report-only      # reprint the tables from the journals
    OMP_NUM_THREADS=1 python benchmarks/bench_attribution.py --data ../shared/data/squai/arxiv_deepeval_simple.json \
        --index runs/squai_index --methods squai,rag --limit 10 --deepeval --out runs/attr/squai

    OMP_NUM_THREADS=1 python benchmarks/bench_attribution.py --data ../shared/data/odsum_story \
        --index runs/odsum_story_idx --methods odmds --limit 5 --set top_k=8 --out runs/attr/odsum

ODSum-Story (``--data`` the folder): one dev query per story, as ``benchmarks/bench_odmds_summaries.py``
picks them, summarised from ``--index`` (built if absent, as ``bench_odmds_retrieval.py`` builds it);
rows add ROUGE-2 / ROUGE-Lsum F1 (best of the 4 references). SQuAI's unarXive questions (a file with ``goldens``) need ``--index`` (built as in
``benchmarks/bench_squai.py``): methods with a ``corpus`` knob retrieve from it themselves, VANILLA
gets the hybrid top 10; such rows are scored on each answer's own documents. ``--deepeval`` adds the
DeepEval-style mean (answer relevancy, faithfulness, contextual relevancy; the ``--llm`` model as judge)
of the ``off`` and ``strict`` answers; ``repair`` changes no text and no documents, so its DeepEval
scores are ``off``'s (printed as such), as are those of a ``strict`` answer that dropped no sentence
(its journal row says ``same_as``).

Journals (resumable, one line per item): ``<out>/<label>/answers.jsonl`` (the generated answer, its
usage, the commit) and ``<out>/<label>/<stage verifier>/<mode>.jsonl`` (the post-pass answer and the
stage's seconds). ``--stage-verifier`` is the verifier the stage consults (default ``default``);
``--score-verifiers`` the verifiers every row is scored with (default ``default,llm-judge:local``).
Swap the roles by running again with ``--stage-verifier llm-judge:local``.

Printed per method and variant (95% bootstrap intervals over items): % sentences cited, % flagged
unsupported, % cited or flagged, citation recall / precision / F1 by each scoring verifier, STR-EM
(ASQA) or claim recall (ELI5, by the first scoring verifier), words, LLM calls, seconds per question
of generation and of the stage. A score by the verifier the stage itself consulted is partly by
construction; read the other verifier's column.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from citegraph.eval.scoring import bootstrap, infer_dataset, score_key, score_records, summarize  # noqa: E402
from citegraph.graphs.registry import build_graph, context_class, make_context  # noqa: E402
from citegraph.nodes.attribution import attribute_answer, stage_options  # noqa: E402
from citegraph.run.datasets import Item, load_items  # noqa: E402
from citegraph.run.runner import answer_item, make_record  # noqa: E402
from citegraph.state import AttributedAnswer  # noqa: E402
from citegraph.state.base import CliText  # noqa: E402
from citegraph.tools.models import reset_local_models  # noqa: E402
from citegraph.tools.verifier import get_verifier  # noqa: E402

MODES = ("off", "repair", "strict")


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def slug(spec: str) -> str:
    return spec.replace(":", "_").replace("/", "_")


def read_journal(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill
                out[row["id"]] = row
    return out


def append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


def variants(methods: list[str], formats: list[str]) -> list[tuple[str, str, dict]]:
    """(label, method, overrides): every method once per cite_format it has (others once)."""
    out = []
    for m in methods:
        has = any(f.name == "cite_format" for f in dataclasses.fields(context_class(m)))
        for fmt in (formats if has and formats else [None]):  # --formats "": the Context default, unlabelled
            over = {"attribution": "off"}
            if fmt:
                over["cite_format"] = fmt
            out.append((m if not fmt else f"{m}:{fmt}", m, over))
    return out


def load_squai(path: str, limit: int) -> list[Item]:
    """SQuAI's unarXive questions (``goldens``) as items without documents: the index provides them
    (ids ``q<i>``, as ``bench_squai.py`` names them)."""
    from bench_squai import load

    questions, _ = load(Path(path), limit, 0)
    return [Item(id=qid, question=q, documents=[], raw={"question": q}) for qid, q in questions]


def load_odsum(root: str, limit: int, index: str) -> list[Item]:
    """ODSum-Story dev queries (one per story) whose corpus is ``index`` (built here when absent)."""
    from bench_odmds_summaries import pick
    from odsum_story import load

    docs, queries = load(root)
    if not Path(index).exists():
        from citegraph.corpus import build_index

        t0 = time.perf_counter()
        print(build_index(docs, index).summary(), f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return [Item(id=q.id, question=q.question, documents=[], raw={"question": q.question, "references": q.references},
                 inputs={"corpus": index}) for q in pick(queries, limit)]


def generate(label: str, method: str, over: dict, items, llm: str, out: Path, verifier: str,
             index: str = "") -> dict[str, dict]:
    path = out / slug(label) / "answers.jsonl"
    done = read_journal(path)
    todo = [it for it in items if it.id not in done]
    if todo:
        graph = build_graph(method)
        has_corpus = any(f.name == "corpus" for f in dataclasses.fields(context_class(method)))
        if index and has_corpus:
            over = {**over, "corpus": index}
        ctx = make_context(method, llm=llm, verifier=verifier, **over)
        for n, it in enumerate(todo, 1):
            if index and not has_corpus and not it.documents:  # VANILLA: the hybrid top 10, as bench_squai.py
                from bench_squai import top10

                it = Item(id=it.id, question=it.question, documents=top10(it.question, [], index), raw=it.raw)
            reset_local_models()  # as the runner does: an item's answer must not depend on the item before it
            t0 = time.perf_counter()
            ans, usage = answer_item(graph, it, ctx)
            row = {"id": it.id, "answer": ans.model_dump(mode="json"), "usage": usage,
                   "seconds": round(time.perf_counter() - t0, 2), "commit": commit()}
            append(path, row)
            done[it.id] = row
            print(f"  {label}: {len(done)}/{len(items)} generated ({row['seconds']:.0f}s)", file=sys.stderr, flush=True)
    return done


def stage_verifier_loaded(spec: str):
    """The stage's verifier, its model loaded (a model's load is not the stage's cost)."""
    v = get_verifier(spec)
    v.score([("Warm-up.", "Warm-up.")])
    return v


def timed_stage(v, ans: AttributedAnswer, mode: str, spec: str, **kw) -> tuple[AttributedAnswer, float]:
    """The stage on one answer with the verifier's cache emptied first, as in a graph run (nothing scored
    before it: not the scoring of off); the new answer and its seconds."""
    v.clear_cache()
    t0 = time.perf_counter()
    new = attribute_answer(ans, v, mode=mode, verifier_spec=spec, **kw)
    return new, time.perf_counter() - t0


def post_pass(label: str, mode: str, gen: dict[str, dict], stage_verifier: str, out: Path, tag: str = "",
              **kw) -> dict[str, dict]:
    path = out / slug(label) / slug(stage_verifier) / f"{mode}{slug(tag)}.jsonl"
    done = read_journal(path)
    todo = [i for i in gen if i not in done]
    if todo:
        v = stage_verifier_loaded(stage_verifier)
        for i in todo:
            new, dt = timed_stage(v, AttributedAnswer.model_validate(gen[i]["answer"]), mode, stage_verifier, **kw)
            row = {"id": i, "answer": new.model_dump(mode="json"), "stage_seconds": round(dt, 3), "commit": commit()}
            append(path, row)
            done[i] = row
    return done


def retime(label: str, mode: str, gen: dict[str, dict], stage_verifier: str, out: Path, tag: str = "",
           **kw) -> tuple[float, float, int, int]:
    """The stage run again, cold, on the journalled answers (journals written before the post-pass emptied
    the cache timed it warm); returns the journal's and this run's mean seconds, and how many of the new
    answers equal the journal's (citations and statuses)."""
    done = read_journal(out / slug(label) / slug(stage_verifier) / f"{mode}{slug(tag)}.jsonl")
    v = stage_verifier_loaded(stage_verifier)
    old_s, new_s, same = [], [], 0
    ids = [i for i in gen if i in done]
    for i in ids:
        new, dt = timed_stage(v, AttributedAnswer.model_validate(gen[i]["answer"]), mode, stage_verifier, **kw)
        new_s.append(dt)
        old_s.append(done[i]["stage_seconds"])
        was = AttributedAnswer.model_validate(done[i]["answer"])
        same += [(x.citations, x.support) for x in new.sentences] == [(x.citations, x.support) for x in was.sentences]
        print(f"  {label} {mode}{tag} {i}: journal {old_s[-1]:.2f} s, cold {new_s[-1]:.2f} s", file=sys.stderr, flush=True)
    n = max(1, len(ids))
    return sum(old_s) / n, sum(new_s) / n, same, len(ids)


def records(items, answers: dict[str, dict]) -> list[dict]:
    """The answers as ``citegraph run`` records (citations scored against each answer's own documents:
    ``make_record`` keeps them where they are not the item's)."""
    return [make_record(it, AttributedAnswer.model_validate(answers[it.id]["answer"]), {})
            for it in items if it.id in answers]


def scores_key(recs: list[dict], verifier: str) -> str:
    """What a cached score file depends on: each record's ``score_key`` (the record, the verifier with
    its weights, the dataset and the scoring code), as ``citegraph eval`` keys its own cache (a cache
    keyed by item ids alone kept scores made before the evaluator read the answers' own documents)."""
    dataset = infer_dataset(recs)
    keys = "".join(score_key(r, verifier=verifier, dataset=dataset, settings={}) for r in recs)
    return hashlib.sha256(keys.encode()).hexdigest()[:16]


#: contextual-relevancy judgements of this process, keyed by (judge, mode, question, context document)
DEEPEVAL_CONTEXT_CACHE: dict = {}


def deepeval_rows(items, answers: dict[str, dict], judge: str, path: Path,
                  same_as: tuple[Path, dict[str, dict]] | None = None) -> list[dict]:
    """DeepEval-style scores per item (journalled: a re-run scores only what is new). ``same_as``:
    another journal and the answers it scored (``off``'s, for ``strict``): an item whose text and
    documents are the same there takes that row (a greedy judge scores the same input the same way),
    marked ``same_as``, with its seconds."""
    from citegraph.eval.deepeval_metrics import context_texts, deepeval_scores
    done = read_journal(path)
    other = read_journal(same_as[0]) if same_as else {}
    for it in items:
        if it.id in done or it.id not in answers:
            continue
        ans = AttributedAnswer.model_validate(answers[it.id]["answer"])
        if it.id in other and it.id in same_as[1]:
            was = AttributedAnswer.model_validate(same_as[1][it.id]["answer"])
            if was.text == ans.text and [d.id for d in was.documents] == [d.id for d in ans.documents]:
                row = {**other[it.id], "same_as": same_as[0].name}
                append(path, row)
                done[it.id] = row
                continue
        t0 = time.perf_counter()
        sc = deepeval_scores(it.question, ans.text, context_texts(ans.documents), judge,
                             context_cache=DEEPEVAL_CONTEXT_CACHE)
        row = {"id": it.id, **{k: v for k, v in sc.as_dict().items() if k != "details"},
               "seconds": round(time.perf_counter() - t0, 2), "commit": commit()}
        append(path, row)
        done[it.id] = row
    return [done[it.id] for it in items if it.id in done]


def _ci(values: list[float]) -> tuple[float, float] | None:
    """95% bootstrap interval of a mean (the evaluator's bootstrap)."""
    return bootstrap([{"v": x} for x in values]).get("v") if len(values) > 1 else None


def fmt(mean, ci, digits=1) -> str:
    if mean is None:
        return "–"
    return f"{mean:.{digits}f}" + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--methods", default="vanilla")
    ap.add_argument("--formats", default="free,constrained", help="cite_format values, for methods that have the knob")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--stage-verifier", default="default")
    ap.add_argument("--score-verifiers", default="default,llm-judge:local")
    ap.add_argument("--out", required=True)
    ap.add_argument("--report-only", action="store_true", help="print the tables from the journals; run nothing new")
    ap.add_argument("--no-generate", action="store_true", help="score only the items already generated")
    ap.add_argument("--retime", action="store_true",
                    help="run the stage again on the journalled answers with the verifier's cache emptied before each "
                         "(journals written before this existed timed it after off's scoring had filled the cache); "
                         "print the journal's and the cold seconds and whether the answers are the same; score nothing")
    ap.add_argument("--modes", default=",".join(MODES), help="attribution modes to report (off,repair,strict)")
    ap.add_argument("--index", default="", help="SQuAI's questions: the index the methods retrieve from")
    ap.add_argument("--deepeval", action="store_true", help="add the DeepEval-style mean (judge: --llm)")
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="Context knobs for every method")
    a = ap.parse_args()
    out = Path(a.out)
    odsum = Path(a.data).is_dir()
    squai = not odsum and "goldens" in Path(a.data).read_text(encoding="utf-8")[:2000]
    if (squai or odsum) and not a.index:
        ap.error("these questions have no documents: pass --index")
    if odsum:
        items = load_odsum(a.data, a.limit, a.index)
    else:
        items = load_squai(a.data, a.limit) if squai else load_items(a.data, limit=a.limit)
    knobs = {k: CliText(v) for k, _, v in (kv.partition("=") for kv in a.set)}
    # the stage's own knobs (attribution_*) shape the post-pass; rows made with other values than the
    # defaults are journalled and labelled apart (repair+attribution_simplify=false ...)
    stage_knobs = {k: v for k, v in knobs.items() if k.startswith("attribution_")}
    methods = [m for m in a.methods.split(",") if m]
    if stage_knobs and methods:  # the values as the Context reads them: "False", "false" and "0" journal alike
        read = make_context(methods[0], **stage_knobs)
        tag = "".join(f"+{k}={str(getattr(read, k)).lower()}" for k in sorted(stage_knobs))
    else:
        tag = ""
    score_vs = [s for s in a.score_verifiers.split(",") if s]
    rows = []
    if a.retime:
        print("| method | attribution | n | stage s/q (journal) | stage s/q (cold cache) | same answers |\n|---|---|---|---|---|---|")
        for label, method, over in variants(methods, [f for f in a.formats.split(",") if f]):
            gen = read_journal(out / slug(label) / "answers.jsonl")
            gen = {it.id: gen[it.id] for it in items if it.id in gen}
            ctx = make_context(method, **stage_knobs)
            for mode in [m for m in a.modes.split(",") if m in MODES and m != "off"]:
                j, c, same, n = retime(label, mode, gen, a.stage_verifier, out, tag, **stage_options(ctx))
                print(f"| {label} | {mode}{tag} | {n} | {j:.2f} | {c:.2f} | {same} of {n} |", flush=True)
        return 0
    for label, method, over in variants(methods, [f for f in a.formats.split(",") if f]):
        if a.report_only or a.no_generate:
            gen = read_journal(out / slug(label) / "answers.jsonl")
        else:
            gen = generate(label, method, {**knobs, **over}, items, a.llm, out, a.stage_verifier, "" if odsum else a.index)
        gen = {it.id: gen[it.id] for it in items if it.id in gen}  # the first --limit items only
        if not gen:
            continue
        ids = [it.id for it in items if it.id in gen]
        mine = [it for it in items if it.id in gen]
        ctx = make_context(method, **stage_knobs)
        for mode in [m for m in a.modes.split(",") if m in MODES]:
            if mode == "off":
                answers, stage_s = gen, None
            else:
                if a.report_only:
                    answers = read_journal(out / slug(label) / slug(a.stage_verifier) / f"{mode}{slug(tag)}.jsonl")
                else:
                    answers = post_pass(label, mode, gen, a.stage_verifier, out, tag=tag, **stage_options(ctx))
                answers = {i: r for i, r in answers.items() if i in gen}
                stage_s = sum(r["stage_seconds"] for r in answers.values()) / max(1, len(answers))
            if len(answers) < len(ids):
                continue
            row = {"label": label, "mode": mode + (tag if mode != "off" else ""), "n": len(ids), "stage_s": stage_s,
                   "gen_s": sum(gen[i]["seconds"] for i in ids) / len(ids),
                   "llm_calls": sum(gen[i]["usage"].get("llm_calls", 0) for i in ids) / len(ids)}
            for k, sv in enumerate(score_vs):
                cache = out / slug(label) / slug(a.stage_verifier) / f"scores_{mode}{slug(tag) if mode != 'off' else ''}_{slug(sv)}.json"
                recs = records(mine, answers)
                cache_key = scores_key(recs, sv)
                cached = json.loads(cache.read_text()) if cache.is_file() else {}
                if cached.get("ids") == ids and cached.get("key") == cache_key:
                    per = cached["items"]
                elif a.report_only:
                    print(f"  {label} {mode}: no scores by {sv} for these records and this scorer "
                          "(run without --report-only to score them)", file=sys.stderr)
                    continue
                else:
                    t0 = time.perf_counter()
                    _, per = score_records(recs, verifier=sv)
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    cache.write_text(json.dumps({"ids": ids, "key": cache_key, "items": per, "commit": commit(),
                                                 "seconds": round(time.perf_counter() - t0, 1)}))
                summ, ci = summarize(per), bootstrap(per)
                row[f"v{k}"] = {key: (summ.get(key), ci.get(key)) for key in summ}
            if odsum:
                from bench_odmds_summaries import rouge2

                from citegraph.metrics import rouge_lsum

                texts = [(AttributedAnswer.model_validate(answers[it.id]["answer"]).render(), it.raw["references"]) for it in mine]
                r2 = [100 * rouge2(t, refs) for t, refs in texts]
                rl = [100 * rouge_lsum(t, refs) for t, refs in texts]
                row["rouge"] = ((sum(r2) / len(r2), _ci(r2)), (sum(rl) / len(rl), _ci(rl)))
            if a.deepeval:
                # repair changes neither text nor documents: its scores are off's; off's need no stage verifier
                jpath = (out / slug(label) / f"deepeval_off_{slug(a.llm)}.jsonl" if mode in ("off", "repair") else
                         out / slug(label) / slug(a.stage_verifier) / f"deepeval_{mode}{slug(tag)}_{slug(a.llm)}.jsonl")
                off_path = out / slug(label) / f"deepeval_off_{slug(a.llm)}.jsonl"
                same = (off_path, gen) if mode == "strict" else None
                de = read_journal(jpath) if a.report_only else {r["id"]: r for r in deepeval_rows(mine, answers, a.llm, jpath, same)}
                means = [de[i]["mean"] for i in ids if i in de and de[i].get("mean") is not None]
                if all(i in de for i in ids) and means:
                    # an item whose judge reply did not parse after the retries has no mean (its
                    # problems are in the journal): the cell says over how many items the mean is
                    row["deepeval"] = (sum(means) / len(means), _ci(means))
                    row["deepeval_n"] = len(means)
                    row["deepeval_s"] = sum(de[i]["seconds"] for i in ids) / len(ids)
            rows.append(row)
    print(f"\n# bench_attribution · data {a.data} (first {a.limit}) · llm {a.llm} · stage verifier "
          f"{a.stage_verifier} · commit {commit()}")
    print("Scores: mean [95% bootstrap CI]. v0/v1 = " + " / ".join(score_vs)
          + f" (a score by {a.stage_verifier} of repair/strict rows is partly by construction).\n")
    head = ["method", "attribution", "n", "cited %", "flagged %", "cited or flagged %"]
    for sv in score_vs:
        head += [f"cit. R ({sv})", f"cit. P ({sv})", f"cit. F1 ({sv})"]
    head += ["STR-EM / claims / ROUGE"] + (["DeepEval mean (s/answer)"] if a.deepeval else []) + ["words", "LLM calls", "gen s/q", "stage s/q"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        v0 = r.get("v0", {})

        def g(key, src=v0, digits=1):
            m, ci = src.get(key, (None, None))
            return fmt(m, ci, digits)

        uncited = v0.get("uncited_pct", (None, None))[0]
        cited = fmt(None if uncited is None else 100 - uncited, None)
        flagged = g("flagged_pct") if "flagged_pct" in v0 else "0.0"
        cof = g("cited_or_flagged_pct") if "cited_or_flagged_pct" in v0 else cited
        cells = [r["label"], r["mode"], str(r["n"]), cited, flagged, cof]
        for k in range(len(score_vs)):
            src = r.get(f"v{k}", {})
            cells += [g("citation_rec", src), g("citation_prec", src), g("citation_f1", src)]
        corr = g("str_em") if "str_em" in v0 else g("claims_nli")
        if "rouge" in r:
            (m2, c2), (ml, cl) = r["rouge"]
            corr = f"R-2 {fmt(m2, c2)} / R-Lsum {fmt(ml, cl)}"
        cells += [corr]
        if a.deepeval:
            m, ci = r.get("deepeval", (None, None))
            of = f"{r['deepeval_n']} of {r['n']}; " if m is not None and r["deepeval_n"] < r["n"] else ""
            cells += [fmt(m, ci, 3) + (f" ({of}{r['deepeval_s']:.0f} s)" if m is not None else "")]
        cells += [g("length", digits=0), f"{r['llm_calls']:.1f}", f"{r['gen_s']:.1f}",
                  "–" if r["stage_s"] is None else f"{r['stage_s']:.2f}"]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
