#!/usr/bin/env python
"""Benchmark of the entailment verifier: accuracy and throughput.

    python benchmarks/bench_verifier.py [--verifier SPEC] [--sets heldout,expertqa,fever,minimal] [--skip-judge]
    python benchmarks/bench_verifier.py --verifier SPEC --sets aggrefact --aggrefact llm-aggrefact-test.parquet

(1) Accuracy at the verifier's threshold, per set: balanced accuracy, TPR, TNR and ROC-AUC with 95%
    bootstrap intervals, ECE, pairs/s. Sets: (a) the held-out attribution split written by
    scripts/train_verifier.py (citegraph/assets/verifier/heldout_split.json), by source; (b) ExpertQA
    claims (support Complete = entailed; Missing / Incomplete = not entailed; Partial and unlabelled
    claims excluded; premise = the claim's evidence passages joined); (c) FEVER-NLI test (never trained
    on; a label-stratified sample, --fever-sample); (d) the minimal-pair suite
    (benchmarks/data/minimal_pairs.jsonl: negation, role swap, entity swap, number/date, added detail,
    supported paraphrase, two-sentence support, long premise, with controls), per category, and
    --sets minimal-blind, a second suite of the same categories written by helpers who saw neither
    the first suite nor the checks' rules (benchmarks/data/minimal_pairs_blind.jsonl), and --sets
    minimal-third, a third, written blind again, to judge changes made while reading the second
    (benchmarks/data/minimal_pairs_third.jsonl), --sets minimal-fourth, a fourth written the same way
    and committed unscored (it judged the second lm-check adapter), --sets minimal-fifth, a fifth
    written the same way (it judged session 26's run 10), and --sets minimal-sixth, a sixth, committed
    unscored (it judged session 27's checks and fourth adapter), --sets minimal-seventh, a seventh
    (it judged session 27's second round of checks), --sets minimal-eighth, an eighth (it judged
    session 28's sixth adapter), --sets minimal-ninth, a ninth (it judged session 29's checks,
    reverted), --sets minimal-tenth, a tenth (it judged their second round, kept), --sets
    minimal-eleventh, an eleventh (it judged their third round, a tie, kept), --sets minimal-twelfth,
    a twelfth (it judged their fourth, a tie, kept), --sets minimal-thirteenth, a thirteenth (it
    judged session 30's long-premise rule for +lm), and --sets minimal-fourteenth, a fourteenth,
    committed unscored to judge the next change; (e) any
    file in LLM-AggreFact's format (dataset, doc, claim, label), per dataset and the leaderboard's
    average. The llm-judge is slow, so it (and the verifier again, for a like-for-like row) runs on a
    fixed seeded sample (--judge-sample, 0 = none).
(2) Throughput: the batched, cached verifier vs a one-pair-per-call loop (as ALCE's eval.py
    calls its NLI model) on the same 500 (premise, hypothesis) pairs built from ALCE ASQA docs,
    with repeated pairs as RAAC-style loops produce them.

Data is read from ../shared/data relative to the repository; the script exits with a message
where it is absent.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# --sets name -> (the table's title, the argument naming its file, its key in the figures written)
MINIMAL_SUITES = {
    "minimal": ("minimal pairs", "minimal_pairs", "minimal_pairs"),
    "minimal-blind": ("minimal pairs, written blind", "minimal_blind", "minimal_pairs_blind"),
    "minimal-third": ("minimal pairs, third suite (written blind)", "minimal_third", "minimal_pairs_third"),
    "minimal-fourth": ("minimal pairs, fourth suite (written blind)", "minimal_fourth", "minimal_pairs_fourth"),
    "minimal-fifth": ("minimal pairs, fifth suite (written blind)", "minimal_fifth", "minimal_pairs_fifth"),
    "minimal-sixth": ("minimal pairs, sixth suite (written blind)", "minimal_sixth", "minimal_pairs_sixth"),
    "minimal-seventh": ("minimal pairs, seventh suite (written blind)", "minimal_seventh", "minimal_pairs_seventh"),
    "minimal-eighth": ("minimal pairs, eighth suite (written blind)", "minimal_eighth", "minimal_pairs_eighth"),
    "minimal-ninth": ("minimal pairs, ninth suite (written blind)", "minimal_ninth", "minimal_pairs_ninth"),
    "minimal-tenth": ("minimal pairs, tenth suite (written blind)", "minimal_tenth", "minimal_pairs_tenth"),
    "minimal-eleventh": ("minimal pairs, eleventh suite (written blind)", "minimal_eleventh", "minimal_pairs_eleventh"),
    "minimal-twelfth": ("minimal pairs, twelfth suite (written blind)", "minimal_twelfth", "minimal_pairs_twelfth"),
    "minimal-thirteenth": ("minimal pairs, thirteenth suite (written blind)", "minimal_thirteenth",
                           "minimal_pairs_thirteenth"),
    "minimal-fourteenth": ("minimal pairs, fourteenth suite (written blind)", "minimal_fourteenth",
                           "minimal_pairs_fourteenth"),
}

sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--verifier", default="default")
    ap.add_argument("--quantize", choices=["shipped", "none", "int8"], default="shipped",
                    help="CPU weights of --verifier: as shipped (assets/verifier/inference.json), fp32 or dynamic int8")
    ap.add_argument("--max-windows", type=int, default=None,
                    help="score at most N windows of a long premise (best word overlap first); default: as shipped")
    ap.add_argument("--premise", choices=["as-is", "best-sentences"], default="as-is",
                    help="what the verifier reads of each premise: all of it (its own windows), or the sentences "
                         "sharing the most content words with the claim, about 95 words (eval.verifier_sets.best_sentences)")
    ap.add_argument("--judge", default="llm-judge:local")
    ap.add_argument("--judge-sample", type=int, default=200, help="pairs per set for the slow llm-judge (0 = none)")
    ap.add_argument("--skip-judge", action="store_true")
    ap.add_argument("--throughput-pairs", type=int, default=500)
    ap.add_argument("--repeat-share", type=float, default=0.25, help="share of repeated pairs in the throughput set")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default=None, help="cpu, cuda or auto (the verifier's own default: auto, bf16 on CUDA)")
    ap.add_argument("--batch-sizes", default="", help="comma-separated batch sizes for extra throughput rows, e.g. 32,128,512")
    ap.add_argument("--scores-out", default=None, help="write the held-out scores (one per pair, in split order) to this JSON file")
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--sets", default="heldout,expertqa,fever,minimal",
                    help="comma-separated: heldout, expertqa, fever (FEVER-NLI test), factcg (FactCG CG2C_doc), minimal (the minimal-pair "
                         "suite), minimal-blind (a second suite, written by helpers who saw neither the first suite nor the "
                         "checks' rules; docs/verifier.md), minimal-third (a third, written blind again: judges changes made "
                         "while reading the second), minimal-fourth (a fourth, written blind; it judged the second lm-check adapter), minimal-fifth (a "
                         "fifth, written blind; it judged session 26's run 10), minimal-sixth (a sixth, written blind; it "
                         "judged session 27's checks and fourth adapter), minimal-seventh (a seventh, written blind; it "
                         "judged session 27's second round of checks), minimal-eighth (an eighth, written blind; it "
                         "judged session 28's sixth adapter), minimal-ninth (a ninth, written blind; it judged session "
                         "29's checks), minimal-tenth (a tenth, written blind; it judged their second round), "
                         "minimal-eleventh (an eleventh, written blind; it judged their third round), minimal-twelfth "
                         "(a twelfth, written blind; it judged their fourth), minimal-thirteenth (a thirteenth, written "
                         "blind; it judged session 30's long-premise rule), minimal-fourteenth (a fourteenth, written "
                         "blind and kept unscored for the next change), "
                         "aggrefact (needs --aggrefact)")
    ap.add_argument("--fever-sample", type=int, default=2000, help="label-stratified FEVER-NLI test pairs (0 = all 10,000)")
    for _, arg, key in MINIMAL_SUITES.values():  # --minimal-pairs, --minimal-blind, ...: each suite's file
        ap.add_argument("--" + arg.replace("_", "-"), default=str(REPO / "benchmarks" / "data" / f"{key}.jsonl"))
    ap.add_argument("--aggrefact", default=None, help="an LLM-AggreFact file (parquet, csv, tsv, jsonl) to score")
    ap.add_argument("--aggrefact-datasets", default="", help="only these of the file's datasets (comma-separated)")
    ap.add_argument("--threshold", type=float, default=None, help="decision threshold (default: the verifier's own)")
    ap.add_argument("--partial", type=float, default=None,
                    help="the attribution stage's partial threshold (Context attribution_partial) for the status bands, "
                         "on the scale shown (default: the verifier's own)")
    ap.add_argument("--keep-partial", type=float, default=None, metavar="SCORE",
                    help="with --calibrate: keep the stage's partial threshold at this score as the verifier gives it "
                         "(the chosen one is written beside it), for a spec whose published rows were made at SCORE")
    ap.add_argument("--calibrate", default=None, metavar="FILE",
                    help="fit the score shown (a temperature) and choose the stage's partial threshold on the development "
                         "half of the held-out split, report both on its test half, and write the spec's entry into FILE "
                         "(citegraph/assets/verifier/calibration.json is the shipped one)")
    ap.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the intervals")
    ap.add_argument("--json-out", default=None, help="write every figure to this JSON file")
    ap.add_argument("--fit-temperature", action="store_true",
                    help="fit a temperature on the held-out split's scores and print every set's ECE with it "
                         "(decisions at 0.5 do not change); the shipped value goes in assets/verifier/inference.json")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--stage", type=int, default=0,
                    help="also run the attribution stage (as `cite` does) on this many label-stratified pairs per set: "
                         "each claim a one-sentence answer citing its premise as one document; the stage's status "
                         "(supported or not) is scored, with the sentences it checks alone (0 = off)")
    return ap.parse_args(argv)


def die(msg: str) -> None:
    print(msg, file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
def heldout_pairs(data: Path):
    from citegraph.tools.verifier import ASSET_DIR

    split_file = ASSET_DIR / "heldout_split.json"
    attr_file = data / "nli_train" / "attribution_pairs.jsonl"
    if not attr_file.exists():
        die(f"missing {attr_file}: the held-out attribution split needs ../shared/data/nli_train")
    if not split_file.exists():
        die(f"missing {split_file}: train the model first (scripts/train_verifier.py)")
    lines = set(json.loads(split_file.read_text())["lines"])
    out = []
    with attr_file.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i in lines:
                r = json.loads(line)
                out.append((r["premise"], r["hypothesis"], int(r["label"] == "supported"), r["label"], r["source"]))
    return out


def expertqa_pairs(data: Path):
    path = data / "expertqa" / "lfqa_domain_test.jsonl"
    if not path.exists():
        die(f"missing {path}")
    out, skipped = [], collections.Counter()
    with path.open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            for ans in q["answers"].values():
                for c in ans.get("claims") or []:
                    sup = c.get("support")
                    if sup == "Complete":
                        y = 1
                    elif sup in ("Missing", "Incomplete"):
                        y = 0
                    else:
                        skipped[str(sup)] += 1
                        continue
                    premise = "\n\n".join(c.get("evidence") or [])
                    out.append((premise, c["claim_string"], y, sup, "expertqa"))
    return out, skipped


def load_verifier(args):
    from citegraph.tools.verifier import get_verifier

    kw = {} if args.quantize == "shipped" or args.verifier.startswith("llm-judge") else {"quantize": args.quantize}
    if args.max_windows is not None and not args.verifier.startswith("llm-judge"):
        kw["max_windows"] = args.max_windows
    if args.device and not args.verifier.startswith("llm-judge"):
        kw["device"] = args.device
    ver = get_verifier(args.verifier, **kw)
    print(f"verifier {args.verifier}: max_length {getattr(ver, 'max_length', '-')}, "
          f"max_windows {getattr(ver, 'max_windows', '-')}, int8 {getattr(ver, 'quantized', False)}, "
          f"device {getattr(ver, 'device', '-')}")
    return ver


def timed_score(verifier, pairs):
    verifier.clear_cache()
    t = time.perf_counter()
    s = verifier.score(pairs)
    return s, len(pairs) / max(time.perf_counter() - t, 1e-9)


def print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")


# ---------------------------------------------------------------------------------------------
def _pct(v: float) -> str:
    return "n/a" if v != v else f"{100 * v:.1f}"


def _ci(ci) -> str:
    return "" if ci[0] != ci[0] else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def load_sets(args, data: Path) -> list[tuple[str, list]]:
    """(name, [CheckPair]) for every set in --sets, read from ../shared/data and benchmarks/data."""
    from citegraph.eval.verifier_sets import (CheckPair, read_aggrefact, read_factcg, read_fever_nli,
                                              read_minimal_pairs, stratified_sample)

    want = [x.strip() for x in args.sets.split(",") if x.strip()]
    out = []
    for name in want:
        if name == "heldout":
            out.append(("held-out attribution", [CheckPair(p, h, y, src.split("/")[0], lab)
                                                 for p, h, y, lab, src in heldout_pairs(data)]))
        elif name == "expertqa":
            eqa, skipped = expertqa_pairs(data)
            print(f"ExpertQA claims: {len(eqa)} ({sum(r[2] for r in eqa)} Complete = entailed, "
                  f"{sum(r[3] == 'Incomplete' for r in eqa)} Incomplete + {sum(r[3] == 'Missing' for r in eqa)} Missing "
                  f"= not entailed; Missing claims have no evidence, premise is empty); excluded: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())) + " (Partial excluded by design)")
            pairs = [CheckPair(p, h, y, "expertqa", lab) for p, h, y, lab, _ in eqa]
            out.append(("ExpertQA (Complete vs Missing+Incomplete)", pairs))
            out.append(("ExpertQA with evidence (Complete vs Incomplete)", [q for q in pairs if q.premise.strip()]))
        elif name == "fever":
            path = data / "nli_train" / "extra" / "fever_nli" / "test.txt"
            if not path.exists():
                die(f"missing {path}")
            rows = stratified_sample(read_fever_nli(path), args.fever_sample, args.seed)
            out.append((f"FEVER-NLI test ({'all' if not args.fever_sample else 'stratified sample'})", rows))
        elif name == "factcg":  # the structural checks' development set (docs/verifier.md), not default's data
            path = data / "nli_train" / "extra" / "factcg" / "CG2C_doc.json"
            if not path.exists():
                die(f"missing {path}")
            out.append(("FactCG CG2C_doc (checks' development set)", read_factcg(path)))
        elif name in MINIMAL_SUITES:
            title, arg, _ = MINIMAL_SUITES[name]
            path = Path(getattr(args, arg))
            if not path.exists():
                die(f"missing {path}")
            out.append((title, read_minimal_pairs(path)))
        elif name == "aggrefact":
            if not args.aggrefact:
                die("--sets aggrefact needs --aggrefact FILE (LLM-AggreFact's dataset, doc, claim, label)")
            rows = read_aggrefact(args.aggrefact, [d for d in args.aggrefact_datasets.split(",") if d] or None)
            out.append((f"LLM-AggreFact file {Path(args.aggrefact).name}", rows))
        else:
            die(f"--sets: unknown set {name!r} (heldout, expertqa, fever, factcg, {', '.join(MINIMAL_SUITES)}, aggrefact)")
    if getattr(args, "premise", "as-is") == "best-sentences":
        from dataclasses import replace

        from citegraph.eval.verifier_sets import best_sentences

        cut, words = {}, {}
        for name, pairs in out:
            for q in pairs:
                words[(cut.setdefault((q.premise, q.claim), best_sentences(q.premise, q.claim)), q.claim)] = \
                    len(q.premise.split())
        args.premise_words = words  # the premise's own length, for the table by length
        out = [(name, [replace(q, premise=cut[(q.premise, q.claim)]) for q in pairs]) for name, pairs in out]
    return out


_LENGTHS = ((0, 110, "up to 110"), (110, 200, "111-200"), (200, 10 ** 9, "over 200"))


def by_length(items, scores, thr: float, words: dict | None = None) -> list[tuple]:
    """Balanced accuracy by the premise's length in words (its own length where --premise cut it)."""
    from citegraph.eval.verifier_sets import binary_report

    out = []
    for lo, hi, label in _LENGTHS:
        idx = [i for i, q in enumerate(items)
               if lo < (words or {}).get((q.premise, q.claim), len(q.premise.split())) <= hi]
        ys = [items[i].label for i in idx]
        if not idx or len(set(ys)) < 2:
            out.append((label, len(idx), "n/a"))
            continue
        rep = binary_report(ys, [scores[i] for i in idx], thr, boot=0)
        out.append((label, len(idx), _pct(rep.balanced_accuracy)))
    return out


