"""Ranking short passages (GINGER's facet clusters) for a query: pairwise preferences summed over all
ordered pairs (duoT5's sym-sum), BM25, and a duoT5 pairwise scorer for users who have its weights."""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from citegraph.errors import ModelError

PairFn = Callable[[str, str], float]  # P(first is more relevant than second)


def sym_sum(n: int, prefs: dict[tuple[int, int], float]) -> list[float]:
    """duoT5's aggregation: s_i = sum over j != i of p(i > j) + (1 - p(j > i)). Pairs missing from
    ``prefs`` count as no preference (0.5)."""
    scores = [0.0] * n
    for i in range(n):
        for j in range(n):
            if i != j:
                scores[i] += prefs.get((i, j), 0.5) + 1.0 - prefs.get((j, i), 0.5)
    return scores


def pairwise_preferences(texts: Sequence[str], pref: PairFn) -> dict[tuple[int, int], float]:
    """p(i > j) for every ordered pair (i, j), i != j."""
    return {(i, j): float(pref(texts[i], texts[j])) for i in range(len(texts)) for j in range(len(texts)) if i != j}


def bm25_scores(query: str, texts: Sequence[str]) -> list[float]:
    """BM25 (bm25s) of each text for the query; the texts are the whole collection."""
    import bm25s

    if not texts:
        return []
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)
    q = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
    return [float(s) for s in retriever.get_scores(q)]


_duo: dict[str, "DuoT5"] = {}
_duo_lock = threading.Lock()


class DuoT5:
    """duoT5 (Pradeep et al., 2021): ``Query: q Document0: a Document1: b Relevant:`` → P("true")
    from the first decoder step's logits over the "true"/"false" tokens."""

    def __init__(self, path: str):
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModelForSeq2SeqLM.from_pretrained(path, local_files_only=True).eval()
        self.true_id = self.tok.encode("true", add_special_tokens=False)[0]
        self.false_id = self.tok.encode("false", add_special_tokens=False)[0]
        self.lock = threading.Lock()

    def prob(self, query: str, a: str, b: str) -> float:
        import torch

        text = f"Query: {query} Document0: {a} Document1: {b} Relevant:"
        enc = self.tok(text, return_tensors="pt", truncation=True, max_length=512)
        start = torch.full((1, 1), self.model.config.decoder_start_token_id, dtype=torch.long)
        with self.lock, torch.no_grad():
            logits = self.model(**enc, decoder_input_ids=start).logits[0, -1]
        two = torch.softmax(logits[[self.true_id, self.false_id]], dim=0)
        return float(two[0])


def get_duot5(path: str) -> DuoT5:
    """The duoT5 at ``path`` (a local folder; nothing is downloaded), loaded once per process."""
    if not path:
        raise ModelError("ranker=duot5 needs duot5_model: the path of a local duoT5 checkpoint")
    with _duo_lock:
        if path not in _duo:
            try:
                _duo[path] = DuoT5(path)
            except (OSError, ValueError) as e:
                raise ModelError(f"cannot load duoT5 from {path!r}: {str(e).splitlines()[0]}") from e
        return _duo[path]
