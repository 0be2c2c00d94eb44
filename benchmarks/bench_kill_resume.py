"""Seconds of work lost when a run is killed inside a long item, with and without ``--checkpoint``.

    python benchmarks/bench_kill_resume.py [--kills 5] [--latency 0.5] [--seed 0] [--stores none,sqlite,postgresql]

One RAAC item (``tests/raac_fake.py``: generate, 5 feedback rounds, 4 refinements, 2 judge calls =
12 model calls) through ``citegraph run raac --llm openai:fake --verifier llm-judge:openai:fake``
against the loopback fake OpenAI server (``tests/fake_openai.py``) that answers every call after a
fixed latency, so the item's time is model time, not this machine's CPU. For each store, the run is
SIGKILLed at ``--kills`` seeded random moments inside the item, then re-run to the end.

Work lost per kill = the time between the point the re-run picked up from and the kill: the model
calls are sequential and their order is fixed, so a re-run that asks the last ``m`` of the item's
``n`` calls picked up at the start of call ``n - m`` of the killed run; everything the killed run
did from then on (finished calls asked again, and the call cut short) is lost. Without a store the
re-run starts the item over (``m = n``). Also printed: the wall time of an uninterrupted item with
each store (the cost of saving a checkpoint after every node) and the store's size per item. The
PostgreSQL row needs ``initdb``/``pg_ctl`` (``tests/pg_server.py``; as root the server runs as
``nobody``) and is left out, with the reason, where they are absent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import pg_server  # noqa: E402
import raac_fake  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

from citegraph.tools.checkpoints import close_checkpointers, store_size  # noqa: E402


def server(replies) -> FakeOpenAI:
    srv = FakeOpenAI(replies)
    srv.server.handle_error = lambda *a: None  # the reply to a killed client meets a broken pipe: expected
    return srv


def cli(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "citegraph.cli", *args], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class Trial:
    def __init__(self, latency: float, workdir: Path, checkpoint: str | None):
        self.latency, self.workdir, self.checkpoint = latency, workdir, checkpoint
        self.data = workdir / "data.json"
        self.data.write_text(json.dumps(raac_fake.dataset(1)))

    def args(self, out: Path) -> list[str]:
        a = ["run", "raac", "-i", str(self.data), "-o", str(out), "--llm", "openai:fake",
             "--verifier", "llm-judge:openai:fake", *[x for s in raac_fake.SETTINGS for x in ("--set", s)]]
        return a + (["--checkpoint", self.checkpoint] if self.checkpoint else [])

    def env(self, url: str) -> dict:
        return {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "t", "PYTHONPATH": str(ROOT),
                "OMP_NUM_THREADS": "1"}

    def fresh(self, out: Path) -> dict:
        """One uninterrupted item: its calls and wall times."""
        replies = raac_fake.RaacReplies(self.latency)
        with server(replies) as srv:
            t0 = time.time()
            p = cli(self.args(out), self.env(srv.url))
            _, err = p.communicate(timeout=600)
            wall = time.time() - t0
        if p.returncode != 0:
            raise RuntimeError(err[-2000:])
        # the item's model work: from its first request to the reply of its last (a fixed latency)
        item = replies.log[-1][1] + self.latency - replies.log[0][1]
        return {"calls": [k for k, _ in replies.log], "wall": wall, "item": item}

    def kill_and_resume(self, out: Path, offset: float) -> dict:
        """SIGKILL ``offset`` seconds after the item's first model call, then re-run to the end."""
        replies = raac_fake.RaacReplies(self.latency)
        with server(replies) as srv:
            p = cli(self.args(out), self.env(srv.url))
            while replies.count() == 0 and p.poll() is None:
                time.sleep(0.005)
            first = replies.log[0][1]
            time.sleep(max(0.0, first + offset - time.time()))
            p.send_signal(signal.SIGKILL)
            t_kill = time.time()
            p.wait()
            killed_log = list(replies.log)
            n_before = len(killed_log)
            p = cli(self.args(out), self.env(srv.url))
            _, err = p.communicate(timeout=600)
            if p.returncode != 0:
                raise RuntimeError(err[-2000:])
            after = [k for k, _ in replies.log[n_before:]]
        rec = json.loads(out.read_text())["data"][0]["citegraph"]
        return {"t_kill": t_kill, "first": first, "killed_log": killed_log, "after": after, "usage": rec["usage"]}