def accuracy(args, data: Path):
    from citegraph.eval.verifier_sets import binary_report, ece, leaderboard_average, minimal_pair_table
    from citegraph.tools.verifier import get_verifier

    sets = load_sets(args, data)
    ver = load_verifier(args)
    thr = args.threshold if args.threshold is not None else getattr(ver, "threshold", 0.5)
    judge, judge_note = None, ""
    if not args.skip_judge:
        try:
            judge = get_verifier(args.judge)
            judge.score([("The sky is blue.", "The sky is blue.")])  # fail early if the model is missing
        except Exception as exc:  # noqa: BLE001
            judge_note = f"{args.judge} not available: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            judge = None
    rows, extra, figures = [], [], {"verifier": args.verifier, "threshold": thr, "sets": {}}
    scored: dict = {}
    all_scores = []
    for name, items in sets:
        pairs = [(q.premise, q.claim) for q in items]
        y = [q.label for q in items]
        if all(pr in scored for pr in pairs):  # a subset of a set scored above
            s, pps = [scored[pr] for pr in pairs], float("nan")
        else:
            s, pps = timed_score(ver, pairs)
            scored.update(zip(pairs, s))
            if name.startswith("held-out") and args.scores_out:
                Path(args.scores_out).write_text(json.dumps({"device": str(getattr(ver, "device", None)), "dtype": str(getattr(ver, "dtype", None)), "scores": s}))
        all_scores.append(s)
        rep = binary_report(y, s, thr, boot=args.bootstrap, seed=args.seed)
        shown = [ver.shown(v) for v in s] if hasattr(ver, "shown") else s
        ece_shown = ece(y, shown)
        figures["sets"][name] = {**rep.as_dict(), "ece_shown": ece_shown, "pairs_per_s": pps}
        rows.append((name, args.verifier, rep.n, rep.positives, _pct(rep.balanced_accuracy) + _ci(rep.bacc_ci),
                     _pct(rep.tpr), _pct(rep.tnr), _pct(rep.roc_auc) + _ci(rep.auc_ci), f"{rep.ece:.3f}",
                     f"{ece_shown:.3f}", f"{pps:.1f}" if pps == pps else "(as above)"))
        print("  row:", rows[-1], file=sys.stderr, flush=True)
        if hasattr(ver, "flagged_by"):  # a +checks spec: how many pairs of this set each rule capped
            flagged = collections.Counter()
            for pr in pairs:
                for f in ver.explain(*pr):
                    flagged[f.kind] += 1
            figures["sets"][name]["checks_flagged"] = dict(flagged)
            extra.append((f"{name}: pairs the checks flag, by rule (capped when the base scored above 0.1)",
                          ["rule", "pairs flagged", "share"],
                          [(k, v, _pct(v / len(pairs))) for k, v in flagged.most_common()]))
        lengths = by_length(items, s, thr, getattr(args, "premise_words", None))
        figures["sets"][name]["by_premise_words"] = {lab: {"n": n, "balanced_accuracy": b} for lab, n, b in lengths}
        extra.append((f"{name}: by the premise's length in words (premise read {args.premise}; empty premises left out)",
                      ["premise words", "n", "balanced acc"], lengths))
        if name.startswith("held-out"):
            partial = args.partial if args.partial is not None else getattr(ver, "partial", 0.2)
            bands = status_bands(items, shown, partial, thr)
            figures["status_bands"] = bands
            extra.append((f"Held-out attribution by the stage's status bands on the scores shown (partial from "
                          f"{partial}, supported from {thr}): the share of each band that is supported is the "
                          "precision a reader gets",
                          ["status", "score band", "pairs", "share of pairs", "truly supported (precision)"],
                          [(b["status"], b["band"], b["n"], _pct(b["share"]), _pct(b["precision"])) for b in bands]))
            extra.append(("Held-out attribution by source", ["source", "n", "entailed", "balanced acc", "ROC-AUC"],
                          _by_group(items, s, thr)))
            by = collections.defaultdict(list)
            for q, sc in zip(items, s):
                by[q.id].append(sc)
            extra.append(("Held-out score by original label: is partially_supported closer to supported or not?",
                          ["label", "n", "mean P(entailed)", f"share >= {thr}"],
                          [(lab, len(v), f"{sum(v) / len(v):.3f}", f"{sum(x >= thr for x in v) / len(v):.3f}")
                           for lab, v in sorted(by.items())]))
        if name.startswith("minimal pairs"):
            tab = minimal_pair_table(items, s, thr)
            figures[next(key for title, _, key in MINIMAL_SUITES.values() if title == name)] = tab
            extra.append((f"{name[0].upper()}{name[1:]} by category (share decided right; control = supported claims kept)",
                          ["category", "n", "right", "share right"],
                          [(g, v["n"], v["right"], _pct(v["share"])) for g, v in tab.items()]))
        if name.startswith("LLM-AggreFact"):
            lb = leaderboard_average(items, s, thr)
            figures["aggrefact"] = lb
            extra.append(("LLM-AggreFact file: balanced accuracy per dataset (the leaderboard averages these)",
                          ["dataset", "n", "balanced acc"],
                          [(g, sum(q.group == g for q in items), _pct(v)) for g, v in lb["per_dataset"].items()]
                          + [("average", len(items), _pct(lb["average"]))]))
        if judge is not None and args.judge_sample and not name.startswith("ExpertQA with"):
            rng = random.Random(args.seed)
            idx = sorted(rng.sample(range(len(items)), min(args.judge_sample, len(items))))
            sy = [y[i] for i in idx]
            r0 = binary_report(sy, [s[i] for i in idx], thr, boot=args.bootstrap, seed=args.seed)
            js, jpps = timed_score(judge, [pairs[i] for i in idx])
            r1 = binary_report(sy, js, 0.5, boot=args.bootstrap, seed=args.seed)
            for vname, r, pp in ((args.verifier, r0, "(as full)"), (args.judge, r1, f"{jpps:.2f}")):
                rows.append((f"{name}, sample", vname, r.n, r.positives, _pct(r.balanced_accuracy) + _ci(r.bacc_ci),
                             _pct(r.tpr), _pct(r.tnr), _pct(r.roc_auc) + _ci(r.auc_ci), f"{r.ece:.3f}", pp))
    print(f"\n(1) Accuracy at the verifier's threshold {thr} (95% bootstrap intervals, {args.bootstrap} resamples)")
    print(f"(ECE: of the scores as the model gives them; ECE shown: as a reader sees them, at the spec's calibrated "
          f"temperature {getattr(ver, 'shown_temperature', 1.0)})")
    print_table(["set", "verifier", "n", "supported", "balanced acc", "TPR", "TNR", "ROC-AUC", "ECE", "ECE shown",
                 "pairs/s"], rows)
    if judge is None and not args.skip_judge:
        print(f"note: {judge_note}")
    for title, headers, trows in extra:
        print(f"\n{title}")
        print_table(headers, trows)
    if args.fit_temperature:
        from citegraph.eval.verifier_sets import apply_temperature, ece, fit_temperature

        held = next(((items, s) for (n, items), s in zip(sets, all_scores) if n.startswith("held-out")), None)
        if held is None:
            die("--fit-temperature needs the held-out split in --sets")
        t = fit_temperature([q.label for q in held[0]], held[1])
        figures["temperature"] = t
        print(f"\nTemperature fitted on the held-out split's log-loss: {t} (the scores above were made with "
              f"{getattr(ver, 'temperature', 1.0)}); ECE per set with it:")
        print_table(["set", "ECE now", f"ECE at temperature {t}"],
                    [(n, f"{ece([q.label for q in items], s):.3f}",
                      f"{ece([q.label for q in items], apply_temperature(s, t)):.3f}")
                     for (n, items), s in zip(sets, all_scores)])
    if args.calibrate:
        figures["calibration"] = calibrate_spec(args, sets, all_scores, thr)
    if args.stage:
        figures["stage"] = stage_verdicts(args, sets, ver)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1))


