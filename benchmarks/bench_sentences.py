"""Sentence splitter accuracy: blingfire vs pysbd vs spaCy's rule sentencizer (vs a regex).

Gold: the sentence lists shipped with ../shared/data/mds/dev.jsonl (MultiNews documents) and
../shared/data/lfqa/dev.jsonl (web documents). Each document's sentences are joined back into its
text; a splitter is scored on the boundaries it predicts (precision / recall / F1 over boundary
character offsets) and on exact-sentence match. Splitting goes through ``split_sentences`` (newlines are
hard boundaries, as in the package). On ALCE passages (no gold) we report how often each
splitter agrees with the others' majority. Prints one table; run: python benchmarks/bench_sentences.py
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from citegraph.tools.sentences import split_sentences

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SPLITTERS = ["blingfire", "pysbd", "regex"]
try:
    import spacy  # noqa: F401

    SPLITTERS.insert(2, "spacy")
except ImportError:
    print("spacy not installed: its row is skipped (pip install spacy)", file=sys.stderr)


def docs_with_gold():
    out = {"mds": [], "lfqa": []}
    for name in out:
        p = DATA / name / "dev.jsonl"
        for line in p.read_text().splitlines():
            row = json.loads(line)
            for d in row["documents"]:
                sents = [s for s in d["documentText"] if s.strip()]
                if len(sents) >= 2:
                    out[name].append(sents)
    return out


def boundaries(text: str, sents: list[str]) -> set[int]:
    """End offsets (in ``text``, whitespace-stripped) of each sentence but the last."""
    pos, ends = 0, []
    for s in sents:
        s = s.strip()
        if not s:
            continue
        i = text.find(s, pos)
        if i < 0:  # splitter altered the text; search a prefix
            i = text.find(s[:20], pos)
            if i < 0:
                continue
        pos = i + len(s)
        ends.append(pos)
    return set(ends[:-1])


def score(golds: list[list[str]], name: str) -> dict:
    def split(t):
        return split_sentences(t, splitter=name)

    tp = fp = fn = exact = n_gold = 0
    t0 = time.perf_counter()
    for sents in golds:
        text = "".join(sents)
        gold = boundaries(text, sents)
        pred_s = [p for p in split(text) if p.strip()]
        pred = boundaries(text, pred_s)
        tp += len(gold & pred)
        fp += len(pred - gold)
        fn += len(gold - pred)
        gs = {s.strip() for s in sents if s.strip()}
        exact += sum(1 for p in pred_s if p.strip() in gs)
        n_gold += len(gs)
    secs = time.perf_counter() - t0
    p = tp / max(1, tp + fp)
    r = tp / max(1, tp + fn)
    return {"P": p, "R": r, "F1": 2 * p * r / max(1e-9, p + r), "exact": exact / max(1, n_gold), "s": secs}


def alce_agreement() -> dict:
    passages = []
    for f in ("asqa_dev60.json", "eli5_dev60.json", "qampari_dev60.json"):
        for ex in json.loads((DATA / "alce" / f).read_text()):
            passages += [d["text"] for d in ex["docs"]]
    preds = {n: [frozenset(boundaries(t, split_sentences(t, splitter=n))) for t in passages] for n in SPLITTERS}
    agree = {}
    for n in SPLITTERS:
        others = [o for o in SPLITTERS if o != n]
        tp = fp = fn = 0
        for i in range(len(passages)):
            votes = Counter(b for o in others for b in preds[o][i])
            majority = {b for b, c in votes.items() if c >= 2}
            tp += len(preds[n][i] & majority)
            fp += len(preds[n][i] - majority)
            fn += len(majority - preds[n][i])
        p, r = tp / max(1, tp + fp), tp / max(1, tp + fn)
        agree[n] = 2 * p * r / max(1e-9, p + r)
    return {"passages": len(passages), "agreement_f1": agree}


def main() -> int:
    if not DATA.exists():
        print(f"shared data not found at {DATA}; nothing to measure", file=sys.stderr)
        return 2
    gold = docs_with_gold()
    print(f"gold documents: mds={len(gold['mds'])} lfqa={len(gold['lfqa'])} "
          f"(sentences: mds={sum(map(len, gold['mds']))} lfqa={sum(map(len, gold['lfqa']))})")
    print(f"{'splitter':10} | {'set':5} | {'bound P':>7} {'bound R':>7} {'bound F1':>8} | {'exact':>6} | {'sec':>5}")
    for name in SPLITTERS:
        for ds in ("mds", "lfqa"):
            s = score(gold[ds], name)
            print(f"{name:10} | {ds:5} | {s['P']:7.3f} {s['R']:7.3f} {s['F1']:8.3f} | {s['exact']:6.3f} | {s['s']:5.1f}")
    ag = alce_agreement()
    print(f"\nALCE passages ({ag['passages']}, no gold): boundary F1 against the majority of the other splitters")
    for n, f in ag["agreement_f1"].items():
        print(f"  {n:10} {f:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
