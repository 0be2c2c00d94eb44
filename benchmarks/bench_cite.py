"""``cite`` measured (issue #34): how fast it attributes a text, what share of the sentences it
attributes, and how precise those attributions are by a verifier it did not consult.

    OMP_NUM_THREADS=1 python benchmarks/bench_cite.py --limit 10
    OMP_NUM_THREADS=1 python benchmarks/bench_cite.py --answers runs/attr_asqa/vanilla_free/answers.jsonl

Cases (each text is given to the ``cite`` graph with the item's 5 documents, citations stripped):
* ``eli5-10``: the first 10 sentences of ELI5 dev items' human answers that have at least 10
  (../shared/data/alce/eli5_dev60.json) — the timing case (10 sentences over 5 documents);
* ``asqa-gold``: ASQA dev items' first annotated long answer (../shared/data/alce/asqa_dev60.json);
* ``--answers FILE``: the answers a method wrote (a bench_attribution journal), e.g. VANILLA's.
Timing is in-process with the verifier already loaded (the first, cold call is reported apart).
The check verifier (default ``llm-judge:local``) scores each attributed sentence against the
documents cite chose for it (joint premise, ALCE semantics): its precision.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from citegraph.graphs.registry import build_graph, make_context  # noqa: E402
from citegraph.nodes.attribution import premise  # noqa: E402
from citegraph.run.datasets import Item, load_items  # noqa: E402
from citegraph.run.runner import answer_item  # noqa: E402
from citegraph.state import AttributedAnswer  # noqa: E402
from citegraph.tools.sentences import split_sentences  # noqa: E402
from citegraph.tools.verifier import get_verifier  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "alce"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cases(limit: int, answers: str | None) -> dict[str, list[Item]]:
    out: dict[str, list[Item]] = {}
    eli5 = []
    for it in load_items(DATA / "eli5_dev60.json"):
        sents = [s for s in split_sentences(it.raw.get("answer") or "") if s.strip()]
        if len(sents) >= 10:
            eli5.append(Item(id=it.id, question=it.question, documents=it.documents,
                             inputs={"answer_text": " ".join(sents[:10])}))
    out["eli5-10"] = eli5[:limit]
    asqa = []
    for it in load_items(DATA / "asqa_dev60.json"):
        ann = it.raw.get("annotations") or []
        if ann and ann[0].get("long_answer"):
            asqa.append(Item(id=it.id, question=it.question, documents=it.documents,
                             inputs={"answer_text": ann[0]["long_answer"]}))
    out["asqa-gold"] = asqa[:limit]
    if answers:
        rows = [json.loads(x) for x in Path(answers).read_text().splitlines() if x.strip()]
        got = []
        for r in rows[:limit]:
            ans = AttributedAnswer.model_validate(r["answer"])
            if ans.sentences:
                got.append(Item(id=r["id"], question=ans.question, documents=ans.documents,
                                inputs={"answer_text": ans.text}))
        out[f"answers:{Path(answers).parent.name}"] = got
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--answers", default=None)
    ap.add_argument("--verifier", default="default", help="the verifier cite consults")
    ap.add_argument("--check", default="llm-judge:local", help="the verifier that checks cite's attributions ('' = none)")
    ap.add_argument("--rewrite", action="store_true",
                    help="also run `cite --rewrite` (the --llm model rewrites each partial or unsupported sentence "
                         "from its best evidence) on the same texts and print what the rewrites did")
    ap.add_argument("--llm", default="local", help="with --rewrite: the model that rewrites")
    ap.add_argument("--cases", default="", help="comma-separated case names to run (default: all)")
    a = ap.parse_args()
    graph = build_graph("cite")
    ctx = make_context("cite", verifier=a.verifier)
    check = get_verifier(a.check) if a.check else None
    # cold: the first call loads the verifier
    warm_item = Item(id="warm", question="", documents=load_items(DATA / "asqa_dev60.json", limit=1)[0].documents,
                     inputs={"answer_text": "A warm-up sentence."})
    t0 = time.perf_counter()
    answer_item(graph, warm_item, ctx)
    cold = time.perf_counter() - t0
    print(f"# bench_cite · commit {commit()} · cite verifier {a.verifier} · check verifier {a.check or 'none'}")
    print(f"first call (loads the verifier): {cold:.1f}s\n")
    print("| case | texts | sentences/text | s/text (warm) | s per 10 sentences | attributed % | partial % | flagged % | "
          f"precision by {a.check or '-'} |")
    print("|---|---|---|---|---|---|---|---|---|")
    all_cases = {k: v for k, v in cases(a.limit, a.answers).items()
                 if v and (not a.cases or k in a.cases.split(",") or k.split(":")[0] in a.cases.split(","))}
    for name, items in all_cases.items():
        n_sent = secs = sup = part = flag = 0
        checked = ok = 0
        for it in items:
            t0 = time.perf_counter()
            ans, _ = answer_item(graph, it, ctx)
            secs += time.perf_counter() - t0
            n_sent += len(ans.sentences)
            c = ans.support_counts()
            sup, part, flag = sup + c["supported"], part + c["partial"], flag + c["unsupported"]
            if check is not None:
                pairs = [(premise(ans.documents, s.citations), s.text) for s in ans.sentences if s.citations]
                if pairs:
                    checked += len(pairs)
                    ok += sum(check.entails_many(pairs))
        k = len(items)
        prec = f"{100 * ok / checked:.1f} ({ok}/{checked})" if checked else "–"
        print(f"| {name} | {k} | {n_sent / k:.1f} | {secs / k:.2f} | {10 * secs / max(1, n_sent):.2f} | "
              f"{100 * (sup + part) / max(1, n_sent):.1f} | {100 * part / max(1, n_sent):.1f} | "
              f"{100 * flag / max(1, n_sent):.1f} | {prec} |", flush=True)
    if a.rewrite:
        rewrite_table(graph, all_cases, a, check)
    return 0


def rewrite_table(graph, all_cases: dict, a, check) -> None:
    """`cite --rewrite` on the same texts: how many sentences the LLM rewrote, how many of those the
    stage then finds supported (its own verifier: by construction) and how many the check verifier
    accepts against the documents cited (not consulted), and whether each rewrite keeps to what the
    original sentence said (the check verifier: the original entails the rewrite)."""
    ctx = make_context("cite", verifier=a.verifier, rewrite=True, llm=a.llm)
    print(f"\n`cite --rewrite` (llm {a.llm}) on the same texts; 'by check' = {a.check or '-'}, not consulted\n")
    print("| case | texts | sentences | left partial/unsupported by cite | rewritten | supported after (cite's verifier) | "
          "rewrites supported by check | rewrite entailed by the original (check) | flagged after % | LLM calls/text | "
          "s/text |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, items in all_cases.items():
        n_sent = n_weak = n_rw = n_sup = flag = calls = 0
        secs = 0.0
        pairs_doc, pairs_orig = [], []
        for it in items:
            t0 = time.perf_counter()
            ans, usage = answer_item(graph, it, ctx)
            secs += time.perf_counter() - t0
            calls += int(usage.get("llm_calls") or 0)
            att = ans.metadata.get("attribution") or {}
            first = att.get("first_pass") or att.get("sentences") or []
            n_sent += len(ans.sentences)
            n_weak += sum(1 for r in first if r.get("support") in ("partial", "unsupported"))
            flag += ans.support_counts()["unsupported"]
            for r in att.get("sentences") or []:
                if r.get("action") != "rewritten":
                    continue
                s = ans.sentences[r["sentence"]]
                n_rw += 1
                n_sup += s.support == "supported"
                if s.citations:
                    pairs_doc.append((premise(ans.documents, s.citations), s.text))
                pairs_orig.append((r["rewritten_from"], s.text))
        k = len(items)
        by_check = pres = "–"
        if check is not None and pairs_orig:
            ok_doc = sum(check.entails_many(pairs_doc)) if pairs_doc else 0
            ok_orig = sum(check.entails_many(pairs_orig))
            by_check, pres = f"{ok_doc} of {n_rw}", f"{ok_orig} of {n_rw}"
        print(f"| {name} | {k} | {n_sent} | {n_weak} | {n_rw} | {n_sup} of {n_rw} | {by_check} | {pres} | "
              f"{100 * flag / max(1, n_sent):.1f} | {calls / k:.1f} | {secs / k:.2f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