def calibrate_spec(args, sets, all_scores, thr) -> dict:
    """--calibrate: the temperature and the partial threshold chosen on the held-out split's development
    half, their figures on its test half, and the spec's entry written into the file."""
    import subprocess

    from citegraph.eval.calibration import calibrate, dev_test_split, entry, keep_partial

    held = next(((items, s) for (n, items), s in zip(sets, all_scores) if n.startswith("held-out")), None)
    if held is None:
        die("--calibrate needs the held-out split in --sets")
    fit = calibrate(held[0], held[1], thr, boot=args.bootstrap)
    if args.keep_partial is not None:
        test_idx = dev_test_split(held[0], fit["seed"])[1]
        fit = keep_partial(fit, args.keep_partial, [held[0][i].label for i in test_idx], [held[1][i] for i in test_idx],
                           boot=args.bootstrap)
        print(f"\n--keep-partial: the partial threshold stays at {args.keep_partial} as scored ({fit['partial']} shown); "
              f"the development half chose {fit['partial_chosen']}")
    test = fit["test"]
    how = (f"kept at {fit['partial_raw']} as scored, {fit['partial_chosen']} chosen" if "partial_chosen" in fit
           else f"{fit['partial_raw']} as scored, chosen")
    print(f"\nCalibration of {args.verifier} on the held-out split: temperature {fit['temperature']} fitted on the "
          f"development half ({fit['dev_pairs']} pairs), partial {fit['partial']} on the shown scale ({how} there); "
          f"figures on the test half ({fit['test_pairs']} pairs). ECE as scored "
          f"{test['ece_raw']:.3f}, shown {test['ece']:.3f} (development half {fit['dev']['ece_raw']:.3f} -> "
          f"{fit['dev']['ece']:.3f})")
    for title, key in (("shipped", "bands"), ("at the partial threshold chosen", "bands_chosen"),
                       ("before: partial 0.2 as scored", "bands_raw_0.2")):
        if key not in test:
            continue
        print(f"test half, statuses {title}:")
        print_table(["status", "band", "pairs", "share", "truly supported (precision) [95% CI]"],
                    [(b["status"], _band_text(b), b["n"],
                      _pct(b["share"]), _pct(b["precision"]) + _ci(b["precision_ci"])) for b in test[key]])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    path = Path(args.calibrate)
    table = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    table[args.verifier] = entry(fit, data="nli_train/attribution_pairs.jsonl, the held-out split (heldout_split.json)",
                                 commit=commit or "unknown",
                                 command=f"python benchmarks/bench_verifier.py --verifier {args.verifier} --sets heldout "
                                         f"--skip-judge --skip-throughput --calibrate {args.calibrate}"
                                         + (f" --keep-partial {args.keep_partial}" if args.keep_partial is not None else ""))
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.verifier}'s calibration to {path}")
    return fit


