"""Parse ``[n]``-cited text into sentences with citations.

Handles ``[1][2]``, ``[1, 2]``, ``[1-3]``, ``[Doc 2]``; citations placed after the period (attached to
the preceding sentence unless ``attach_trailing=False``: as in ALCE's eval.py, they count for the
next sentence; ``citegraph eval --alce`` reproduces ALCE's reading exactly with
:func:`citegraph.metrics.alce_exact_units`); out-of-range ids (dropped, with a warning); text without citations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from citegraph.tools.sentences import split_sentences

# one bracket group: [1], [1, 2], [1-3], [Doc 2], [1][2] are two groups
CITE_GROUP = re.compile(r"\[\s*(?:(?:doc(?:ument)?|source|passage)\s*)?(\d+(?:\s*(?:[-–,;]|and)\s*(?:(?:doc(?:ument)?\s*)?\d+))*)\s*\]", re.I)
_LEADING = re.compile(r"^(?:\s*" + CITE_GROUP.pattern + r")+", re.I)
_TRAILING = re.compile(r"([.!?][\"')]?)((?:[ \t]*" + CITE_GROUP.pattern + r")+)", re.I)
_MAX_RANGE = 20
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


def _ids(group: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*(?:[,;]|and)\s*", group):
        part = re.sub(r"(?i)doc(?:ument)?\s*", "", part).strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if a <= b and b - a <= _MAX_RANGE:
                out.extend(range(a, b + 1))
            else:
                out.extend([a, b])
        elif part.isdigit():
            out.append(int(part))
    return out


def extract_citations(text: str) -> list[int]:
    """All cited ids in order of appearance (duplicates removed)."""
    seen: list[int] = []
    for m in CITE_GROUP.finditer(text):
        for i in _ids(m.group(1)):
            if i not in seen:
                seen.append(i)
    return seen


# "According to Document [1], ..." / "as Documents [2] and [3] say": the bracket is the noun's
# only referent, so removing it alone would leave "According to Document, ...".
_NAMED = re.compile(
    r"\b(?:the\s+)?(doc(?:ument)?s?|passages?|sources?)\s*(" + CITE_GROUP.pattern
    + r"(?:\s*(?:,|and|&|,\s*and)?\s*" + CITE_GROUP.pattern + r")*)", re.I
)


# words after which a named document takes "the" ("according to Document [1]" -> "according to the
# document"); after any other word the noun already has its determiner or modifier ("another passage
# [2]", "Our sources [1][2]", "the recent document [3]") and only the brackets go
_TAKES_THE = frozenset(
    "to in from by of on per with at for as see cf via into about like than unlike under over within and or but "
    "nor that which while whereas since because if when where though although so then also".split())


def _named(m: re.Match) -> str:
    noun = m.group(1).lower()
    plural = noun.endswith("s") or len(extract_citations(m.group(2))) > 1
    kind = "document" if noun.startswith("doc") else noun.rstrip("s")
    named = f"{kind}{'s' if plural else ''}"
    before = m.string[: m.start()].rstrip()
    starts = not before or before[-1] in ".!?\n"
    had_the = m.group(0)[:4].lower() == "the "
    prev = re.findall(r"[A-Za-z]+$", before)
    if not (starts or had_the or (prev and prev[0].lower() in _TAKES_THE)):
        return m.group(1)  # "another passage", "Our sources": the noun as written
    out = f"the {named}"
    return out.capitalize() if starts else out


# a bracketed negative number ("[-1]") is no citation of ours, but ALCE's reader takes it for one
_NEGATIVE_MARK = re.compile(r"\[\s*[-\u2212]\s*\d+\s*\]")


def strip_citations(text: str) -> str:
    """Remove citation groups and tidy the whitespace they leave behind ("Document [2]" -> "the document")."""
    t = _NAMED.sub(_named, text)
    t = CITE_GROUP.sub("", t)
    t = _NEGATIVE_MARK.sub("", t)
    t = re.sub(r"\s+([.,;:!?])", r"\1", t)
    return re.sub(r"\s{2,}", " ", t).strip()


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
