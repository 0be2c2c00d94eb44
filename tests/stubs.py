"""Deterministic test doubles shared by the test modules."""

from __future__ import annotations

import re

from citegraph.tools.verifier import Verifier

STOP = {"the", "a", "an", "is", "are", "was", "in", "of", "and", "by", "to", "it", "title"}


def words(t: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", t.lower()) if w not in STOP}


class KeywordVerifier(Verifier):
    """Deterministic stub: P = 1 iff the hypothesis' content words are all in the premise.
    Every batch it scores is recorded in ``calls``."""

    def __init__(self, spec: str = "stub:keyword", **kw):
        super().__init__(spec=spec, **kw)
        self.calls: list[list[tuple[str, str]]] = []

    def _score_uncached(self, pairs):
        self.calls.append(list(pairs))
        return [1.0 if words(h) <= words(p) else 0.0 for p, h in pairs]