def stage_verdicts(args, sets, ver) -> dict:
    """The attribution stage's own verdict on ``--stage`` pairs per set: a claim is supported when the stage
    calls it so, which it does when the premise as a whole or one of its sentences entails it (so the
    stage's TNR is lower than the pair's)."""
    from citegraph.eval.verifier_sets import binary_report, ece, stratified_sample
    from citegraph.nodes.attribution import attribute_answer
    from citegraph.state import AttributedAnswer, CitedSentence, Document

    rows, out, status_rows = [], {}, []
    for name, items in sets:
        if name.startswith("ExpertQA with"):
            continue
        sample = [q for q in stratified_sample(items, args.stage, args.seed) if q.premise.strip() and q.claim.strip()]
        pred, statuses, shown = [], [], []
        t = time.perf_counter()
        for q in sample:
            ans = AttributedAnswer(question="", documents=[Document(id="d", title="", text=q.premise)],
                                   sentences=[CitedSentence(text=q.claim, citations=[1])])
            got = attribute_answer(ans, ver, partial=args.partial)
            rec = got.metadata["attribution"]["sentences"][0]
            pred.append(1.0 if rec["support"] == "supported" else 0.0)
            statuses.append(rec["support"])
            shown.append(rec["score"])  # the score the stage reports for the claim, as shown
        secs = time.perf_counter() - t
        y = [q.label for q in sample]
        rep = binary_report(y, pred, 0.5, boot=args.bootstrap, seed=args.seed)
        unshown = getattr(ver, "unshown", float)
        per_status = {st: {"n": sum(x == st for x in statuses),
                           "precision": (sum(lab for lab, x in zip(y, statuses) if x == st) / max(sum(x == st for x in statuses), 1))}
                      for st in ("supported", "partial", "unsupported")}
        out[name] = {**rep.as_dict(), "seconds": secs, "statuses": per_status, "ece_shown": ece(y, shown),
                     "ece_as_scored": ece(y, [unshown(v) for v in shown])}
        status_rows.append((name, *(f"{v['n']} ({_pct(v['precision'])})" for v in per_status.values()),
                            f"{out[name]['ece_as_scored']:.3f}", f"{out[name]['ece_shown']:.3f}"))
        rows.append((name, args.verifier, rep.n, rep.positives, _pct(rep.balanced_accuracy) + _ci(rep.bacc_ci),
                     _pct(rep.tpr), _pct(rep.tnr), f"{secs / max(len(sample), 1):.3f}"))
        print("  stage row:", rows[-1], file=sys.stderr, flush=True)
    print(f"\n(1b) The attribution stage's verdict ({args.stage} label-stratified pairs per set; a claim with an "
          "empty premise is left out; TNR = unsupported claims it does not call supported)")
    print_table(["set", "verifier", "n", "supported", "balanced acc", "TPR", "TNR", "s per claim"], rows)
    print("\nThe stage's statuses: claims (share truly supported), and the ECE of the score it reports for each "
          "claim, as scored and as shown")
    print_table(["set", "supported", "partial", "unsupported", "ECE as scored", "ECE shown"], status_rows)
    return out


