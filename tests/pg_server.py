"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` + ``pg_ctl`` in a temp dir on a
free loopback port, one database, stopped (and removed) on exit.

initdb refuses to run as root; as root the server runs as ``nobody`` (through ``runuser``) in a
directory that user may write. :func:`unavailable` says why no server can start here (no binaries,
root without runuser), for ``pytest.skip``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
