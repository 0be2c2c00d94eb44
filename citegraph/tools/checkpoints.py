"""Checkpoint stores for durable runs: a spec string → a LangGraph checkpointer.

    memory                                   InMemorySaver (one per process and spec; tests)
    sqlite:///relative/path.db               SqliteSaver on a file (SQLAlchemy's convention:
    sqlite:////absolute/path.db              three slashes, then the path as written)
    postgresql://user[:pw]@host:port/db      PostgresSaver (``postgres://`` too; libpq's URL form,
                                             query options such as ``?sslmode=require`` pass through)

A graph compiled with the checkpointer saves its state after every super-step, so a run killed
inside an item resumes from its last completed node (``citegraph.run.runner.answer_item``). The
store is opened once per process and spec (:func:`open_checkpointer`): the connection is checked and
the tables created (``setup()``) before any item runs, so a bad spec fails with one line
(:class:`~citegraph.errors.InputError`), not inside the first item.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from citegraph.errors import InputError

SCHEMES = ("memory", "sqlite:///", "postgresql://", "postgres://")
CONNECT_TIMEOUT_S = 5

_LOCK = threading.Lock()
_OPEN: dict[str, Any] = {}
_CONNECTIONS: dict[str, Any] = {}


def redact(spec: str) -> str:
    """The spec with a password replaced by ``***`` (for messages and records)."""
    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", spec)


def sqlite_path(spec: str) -> str:
    """``sqlite:///runs/ck.db`` → ``runs/ck.db``; ``sqlite:////tmp/ck.db`` → ``/tmp/ck.db``."""
    path = os.path.expanduser(spec[len("sqlite:///"):])
    if not path:
        raise InputError(f"--checkpoint {spec!r}: no file after sqlite:/// (e.g. sqlite:///runs/checkpoints.db)")
    return path


def strict_serde():
    """LangGraph's serializer in strict mode: a checkpoint may hold only LangGraph's safe types and the
    types reachable from the compiled graph's schemas (each graph adds its own to the allowlist), so
    reading a store restores our state types without the "unregistered type" warnings, and a
    tampered store cannot name any other class."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer(allowed_msgpack_modules=None)


def _open_sqlite(spec: str):
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = sqlite_path(spec)
    if path != ":memory:":
        p = Path(path)
        if p.is_dir():
            raise InputError(f"--checkpoint {spec!r}: {path} is a directory, not a database file")
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(f"--checkpoint {spec!r}: directory {parent} does not exist")
        if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
            raise InputError(f"--checkpoint {spec!r}: {path} is not writable")
    try:
        # several items may run at once (--concurrency); SqliteSaver serialises them with its own lock
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn, serde=strict_serde())
        saver.setup()
    except sqlite3.Error as e:
        raise InputError(f"--checkpoint {spec!r}: {path} is not a usable SQLite database ({e})") from None
    return saver, conn


def _open_postgres(spec: str):
    try:
        import psycopg
        from psycopg.rows import dict_row

        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as e:  # pragma: no cover - both are dependencies
        raise InputError(f"--checkpoint {redact(spec)!r} needs langgraph-checkpoint-postgres and psycopg ({e})") from None
    try:
        conn = psycopg.connect(spec, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                               connect_timeout=CONNECT_TIMEOUT_S)
    except (psycopg.Error, ValueError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(f"--checkpoint {redact(spec)!r}: cannot connect to the database ({first})") from None
    try:
        saver = PostgresSaver(conn, serde=strict_serde())
        saver.setup()  # creates the tables and runs pending migrations; idempotent
    except psycopg.Error as e:
        conn.close()
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(f"--checkpoint {redact(spec)!r}: cannot set up the checkpoint tables ({first})") from None
    return saver, conn


def check_spec(spec: str) -> str:
    """The spec, stripped; an unknown scheme is an InputError naming the accepted ones."""
    spec = (spec or "").strip()
    if spec == "memory" or spec.startswith(SCHEMES[1:]):
        return spec
    raise InputError(
        f"--checkpoint {redact(spec)!r}: unknown store; use memory, sqlite:///path/to/file.db "
        "or postgresql://user@host:port/db"
    )


def open_checkpointer(spec: str):
    """The checkpointer for ``spec``, opened (and set up) once per process; raises InputError for an
    unknown scheme, a bad path or an unreachable database."""
    spec = check_spec(spec)
    with _LOCK:
        saver = _OPEN.get(spec)
        if saver is not None:
            return saver
        if spec == "memory":
            from langgraph.checkpoint.memory import InMemorySaver

            saver, conn = InMemorySaver(serde=strict_serde()), None
        elif spec.startswith("sqlite:///"):
            saver, conn = _open_sqlite(spec)
        else:
            saver, conn = _open_postgres(spec)
        _OPEN[spec] = saver
        if conn is not None:
            _CONNECTIONS[spec] = conn
        return saver


def close_checkpointers() -> None:
    """Close every store this process opened (a later :func:`open_checkpointer` opens it again)."""
    with _LOCK:
        for conn in _CONNECTIONS.values():
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        _CONNECTIONS.clear()
        _OPEN.clear()


def store_size(spec: str) -> int | None:
    """Bytes the store takes: the SQLite file (with its WAL), the Postgres tables; None for memory."""
    spec = check_spec(spec)
    if spec.startswith("sqlite:///"):
        path = sqlite_path(spec)
        return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    if spec.startswith(("postgresql://", "postgres://")):
        saver = open_checkpointer(spec)
        with saver.lock, saver.conn.cursor() as cur:  # the saver's connection, under its lock
            row = cur.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c "
                "WHERE c.relkind = 'r' AND c.relname IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')"
            ).fetchone()
        return int(row["n"])
    return None