def status_bands(items, scores, partial: float, thr: float) -> list[dict]:
    """The attribution stage's statuses as score bands: unsupported below ``partial``, partial up to the
    threshold, supported from it; per band the pairs and the share truly supported
    (:func:`citegraph.eval.calibration.bands`, without intervals), and the band as text."""
    from citegraph.eval.calibration import bands

    return [{**b, "band": _band_text(b)} for b in bands([q.label for q in items], scores, partial, thr, boot=0)]


def _band_text(b: dict) -> str:
    return f"[{b['from']:g}, {b['to']:g}{']' if b['status'] == 'supported' else ')'}"


def _by_group(items, scores, thr):
    from citegraph.eval.verifier_sets import binary_report

    groups = collections.defaultdict(lambda: ([], []))
    for q, sc in zip(items, scores):
        groups[q.group][0].append(q.label)
        groups[q.group][1].append(sc)
    out = []
    for g, (yy, ss) in sorted(groups.items()):
        r = binary_report(yy, ss, thr, boot=0)
        out.append((g, r.n, r.positives, f"{r.balanced_accuracy:.3f}", f"{r.roc_auc:.3f}" if r.roc_auc == r.roc_auc else "n/a (one class)"))
    return out


# ---------------------------------------------------------------------------------------------
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")


