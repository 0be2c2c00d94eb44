"""The attribution stage's cost, before and after a change, on the same answers in one process (#34).

    python benchmarks/bench_attribution_speed.py runs/attr_asqa/vanilla/answers.jsonl [more journals ...]
        [--before eaf2521] [--verifier default] [--rounds 2] [--sentences 0,4]

Reads generated answers from ``bench_attribution.py`` journals (``<out>/<label>/answers.jsonl``) and
runs the stage (``repair``) on every answer with: the stage as it was at commit ``--before`` (its
``citegraph/nodes/attribution.py`` loaded from git, everything else today's), and today's stage with
each ``--sentences`` value (the ``attribution_sentences`` knob: a document's sentences checked alone
against an answer sentence, 0 = all). The variants alternate answer by answer, ``--rounds`` times, so
a busy machine slows them alike; the verifier's cache is cleared before every call. Printed per
variant: seconds per answer (median over rounds, summed over answers), pairs sent to the verifier,
words in those pairs, and agreement with ``before`` on each sentence's support status and citations.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]

from citegraph.nodes.attribution import attribute_answer  # noqa: E402
from citegraph.state import AttributedAnswer  # noqa: E402
from citegraph.tools.verifier import get_verifier  # noqa: E402


def load_before(commit: str):
    src = subprocess.run(["git", "show", f"{commit}:citegraph/nodes/attribution.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "attribution_before.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("citegraph.nodes._attribution_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.attribute_answer


def head() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("journals", nargs="+")
    ap.add_argument("--before", default="eaf2521")
    ap.add_argument("--verifier", default="default")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sentences", default="0,4")
    a = ap.parse_args()
    answers = []
    for j in a.journals:
        for line in Path(j).read_text().splitlines():
            if line.strip():
                answers.append(AttributedAnswer.model_validate(json.loads(line)["answer"]))
    v = get_verifier(a.verifier)
    before = load_before(a.before)
    variants = {f"before ({a.before})": lambda ans: before(ans, v, mode="repair")}
    for k in [int(x) for x in a.sentences.split(",")]:
        variants[f"sentences={k}"] = lambda ans, k=k: attribute_answer(ans, v, mode="repair", sentences=k)
    v.score([("warm up", "warm up")])
    secs = {name: [[] for _ in answers] for name in variants}
    pairs = {name: 0 for name in variants}
    words = {name: 0 for name in variants}
    outs: dict[str, list] = {name: [None] * len(answers) for name in variants}
    orig_score = v.score

    for r in range(a.rounds):
        for n, ans in enumerate(answers):
            for name, fn in variants.items():
                v.clear_cache()
                sent: list = []

                def counting(ps, _sent=sent):
                    _sent.extend(ps)
                    return orig_score(ps)

                v.score = counting
                t0 = time.perf_counter()
                out = fn(ans)
                secs[name][n].append(time.perf_counter() - t0)
                v.score = orig_score
                if r == 0:
                    uniq = set(sent)
                    pairs[name] += len(uniq)
                    words[name] += sum(len(p.split()) + len(h.split()) for p, h in uniq)
                    outs[name][n] = out
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    base = next(iter(variants))
    n_sents = sum(len(x.sentences) for x in outs[base])
    print(f"\n{len(answers)} answers ({n_sents} sentences after the stage) from {', '.join(a.journals)}; verifier {a.verifier}; "
          f"commit {head()}; {a.rounds} rounds, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| variant | s per answer (sum of medians / answers) | pairs to the verifier | words in them | same status as before | same citations as before |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in variants:
        total = sum(statistics.median(x) for x in secs[name])
        same_s = same_c = tot = 0
        for o, b in zip(outs[name], outs[base]):
            bs = {s.text: s for s in b.sentences}
            for s in o.sentences:
                tot += 1
                if s.text in bs:
                    same_s += s.support == bs[s.text].support
                    same_c += s.citations == bs[s.text].citations
        print(f"| {name} | {total / len(answers):.2f} | {pairs[name]} | {words[name]} | {same_s}/{tot} | {same_c}/{tot} |")


if __name__ == "__main__":
    main()
