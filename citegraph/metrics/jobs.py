"""Verifier plumbing of the metrics: a metric is a job (a generator that yields lists of
(premise, hypothesis) pairs, receives the entailment decisions and returns its result), and
:func:`run_jobs` drives many jobs with one batched verifier call per round."""

from __future__ import annotations

from typing import Any, Generator, Sequence

from citegraph.errors import InputError
from citegraph.tools.verifier import get_verifier

Pair = tuple[str, str]
Job = Generator[list[Pair], list[bool], Any]


# --------------------------------------------------------------------------- verifier plumbing
def resolve_verifier(verifier: Any):
    """A verifier object from a spec string (``get_verifier``) or the object itself."""
    if verifier is None or isinstance(verifier, str):
        try:
            return get_verifier(verifier or "default")
        except ValueError as e:  # unknown spec: the user's input
            raise InputError(str(e).splitlines()[0]) from None
    return verifier


def judge(verifier: Any, pairs: Sequence[Pair]) -> list[bool]:
    """``verifier.entails_many(pairs)`` on a spec or verifier object (verifiers report the pairs
    they score to the active :class:`~citegraph.tools.usage.UsageTracker` themselves)."""
    if not pairs:
        return []
    return [bool(x) for x in resolve_verifier(verifier).entails_many(list(pairs))]


def run_jobs(verifier: Any, jobs: Sequence[Job]) -> list[Any]:
    """Drive several verification jobs in lock-step: each round's pairs of every job go to the
    verifier in one batched call. A job is a generator that yields lists of pairs, receives the
    entailment decisions and finally returns its result."""
    results: list[Any] = [None] * len(jobs)
    pending: dict[int, list[Pair]] = {}
    for i, job in enumerate(jobs):
        try:
            pending[i] = next(job)
        except StopIteration as e:
            results[i] = e.value
    while pending:
        flat = [p for i in pending for p in pending[i]]
        flags = judge(verifier, flat) if flat else []
        nxt: dict[int, list[Pair]] = {}
        k = 0
        for i, pairs in pending.items():
            chunk, k = flags[k:k + len(pairs)], k + len(pairs)
            try:
                nxt[i] = jobs[i].send(chunk)
            except StopIteration as e:
                results[i] = e.value
        pending = nxt
    return results