def alce_pairs(data: Path, n: int, repeat_share: float, seed: int):
    path = data / "alce" / "asqa_dev60.json"
    if not path.exists():
        die(f"missing {path}")
    rng = random.Random(seed)
    unique = []
    for ex in json.loads(path.read_text(encoding="utf-8")):
        docs = [f"Title: {d['title']}\n{d['text']}" for d in ex["docs"]]
        hyps = [s for s in _SENT.split(ex.get("answer") or "") if len(s.split()) >= 4]
        for ann in ex.get("annotations") or []:
            hyps += [s for s in _SENT.split(ann.get("long_answer") or "") if len(s.split()) >= 4]
        for d in ex["docs"]:  # sentences of other docs as hypotheses
            hyps += [s for s in _SENT.split(d["text"])[:1] if len(s.split()) >= 4]
        for h in dict.fromkeys(hyps):
            for doc in docs:
                unique.append((doc, h))
    unique = list(dict.fromkeys(unique))
    rng.shuffle(unique)
    n_rep = int(round(n * repeat_share))
    base = unique[: n - n_rep]
    pairs = base + [rng.choice(base) for _ in range(n_rep)]
    rng.shuffle(pairs)
    return pairs, len(set(pairs))


def one_pair_loop(ver, pairs):
    """ALCE eval.py style: tokenize one pair, one forward pass, no batching and no cache."""
    import torch

    tok, model, out = ver.tokenizer, ver.model, []
    t = time.perf_counter()
    with torch.inference_mode():
        for p, h in pairs:
            enc = tok(p, h, truncation=True, max_length=ver.max_length, return_tensors="pt").to(ver.device)
            logits = model(**enc).logits.float() / getattr(ver, "temperature", 1.0)  # as the verifier scores
            out.append(torch.softmax(logits, -1)[0, ver.entail_idx].item())
    return out, len(pairs) / (time.perf_counter() - t)


