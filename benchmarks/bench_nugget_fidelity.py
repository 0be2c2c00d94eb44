"""Fidelity of our nugget assigner against GPT-4o's labels on GINGER's released TREC RAG'24 files.

With GPT-4o's nuggets and importance given, our assigner (``--judge``, default the embedded model)
labels each system response; we report per-nugget agreement with GPT-4o (accuracy, Cohen's kappa over
support / partial_support / not_support, the confusion matrix) and each system's mean V_strict by our
labels vs GPT-4o's, with Kendall's tau between the two system rankings. In ``--mode yesno`` the journal
keeps each nugget's P(Yes), and the report also fits two thresholds on it (support at, partial at; maximum
kappa) on half of the complete topics and tests them on the other half, both ways round.

Resumable: each (topic, system) is journalled to ``--journal`` as it finishes; re-running continues.
``--minutes`` stops starting new topics after that much time (the finished ones stay journalled).

  OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/bench_nugget_fidelity.py --topics 50 \
      --journal runs/nugget_fidelity/local.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
FILE = REPO.parent / "shared" / "data" / "trec_rag" / "rag24" / "ginger_assignments_gpt4" / "nrg-fluency_top_20.csv"


def load_journal(path: Path) -> dict[tuple[str, str, str], dict]:
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[(r["qid"], r["system"], r.get("mode", "list"))] = r
    return done


def report(rows: list[dict], systems: list[str]) -> str:
    from citegraph.eval.nuggets import ASSIGN_LABELS, agreement

    topics = sorted({r["qid"] for r in rows})
    # only topics with every system finished, so the system means are over the same topics
    complete = [q for q in topics if all(any(r["qid"] == q and r["system"] == s for r in rows) for s in systems)]
    # per-nugget agreement over every judged response; system means only over complete topics
    ours = [a for r in rows for a in r["ours"]]
    gpt = [a for r in rows for a in r["gpt4o"]]
    ag = agreement(ours, gpt)
    lo, hi = agreement_interval(rows)
    n_resp = len(rows)
    rows = [r for r in rows if r["qid"] in complete]
    out = [f"agreement over {n_resp} judged system response(s) ({ag['n']} nugget labels); system V_strict over "
           f"{len(complete)} topic(s) with all {len(systems)} systems",
           "", "| per-nugget agreement with GPT-4o | value |", "|---|---|",
           f"| accuracy [95% interval over topics] | {ag['accuracy']:.3f} [{lo['accuracy']:.3f}, {hi['accuracy']:.3f}] |",
           f"| Cohen's kappa [95% interval over topics] | {ag['kappa']:.3f} [{lo['kappa']:.3f}, {hi['kappa']:.3f}] |",
           f"| our labels (support/partial/not) | {'/'.join(str(Counter(ours)[l]) for l in ASSIGN_LABELS)} |",
           f"| GPT-4o labels (support/partial/not) | {'/'.join(str(Counter(gpt)[l]) for l in ASSIGN_LABELS)} |",
           "", "Confusion (rows GPT-4o, columns ours):", "", "| GPT-4o \\ ours | " + " | ".join(ASSIGN_LABELS) + " |",
           "|---|---|---|---|"]
    conf = Counter(zip(gpt, ours))
    for g in ASSIGN_LABELS:
        out.append(f"| {g} | " + " | ".join(str(conf[(g, o)]) for o in ASSIGN_LABELS) + " |")
    if not complete:
        out += ["", "No topic has all systems judged yet: no system V_strict or Kendall tau."]
        return "\n".join(out)
    tau, ms_ours, ms_gpt = system_tau(rows, systems, "ours")
    out += ["", "| system | V_strict (ours) | V_strict (GPT-4o) |", "|---|---|---|"]
    out += [f"| {s} | {vo:.3f} | {vg:.3f} |" for s, vo, vg in zip(systems, ms_ours, ms_gpt)]
    out += ["", f"Kendall tau between the system rankings by V_strict: {tau:.3f}"]
    out += fitted_report(rows, complete, systems)
    return "\n".join(out)


def agreement_interval(rows: list[dict], key: str = "ours", n: int = 1000, seed: int = 0) -> tuple[dict, dict]:
    """95% bootstrap interval of accuracy and Cohen's kappa, resampling topics (a topic's labels move
    together: they share a query, its nuggets and one judge's habits); ``n`` resamples, fixed seed."""
    import numpy as np

    from citegraph.eval.nuggets import agreement

    by_topic: dict[str, tuple[list[str], list[str]]] = {}
    for r in rows:
        o, g = by_topic.setdefault(r["qid"], ([], []))
        o.extend(r[key])
        g.extend(r["gpt4o"])
    topics = list(by_topic)
    rng = np.random.default_rng(seed)
    accs, kappas = [], []
    with warnings.catch_warnings():  # a resample holding one label only has an undefined kappa (nan)
        warnings.simplefilter("ignore")
        for _ in range(n):
            pick = rng.integers(0, len(topics), len(topics))
            ours = [a for i in pick for a in by_topic[topics[i]][0]]
            gpt = [a for i in pick for a in by_topic[topics[i]][1]]
            ag = agreement(ours, gpt)
            accs.append(ag["accuracy"])
            kappas.append(ag["kappa"])
        q = lambda xs, p: float(np.nanpercentile(xs, p))  # noqa: E731
        return ({"accuracy": q(accs, 2.5), "kappa": q(kappas, 2.5)}, {"accuracy": q(accs, 97.5), "kappa": q(kappas, 97.5)})


