"""Correctness (ALCE): STR-EM (ASQA), QAMPARI's list metrics, ELI5 claim recall (the verifier with
the citation-free output as premise) and ROUGE-Lsum (``rouge_score``, stemmed, one sentence per
line, best over the references)."""

from __future__ import annotations

from typing import Any, Sequence

from citegraph.metrics.citation import normalize_answer, remove_citations
from citegraph.metrics.jobs import Job, run_jobs
from citegraph.tools.sentences import split_sentences


def exact_presence(short_answers: Sequence[str], context: str) -> bool:
    n_context = normalize_answer(context)
    return any(normalize_answer(a) in n_context for a in short_answers)


def str_em(output: str, qa_pairs: Sequence[dict]) -> dict:
    """ASQA STR-EM: fraction of ``qa_pairs`` with any short answer contained in the output
    (both normalised), and STR-HIT (all of them). Citations are removed first."""
    text = remove_citations(output)
    hits = [exact_presence(qa.get("short_answers") or [], text) for qa in qa_pairs]
    em = sum(hits) / len(hits) if hits else 0.0
    return {"str_em": em, "str_hit": float(bool(hits) and all(hits))}


def qampari_scores(output: str, answers: Sequence[Sequence[str]]) -> dict:
    """ALCE's QAMPARI list metrics: the output is a comma-separated list; each gold answer is a
    list of aliases. Returns prec, rec, rec_top5, f1, f1_top5, num_preds (fractions)."""
    o = remove_citations(output)
    preds = [normalize_answer(x.strip()) for x in o.rstrip().rstrip(".").rstrip(",").split(",")]
    preds = [p for p in preds if p]
    gold = [[normalize_answer(x) for x in a] for a in answers]
    flat = [x for a in gold for x in a]
    prec = sum(p in flat for p in preds) / len(preds) if preds else 0.0
    hit = sum(any(x in preds for x in a) for a in gold)
    rec = hit / len(gold) if gold else 0.0
    rec5 = min(5, hit) / min(5, len(gold)) if gold else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    f15 = 2 * prec * rec5 / (prec + rec5) if prec + rec5 else 0.0
    return {"qampari_prec": prec, "qampari_rec": rec, "qampari_rec_top5": rec5, "qampari_f1": f1,
            "qampari_f1_top5": f15, "num_preds": float(len(preds))}


def claims_job(output: str, claims: Sequence[str]) -> Job:
    premise = remove_citations(output)
    pairs = [(premise, c) for c in claims]
    got = (yield pairs) if pairs else []
    return sum(got) / len(claims) if claims else 0.0


def claims_recall(output: str, claims: Sequence[str], verifier: Any = "default") -> float:
    """ELI5 claim recall: fraction of gold claims entailed by the output (citations removed)."""
    return run_jobs(verifier, [claims_job(output, claims)])[0]


_rouge = None


def _rouge_scorer():
    global _rouge
    if _rouge is None:
        from rouge_score import rouge_scorer

        _rouge = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
    return _rouge


def rouge_lsum(output: str, references: Sequence[str], *, splitter: str | None = None) -> float:
    """ROUGE-Lsum F-measure (``rouge_score``, Porter stemmer) of the citation-free output against
    each reference; the best over references. rougeLsum scores the summary-level LCS over lines, so
    both texts are split into sentences first (on the original-case text: splitters use case),
    one sentence per line, then lower-cased."""
    refs = [r for r in references if isinstance(r, str) and r.strip()]
    if not refs:
        return 0.0

    def prep(t: str) -> str:
        return "\n".join(split_sentences(t, **({"splitter": splitter} if splitter else {}))).lower()

    hyp = prep(remove_citations(output))
    return max(_rouge_scorer().score(prep(r), hyp)["rougeLsum"].fmeasure for r in refs)
