"""The ``[n]`` citation marks: what counts as one (``[1]``, ``[1, 2]``, ``[1-3]``, ``[Doc 2]``;
``[1][2]`` is two groups), the ids a group names, and text with its marks removed. The contract's own
rule (a sentence's text holds no marks, ``CitedSentence``) and the parser of cited text
(:mod:`citegraph.tools.citations`) both read marks this way.
"""

from __future__ import annotations

import re

# one bracket group: [1], [1, 2], [1-3], [Doc 2], [1][2] are two groups
CITE_GROUP = re.compile(r"\[\s*(?:(?:doc(?:ument)?|source|passage)\s*)?(\d+(?:\s*(?:[-–,;]|and)\s*(?:(?:doc(?:ument)?\s*)?\d+))*)\s*\]", re.I)
_MAX_RANGE = 20


def cited_ids(group: str) -> list[int]:
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
        for i in cited_ids(m.group(1)):
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