def system_tau(rows: list[dict], systems: list[str], ours_key: str) -> tuple[float, list[float], list[float]]:
    from scipy.stats import kendalltau

    from citegraph.eval.nuggets import topic_scores

    mo, mg = [], []
    for s in systems:
        rs = [r for r in rows if r["system"] == s]
        mo.append(sum(topic_scores(r["importance"], r[ours_key])["v_strict"] for r in rs) / max(1, len(rs)))
        mg.append(sum(topic_scores(r["importance"], r["gpt4o"])["v_strict"] for r in rs) / max(1, len(rs)))
    return kendalltau(mo, mg).statistic, mo, mg


def fitted_report(rows: list[dict], complete: list[str], systems: list[str]) -> list[str]:
    """yes/no mode: thresholds on the "fully captured" P(Yes) fitted (max Cohen's kappa) on one half of the
    complete topics and tested on the other, both ways round (even-numbered → odd, then odd → even), against
    the same test topics at the 0.5 cut-off; with each system's V_strict on the test topics, so a change in
    Kendall tau can be traced to the systems that swapped places."""
    rows = [r for r in rows if r["qid"] in complete and r.get("mode") == "yesno"
            and len(r.get("p_yes") or []) == len(r["gpt4o"])]
    out: list[str] = []
    for name, fit_q in (("even-numbered", set(complete[0::2])), ("odd-numbered", set(complete[1::2]))):
        out += _fold(rows, systems, name, fit_q)
    return out


