"""A RAAC item for kill/resume runs through ``openai:`` against :class:`fake_openai.FakeOpenAI`.

``RaacReplies(latency)`` answers each RAAC prompt by its kind (generate, feedback, refine, add
citations; anything else, e.g. the ``llm-judge`` verifier's Yes/No prompt, gets "Yes"), after a
fixed sleep, so a run's wall time is its number of calls times the latency and a kill lands inside
a call. Replies depend only on the prompt kind and the round, so a resumed run asks exactly the
calls a fresh one would have asked from that point on. Used by ``tests/test_durable.py`` and
``benchmarks/bench_kill_resume.py``.
"""

from __future__ import annotations

import json
import threading
import time

ASPECTS = ("completeness", "objectivity", "specificity", "length", "citation_recall", "citation_precision")
SUMMARY = "Alpha was founded in 1901 by Ann [1]. Beta is a river in Chile [2]."
REVISED = "Alpha, a town, was founded in 1901 by Ann [1]. Beta is a long river in Chile [2]."

DOCS = [
    {"title": "Alpha", "text": "Alpha was founded in 1901 by Ann. Alpha is a town."},
    {"title": "Beta", "text": "Beta is a river in Chile. Beta is long."},
    {"title": "Gamma", "text": "Gamma won the 1990 prize."},
]

# k rounds of feedback (score 2 everywhere: never the maximum, so every round runs), judge = verifier
SETTINGS = ["k=5", "objective_checks=false"]


def dataset(n: int = 1) -> list[dict]:
    return [{"id": f"item{i}", "question": f"What are Alpha and Beta (question {i})?", "docs": DOCS} for i in range(n)]


def kind(body: dict) -> str:
    text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
    for header, name in (("### Task: attributed summary", "generate"), ("### Task: summary feedback", "feedback"),
                         ("### Task: revise the summary", "refine"), ("### Task: add citations", "add")):
        if header in text:
            return name
    return "judge"


class RaacReplies:
    """The fake server's reply function; ``log`` holds (kind, start time) of every request."""

    def __init__(self, latency: float = 0.5, hold_at: int | None = None):
        self.latency = latency
        self.log: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        # request number ``hold_at`` (1-based) waits until ``release`` is set: a kill lands inside it
        self.hold_at = hold_at
        self.held = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict) -> str:
        k = kind(body)
        with self._lock:
            self.log.append((k, time.time()))
            n = len(self.log)
            refines = sum(1 for kk, _ in self.log if kk == "refine")
        if n == self.hold_at:
            self.held.set()
            self.release.wait(timeout=120)
        time.sleep(self.latency)
        if k == "generate":
            return SUMMARY
        if k == "feedback":
            fb = {a: {"score": 2, "suggestion": f"improve {a}"} for a in ASPECTS}
            return json.dumps({**fb, "total": 12})
        if k == "refine":  # a new text each time: an unchanged revision would end the TextAgent early
            return json.dumps({"revised": REVISED.replace("a long river", f"a river {refines} times revised")})
        if k == "add":
            return json.dumps({"citations": [1]})
        return "Yes"

    def count(self) -> int:
        with self._lock:
            return len(self.log)
