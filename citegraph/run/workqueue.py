"""Many workers, one job: processes (on one host or several) share the items of one ``run`` / ``bench``
through a PostgreSQL table, each item claimed by exactly one live worker.

    citegraph run raac -i data.json -o out.json --workers-db postgresql://user@db:5432/citegraph

started N times (any hosts that reach the database, each with the same input and settings). One row
per item in ``citegraph_work``, keyed by ``<label>:<item id>:<content digest>``
(:func:`citegraph.run.runner.content_digest`: question, documents, settings), so workers with the
same input and settings share rows, and a changed item is a new row.

- **Claim**: ``SELECT ... FOR UPDATE SKIP LOCKED`` picks the first claimable row in input order and
  marks it claimed by this worker, in one statement: two workers never claim the same row.
- **Lease**: a claim holds for ``lease_s`` seconds; a heartbeat thread renews this worker's claims
  every ``lease_s / 3`` seconds. A row is claimable when it is new, or claimed and either its lease
  ran out (a worker whose host died or lost the database) or the database session that claimed it
  is gone (``pg_stat_activity``: a killed process' session ends at once, so its item is taken over
  within a poll, not after the lease).
- **Finish**: the answer record is stored in the row (``state = 'done'``) unless the row is done
  already (a worker that lost its lease and finished late: the first answer stays, the late one is
  dropped and counted); a failed item stores its one-line reason (``state = 'failed'``; a worker
  that starts later retries it, as re-running the command does without workers).
- **Gather**: a worker with nothing left to claim waits until no row of its items is claimed by a
  live worker, then takes every stored record into its output: each worker ends with the whole job.

The table is created on first use (``CREATE TABLE IF NOT EXISTS`` under an advisory lock, so workers
starting together do not race). SQL is plain psycopg; the queue needs nothing beyond PostgreSQL.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any, Sequence

from citegraph.errors import InputError
from citegraph.tools.checkpoints import CONNECT_TIMEOUT_S, redact

TABLE = "citegraph_work"
DEFAULT_LEASE_S = 30.0
POLL_S = 0.5
_SETUP_LOCK = 0x63697465  # pg_advisory_xact_lock key while creating the table ("cite")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    key          text PRIMARY KEY,
    item_id      text NOT NULL,
    ord          integer NOT NULL,
    state        text NOT NULL DEFAULT 'todo',   -- todo | claimed | done | failed
    worker       text,
    owner_pid    integer,                        -- the claiming worker's database session
    lease_until  timestamptz,
    claims       integer NOT NULL DEFAULT 0,     -- how many times the item was claimed
    claimed_at   timestamptz,
    finished_by  text,
    finished_at  timestamptz,
    late_finishes integer NOT NULL DEFAULT 0,    -- answers dropped because another worker had finished it
    record       jsonb,
    error        text
)"""

_CLAIMABLE = """(w.state = 'todo' OR (w.state = 'claimed' AND (w.lease_until < now()
        OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = w.owner_pid))))"""


