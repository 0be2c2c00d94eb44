"""Many workers, one job (#38): ``citegraph run ... --workers-db postgresql://...`` started several
times shares the items through a real PostgreSQL server (initdb + pg_ctl on loopback, a temp dir;
skipped with the reason where it cannot start).

* 4 worker processes against the loopback fake OpenAI server, 2 of them SIGKILLed while their
  request is held unanswered: every item is done exactly once, the killed workers' items are taken
  over (at once: their database sessions ended), every surviving worker's output holds all items
  once each, in input order, and no item was finished twice;
* in process: a claim that is not renewed lapses after its lease and another worker takes the item;
  a late finish by the first worker is dropped, the first answer stays; a claim whose session ended
  is taken over without waiting for the lease; failed items are retried by a worker that starts later.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from citegraph.run.workqueue import WorkQueue

import pg_server
from fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def postgres():
    yield from pg_server.postgres_fixture()


def question_of(body: dict) -> str:
    return body["messages"][-1]["content"].split("Question: ")[-1].split("?")[0].strip()


class Replies:
    """Answers after ``delay`` s; the first asks of the questions numbered in ``hold_at`` (counting
    questions in the order they are first asked) wait until released, so a kill lands while its worker
    holds the item. A question asked again (a take-over) is never held: holding it would kill its
    second worker too."""

    def __init__(self, delay: float, hold_at=()):
        self.delay = delay
        self.lock = threading.Lock()
        self.n = 0  # distinct questions asked so far
        self.log: list[str] = []
        self.held = {k: threading.Event() for k in hold_at}
        self.release = {k: threading.Event() for k in hold_at}
        self.held_q: dict[int, str] = {}

    def __call__(self, body):
        q = question_of(body)
        with self.lock:
            first = q not in self.log
            self.n += first
            n = self.n if first else 0
            self.log.append(q)
        if n in self.held:
            self.held_q[n] = q
            self.held[n].set()
            self.release[n].wait(120)
        time.sleep(self.delay)
        return f"{q} is answered [1]."


def dataset(path: Path, n: int) -> Path:
    path.write_text(json.dumps([{"id": f"item{i}", "question": f"Question {i}?",
                                 "docs": [{"title": f"T{i}", "text": f"Fact {i} is true."}]} for i in range(n)]))
    return path


def test_four_workers_with_kills_do_every_item_exactly_once(tmp_path, postgres):
    import psycopg

    url = postgres.new_database("four_workers")
    n_items = 16
    data = dataset(tmp_path / "data.json", n_items)
    replies = Replies(0.3, hold_at=(3, 9))
    with FakeOpenAI(replies) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "t", "PYTHONPATH": str(REPO),
               "CITEGRAPH_RETRIES": "0"}
        procs = {}
        for w in range(4):
            p = subprocess.Popen([sys.executable, "-m", "citegraph.cli", "run", "vanilla", "-i", str(data),
                                  "-o", str(tmp_path / f"w{w}.json"), "--llm", "openai:fake", "--workers-db", url,
                                  "--workers-lease", "30"],
                                 env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs[p.pid] = (w, p)
        killed: dict[int, str] = {}  # worker index -> the item it held
        takeover_s = []
        try:
            for hold in (3, 9):
                assert replies.held[hold].wait(180), "the workers never reached the request to kill in"
                item = f"item{replies.held_q[hold].split()[-1]}"
                w, worker, t_kill = pg_server.kill_claim_holder(url, procs, item)
                killed[w] = item
                replies.release[hold].set()
                # the item goes to another worker without waiting for the 30 s lease
                took, owner = pg_server.wait_for_takeover(url, item, t_kill, poll=0.1)
                takeover_s.append(took)
                assert owner != worker
            results = {}
            for w, p in procs.values():
                if w in killed:
                    continue
                _, err = p.communicate(timeout=300)
                results[w] = (p.returncode, err)
        finally:
            pg_server.stop_workers(procs, replies.release.values())

    assert len(killed) == 2 and max(takeover_s) < 10, takeover_s
    ids = [f"item{i}" for i in range(n_items)]
    for w, (code, err) in results.items():
        assert code == 0, err[-2000:]
        assert "Traceback" not in err
        final = json.loads((tmp_path / f"w{w}.json").read_text())
        assert [d["citegraph"]["item_id"] for d in final["data"]] == ids  # every item, once, in order
        for d in final["data"]:
            assert d["output"] == f"Question {d['id'][4:]} is answered [1]."
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT item_id, state, claims, finished_by, late_finishes FROM citegraph_work").fetchall()
    assert sorted(r[0] for r in rows) == sorted(ids) and all(r[1] == "done" for r in rows)
    assert sum(r[4] for r in rows) == 0  # no item was finished by two workers
    by_item = {r[0]: r for r in rows}
    for item in killed.values():
        assert by_item[item][2] == 2  # claimed by the killed worker, then by one other
    # each item was asked once, plus once more for each killed worker's item
    asked = {i: replies.log.count(f"Question {i[4:]}") for i in ids}
    assert sum(asked.values()) == n_items + 2 and all(asked[i] == 2 for i in killed.values())
    assert sum(r[2] for r in rows) == n_items + 2  # claims: one each, plus the two take-overs
    # each survivor says what it ran and what it gathered; together with the killed ones' items: all
    import re

    by_killed = sum(1 for r in rows if not any(r[3].split(":")[1] == str(p.pid) for w, p in procs.values()
                                               if w not in killed))
    new = 0
    for w, (_, err) in results.items():
        m = re.search(r"wrote \S+: (\d+) new, (\d+) by other workers, 0 already done, 0 failed \(of 16\)", err)
        assert m, err[-1000:]
        new += int(m.group(1))
        assert int(m.group(1)) + int(m.group(2)) == n_items
    assert new + by_killed == n_items


def _queue(url, **kw) -> WorkQueue:
    return WorkQueue(url, **kw)


def test_a_lapsed_lease_is_taken_over_and_a_late_finish_is_dropped(postgres):
    url = postgres.new_database("lease")
    a, b = _queue(url, lease_s=1.0, name="A"), _queue(url, lease_s=1.0, name="B")
    try:
        keys = ["k1", "k2"]
        a.register(keys, ["i1", "i2"])
        b.register(keys, ["i1", "i2"])
        assert a.claim(keys) == ("k1", 1)  # A holds k1 but sends no heartbeat (a hung or cut-off host)
        assert b.claim(keys) == ("k2", 1)
        assert b.claim(keys) is None  # k1's lease holds
        time.sleep(1.3)
        assert b.claim(keys) == ("k1", 2)  # lapsed: B takes it over
        assert b.finish("k1", {"by": "B"}) is True
        assert a.finish("k1", {"by": "A"}) is False and a.late == 1  # A's late answer is dropped
        res = b.results(keys)
        assert res["k1"]["record"] == {"by": "B"} and res["k1"]["finished_by"] == "B"
    finally:
        a.close()
        b.close()


def test_a_heartbeat_keeps_the_claim(postgres):
    url = postgres.new_database("beat")
    a, b = _queue(url, lease_s=0.6, name="A"), _queue(url, lease_s=0.6, name="B")
    try:
        a.register(["k"], ["i"])
        a.start_heartbeat()
        assert a.claim(["k"]) == ("k", 1)
        time.sleep(1.5)  # more than twice the lease: the heartbeat renewed it
        assert b.claim(["k"]) is None
    finally:
        a.close()
        b.close()


def test_a_claim_whose_session_ended_is_taken_over_at_once(postgres):
    url = postgres.new_database("session")
    a, b = _queue(url, lease_s=600, name="A"), _queue(url, lease_s=600, name="B")
    try:
        a.register(["k"], ["i"])
        assert a.claim(["k"]) == ("k", 1)
        assert b.claim(["k"]) is None
        a.conn.close()  # the worker's database session ends (its process was killed)
        deadline = time.time() + 5
        got = None
        while got is None and time.time() < deadline:
            got = b.claim(["k"])
            time.sleep(0.05)
        assert got == ("k", 2)
    finally:
        a.close()
        b.close()


def test_failed_items_are_retried_by_a_worker_that_starts_later(postgres):
    url = postgres.new_database("failed")
    a = _queue(url, name="A")
    try:
        a.register(["k"], ["i"])
        assert a.claim(["k"]) == ("k", 1)
        a.fail("k", "ModelReplyError: HTTP 500")
        assert a.claim(["k"]) is None and a.counts(["k"])["failed"] == 1
        b = _queue(url, name="B")
        b.register(["k"], ["i"])
        assert b.claim(["k"]) == ("k", 2)
        b.close()
    finally:
        a.close()


def test_bench_workers_share_the_job(tmp_path, postgres, scripted):
    """``bench --workers-db``: a worker that starts after the first finished gathers every item from the
    table (no model call) and scores and reports the whole job."""
    from citegraph.eval.bench import run_bench
    from citegraph.tools.verifier import FunctionVerifier, register_verifier

    spec, model = scripted(lambda messages, kwargs: "Fact 1 is true [1].")
    register_verifier("stub:workers", FunctionVerifier(lambda p, h: 1.0, spec="stub:workers"))
    url = postgres.new_database("bench_workers")
    data = dataset(tmp_path / "d.json", 3)
    first = run_bench(["vanilla"], data, tmp_path / "b1", llm=spec, verifier="stub:workers", workers_db=url)
    assert len(model.calls) == 3 and first["runs"]["vanilla"]["ran"] == 3
    second = run_bench(["vanilla"], data, tmp_path / "b2", llm=spec, verifier="stub:workers", workers_db=url)
    assert len(model.calls) == 3  # nothing asked again
    run2 = second["runs"]["vanilla"]
    assert run2["skipped"] == 3 and run2["ran"] == 0 and run2["by_others"] == 0  # done before it started
    raw = json.loads((tmp_path / "b2" / "raw" / "vanilla.json").read_text())
    assert [d["citegraph"]["item_id"] for d in raw["data"]] == ["item0", "item1", "item2"]
    assert second["counts"]["vanilla"]["finished"] == 3
