"""Servers a test starts on loopback: a free port, and a process started, waited for until its health URL
answers, and stopped (the test is skipped with the reason when it exits or does not answer in time)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(cmd: Sequence[str], health: str, log: Path, name: str, *, timeout: float = 60,
          env: dict[str, str] | None = None, unavailable: Callable[[str], None] = pytest.skip) -> Iterator[subprocess.Popen]:
    """``cmd`` running, its output in ``log``, once ``health`` answers 200; terminated (then killed) after.
    A process that exits or does not answer in time: ``unavailable(reason)`` (a test is skipped)."""
    out = open(log, "wb")
    proc = subprocess.Popen(list(cmd), env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                unavailable(f"{name} exited with {proc.returncode} at start: {log.read_text(errors='replace')[-300:]}")
            try:
                with urllib.request.urlopen(health, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                unavailable(f"{name} did not answer on loopback within {timeout:.0f} s")
            time.sleep(0.3)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        out.close()


@contextlib.contextmanager
def phoenix(work: Path, *, timeout: float = 120, unavailable: Callable[[str], None] = pytest.skip) -> Iterator[str]:
    """An Arize Phoenix server (its UI and OTLP/HTTP collector) on loopback, its data in ``work``; yields its URL."""
    port = free_port()
    env = {**os.environ, "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_WORKING_DIR": str(work), "PHOENIX_TELEMETRY_ENABLED": "false"}
    url = f"http://127.0.0.1:{port}"
    with serve([sys.executable, "-m", "phoenix.server.main", "serve"], url + "/healthz", work / "phoenix.log",
               "Phoenix", timeout=timeout, env=env, unavailable=unavailable):
        yield url
