"""Quality metrics: ALCE citation recall/precision, RAAC sentence-level citation F1, correctness, ROUGE.

The evaluator (``citegraph.eval.scoring``) reports them; RAAC's calibration gate and RERANK consult
the same functions while they run, so they live here, below both (layers import only downward).

Citation quality
----------------
:func:`alce_citation_scores` follows ``compute_autoais(citation=True)`` of princeton-nlp/ALCE
``eval.py``:

* a sentence's citations (at most ``at_most_citations``, default 3, ALCE's ``--at_most_citations``)
  are joined as ``"Title: t\\ntext"`` blocks with ``"\\n"``; recall is 1 when that premise entails
  the sentence (citations removed); a sentence without citations, or citing a document outside
  the list, scores 0 (and its citations are not counted for precision);
* precision: a supported sentence with one citation counts 1 correct citation; in a supported
  sentence with several, a citation is *irrelevant* when it alone does not entail the sentence and
  the remaining citations still do; every other citation counts as correct;
* per answer, recall = supported sentences / sentences, precision = correct citations / counted
  citations (0 when none). An empty output has no sentences; ALCE skips such items when averaging
  (``empty: True`` in the result lets the caller do the same).

This is the default mode, with our documented deviations from ALCE (docs/evaluate.md: a
citation after the period belongs to the sentence before it (``attach_trailing``), the whole output
is scored (``cut_newline=False``), our sentence splitter, ``[1, 2]``-style groups, de-duplicated
ids, list markers dropped, fragments merged, ``Document [n]`` rewritten in the hypothesis).
``--alce`` does not use it: :func:`alce_exact_citation_job` is ALCE's ``compute_autoais`` item by
item, quirks included (punkt sentences, ``[n`` regex, ``[0]`` as the last document, duplicates
counted, ``sent`` before ``text``, hypotheses as written), and :func:`alce_rouge_lsum` /
:func:`alce_rouge_aggregate` its ROUGE-Lsum (punkt on lower-cased text, bootstrap median).

:func:`raac_citation_f1` is RAAC's sentence-level citation F1 (Chen et al., "A Framework of
Reflective Agents with Adaptive Collaboration for Attributed Summary Generation"): r_i = 1 when the
concatenated citations of sentence i entail it; p_i = essential citations / citations when r_i = 1
(a citation is essential when the others alone no longer entail the sentence; a single supporting
citation is essential), else 0; recall/precision are the means over sentences, F1 their harmonic mean.

All verifier calls of one answer are batched: one ``entails_many`` call for the joint premises,
one more for the precision checks. :func:`run_jobs` batches the same rounds across many answers.

Correctness (ALCE): :func:`str_em` (ASQA), :func:`qampari_scores`, :func:`claims_recall` (ELI5,
verifier with the citation-free output as premise) and :func:`rouge_lsum` (``rouge_score``,
stemmed, one sentence per line split on the original-case text, then lower-cased; best over the
references).
"""

from __future__ import annotations

import re
import string
from dataclasses import asdict, dataclass, field
from typing import Any, Generator, Iterable, Sequence

from citegraph.state.answer import AttributedAnswer, Document

Pair = tuple[str, str]
Job = Generator[list[Pair], list[bool], Any]


# --------------------------------------------------------------------------- verifier plumbing
def resolve_verifier(verifier: Any):
    """A verifier object from a spec string (``get_verifier``) or the object itself."""
    if verifier is None or isinstance(verifier, str):
        from citegraph.errors import InputError
        from citegraph.tools.verifier import get_verifier

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
    from citegraph.tools.citations import extract_citations, parse_cited_text, strip_citations

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
    from citegraph.tools.sentences import punkt_sentences

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


# --------------------------------------------------------------------------- correctness
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
    from citegraph.tools.sentences import split_sentences

    refs = [r for r in references if isinstance(r, str) and r.strip()]
    if not refs:
        return 0.0

    def prep(t: str) -> str:
        return "\n".join(split_sentences(t, **({"splitter": splitter} if splitter else {}))).lower()

    hyp = prep(remove_citations(output))
    return max(_rouge_scorer().score(prep(r), hyp)["rougeLsum"].fmeasure for r in refs)


def alce_rouge_lsum(output: str, references: Sequence[str]) -> float:
    """ALCE's per-item ROUGE-Lsum F-measure: the text (citations already removed) lower-cased, then
    split by punkt (``'\n'.join(sent_tokenize(text.lower()))``), against the first two references
    (ASQA's two annotations; one reference is used twice), the better of the two."""
    from citegraph.tools.sentences import punkt_sentences

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


__all__ = [
    "CitationF1", "SentenceCitationScore", "alce_citation_job", "alce_citation_scores", "alce_exact_citation_job",
    "alce_exact_citation_scores", "alce_exact_doc", "alce_exact_output", "alce_exact_units", "alce_rouge_aggregate",
    "alce_rouge_lsum", "claims_job",
    "claims_recall", "exact_presence", "judge", "normalize_answer", "prepare_output", "qampari_scores",
    "raac_citation_f1", "raac_citation_job", "remove_citations", "resolve_verifier", "rouge_lsum",
    "run_jobs", "str_em",
]
