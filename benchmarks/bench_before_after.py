"""#35's proof: the same items run by "today's" code (commit 611f34e, a second worktree on the same venv)
and by this checkout, one after the other on this machine, through the same public commands.

    git worktree add ../wt611 611f34e
    python benchmarks/bench_before_after.py run --before ../wt611 --out runs/ba [--jobs index,vanilla,...]
    python benchmarks/bench_before_after.py report --out runs/ba

Each job runs a command of the checkout it measures (``python -m citegraph.cli ...`` or that checkout's
``benchmarks/bench_squai.py``) in a subprocess whose working directory and ``PYTHONPATH`` are that
checkout, so the code measured is that commit's; the venv, the data, the environment and the machine
are the same. A job whose result file exists is skipped (re-running resumes; the commands themselves
resume item by item). Jobs, in the order they run by default:

- ``index``: ``citegraph index build`` of SQuAI Simple's 1,473 context chunks (``bench_squai.py
  --write-corpus``): before, after (default embedder), after ``--embedder minilm-int8``. Chunks/s from the
  wall clock, the embedder's load included.
- ``vanilla``, ``ginger``, ``raac``: ``citegraph bench --methods M --data ASQA dev --limit 5 --llm L`` (the
  Context defaults of each commit; scored by the ``default`` verifier). Before on ``local``; after on
  ``local`` (vanilla, ginger) and ``server:local`` with one slot.
- ``squai``: ``bench_squai.py --methods squai --limit 5 --no-score`` over each side's own index (from
  ``index``); after with the shipped ``--attribution repair``, on ``local`` and ``server:local``.
- ``deepeval``: the same script scores those answers (DeepEval-style metrics, judge = the answering
  model); its journal records each answer's scoring seconds.
- ``concurrency``: ``citegraph bench --methods ginger --concurrency N`` after, N = 2 and 4, on
  ``server:local`` with N slots and on ``local`` (in process, one model) with N = 2; items/hour from the
  wall clock of the bench command (scoring included, as a user of ``bench`` meets it).

``report`` prints one table per job kind: seconds per question (mean, 95% bootstrap interval), items/hour,
LLM calls, prompt / cached / completion tokens, citation F1 by ``default`` and STR-EM with intervals, and
the ratios the issue asks for, each computed from rows of this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from citegraph.eval.scoring import bootstrap, summarize

ROOT = Path(__file__).resolve().parents[1]
ASQA = ROOT.parent / "shared" / "data" / "alce" / "asqa_dev60.json"
BEFORE_COMMIT = "611f34e"
LIMIT = 5


def _commit(path: Path) -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=path, capture_output=True, text=True).stdout.strip()


def jobs(before: Path, after: Path, out: Path) -> list[dict]:
    """Every job: its name, kind, side, command (argv run in ``cwd``), the server slots it needs."""
    py = sys.executable
    cli = [py, "-m", "citegraph.cli"]
    corpus = out / "squai_corpus.jsonl"
    j: list[dict] = []

    def add(kind, side, label, argv, slots=1, **extra):
        cwd = before if side == "before" else after
        j.append({"kind": kind, "side": side, "label": label, "name": f"{kind}:{side}:{label}",
                  "cwd": str(cwd), "argv": [str(a) for a in argv], "slots": slots, **extra})

    for side, label, emb in (("before", "minilm", "minilm"), ("after", "minilm", "minilm"), ("after", "minilm-int8", "minilm-int8")):
        idx = out / side / f"index-{label}"
        extra = ["--embedder", emb] if side == "after" else []
        add("index", side, label, [*cli, "index", "build", "--corpus", corpus, "--index", idx, *extra])

    def bench(method, side, llm, n=1, kind=None):
        folder = out / side / f"{method}@{llm.replace(':', '_')}@c{n}"
        add(kind or method, side, f"{llm} c{n}", [*cli, "bench", "--methods", method, "--data", ASQA, "--limit", LIMIT,
                                                  "--llm", llm, "--out", folder, "--concurrency", n],
            slots=n, folder=str(folder), method=method)

    def squai(side, llm, kind):
        folder = out / side / f"squai@{llm.replace(':', '_')}"
        extra = ["--attribution", "repair"] if side == "after" else []
        argv = [py, "benchmarks/bench_squai.py", "--methods", "squai", "--limit", LIMIT, "--index", out / side / "index-minilm",
                "--llm", llm, "--out", folder, *extra] + (["--no-score"] if kind == "squai" else [])
        add(kind, side, llm, argv, folder=str(folder))

    for side, llm in (("before", "local"), ("after", "local"), ("after", "server:local")):
        bench("vanilla", side, llm)
    for side, llm in (("before", "local"), ("after", "local"), ("after", "server:local")):
        squai(side, llm, "squai")
    for side, llm in (("before", "local"), ("after", "server:local")):
        squai(side, llm, "deepeval")
    for method in ("ginger", "raac"):
        for side, llm in (("before", "local"), ("after", "server:local")):
            bench(method, side, llm)
    bench("ginger", "after", "local")  # the code's change without the server's
    for llm, n in (("server:local", 2), ("server:local", 4), ("local", 2)):
        bench("ginger", "after", llm, n, kind="concurrency")
    squai("after", "local", "deepeval")
    return j


def _done_path(out: Path, job: dict) -> Path:
    return out / "done" / (re.sub(r"[^A-Za-z0-9_.-]+", "_", job["name"]) + ".json")


def run_jobs(args) -> int:
    before, after, out = Path(args.before).resolve(), ROOT, Path(args.out).resolve()
    if not (before / "citegraph").is_dir():
        print(f"error: --before {before} is not a checkout (git worktree add {before} {BEFORE_COMMIT})", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    corpus = out / "squai_corpus.jsonl"
    if not corpus.exists():
        subprocess.run([sys.executable, "benchmarks/bench_squai.py", "--write-corpus", str(corpus)], cwd=ROOT, check=True)
    wanted = set(args.jobs.split(",")) if args.jobs else None
    for job in jobs(before, after, out):
        if wanted and job["kind"] not in wanted:
            continue
        done = _done_path(out, job)
        if done.exists():
            continue
        env = {**os.environ, "PYTHONPATH": job["cwd"], "CITEGRAPH_SERVER_SLOTS": str(job["slots"])}
        log = out / "logs" / (done.stem + ".log")
        log.parent.mkdir(parents=True, exist_ok=True)
        print(f"{time.strftime('%H:%M:%S')} {job['name']}: {' '.join(job['argv'][1:])}", flush=True)
        t0 = time.perf_counter()
        with open(log, "a") as fh:
            rc = subprocess.run(job["argv"], cwd=job["cwd"], env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
        wall = time.perf_counter() - t0
        print(f"{time.strftime('%H:%M:%S')} {job['name']}: rc {rc}, {wall:.0f} s", flush=True)
        if rc not in (0, 1):  # bench exits 1 when an item failed; its journal says which
            print(f"  see {log}", flush=True)
            continue
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text(json.dumps({**job, "rc": rc, "wall_s": round(wall, 1), "commit": _commit(Path(job["cwd"])),
                                    "log": str(log)}, indent=1))
    return 0


# -- report ---------------------------------------------------------------------------------------

def _fmt(xs, digits: int = 1) -> str:
    """Mean [95% bootstrap interval] of the values present, by the evaluator's ``bootstrap``."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "–"
    return _fmt_summary({"v": statistics.fmean(xs)}, bootstrap([{"v": x} for x in xs]), "v", digits)


