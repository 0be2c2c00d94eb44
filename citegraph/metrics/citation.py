"""Citation quality: ALCE citation recall/precision (our default mode, documented deviations) and
RAAC's sentence-level citation F1; the ALCE text helpers they share with the other metrics. See
:mod:`citegraph.metrics` for the definitions."""

from __future__ import annotations

import re
import string
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from citegraph.metrics.jobs import Job, Pair, run_jobs
from citegraph.state.answer import AttributedAnswer, Document
from citegraph.state.marks import extract_citations, strip_citations
from citegraph.tools.citations import parse_cited_text


# --------------------------------------------------------------------------- ALCE text helpers
def remove_citations(sent: str) -> str:
    """ALCE's ``remove_citations``: drops ``[n`` markers and ``]``."""
    return re.sub(r"\[\d+", "", re.sub(r" \[\d+", "", sent)).replace(" |", "").replace("]", "")


def normalize_answer(s: str) -> str:
    """ALCE/SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def prepare_output(text: str, *, cut_newline: bool = False) -> str:
    """The output as ALCE reads it: stripped, ``<|im_end|>`` removed, optionally cut at the
    first newline (ALCE's behaviour)."""
    text = (text or "").strip()
    if cut_newline:
        text = text.split("\n")[0]
    return text.replace("<|im_end|>", "")


def alce_doc(d: Document | dict) -> str:
    """ALCE's ``_format_document``: ``"Title: t\\ntext"`` (always, even with an empty title)."""
    if isinstance(d, dict):
        return "Title: %s\n%s" % (d.get("title", ""), d.get("sent") or d.get("text", ""))
    return "Title: %s\n%s" % (d.title, d.text)


@dataclass
class _Unit:
    text: str  # hypothesis: the sentence without citations
    refs: list[int]  # 1-based document positions as written
    out_of_range: bool = False


def _units_from_text(text: str, n_docs: int, *, attach_trailing: bool, qampari: bool, question: str) -> list[_Unit]:
    units: list[_Unit] = []
    if qampari:  # ALCE: comma-separated list, each item prefixed with the question
        for x in text.rstrip().rstrip(".").rstrip(",").split(","):
            refs = extract_citations(x)
            units.append(_Unit(strip_citations(question + " " + x.strip()).strip(), refs,
                               any(not 1 <= r <= n_docs for r in refs)))
        return units
    parsed = parse_cited_text(text, n_docs=None, attach_trailing=attach_trailing)
    for s in parsed.sentences:
        units.append(_Unit(s.text.strip(), list(s.citations), any(not 1 <= r <= n_docs for r in s.citations)))
    return units


def _units(answer_or_text: AttributedAnswer | str, n_docs: int, *, cut_newline: bool, attach_trailing: bool,
           qampari: bool, question: str) -> list[_Unit]:
    if isinstance(answer_or_text, AttributedAnswer):
        ans = answer_or_text
        question = question or ans.question
        if cut_newline or not attach_trailing or qampari:
            # ALCE-compatible settings act on the text the model wrote
            raw = ans.metadata.get("raw_output")
            if not isinstance(raw, str):
                return _units_from_text(ans.render(), n_docs, attach_trailing=attach_trailing, qampari=qampari,
                                        question=question)
            units = _units_from_text(prepare_output(raw, cut_newline=cut_newline), n_docs,
                                     attach_trailing=attach_trailing, qampari=qampari, question=question)
            shown = ans.metadata.get("shown_documents")
            if isinstance(shown, list) and shown:
                # the model cited a renumbered subset (SUMM/SNIPPET): map back to original positions
                for u in units:
                    u.refs = [int(shown[r - 1]) if 1 <= r <= len(shown) else n_docs + r for r in u.refs]
                    u.out_of_range = any(not 1 <= r <= n_docs for r in u.refs)
            return units
        return [_Unit(s.text.strip(), list(s.citations), any(not 1 <= c <= n_docs for c in s.citations))
                for s in ans.sentences if s.text.strip()]
    text = prepare_output(str(answer_or_text or ""), cut_newline=cut_newline)
    return _units_from_text(text, n_docs, attach_trailing=attach_trailing, qampari=qampari, question=question)


# --------------------------------------------------------------------------- ALCE citation scores
def alce_citation_job(
    answer_or_text: AttributedAnswer | str,
    documents: Sequence[Document | dict] | None = None,
    *,
    cut_newline: bool = False,
    attach_trailing: bool = True,
    at_most_citations: int | None = 3,
    qampari: bool = False,
    question: str = "",
) -> Job:
    """The verification job behind :func:`alce_citation_scores` (for :func:`run_jobs`)."""
    if documents is None and isinstance(answer_or_text, AttributedAnswer):
        documents = answer_or_text.documents
    docs = list(documents or [])
    units = _units(answer_or_text, len(docs), cut_newline=cut_newline, attach_trailing=attach_trailing,
                   qampari=qampari, question=question)
    refs: list[list[int]] = []
    pairs1: list[Pair] = []
    where1: list[int] = []
    total_citations = 0
    for i, u in enumerate(units):
        r = list(u.refs)
        if r and not u.out_of_range:
            if at_most_citations is not None:
                r = r[:at_most_citations]
            total_citations += len(r)
            pairs1.append(("\n".join(alce_doc(docs[c - 1]) for c in r), u.text))
            where1.append(i)
        else:
            r = []  # rejected by format: flag 0, citations not counted
        refs.append(r)
    got1 = (yield pairs1) if pairs1 else []
    supported = [False] * len(units)
    for i, ok in zip(where1, got1):
        supported[i] = bool(ok)

    # precision checks for supported multi-citation sentences: single doc, and the rest jointly
    pairs2: list[Pair] = []
    plan: list[tuple[int, int, int, int]] = []  # (sentence, citation, index of single pair, index of rest pair)
    for i, u in enumerate(units):
        if supported[i] and len(refs[i]) > 1:
            for c in refs[i]:
                rest = [x for x in refs[i] if x != c]
                pairs2.append((alce_doc(docs[c - 1]), u.text))
                pairs2.append(("\n".join(alce_doc(docs[x - 1]) for x in rest), u.text))
                plan.append((i, c, len(pairs2) - 2, len(pairs2) - 1))
    got2 = (yield pairs2) if pairs2 else []

    irrelevant: dict[int, list[int]] = {}
    for i, c, a, b in plan:
        if not got2[a] and got2[b]:
            irrelevant.setdefault(i, []).append(c)
    correct = 0
    per_sentence = []
    for i, u in enumerate(units):
        if supported[i]:
            correct += len(refs[i]) - len(irrelevant.get(i, []))
        per_sentence.append({
            "text": u.text, "citations": list(u.refs), "counted": refs[i], "supported": supported[i],
            "irrelevant": irrelevant.get(i, []), "out_of_range": u.out_of_range,
        })
    n = len(units)
    recall = sum(supported) / n if n else 0.0
    precision = correct / total_citations if total_citations else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "recall": recall, "precision": precision, "f1": f1, "n_sentences": n,
        "n_citations": total_citations, "correct_citations": correct, "empty": n == 0,
        "sentences": per_sentence,
    }


