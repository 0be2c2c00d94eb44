"""How ROUGE-Lsum's sentence split behaves on ALCE text (issue #17), and how often our default
splitter agrees with punkt (what ALCE's eval.py uses).

rougeLsum scores the summary-level LCS over lines, so the number of lines per text matters. For
the references of ``../shared/data/alce/{asqa,eli5}_dev60.json`` (ASQA: both annotations' long
answers; ELI5: ``answer``) it prints the mean lines per reference under four splits: blingfire on
lower-cased text (the old bug), blingfire on the original text, then lower-cased (the default mode
now), punkt on lower-cased text (ALCE's ``sent_tokenize(text.lower())``, ``--alce``) and punkt on
the original text; and how many references give the same lines under punkt-lower as under
punkt-original. Then, for every ALCE passage (``docs[*].text``), how often blingfire and punkt
return the same sentences. No model, a few seconds; run: python benchmarks/bench_rouge_split.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from citegraph.tools.sentences import punkt_sentences, split_sentences

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alce"


def load(name: str) -> list[dict]:
    data = json.loads((DATA / f"{name}_dev60.json").read_text())
    return data["data"] if isinstance(data, dict) else data


def main() -> int:
    if not DATA.is_dir():
        print(f"shared data not found: {DATA}", file=sys.stderr)
        return 1
    print("| references | n | blingfire(lower) | blingfire(orig)→lower | punkt(lower) [ALCE] | punkt(orig) "
          "| punkt lower = orig |")
    print("|---|---|---|---|---|---|---|")
    for name in ("asqa", "eli5"):
        items = load(name)
        refs = [a["long_answer"] for it in items for a in it.get("annotations") or []] or [it["answer"] for it in items]

        def mean_lines(split) -> float:
            return sum(len(split(r)) for r in refs) / len(refs)

        same = sum([s.lower() for s in punkt_sentences(r)] == punkt_sentences(r.lower()) for r in refs)
        print(f"| {name} | {len(refs)} | {mean_lines(lambda r: split_sentences(r.lower())):.2f} "
              f"| {mean_lines(split_sentences):.2f} | {mean_lines(lambda r: punkt_sentences(r.lower())):.2f} "
              f"| {mean_lines(punkt_sentences):.2f} | {same}/{len(refs)} |")
    print()
    print("| passages | n | blingfire = punkt | sentences blingfire | sentences punkt |")
    print("|---|---|---|---|---|")
    for name in ("asqa", "eli5", "qampari"):
        texts = [d["text"] for it in load(name) for d in it["docs"]]
        same = sum(split_sentences(t) == punkt_sentences(t) for t in texts)
        nb = sum(len(split_sentences(t)) for t in texts)
        npk = sum(len(punkt_sentences(t)) for t in texts)
        print(f"| {name} | {len(texts)} | {same} ({100 * same / len(texts):.1f}%) | {nb} | {npk} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
