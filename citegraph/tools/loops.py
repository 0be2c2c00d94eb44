"""Decoding loops of small models, cut from a reply before it is parsed.

A greedy 1.5B model without a repeat penalty sometimes loops until max_tokens: a phrase over and over
("Josef Bican Josef Bican ..."), whole sentences again ("A. B. B. B ..."), or the answer started over in
the middle of a sentence. :func:`clean_loops` keeps the first copy and says what it cut in ``notes``;
RAAC's TextAgent, SQuAI's Agent 4 and the standard RAG baseline use it (ALCE's baselines do not: their
outputs are scored as ALCE's code writes them).
"""

from __future__ import annotations

import re

from citegraph.state.marks import strip_citations
from citegraph.tools.models import TRUNCATED
from citegraph.tools.sentences import split_sentences

_ENDED = re.compile(r"[.!?][\"')\]]*$")  # a finished sentence (closing quotes/brackets allowed)
#: a phrase (up to 80 characters, within one sentence) written 4 or more times in a row ("Josef Bican Josef
#: Bican ..."); whole sentences that repeat are :func:`drop_repeats`' job
PHRASE_LOOP = re.compile(r"(?<!\S)([^\s.!?](?:[^\n.!?]{0,78}?[^\s.!?])?)(?:\s+\1){3,}(?!\S)")


def clean_loops(text: str, truncated: bool = False, notes: list[str] | None = None) -> str:
    """:func:`cut_phrase_loops`, then :func:`drop_repeats` (which, for a reply cut at max_tokens, also
    cuts a restart and the unfinished last sentence)."""
    return drop_repeats(cut_phrase_loops(text, notes), truncated, notes)


def cut_phrase_loops(text: str, notes: list[str] | None = None) -> str:
    """A phrase written four or more times in a row is a decoding loop (a 1.5B model without a repeat
    penalty writes "Josef Bican Josef Bican ..." until max_tokens): keep one copy and drop the rest
    of the reply from there, since what follows a loop is more loop."""
    m = PHRASE_LOOP.search(text)
    if not m:
        return text
    if notes is not None:
        notes.append(f"cut a loop repeating {m.group(1)[:40]!r} after {len(text[:m.start()].split())} words")
    return text[: m.start() + len(m.group(1))].rstrip()


def drop_repeats(text: str, truncated: bool = False, notes: list[str] | None = None) -> str:
    """Small models loop ("A. B. B. B. B ..." until max_tokens): keep the first copy of each
    sentence. In a reply cut at max_tokens (``truncated``), also drop the unfinished last sentence;
    a reply that ended by itself keeps its last sentence even without final punctuation, and a
    citation written after the period ("... river. [2]") does not make a sentence unfinished."""
    if truncated:
        text = cut_restart(text, notes)
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return text
    seen: set[str] = set()
    kept: list[str] = []
    for s in sentences:
        key = re.sub(r"\W+", " ", strip_citations(s)).strip().lower()
        if key and key not in seen:
            seen.add(key)
            kept.append(s)
    if notes is not None and len(kept) < len(sentences):
        notes.append(f"dropped {len(sentences) - len(kept)} repeated sentence(s)")
    if truncated and len(kept) > 1 and not _ENDED.search(strip_citations(kept[-1]).rstrip()):
        dropped = kept.pop()
        if notes is not None:
            notes.append(f"dropped the unfinished last sentence of a {TRUNCATED}: {dropped[:80]!r}")
    if len(kept) == len(sentences):
        return text
    return " ".join(kept)


RESTART_WORDS = 8


def cut_restart(text: str, notes: list[str] | None = None) -> str:
    """A looping reply often starts its summary over in the middle of a sentence ("It is the second
    of The last season of X aired ..."): cut at the first place where the opening words of an
    earlier sentence occur again. Applied only to replies cut at max_tokens, where looping is the
    likely cause (a finished reply may legitimately repeat a phrase)."""
    cut = None
    for sent in split_sentences(text):
        words = strip_citations(sent).split()
        if len(words) < RESTART_WORDS:
            continue
        # case-sensitive: a restart copies the capitalised opening ("... of The last season ..."),
        # a sentence that reuses the phrase writes it in lower case ("... constitute the highest ...")
        head = re.compile(r"\W+".join(re.escape(w) for w in words[:RESTART_WORDS]))
        hits = [m.start() for m in head.finditer(text)]
        if len(hits) > 1 and (cut is None or hits[1] < cut):
            cut = hits[1]
    if cut is None:
        return text
    if notes is not None:
        notes.append(f"cut a looping restart after {len(text[:cut].split())} words")
    return text[:cut].rstrip()
