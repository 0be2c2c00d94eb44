"""ALCE's eval.py, exactly (``--alce``): ``compute_autoais`` item by item, quirks included (punkt
sentences, ``[n`` regex, ``[0]`` as the last document, duplicates counted, ``sent`` before ``text``,
hypotheses as written), and its ROUGE-Lsum (punkt on lower-cased text, bootstrap median)."""

from __future__ import annotations

import re
from typing import Any, Sequence

from citegraph.metrics.citation import remove_citations
from citegraph.metrics.correctness import _rouge_scorer
from citegraph.metrics.jobs import Job, Pair, run_jobs
from citegraph.state.answer import Document
from citegraph.tools.sentences import punkt_sentences


# --------------------------------------------------------------------------- ALCE's eval.py, exactly (--alce)
_ALCE_REF = re.compile(r"\[\d+")


def alce_exact_output(text: str) -> str:
    """The output as ALCE's ``main()`` reads it: stripped, cut at the first newline, ``<|im_end|>`` removed."""
    return (text or "").strip().split("\n")[0].replace("<|im_end|>", "")


def alce_exact_doc(d: Document | dict) -> str:
    """ALCE's ``_format_document``: a document that has a ``sent`` field is scored on it (QA-extracted
    docs), even when it also has ``text``."""
    if isinstance(d, dict):
        if "sent" in d:
            return "Title: %s\n%s" % (d.get("title", ""), d["sent"])
        return "Title: %s\n%s" % (d.get("title", ""), d.get("text", ""))
    return "Title: %s\n%s" % (d.title, d.text)


def alce_exact_units(output: str, *, qampari: bool = False, question: str = "") -> list[tuple[str, str, list[int]]]:
    """ALCE's sentences of an output: ``(sentence, hypothesis, refs)``. Sentences come from punkt
    (``nltk.sent_tokenize``), or for QAMPARI from the comma-separated list, each prefixed with the
    question; the hypothesis is ``remove_citations(sentence).strip()``; refs are ALCE's
    ``int(n) - 1`` for every ``[n`` in the sentence (0-based, duplicates kept; ``[0]`` gives -1,
    which Python indexing turns into the last document)."""
    if qampari:
        sents = [question + " " + x.strip() for x in output.rstrip().rstrip(".").rstrip(",").split(",")]
    else:
        sents = punkt_sentences(output)
    return [(s, remove_citations(s).strip(), [int(r[1:]) - 1 for r in _ALCE_REF.findall(s)]) for s in sents]