def throughput(args, data: Path):

    pairs, n_unique = alce_pairs(data, args.throughput_pairs, args.repeat_share, args.seed)
    ver = load_verifier(args)
    if not all(hasattr(ver, a) for a in ("tokenizer", "model", "entail_idx")):
        print(f"\n(2) Throughput: skipped for {ver.spec} (the one-pair loop it is measured against runs a "
              "cross-encoder's own forward passes); the pairs/s column above is this spec's speed per set")
        return
    loop_scores, loop_pps = one_pair_loop(ver, pairs)
    ver.clear_cache()
    before = (ver.stats.pairs_scored, ver.stats.cache_hits, ver.stats.batches)
    t = time.perf_counter()
    scores = ver.score(pairs)
    bpps = len(pairs) / (time.perf_counter() - t)
    scored, hits, batches = (ver.stats.pairs_scored - before[0], ver.stats.cache_hits - before[1],
                             ver.stats.batches - before[2])
    # a pair whose premise needed windows can differ from the truncating loop; the rest must agree
    agree = sum(abs(a - b) < 1e-3 for a, b in zip(scores, loop_scores))
    print(f"\n(2) Throughput on {len(pairs)} ALCE ASQA (doc, sentence) pairs ({n_unique} unique; "
          f"torch threads {args.threads}, {ver.device} {str(ver.dtype).replace('torch.', '')})")
    print_table(["mode", "pairs", "model forwards (pairs)", "batches", "pairs/s"], [
        ("one pair per call (ALCE eval.py style)", len(pairs), len(pairs), len(pairs), f"{loop_pps:.1f}"),
        ("batched + length-sorted + cached", len(pairs), scored, batches, f"{bpps:.1f}"),
    ])
    print(f"speed-up: {bpps / loop_pps:.1f}x  (cache hits {hits}; scores within 1e-3 of the loop: {agree}/{len(pairs)})")
    sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    if sizes:  # unique pairs, no cache: what one batch size buys on this device
        rows, shipped = [], ver.batch_size
        uniq = list(dict.fromkeys(pairs))
        for b in sizes:
            ver.batch_size = b
            ver.score(uniq[:b])  # warm-up at this shape
            _, pps = timed_score(ver, uniq)
            rows.append((b, len(uniq), f"{pps:.1f}", f"{pps / loop_pps:.1f}x"))
        ver.batch_size = shipped
        print(f"\nBatch size on {ver.device} ({len(uniq)} unique pairs, cache cleared; ratio to the one-pair loop)")
        print_table(["batch size", "pairs", "pairs/s", "vs one pair per call"], rows)


def main(argv=None) -> int:
    args = parse_args(argv)
    data = Path(args.data)
    if not data.exists():
        die(f"data folder {data} not found (expected ../shared/data next to the repository)")
    import torch

    torch.set_num_threads(args.threads)
    if not args.skip_accuracy:
        accuracy(args, data)
    if not args.skip_throughput:
        throughput(args, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
