"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` + ``pg_ctl`` in a temp dir on a
free loopback port, one database, stopped (and removed) on exit.

initdb refuses to run as root; as root the server runs as ``nobody`` (through ``runuser``) in a
directory that user may write. :func:`unavailable` says why no server can start here (no binaries,
root without runuser), for ``pytest.skip``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from loopback import free_port

BINARIES = ("initdb", "pg_ctl")


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):  # Debian's layout
        if (d / name).exists():
            return str(d / name)
    return None


def unavailable() -> str | None:
    """None when a server can be started here, else the reason."""
    missing = [b for b in BINARIES if _which(b) is None]
    if missing:
        return f"PostgreSQL binaries not found ({', '.join(missing)}); apt-get install postgresql"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root and runuser is absent: initdb refuses to run as root"
    return None


class PostgresServer:
    """``with PostgresServer() as pg: pg.url`` → ``postgresql://postgres@127.0.0.1:PORT/citegraph``."""

    def __init__(self, dbname: str = "citegraph"):
        self.dbname = dbname
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="citegraph-pg-"))
        self.data = self.dir / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "nobody", "--"]
            os.chmod(self.dir, 0o777)

    def _run(self, *cmd: str) -> None:
        proc = subprocess.run([*self._as_user, *cmd], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:2])} failed: {(proc.stderr or proc.stdout).strip()[-800:]}")

    def start(self) -> "PostgresServer":
        self._run(_which("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(_which("pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w", "start")
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.dbname}"')
        return self

    def new_database(self, name: str) -> str:
        """Create another database on this server; returns its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run([*self._as_user, _which("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "PostgresServer":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def postgres_fixture():
    """The body of a module-scoped pytest fixture: a throwaway server, stopped afterwards; the test
    skips with the reason where none can start (``yield from postgres_fixture()``)."""
    import pytest

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    try:
        pg = PostgresServer().start()
    except RuntimeError as e:  # e.g. no user to run initdb as
        pytest.skip(f"PostgreSQL could not start here: {e}")
    try:
        yield pg
    finally:
        pg.stop()


def kill_claim_holder(url: str, procs: dict, item: str):
    """SIGKILL the ``citegraph run --workers-db`` process whose claim holds ``item`` (``procs``: pid ->
    (worker index, Popen)). Returns (worker index, the worker's name in the table, time of the kill)."""
    import signal
    import time

    import psycopg

    with psycopg.connect(url) as conn:
        worker = conn.execute("SELECT worker FROM citegraph_work WHERE item_id = %s AND state = 'claimed'",
                              (item,)).fetchone()[0]
    w, p = procs[int(worker.split(":")[1])]
    p.send_signal(signal.SIGKILL)
    p.wait()
    return w, worker, time.perf_counter()


def wait_for_takeover(url: str, item: str, t_kill: float, limit: float = 20.0, poll: float = 0.02):
    """Seconds from ``t_kill`` until another claim of ``item`` (its ``claims`` count reaches 2), and the
    new owner; AssertionError after ``limit`` seconds."""
    import time

    import psycopg

    while True:
        with psycopg.connect(url) as conn:
            claims, owner = conn.execute("SELECT claims, worker FROM citegraph_work WHERE item_id = %s",
                                         (item,)).fetchone()
        if claims >= 2:
            return time.perf_counter() - t_kill, owner
        assert time.perf_counter() - t_kill < limit, "a killed worker's item was not taken over"
        time.sleep(poll)


def stop_workers(procs: dict, releases) -> None:
    """Let every held request go and kill the worker processes still running (``procs``: pid ->
    (worker index, Popen); ``releases``: the events the fake server's held requests wait on)."""
    for ev in releases:
        ev.set()
    for _, p in procs.values():
        if p.poll() is None:
            p.kill()
            p.wait()