def _fold(rows: list[dict], systems: list[str], name: str, fit_q: set[str]) -> list[str]:
    from citegraph.eval.nuggets import agreement, fit_thresholds, labels_from_scores

    fit = [r for r in rows if r["qid"] in fit_q]
    test = [r for r in rows if r["qid"] not in fit_q]
    if not fit or not test:
        return []
    best = fit_thresholds([p[0] for r in fit for p in r["p_yes"]], [g for r in fit for g in r["gpt4o"]])
    test = [{**r, "fitted": labels_from_scores([p[0] for p in r["p_yes"]], best["support_at"], best["partial_at"])}
            for r in test]
    at_half = agreement([a for r in test for a in r["ours"]], [g for r in test for g in r["gpt4o"]])
    fitted = agreement([a for r in test for a in r["fitted"]], [g for r in test for g in r["gpt4o"]])
    tau_half, v_half, v_gpt = system_tau(test, systems, "ours")
    tau_fit, v_fit, _ = system_tau(test, systems, "fitted")
    n_test = len({r["qid"] for r in test})

    def ci(rs: list[dict], key: str) -> str:
        lo, hi = agreement_interval(rs, key)
        return f"[{lo['kappa']:.3f}, {hi['kappa']:.3f}]"

    return ["", f"Thresholds on P(Yes) fitted on the {len({r['qid'] for r in fit})} {name} topic(s) (max kappa "
            f"{best['kappa']:.3f}: support at {best['support_at']:.2f}, partial at {best['partial_at']:.2f}), "
            f"tested on the other {n_test}:", "",
            "| labels on the test topics | nugget labels | accuracy | Cohen's kappa [95% interval over topics] | Kendall tau (V_strict) |",
            "|---|---|---|---|---|",
            f"| P(Yes) >= 0.5 (as run) | {at_half['n']} | {at_half['accuracy']:.3f} | {at_half['kappa']:.3f} {ci(test, 'ours')} | {tau_half:.3f} |",
            f"| fitted thresholds | {fitted['n']} | {fitted['accuracy']:.3f} | {fitted['kappa']:.3f} {ci(test, 'fitted')} | {tau_fit:.3f} |",
            "", "| system (test topics) | V_strict, P(Yes) >= 0.5 | V_strict, fitted | V_strict, GPT-4o |", "|---|---|---|---|"] + \
        [f"| {s} | {a:.3f} | {b:.3f} | {g:.3f} |" for s, a, b, g in zip(systems, v_half, v_fit, v_gpt)]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", default=str(FILE))
    p.add_argument("--topics", type=int, default=50, help="the first N topics of the file")
    p.add_argument("--judge", default="local", help="chat spec of our assigner")
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--mode", choices=["list", "yesno"], default="list", help="assignment mode (eval/nuggets.py)")
    p.add_argument("--journal", default="runs/nugget_fidelity/local.jsonl")
    p.add_argument("--minutes", type=float, default=0.0, help="stop starting new topics after this long (0 = no limit)")
    p.add_argument("--report-only", action="store_true")
    a = p.parse_args(argv)

    from citegraph.eval.nuggets import assign_nuggets, read_fidelity_csv

    topics = read_fidelity_csv(a.file)[: a.topics]
    systems = list(topics[0].systems) if topics else []
    journal = Path(a.journal)
    journal.parent.mkdir(parents=True, exist_ok=True)
    done = load_journal(journal)
    t0 = time.perf_counter()
    if not a.report_only:
        stop = False
        for k, t in enumerate(topics, 1):
            for s, sysd in t.systems.items():
                if (t.qid, s, a.mode) in done:
                    continue
                if a.minutes and time.perf_counter() - t0 > a.minutes * 60:
                    print(f"time budget reached at topic {k} ({t.qid}) {s}", file=sys.stderr)
                    stop = True
                    break
                ts = time.perf_counter()
                p_yes: list = []
                labels, problems = assign_nuggets(t.query, sysd.response, sysd.nuggets, a.judge, window=a.window,
                                                  mode=a.mode, p_yes=p_yes)
                row = {"qid": t.qid, "system": s, "judge": a.judge, "mode": a.mode, "p_yes": p_yes,
                       "importance": sysd.importance, "ours": labels,
                       "gpt4o": sysd.assignment, "problems": problems, "seconds": round(time.perf_counter() - ts, 1)}
                with journal.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                done[(t.qid, s, a.mode)] = row
                print(f"topic {k}/{len(topics)} {t.qid} {s}: {row['seconds']} s", file=sys.stderr, flush=True)
            if stop:
                break
    # one journal may hold both modes: each run resumes and reports its own mode only
    rows = [r for k, r in done.items() if k[2] == a.mode and r["qid"] in {t.qid for t in topics}]
    secs = sum(r["seconds"] for r in rows)
    print(f"file {Path(a.file).name}, judge {a.judge}, journal {journal} ({len(rows)} system responses, "
          f"{secs:.0f} s of judging)\n")
    print(report(rows, systems))


if __name__ == "__main__":
    main()