def worker_name() -> str:
    """``host:pid:random``: unique per worker process, readable in the table."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def check_workers_db(spec: str) -> str:
    spec = (spec or "").strip()
    if not spec.startswith(("postgresql://", "postgres://")):
        raise InputError(f"--workers-db {redact(spec)!r}: expected a PostgreSQL URL, postgresql://user@host:port/db")
    return spec


class WorkQueue:
    """One worker's view of the shared items (see the module docstring)."""

    def __init__(self, spec: str, *, lease_s: float = DEFAULT_LEASE_S, name: str | None = None):
        import psycopg

        self.spec = check_workers_db(spec)
        if not lease_s > 0:
            raise InputError("--workers-lease must be more than 0 seconds")
        self.lease_s = float(lease_s)
        self.name = name or worker_name()
        try:
            self.conn = psycopg.connect(self.spec, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except (psycopg.Error, ValueError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise InputError(f"--workers-db {redact(self.spec)!r}: cannot connect to the database ({first})") from None
        self._lock = threading.Lock()  # one connection, shared by the item threads and the heartbeat
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.late = 0
        with self._lock, self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
            self.conn.execute(_SCHEMA)

    # ------------------------------------------------------------------ setup
    def register(self, keys: Sequence[str], item_ids: Sequence[str],
                 done: dict[str, dict] | None = None) -> None:
        """Add the items (in input order) that are not in the table yet; ``done``: key → record of items
        this worker's output already holds (stored as done, so the other workers gather them too).
        Items that failed before are set back to be tried again."""
        done = done or {}
        with self._lock, self.conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {TABLE} (key, item_id, ord) VALUES (%s, %s, %s) ON CONFLICT (key) DO NOTHING",
                [(k, i, n) for n, (k, i) in enumerate(zip(keys, item_ids))])
            if done:
                cur.executemany(
                    f"UPDATE {TABLE} SET state = 'done', record = %s, finished_by = %s, finished_at = now() "
                    "WHERE key = %s AND state <> 'done'",
                    [(json.dumps(rec, ensure_ascii=False), self.name + " (earlier output)", k) for k, rec in done.items()])
            cur.execute(f"UPDATE {TABLE} SET state = 'todo', error = NULL WHERE key = ANY(%s) AND state = 'failed'",
                        (list(keys),))

    def start_heartbeat(self) -> None:
        def beat() -> None:
            while not self._stop.wait(self.lease_s / 3):
                try:
                    with self._lock:
                        self.conn.execute(
                            f"UPDATE {TABLE} SET lease_until = now() + %s * interval '1 second' "
                            "WHERE worker = %s AND state = 'claimed'", (self.lease_s, self.name))
                except Exception:  # noqa: BLE001 - a lost connection: the claims lapse, others take over
                    return

        self._beat = threading.Thread(target=beat, name="citegraph-lease", daemon=True)
        self._beat.start()

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass

    # ------------------------------------------------------------------ the work
    def claim(self, keys: Sequence[str]) -> tuple[str, int] | None:
        """Claim the first claimable item among ``keys`` (input order): ``(key, claims)``, claims > 1
        when another worker had it before; None when none is claimable now."""
        with self._lock:
            row = self.conn.execute(
                f"""WITH c AS (SELECT w.key FROM {TABLE} w WHERE w.key = ANY(%s) AND {_CLAIMABLE}
                              ORDER BY w.ord, w.key LIMIT 1 FOR UPDATE SKIP LOCKED)
                    UPDATE {TABLE} t SET state = 'claimed', worker = %s, owner_pid = pg_backend_pid(),
                        lease_until = now() + %s * interval '1 second', claims = t.claims + 1, claimed_at = now()
                    FROM c WHERE t.key = c.key RETURNING t.key, t.claims""",
                (list(keys), self.name, self.lease_s)).fetchone()
        return (row[0], row[1]) if row else None

    def finish(self, key: str, record: dict) -> bool:
        """Store the item's record; False when another worker had finished it first (this one is dropped)."""
        with self._lock:
            cur = self.conn.execute(
                f"UPDATE {TABLE} SET state = 'done', record = %s, finished_by = %s, finished_at = now(), error = NULL "
                "WHERE key = %s AND state <> 'done'", (json.dumps(record, ensure_ascii=False), self.name, key))
            if cur.rowcount == 1:
                return True
            self.conn.execute(f"UPDATE {TABLE} SET late_finishes = late_finishes + 1 WHERE key = %s", (key,))
        self.late += 1
        return False

    def fail(self, key: str, error: str) -> None:
        with self._lock:
            self.conn.execute(f"UPDATE {TABLE} SET state = 'failed', error = %s WHERE key = %s AND worker = %s "
                              "AND state = 'claimed'", (error[:2000], key, self.name))

    def release(self, keys: Sequence[str]) -> None:
        """Give claimed items back (a run stopped by a model failure or Ctrl-C): another worker takes them."""
        if not keys:
            return
        with self._lock:
            self.conn.execute(f"UPDATE {TABLE} SET state = 'todo', worker = NULL, owner_pid = NULL "
                              "WHERE key = ANY(%s) AND worker = %s AND state = 'claimed'", (list(keys), self.name))

    def counts(self, keys: Sequence[str]) -> dict[str, int]:
        """Rows of ``keys`` per state (todo, claimed, done, failed) and how many claims a live worker holds."""
        with self._lock:
            rows = self.conn.execute(
                f"SELECT w.state, ({_CLAIMABLE}) AS lapsed, count(*) FROM {TABLE} w WHERE w.key = ANY(%s) "
                "GROUP BY 1, 2", (list(keys),)).fetchall()
        out = {"todo": 0, "claimed": 0, "done": 0, "failed": 0, "live_claims": 0}
        for state, lapsed, n in rows:
            out[state] = out.get(state, 0) + n
            if state == "claimed" and not lapsed:
                out["live_claims"] += n
        return out

    def results(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """key → {state, record, error, finished_by} for the items ``keys``."""
        with self._lock:
            rows = self.conn.execute(f"SELECT key, state, record, error, finished_by FROM {TABLE} WHERE key = ANY(%s)",
                                     (list(keys),)).fetchall()
        return {k: {"state": s, "record": r, "error": e, "finished_by": f} for k, s, r, e, f in rows}

    def wait_idle(self, keys: Sequence[str], should_stop=lambda: False) -> None:
        """Block while a live worker holds a claim on one of ``keys`` and nothing is claimable
        (returns as soon as an item can be claimed again: its worker died)."""
        while not should_stop():
            c = self.counts(keys)
            if c["live_claims"] == 0 or c["todo"] > 0 or c["claimed"] > c["live_claims"]:
                return
            time.sleep(POLL_S)
