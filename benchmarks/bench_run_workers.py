"""Many workers, one job: 1 worker against 4 on one PostgreSQL, with and without SIGKILLs (#38).

    python benchmarks/bench_run_workers.py [--items 40] [--delay 4.0] [--workers 4] [--kills 2] [--seed 0]

``--items`` items through ``citegraph run vanilla --llm openai:fake --workers-db postgresql://...``
against the loopback fake OpenAI server (``tests/fake_openai.py``), which answers every request after
a fixed ``--delay``, so a run's time is model time, not this machine's CPU (vanilla: one request per
item). PostgreSQL is a throwaway server (``tests/pg_server.py``: initdb + pg_ctl on loopback, a new
database per run).

Three runs, each on a fresh database: 1 worker; ``--workers`` workers; ``--workers`` workers of which
``--kills`` are SIGKILLed while one of their requests is held unanswered (the request numbers are
drawn with ``--seed``; a killed worker is not restarted). Per run:

- wall: from starting the workers to the last surviving worker's exit (process start included: on
  a small shared machine, starting 4 Python processes at once takes seconds);
  start-up: from starting the workers to the last worker's first request (Python start, imports,
  the graph, the database); model span: from the moment every worker is working (the server holds
  the first request of each worker until all have sent one) to the last reply: the part of the job
  the workers share; tail: from the last reply to the last worker's exit (waiting for the others,
  writing the whole job to its output);
- lost: items missing from a surviving worker's output; duplicated: an item twice in one output;
  finished twice: items two workers answered (``late_finishes`` in the table; the late answer is
  dropped); asked twice: items whose request reached the server more than once (a killed worker's
  item is asked again by the worker that takes it over; with ``--checkpoint`` a multi-node method
  would resume it from its last node instead);
- take-over: seconds from the SIGKILL to another worker's claim of the killed worker's item (the
  killed process' database session ends, so its claim lapses without waiting for the lease).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import pg_server  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402


class Replies:
    """Every reply after ``delay`` s; a request numbered in ``hold`` waits until released. The first
    ``barrier`` requests wait for each other (one per worker: every worker is up), so the model span
    starts when all workers are working."""

    def __init__(self, delay: float, hold=(), barrier: int = 1):
        self.delay = delay
        self.barrier = barrier
        self.go = threading.Event()
        self.t_go = 0.0
        self.lock = threading.Lock()
        self.n = 0
        self.log: list[tuple[float, str]] = []
        self.done_at: list[float] = []
        self.held = {k: threading.Event() for k in hold}
        self.release = {k: threading.Event() for k in hold}
        self.held_q: dict[int, str] = {}

    def __call__(self, body):
        q = body["messages"][-1]["content"].split("Question: ")[-1].split("?")[0].strip()
        with self.lock:
            self.n += 1
            n = self.n
            self.log.append((time.perf_counter(), q))
            if n == self.barrier:
                self.t_go = time.perf_counter()
                self.go.set()
        self.go.wait(600)
        if n in self.held:
            self.held_q[n] = q
            self.held[n].set()
            self.release[n].wait(300)
        time.sleep(self.delay)
        with self.lock:
            self.done_at.append(time.perf_counter())
        return f"{q} is answered [1]."


def one_run(pg, name: str, data: Path, n_items: int, workers: int, delay: float, holds: list[int], tmp: Path) -> dict:
    import psycopg

    url = pg.new_database(name)
    replies = Replies(delay, hold=holds, barrier=workers)
    srv = FakeOpenAI(replies)
    srv.server.handle_error = lambda *a: None  # the reply to a killed client meets a broken pipe
    killed: dict[int, str] = {}
    takeover: list[float] = []
    with srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "t", "PYTHONPATH": str(ROOT),
               "CITEGRAPH_RETRIES": "0", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        t0 = time.perf_counter()
        procs = {}
        for w in range(workers):
            p = subprocess.Popen([sys.executable, "-m", "citegraph.cli", "run", "vanilla", "-i", str(data),
                                  "-o", str(tmp / f"{name}_w{w}.json"), "--llm", "openai:fake", "--workers-db", url],
                                 env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            procs[p.pid] = (w, p)
        try:
            for hold in holds:
                if not replies.held[hold].wait(600):
                    raise RuntimeError(f"request {hold} never came")
                item = f"item{replies.held_q[hold].split()[-1]}"
                w, _, t_kill = pg_server.kill_claim_holder(url, procs, item)
                killed[w] = item
                replies.release[hold].set()
                takeover.append(pg_server.wait_for_takeover(url, item, t_kill, limit=600)[0])
            errs = {}
            for w, p in procs.values():
                if w not in killed:
                    _, errs[w] = p.communicate(timeout=1200)
                    if p.returncode != 0:
                        raise RuntimeError(f"worker {w} exited {p.returncode}: {errs[w][-800:]}")
        finally:
            pg_server.stop_workers(procs, replies.release.values())
        t_end = time.perf_counter()
        wall = t_end - t0
    ids = [f"item{i}" for i in range(n_items)]
    lost = dup = mismatched = 0
    for w in errs:
        data_out = json.loads((tmp / f"{name}_w{w}.json").read_text())["data"]
        got = Counter(d["citegraph"]["item_id"] for d in data_out)
        lost = max(lost, sum(1 for i in ids if got[i] == 0))
        dup = max(dup, sum(n - 1 for n in got.values() if n > 1))
        mismatched = max(mismatched, sum(d["output"] != f"Question {d['id'][4:]} is answered [1]." for d in data_out))
    with psycopg.connect(url) as conn:
        late = conn.execute("SELECT coalesce(sum(late_finishes), 0) FROM citegraph_work").fetchone()[0]
    asked = Counter(q for _, q in replies.log)
    new = [int(m.group(1)) for e in errs.values() for m in [re.search(r"wrote \S+: (\d+) new", e)] if m]
    return {"workers": workers, "kills": len(killed), "wall": wall, "startup": replies.t_go - t0,
            "tail": t_end - max(replies.done_at),
            "span": max(replies.done_at) - replies.t_go, "lost": lost, "dup": dup,
            "mismatched": mismatched, "late": int(late), "asked_twice": sum(1 for n in asked.values() if n > 1),
            "takeover": takeover, "per_worker_new": new}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--delay", type=float, default=4.0, help="seconds the fake server takes per request")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--kills", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", default="one,many,kills", help="which of the three runs (the first given is the base)")
    a = ap.parse_args()
    reason = pg_server.unavailable()
    if reason:
        sys.exit(f"cannot run: {reason}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    data = tmp / "data.json"
    data.write_text(json.dumps([{"id": f"item{i}", "question": f"Question {i}?",
                                 "docs": [{"title": f"T{i}", "text": f"Fact {i} is true."}]} for i in range(a.items)]))
    holds = sorted(random.Random(a.seed).sample(range(a.workers + 1, a.items // 2), a.kills))
    rows = []
    load0 = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with pg_server.PostgresServer() as pg:
        for name, workers, hold in (("one", 1, []), ("many", a.workers, []), ("kills", a.workers, holds)):
            if name not in a.runs.split(","):
                continue
            r = one_run(pg, name, data, a.items, workers, a.delay, hold, tmp)
            rows.append(r)
            print(f"{name}: {r}", file=sys.stderr, flush=True)
    base = rows[0]
    print(f"\n{a.items} items, vanilla through openai:fake at {a.delay} s per request (loopback fake server), "
          f"one PostgreSQL (--workers-db), seed {a.seed}; SIGKILLs at requests {holds}\n")
    print(f"load average before the runs: {load0}; machine: {os.cpu_count()} CPUs")
    print("| workers | SIGKILLs | wall (s) | speed-up (wall) | start-up: to every worker's first request (s) | model span (s) "
          "| speed-up (span) | tail: last reply to last exit (s) | items lost | duplicated "
          "| mismatched | finished twice | asked twice | take-over after kill (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tk = ", ".join(f"{t:.2f}" for t in r["takeover"]) or "–"
        print(f"| {r['workers']} | {r['kills']} | {r['wall']:.1f} | {base['wall'] / r['wall']:.2f}× | {r['startup']:.1f} | {r['span']:.1f} "
              f"| {base['span'] / r['span']:.2f}× | {r['tail']:.1f} | {r['lost']} | {r['dup']} | {r['mismatched']} | {r['late']} "
              f"| {r['asked_twice']} | {tk} |")


if __name__ == "__main__":
    main()