def alce_exact_citation_job(
    output: str,
    documents: Sequence[Document | dict],
    *,
    at_most_citations: int | None = 3,
    qampari: bool = False,
    question: str = "",
) -> Job:
    """``compute_autoais`` of ALCE's eval.py on one output, quirks included (for :func:`run_jobs`).

    ``output`` is taken as it is (pass it through :func:`alce_exact_output` first, as ALCE's main
    does). Per sentence: no ``[n`` → 0; any id past the last document → 0 (its citations are not
    counted); else the first ``at_most_citations`` ids are counted, their documents joined with
    ``"\n"`` and the sentence is supported when that premise entails the hypothesis. Precision, for
    a supported sentence with several ids: an id is correct when its document alone entails the
    hypothesis, or when the ids left after ``list.remove(id)`` (the first occurrence only) no longer
    do. A citation-only sentence is scored with an empty hypothesis, as ALCE sends it. An output
    with no sentence (empty) is ``empty`` (ALCE skips the item)."""
    docs = list(documents or [])
    n_docs = len(docs)
    units = alce_exact_units(output, qampari=qampari, question=question)
    if not units:
        return {"recall": 0.0, "precision": 0.0, "f1": 0.0, "n_sentences": 0, "n_citations": 0,
                "correct_citations": 0, "empty": True, "sentences": []}
    fmt = [alce_exact_doc(d) for d in docs]
    counted: list[list[int]] = []
    pairs1: list[Pair] = []
    where1: list[int] = []
    for i, (_, hyp, ref) in enumerate(units):
        # ALCE indexes docs[ref_id] with ref_id >= -1; with no documents at all docs[-1] would raise
        # there, here it is out of range like any other id
        if not ref or any(r >= n_docs for r in ref) or n_docs == 0:
            counted.append([])
            continue
        if at_most_citations is not None:
            ref = ref[:at_most_citations]
        counted.append(ref)
        pairs1.append(("\n".join(fmt[r] for r in ref), hyp))
        where1.append(i)
    got1 = (yield pairs1) if pairs1 else []
    supported = [False] * len(units)
    for i, ok in zip(where1, got1):
        supported[i] = bool(ok)

    multi = [i for i in range(len(units)) if supported[i] and len(counted[i]) > 1]
    pairs2 = [(fmt[r], units[i][1]) for i in multi for r in counted[i]]
    got2 = iter((yield pairs2) if pairs2 else [])
    single = {i: [bool(next(got2)) for _ in counted[i]] for i in multi}
    pairs3: list[Pair] = []
    plan3: list[tuple[int, int]] = []
    for i in multi:
        for k, r in enumerate(counted[i]):
            if not single[i][k]:
                rest = list(counted[i])
                rest.remove(r)
                pairs3.append(("\n".join(fmt[x] for x in rest), units[i][1]))
                plan3.append((i, k))
    got3 = (yield pairs3) if pairs3 else []
    overcite: dict[int, list[int]] = {}
    for (i, k), ok in zip(plan3, got3):
        if ok:
            overcite.setdefault(i, []).append(counted[i][k] + 1)

    correct = 0
    total = sum(len(c) for c in counted)
    per_sentence = []
    for i, (sent, hyp, ref) in enumerate(units):
        if supported[i]:
            correct += len(counted[i]) - len(overcite.get(i, []))
        per_sentence.append({
            "text": hyp, "sentence": sent, "citations": [r + 1 for r in ref], "counted": [r + 1 for r in counted[i]],
            "supported": supported[i], "irrelevant": overcite.get(i, []),
            "out_of_range": bool(ref) and not counted[i],
        })
    n = len(units)
    recall = sum(supported) / n
    precision = correct / total if total else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "recall": recall, "precision": precision, "f1": f1, "n_sentences": n, "n_citations": total,
        "correct_citations": correct, "empty": False, "sentences": per_sentence,
    }


def alce_exact_citation_scores(
    output: str,
    documents: Sequence[Document | dict],
    verifier: Any = "default",
    *,
    at_most_citations: int | None = 3,
    qampari: bool = False,
    question: str = "",
) -> dict:
    """ALCE's citation recall and precision of one output (fractions), as ``compute_autoais`` gives
    them (see :func:`alce_exact_citation_job`). The output is cut and cleaned as ALCE's main does."""
    job = alce_exact_citation_job(alce_exact_output(output), documents, at_most_citations=at_most_citations,
                                  qampari=qampari, question=question)
    return run_jobs(verifier, [job])[0]


def alce_rouge_lsum(output: str, references: Sequence[str]) -> float:
    """ALCE's per-item ROUGE-Lsum F-measure: the text (citations already removed) lower-cased, then
    split by punkt (``'\n'.join(sent_tokenize(text.lower()))``), against the first two references
    (ASQA's two annotations; one reference is used twice), the better of the two."""
    refs = [r if isinstance(r, str) else "" for r in references][:2]
    if not refs:
        return 0.0

    def prep(t: str) -> str:
        return "\n".join(punkt_sentences(t.lower()))

    hyp = prep(output)
    return max(_rouge_scorer().score(prep(r), hyp)["rougeLsum"].fmeasure for r in refs)


def alce_rouge_aggregate(fmeasures: Sequence[float], seed: int = 0) -> float:
    """ALCE's corpus ROUGE-Lsum: the ``mid`` of ``rouge_score``'s ``BootstrapAggregator`` (the
    median of 1,000 bootstrap means), not the mean. ALCE leaves numpy's global generator unseeded, so
    its own figure varies by a few hundredths between runs; here the generator is seeded (and
    restored afterwards), so a file always gets the same value. Fractions in, fraction out."""
    import numpy as np
    from rouge_score import scoring

    if not fmeasures:
        return 0.0
    agg = scoring.BootstrapAggregator()
    for f in fmeasures:
        agg.add_scores({"rougeLsum": scoring.Score(precision=f, recall=f, fmeasure=f)})
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        return float(agg.aggregate()["rougeLsum"].mid.fmeasure)
    finally:
        np.random.set_state(state)
