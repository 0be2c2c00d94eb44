"""cite_format free vs constrained on the final composition call (#34 item 2).

For each item (the bundled example, then the first N ASQA dev items), VANILLA's ALCE prompt
(1 demo) goes to the model twice: free decoding (``chat_text``, what ``cite_format=free`` does) and
``cited_sentences`` (``cite_format=constrained``: a GBNF grammar on llama.cpp models). The KV cache
is emptied before every call, so each pays its whole prompt. Prints per item and in total: answer
sentences, % of them citing a document, and seconds per call.

run: python benchmarks/bench_cite_format.py [--asqa ../shared/data/alce/asqa_dev60.json] [--limit 3]
                                            [--llm local] [--max-sentences 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from citegraph.prompts.alce import build_prompt
from citegraph.run.datasets import bundled_example, load_items
from citegraph.tools.citations import parse_answer
from citegraph.tools.models import chat_text, cited_sentences, get_chat_model, reset_local_models

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asqa", default=str(DATA / "alce" / "asqa_dev60.json"))
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--max-sentences", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=300)
    args = ap.parse_args()

    items = [bundled_example()]
    if args.limit and Path(args.asqa).exists():
        items += load_items(args.asqa, args.limit)
    get_chat_model(args.llm).invoke("Hi", max_tokens=1)  # load the model outside the timings
    rows = []
    for it in items:
        prompt = build_prompt(it.question, it.documents, ndemo=1)
        n = len(it.documents)
        row = {"item": it.id[:24]}
        for mode in ("free", "constrained"):
            reset_local_models()
            t0 = time.perf_counter()
            if mode == "free":
                text = chat_text(args.llm, prompt, temperature=0.0, max_tokens=args.max_tokens)
                sents = parse_answer(text, documents=it.documents).sentences
            else:
                sents = cited_sentences(args.llm, prompt, n, max_sentences=args.max_sentences,
                                        temperature=0.0, max_tokens=args.max_tokens).sentences
            secs = time.perf_counter() - t0
            row[mode] = {"sentences": len(sents), "cited": sum(1 for s in sents if s.citations), "seconds": round(secs, 1)}
            print(json.dumps({"item": row["item"], "mode": mode, **row[mode],
                              "text": " | ".join(f"{s.text} {s.citations}" for s in sents)}), flush=True)
        rows.append(row)

    print(f"\n{'item':26} {'free: cited/sent':>17} {'s':>6} {'constrained: cited/sent':>24} {'s':>6}")
    tot = {m: [0, 0, 0.0] for m in ("free", "constrained")}
    for r in rows:
        for m in tot:
            tot[m][0] += r[m]["cited"]
            tot[m][1] += r[m]["sentences"]
            tot[m][2] += r[m]["seconds"]
        print(f"{r['item']:26} {r['free']['cited']:>8}/{r['free']['sentences']:<8} {r['free']['seconds']:>6} "
              f"{r['constrained']['cited']:>15}/{r['constrained']['sentences']:<8} {r['constrained']['seconds']:>6}")
    for m, (c, s, secs) in tot.items():
        pct = 100.0 * c / s if s else 0.0
        print(f"{m:12} {c}/{s} sentences cited ({pct:.0f}%), {secs / len(rows):.1f} s per call")


if __name__ == "__main__":
    main()