def _fmt_summary(summary: dict, ci: dict, key: str, digits: int = 1) -> str:
    if summary.get(key) is None:
        return "–"
    lo, hi = ci.get(key, (summary[key], summary[key]))
    return f"{summary[key]:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _mean(xs) -> str:
    xs = [x for x in xs if x is not None]
    return f"{statistics.fmean(xs):,.0f}" if xs else "–"


def _bench_run(job: dict) -> dict:
    """A ``citegraph bench`` job's items: usage per item, and its per-item scores summarised as the
    evaluator summarises them (citation F1 from mean recall and precision, ALCE's corpus-level F1)."""
    folder, m = Path(job["folder"]), job["method"]
    recs = json.loads((folder / "raw" / f"{m}.json").read_text()).get("data", [])
    ids = {r["citegraph"]["item_id"] for r in recs}
    items = [s for s in json.loads((folder / "raw" / f"{m}.score.json").read_text()).get("items", []) if s["id"] in ids]
    return {"n": len(recs), "usage": [r["citegraph"]["usage"] for r in recs], "summary": summarize(items),
            "ci": bootstrap(items), "per_hour": 3600 * len(recs) / job["wall_s"]}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _col(rows: list[dict], key: str) -> list:
    return [r.get(key) for r in rows]


def report(args) -> int:
    out = Path(args.out).resolve()
    done = [json.loads(p.read_text()) for p in sorted((out / "done").glob("*.json"))] if (out / "done").exists() else []
    if not done:
        print(f"error: no finished jobs under {out}/done", file=sys.stderr)
        return 2
    order = {j: i for i, j in enumerate(("index", "vanilla", "ginger", "raac", "squai", "deepeval", "concurrency"))}
    done.sort(key=lambda d: (order.get(d["kind"], 99), d["side"] != "before", d["label"]))
    print(f"# before/after (#35): before = {BEFORE_COMMIT}; rows name the commit that ran them\n")

    idx = [d for d in done if d["kind"] == "index"]
    if idx:
        print("| index build | commit | embedder | chunks | wall s | chunks/s |\n|---|---|---|---:|---:|---:|")
        for d in idx:
            m = re.findall(r"index holds (\d+) chunks", Path(d["log"]).read_text())
            chunks = int(m[-1]) if m else 0
            print(f"| {d['side']} | {d['commit']} | {d['label']} | {chunks:,} | {d['wall_s']:.0f} | {chunks / d['wall_s']:.1f} |")
        print()

    seconds: dict[tuple, list] = {}  # (kind or method, side, label) -> seconds per item, for the ratios
    runs = {(d["method"], d["side"], d["label"]): (d, _bench_run(d)) for d in done if "method" in d}
    if runs:
        print("| method | side | commit | model, items in flight | n | s/question | items/hour (wall, scoring incl.) | LLM calls | "
              "prompt tok | cached | completion tok | citation F1 (default) | STR-EM |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key, (d, r) in runs.items():
            use = r["usage"]
            seconds[key] = _col(use, "seconds")
            print(f"| {d['method']} | {d['side']} | {d['commit']} | {d['label']} | {r['n']} | {_fmt(seconds[key])} | "
                  f"{r['per_hour']:.0f} | {_mean(_col(use, 'llm_calls'))} | {_mean(_col(use, 'prompt_tokens'))} | "
                  f"{_mean(_col(use, 'cached_tokens'))} | {_mean(_col(use, 'completion_tokens'))} | "
                  f"{_fmt_summary(r['summary'], r['ci'], 'citation_f1')} | {_fmt_summary(r['summary'], r['ci'], 'str_em')} |")
        print()

    scored = {(d["side"], d["label"]): d for d in done if d["kind"] == "deepeval"}
    sq = [d for d in done if d["kind"] == "squai"]
    if sq:
        print("| SQuAI (Simple, 5) | commit | model | n | s/question | LLM calls | prompt tok | cached | completion tok | "
              "DeepEval-style scoring s/answer | mean of the three metrics |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for d in sq:
            use = [r["usage"] for r in _jsonl(Path(d["folder"]) / "answers.jsonl")]
            seconds[("squai", d["side"], d["label"])] = _col(use, "seconds")
            sc = _jsonl(Path(d["folder"]) / "scores.jsonl") if (d["side"], d["label"]) in scored else []
            seconds[("deepeval", d["side"], d["label"])] = _col(sc, "score_seconds")
            print(f"| {d['side']} | {d['commit']} | {d['label']} | {len(use)} | {_fmt(_col(use, 'seconds'))} | "
                  f"{_mean(_col(use, 'llm_calls'))} | {_mean(_col(use, 'prompt_tokens'))} | {_mean(_col(use, 'cached_tokens'))} | "
                  f"{_mean(_col(use, 'completion_tokens'))} | {_fmt(_col(sc, 'score_seconds'))} | {_fmt(_col(sc, 'mean'), 3)} |")
        print()

    def mean_s(key):
        xs = [x for x in seconds.get(key, []) if x is not None]
        return statistics.fmean(xs) if xs else None

    print("Ratios (this run's rows):")
    for text, num, den in (
        ("RAAC / VANILLA s/question, after (server:local)", ("raac", "after", "server:local c1"), ("vanilla", "after", "server:local c1")),
        ("RAAC / VANILLA s/question, before (local)", ("raac", "before", "local c1"), ("vanilla", "before", "local c1")),
        ("GINGER after (server:local) / before", ("ginger", "after", "server:local c1"), ("ginger", "before", "local c1")),
        ("GINGER after (local) / before", ("ginger", "after", "local c1"), ("ginger", "before", "local c1")),
        ("SQuAI after (local) / before", ("squai", "after", "local"), ("squai", "before", "local")),
        ("SQuAI after (server:local) / before", ("squai", "after", "server:local"), ("squai", "before", "local")),
        ("DeepEval scoring after (server:local judge) / before", ("deepeval", "after", "server:local"), ("deepeval", "before", "local")),
        ("DeepEval scoring after (local judge) / before", ("deepeval", "after", "local"), ("deepeval", "before", "local")),
    ):
        a, b = mean_s(num), mean_s(den)
        print(f"- {text}: " + (f"{a / b:.2f}x ({a:.1f} s / {b:.1f} s)" if a and b else "not measured"))
    for method in ("vanilla", "ginger", "raac"):
        base = runs.get((method, "before", "local c1"))
        best = max(((r["per_hour"], k) for k, (_, r) in runs.items() if k[0] == method and k[1] == "after"), default=None)
        if base and best:
            print(f"- {method} items/hour, best after ({best[1][2]}) / before at concurrency 1: {best[0] / base[1]['per_hour']:.2f}x "
                  f"({best[0]:.0f} / {base[1]['per_hour']:.0f})")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--before", required=True, help=f"a checkout of {BEFORE_COMMIT} (git worktree add DIR {BEFORE_COMMIT})")
    r.add_argument("--out", default="runs/ba")
    r.add_argument("--jobs", default="", help="only these job kinds (comma-separated): index,vanilla,ginger,raac,squai,deepeval,concurrency")
    p = sub.add_parser("report")
    p.add_argument("--out", default="runs/ba")
    args = ap.parse_args(argv)
    return run_jobs(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