def alce_citation_scores(
    answer_or_text: AttributedAnswer | str,
    documents: Sequence[Document | dict] | None = None,
    verifier: Any = "default",
    *,
    cut_newline: bool = False,
    attach_trailing: bool = True,
    at_most_citations: int | None = 3,
    qampari: bool = False,
    question: str = "",
) -> dict:
    """ALCE citation recall and precision (fractions in [0, 1]) of one answer; see the module doc.

    ``answer_or_text``: an :class:`AttributedAnswer` (its documents are used when ``documents`` is
    None) or ``[n]``-cited text. With ``cut_newline=True`` and ``attach_trailing=False`` the scores
    are ALCE's. Returns ``recall``, ``precision``, ``f1``, counts and a per-sentence breakdown."""
    job = alce_citation_job(answer_or_text, documents, cut_newline=cut_newline, attach_trailing=attach_trailing,
                            at_most_citations=at_most_citations, qampari=qampari, question=question)
    return run_jobs(verifier, [job])[0]


# --------------------------------------------------------------------------- RAAC citation F1
@dataclass
class SentenceCitationScore:
    text: str
    citations: list[int]
    recall: float
    precision: float
    essential: list[int] = field(default_factory=list)


@dataclass
class CitationF1:
    """RAAC's sentence-level citation quality of one answer (fractions in [0, 1])."""

    recall: float
    precision: float
    f1: float
    per_sentence: list[SentenceCitationScore] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _premise(docs: Sequence[Document], ids: Iterable[int]) -> str:
    return "\n".join(docs[c - 1].as_premise() for c in ids)


def raac_citation_job(answer: AttributedAnswer) -> Job:
    """The verification job behind :func:`raac_citation_f1` (for :func:`run_jobs`)."""
    docs = answer.documents
    sents = [s for s in answer.sentences if s.text.strip()]
    cites = [[c for c in s.citations if 1 <= c <= len(docs)] for s in sents]
    pairs1, where1 = [], []
    for i, (s, c) in enumerate(zip(sents, cites)):
        if c:
            pairs1.append((_premise(docs, c), s.text.strip()))
            where1.append(i)
    got1 = (yield pairs1) if pairs1 else []
    r = [0.0] * len(sents)
    for i, ok in zip(where1, got1):
        r[i] = 1.0 if ok else 0.0
    pairs2, plan = [], []
    for i, (s, c) in enumerate(zip(sents, cites)):
        if r[i] and len(c) > 1:
            for x in c:
                pairs2.append((_premise(docs, [y for y in c if y != x]), s.text.strip()))
                plan.append((i, x))
    got2 = (yield pairs2) if pairs2 else []
    breaks: dict[int, list[int]] = {}
    for (i, x), still in zip(plan, got2):
        if not still:  # removing x breaks entailment: x is essential
            breaks.setdefault(i, []).append(x)
    per = []
    for i, (s, c) in enumerate(zip(sents, cites)):
        if r[i]:
            ess = list(c) if len(c) == 1 else breaks.get(i, [])
            p = len(ess) / len(c)
        else:
            ess, p = [], 0.0
        per.append(SentenceCitationScore(text=s.text.strip(), citations=list(c), recall=r[i], precision=p, essential=ess))
    rec = sum(x.recall for x in per) / len(per) if per else 0.0
    prec = sum(x.precision for x in per) / len(per) if per else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return CitationF1(recall=rec, precision=prec, f1=f1, per_sentence=per)


def raac_citation_f1(answer: AttributedAnswer, verifier: Any = "default") -> CitationF1:
    """RAAC's sentence-level citation recall, precision over essential citations, and F1."""
    return run_jobs(verifier, [raac_citation_job(answer)])[0]