def lost_seconds(fresh_calls: list[str], trial: dict) -> tuple[float, int]:
    """(seconds lost, calls asked again) for one kill; see the module docstring."""
    n, m = len(fresh_calls), len(trial["after"])
    if trial["after"] != fresh_calls[n - m:]:
        raise RuntimeError(f"the re-run's calls {trial['after']} are not the tail of a fresh item's {fresh_calls}")
    start = n - m  # the re-run picked up at the start of this call
    log = trial["killed_log"]
    if start >= len(log):  # the re-run asked none of the killed run's calls again: no model time lost
        return 0.0, 0
    return trial["t_kill"] - log[start][1], len(log) - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=5, help="kills per store")
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per model call at the fake server")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stores", default="none,sqlite,postgresql")
    a = ap.parse_args()
    stores = [s.strip() for s in a.stores.split(",") if s.strip()]
    rng = random.Random(a.seed)
    rows, notes = [], []
    pg = None
    if "postgresql" in stores:
        reason = pg_server.unavailable()
        if reason:
            notes.append(f"postgresql: not run ({reason})")
            stores.remove("postgresql")
        else:
            pg = pg_server.PostgresServer().start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-kill-") as tmp:
            tmp = Path(tmp)
            # one fresh item without a store fixes the call sequence and the kill window
            base = Trial(a.latency, tmp, None).fresh(tmp / "fresh.json")
            fresh_calls = base["calls"]
            offsets = [rng.uniform(0.0, base["item"]) for _ in range(a.kills)]
            print(f"fresh item: {len(fresh_calls)} model calls, {base['item']:.2f} s from its first call to the end "
                  f"(process wall {base['wall']:.2f} s); kill offsets (s after the first call): "
                  + ", ".join(f"{o:.2f}" for o in offsets), flush=True)
            for store in stores:
                lost, redone, fresh_walls, sizes = [], [], [], []
                for i, off in enumerate([None, *offsets]):
                    d = tmp / f"{store}{i}"
                    d.mkdir()
                    if store == "none":
                        spec = None
                    elif store == "sqlite":
                        spec = f"sqlite:///{d / 'ck.db'}"
                    else:
                        import psycopg

                        with psycopg.connect(pg.url, autocommit=True) as conn:
                            conn.execute(f'CREATE DATABASE "t{store}{i}"')
                        spec = pg.url.rsplit("/", 1)[0] + f"/t{store}{i}"
                    t = Trial(a.latency, d, spec)
                    if off is None:  # the uninterrupted item on this store: overhead and size
                        empty = store_size(spec) if spec else None
                        fresh_walls.append(t.fresh(d / "out.json")["wall"])
                        if spec:
                            close_checkpointers()
                            sizes.append(store_size(spec) - (empty or 0))
                            close_checkpointers()
                        continue
                    res = t.kill_and_resume(d / "out.json", off)
                    s, r = lost_seconds(fresh_calls, res)
                    lost.append(s)
                    redone.append(r)
                    print(f"  {store} kill {i}: at {off:.2f} s, lost {s:.2f} s, {r} call(s) asked again, "
                          f"re-run made {len(res['after'])} call(s), resumed_from="
                          f"{(res['usage'].get('resumed_from') or {}).get('next')}", flush=True)
                rows.append({"store": store, "kills": len(lost), "mean": statistics.mean(lost), "max": max(lost),
                             "redone": statistics.mean(redone), "wall": fresh_walls[0],
                             "size": sizes[0] if sizes else None})
    finally:
        close_checkpointers()
        if pg is not None:
            pg.stop()
    print()
    print(f"RAAC item, {len(fresh_calls)} model calls at {a.latency} s each (fake OpenAI server), "
          f"{a.kills} SIGKILLs per store (seed {a.seed})")
    print()
    print("| --checkpoint | kills | work lost per kill, mean (s) | max (s) | calls asked again, mean "
          "| uninterrupted item, wall (s) | store size per item |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        size = "–" if r["size"] is None else f"{r['size'] / 1024:.0f} KiB"
        label = {"none": "none (journal only)", "sqlite": "sqlite:///…", "postgresql": "postgresql://…"}[r["store"]]
        print(f"| {label} | {r['kills']} | {r['mean']:.2f} | {r['max']:.2f} | {r['redone']:.1f} | {r['wall']:.2f} | {size} |")
    for n in notes:
        print(f"\n{n}")


if __name__ == "__main__":
    main()
