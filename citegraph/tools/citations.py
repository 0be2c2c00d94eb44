"""Parse ``[n]``-cited text into sentences with citations.

Handles ``[1][2]``, ``[1, 2]``, ``[1-3]``, ``[Doc 2]``; citations placed after the period (attached to
the preceding sentence unless ``attach_trailing=False``: as in ALCE's eval.py, they count for the
next sentence; ``citegraph eval --alce`` reproduces ALCE's reading exactly with
:func:`citegraph.metrics.alce_exact_units`); out-of-range ids (dropped, with a warning); text without citations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from citegraph.state.answer import AttributedAnswer, CitedSentence, Document
from citegraph.state.marks import CITE_GROUP, extract_citations, strip_citations
from citegraph.tools.sentences import split_sentences

_LEADING = re.compile(r"^(?:\s*" + CITE_GROUP.pattern + r")+", re.I)
_TRAILING = re.compile(r"([.!?][\"')]?)((?:[ \t]*" + CITE_GROUP.pattern + r")+)", re.I)
# A list the model flattened onto one line ("... [1] - Next item [2] - ..."): a bullet after a
# citation group or a sentence end starts a new item, so each item keeps its own citations.
_INLINE_BULLET = re.compile(r"((?:" + CITE_GROUP.pattern + r")|[.!?])[ \t]+[-\u2022*][ \t]+(?=\S)", re.I)
# List markers at the start of a sentence ("- ", "* ", "1. ", "2) "); blingfire also returns a
# numbered list's "1." as a sentence of its own, which would count as an uncited sentence.
_MARKER = re.compile(r"^(?:[-\u2022*]|\d{1,2}[.)])(?:\s+|$)")


@dataclass
class ParsedSentence:
    text: str
    citations: list[int] = field(default_factory=list)


@dataclass
class ParsedText:
    sentences: list[ParsedSentence]
    warnings: list[str] = field(default_factory=list)


def parse_cited_text(
    text: str, *, n_docs: int | None = None, attach_trailing: bool = True, splitter: str | None = None
) -> ParsedText:
    """Split ``text`` into sentences and collect each sentence's citations.

    ``n_docs``: ids outside ``1..n_docs`` are dropped and recorded in ``warnings``.
    ``attach_trailing``: a citation group that starts a sentence (i.e. was written after the previous
    sentence's period) belongs to the previous sentence.
    Lists: list markers ("- ", "1. ") are dropped from the sentence text, and a list flattened onto
    one line ("A [1] - B [2]") is split into its items.
    """
    text = _INLINE_BULLET.sub(lambda m: m.group(1) + "\n", text or "")
    # Citations written after the sentence's final punctuation ("... France. [1][2] It ..."):
    # move them inside the sentence before it, or (ALCE's behaviour) start the next sentence with them.
    if attach_trailing:
        text = _TRAILING.sub(lambda m: " " + m.group(2).strip() + m.group(1), text)
    else:
        text = _TRAILING.sub(lambda m: m.group(1) + "\n" + m.group(2).strip() + " ", text)
    raw = split_sentences(text, **({"splitter": splitter} if splitter else {}))
    # Normalise: the splitter may leave "[1]" groups at the start of the next sentence, or as a
    # sentence of their own. Move them to the previous sentence when asked to.
    pieces: list[list] = []  # [text, extra_ids]
    for s in raw:
        lead = _LEADING.match(s)
        if lead and attach_trailing and pieces:
            pieces[-1][1].extend(extract_citations(lead.group(0)))
            s = s[lead.end():].strip()
            if not s:
                continue
        elif lead and not s[lead.end():].strip() and pieces:
            # a citation-only fragment: it can only belong to the sentence before
            pieces[-1][1].extend(extract_citations(s))
            continue
        pieces.append([s, []])

    sentences: list[ParsedSentence] = []
    warnings: list[str] = []
    for s, extra in pieces:
        ids = extract_citations(s) + [i for i in extra]
        body = _MARKER.sub("", strip_citations(s))
        if not re.search(r"\w", body):
            if sentences:
                ids_prev = sentences[-1].citations
                ids_prev.extend(i for i in ids if i not in ids_prev)
            continue
        uniq: list[int] = []
        for i in ids:
            if i not in uniq:
                uniq.append(i)
        if n_docs is not None:
            bad = [i for i in uniq if not 1 <= i <= n_docs]
            if bad:
                warnings.append(f"dropped out-of-range citation(s) {bad} in sentence {len(sentences) + 1} (documents: {n_docs})")
                uniq = [i for i in uniq if 1 <= i <= n_docs]
        sentences.append(ParsedSentence(text=body, citations=uniq))
    return ParsedText(sentences=sentences, warnings=warnings)


def parse_answer(
    text: str,
    *,
    question: str = "",
    documents: list[Document] | None = None,
    attach_trailing: bool = True,
    metadata: dict[str, Any] | None = None,
) -> AttributedAnswer:
    """``[n]``-cited text as the contract: its sentences with their citations (:func:`parse_cited_text`;
    ids outside the documents dropped, with a warning)."""
    documents = list(documents or [])
    parsed = parse_cited_text(text, n_docs=len(documents), attach_trailing=attach_trailing)
    return AttributedAnswer(
        question=question,
        documents=documents,
        sentences=[CitedSentence(text=s.text, citations=s.citations) for s in parsed.sentences],
        warnings=parsed.warnings,
        metadata=dict(metadata or {}),
    )
