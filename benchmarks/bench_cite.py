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
    for name, items in cases(a.limit, a.answers).items():
        if not items:
            continue
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
