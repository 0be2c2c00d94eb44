"""Structural checks a cross-encoder misses: a claim that negates, flips, renumbers or swaps the roles of
what its premise says.

The bundled cross-encoder scores "The drug did not ease symptoms" and "YouTube acquired Google" as
supported by premises saying the opposite (docs/verifier.md). :func:`find_conflicts` looks for six
kinds of conflict between a claim and the premise sentence it aligns with, by rules over words (no
tagger or parser ships here):

- ``negation``: the claim negates words the premise asserts, or asserts words the premise only negates
  (a negation is also "declined to" / "refused to" before a verb, and "ruled out"; "not yet signed"
  negates "signed"), or says goes on what the premise says stopped ("still uses" / "stopped using");
- ``antonym``: the claim has a word whose opposite (rose/fell, approved/rejected, effective/ineffective,
  a prefix's: affected/unaffected) stands in the aligned premise sentence instead;
- ``number``: a number, month or year of the claim is nowhere in the premise, and does not follow from
  the premise's numbers by one plain step (a difference, a total, a share as a percentage, a stated
  multiple, a span of years, minutes between two clock times, what "the remaining" leaves; most only where
  the claim's words announce them; :func:`_derived`, :func:`_arithmetic`);
- ``name``: a capitalised name of the claim is nowhere in the premise;
- ``role``: two names or common nouns on either side of a shared verb or comparative trade sides (A
  acquired B / B acquired A), with the passive voice taken into account; or a relation, two values or two
  opposites turned round between two names ("A is the older sister of B" where B is A's);
- ``swap``: the claim copies its premise sentence but for one word, name or number, which it takes from
  elsewhere in the premise ("Table captions ... below the figure" from "Figure captions ... below the
  figure"), or puts a name of the premise in another name's slot, or says of its subject what the premise
  says of another.

:class:`CheckedVerifier` (spec ``<base spec>+checks``) caps the base verifier's score at ``cap`` for a
pair with a conflict, so the sentence is not called supported. Each rule fires only when the claim and
the premise otherwise talk about the same thing; how often each fires on supported and unsupported
pairs is measured by ``benchmarks/bench_verifier.py --verifier default+checks``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Sequence

from citegraph.tools.sentences import split_sentences
from citegraph.tools.verifier.base import Pair, Verifier

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]|\d+(?:[.,]\d+)*|[.,;:!?()]")
# a number standing alone: not the 19 of COVID-19, the 2 of CO2, the 3 of Q3 nor a decade (1990s)
_NUMBER = re.compile(r"(?<![A-Za-z]-)(?<![\w.])(?<!\d,)(\d+(?:[.,]\d+)*)(?![\d,.]*\d)(?!'?s\b)(?![A-Za-z]|-[A-Za-z]*\d)")
_CLAUSE_END = {".", ",", ";", ":", "!", "?", "(", ")", "but", "although", "though", "while", "whereas",
               "however", "yet", "because", "which", "who", "whom", "whose", "where", "when"}

STOP = set("""a an the and or of to in on at by for with from as is are was were be been being has have had do does
did this that these those it its he she they them his her their there here which who whom whose what when where
why how than then so such into onto over under about after before during also only just very more most less
least much many some any each every other another can could will would shall should may might must i we you our
your my me us him one two all both either own same s up out off down again further once per via upon within
between through against among while if but because although though whether not no never""".split())

_NEG = {"not", "no", "never", "n't", "without", "none", "nobody", "nothing", "neither", "nor", "cannot",
        "lack", "lacks", "lacked", "lacking", "unable", "fail", "fails", "failed", "absent"}
# verbs that negate what follows "to" ("declined to fund the pool"); "ruled out" is read the same way
_REFUSAL = {"declined", "declines", "decline", "declining", "refused", "refuses", "refuse", "refusing"}
# words between a negation and what it negates ("not yet signed", "not even tested")
_NEG_MODIFIERS = {"yet", "even", "necessarily", "always", "entirely", "fully", "quite"}
_TIME_CLAUSE = {"after", "before", "until", "till", "since", "during"}  # a negation's scope ends where one of these opens
_ASIDES = {"however", "though", "therefore", "moreover", "furthermore", "nevertheless", "indeed", "apparently",
           "reportedly", "surprisingly", "unfortunately", "initially", "originally"}
_NEG_PHRASES_SKIP = {("not", "only"), ("not", "just"), ("not", "merely"), ("not", "simply"), ("no", "less"), ("not", "less"), ("no", "doubt"),
                     ("nothing", "but"), ("or", "not")}

# words that carry a negative meaning without a negation: a claim with one may restate a premise's "not"
_NEGATIVE_MEANING = {"avoid", "avoided", "avoids", "excluding", "except", "yet", "despite", "prevent",
                     "prevented", "refuse", "refused", "deny", "denied", "reject", "rejected", "absent", "free",
                     "lack", "lacked", "missing", "instead", "rather", "unlike", "neither", "nor", "only", "stop",
                     "stopped", "ended", "halted", "declined", "failed", "unable", "ruled", "barred", "banned",
                     "prohibited", "forbidden", "excluded", "blocked"}

# verbs of ending or removing: a claim's negation may restate one ("no longer offers" from "scrapped")
_REMOVAL = {"scrap", "remov", "abolish", "cancel", "elimin", "withdraw", "withdrew", "discontinu", "ceas", "abandon",
            "quit", "drop", "halt", "stop", "retir", "axe", "ditch", "dismantl", "shut", "ended", "phased",
            "postpon", "delay", "defer", "suspend"}

_WORD_NUMBERS = {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
                 "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14",
                 "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19",
                 "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
                 "eighty": "80", "ninety": "90", "dozen": "12"}
_SCALE = {"hundred", "thousand", "million", "billion", "and"}
# a number after these is a bound, not a value the premise must state ("died before 30 BC")
_BOUND = {"before", "after", "over", "under", "than", "least", "most", "above", "below", "within", "beyond",
          "exceeding", "nearly", "almost"}
_BOUND_BEFORE = re.compile(r"\b(?:" + "|".join(sorted(_BOUND)) + r")\W{0,2}$", re.I)
_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"}

# opposite words (each maps both ways); inflected forms share a stem, so one form per pair suffices
_ANTONYMS = [tuple(pair.split("/")) for pair in """
increase/decrease increase/reduce rise/fall rose/fell raise/lower grow/shrink gain/lose win/lose
won/lost approve/reject accept/reject accept/refuse allow/ban allow/forbid allow/prohibit permit/ban
succeed/fail open/close begin/end start/end start/stop higher/lower larger/smaller bigger/smaller
more/fewer more/less greater/smaller greater/less longer/shorter faster/slower older/younger
earlier/later before/after first/last support/oppose favour/against favor/against improve/worsen
positive/negative true/false alive/dead male/female north/south east/west northern/southern
eastern/western buy/sell bought/sold include/exclude confirm/deny always/never common/rare
strong/weak best/worst maximum/minimum highest/lowest largest/smallest most/least above/below
inside/outside import/export expand/contract strengthen/weaken cheaper/expensive high/low rich/poor
success/failure victory/defeat safe/dangerous easy/difficult easier/harder heavier/lighter hot/cold
warm/cool increasing/declining increase/decline rise/decline rise/drop join/leave joined/left
arrive/depart hire/fire hire/dismiss love/hate like/dislike agree/disagree present/absent
public/private legal/illegal possible/impossible likely/unlikely effective/ineffective able/unable
known/unknown married/unmarried healthy/unhealthy safe/unsafe stable/unstable fair/unfair
regular/irregular relevant/irrelevant responsible/irresponsible mature/immature mortal/immortal
visible/invisible active/inactive accurate/inaccurate complete/incomplete correct/incorrect
sufficient/insufficient significant/insignificant approve/disapprove agreement/disagreement
advantage/disadvantage honest/dishonest ahead/behind lend/borrow lent/borrowed precede/follow
accept/decline retain/discard keep/discard
""".split()]

# opposites that say the same thing with their two sides traded: "A sold B to C" = "C bought B from A",
# "A finished ahead of B" = "B finished behind A", "A after B" = "B before A"
_CONVERSES = [tuple(pair.split("/")) for pair in """
buy/sell bought/sold win/lose won/lost before/after earlier/later ahead/behind lend/borrow lent/borrowed
precede/follow import/export higher/lower larger/smaller bigger/smaller greater/smaller greater/less
more/fewer more/less longer/shorter faster/slower older/younger above/below heavier/lighter
""".split()]

_BE = {"is", "are", "was", "were", "be", "been", "being", "got", "gets", "get"}
_IRREGULAR_PARTICIPLES = set("""beaten bought sold won hit led met left taken given told taught caught brought built
chosen driven eaten fed fought found kept paid seen sent struck overtaken written made done known held run born
shown grown drawn thrown sung begun spoken stolen broken""".split())


# common irregular verbs: their past forms share the stem of the base form
_IRREGULAR_LEMMA = {f: base for base, forms in {
    "go": "went gone goes", "be": "was were been is are am", "have": "had has", "do": "did done does",
    "make": "made", "take": "took taken", "give": "gave given", "get": "got gotten", "come": "came",
    "see": "saw seen", "know": "knew known", "find": "found", "think": "thought", "tell": "told", "say": "said",
    "become": "became", "leave": "left", "feel": "felt", "bring": "brought", "begin": "began begun",
    "keep": "kept", "hold": "held", "write": "wrote written", "stand": "stood", "hear": "heard", "let": "lets",
    "mean": "meant", "meet": "met", "run": "ran", "pay": "paid", "sit": "sat", "speak": "spoke spoken",
    "lead": "led", "grow": "grew grown", "lose": "lost", "fall": "fell fallen", "send": "sent",
    "build": "built", "win": "won", "rise": "rose risen", "buy": "bought", "sell": "sold", "teach": "taught",
    "catch": "caught", "fight": "fought", "choose": "chose chosen", "drive": "drove driven",
    "break": "broke broken", "eat": "ate eaten", "beat": "beaten", "steal": "stole stolen", "bite": "bit bitten",
    "draw": "drew drawn", "throw": "threw thrown", "sing": "sang sung", "swim": "swam swum",
    "shake": "shook shaken", "forbid": "forbade forbidden", "spend": "spent", "lend": "lent", "dig": "dug",
    "freeze": "froze frozen", "hide": "hid hidden", "ride": "rode ridden", "wear": "wore worn",
    "tear": "tore torn", "strike": "struck", "sink": "sank sunk", "shrink": "shrank shrunk",
    "flee": "fled", "seek": "sought", "lay": "laid", "fly": "flew flown", "forget": "forgot forgotten",
}.items() for f in forms.split()}


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    return _stemmer().stem(_IRREGULAR_LEMMA.get(w, w))


@lru_cache(maxsize=1)
def _antonym_stems() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, b in _ANTONYMS:
        sa, sb = stem(a), stem(b)
        if sa != sb:
            out.setdefault(sa, set()).add(sb)
            out.setdefault(sb, set()).add(sa)
    return out


@lru_cache(maxsize=1)
def _converse_stems() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, b in _CONVERSES:
        out.setdefault(stem(a), set()).add(stem(b))
        out.setdefault(stem(b), set()).add(stem(a))
    return out


@dataclass(frozen=True)
class Finding:
    """One conflict between a claim and its premise: its kind and the words that show it."""

    kind: str  # negation, antonym, number, name, role, swap
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass
class _Text:
    tokens: list[str]  # as written
    lower: list[str]
    stems: list[str]

    @classmethod
    def of(cls, text: str) -> "_Text":
        toks = []
        for t in _TOKEN.findall(text.replace("’", "'")):
            if t.lower().endswith("n't") and len(t) > 3:  # didn't -> did n't
                toks += [t[:-3], "n't"]
            else:
                toks.append(t)
        low = [t.lower() for t in toks]
        return cls(toks, low, [stem(t) if t[0].isalpha() else t for t in low])

    def content(self) -> set[str]:
        return {s for s, w in zip(self.stems, self.lower) if _is_content(w)}


def content_stems(text: str) -> set[str]:
    """The stems of a text's content words (not function words, negations or punctuation)."""
    return _text(text).content()


def _is_content(w: str) -> bool:
    return (w[0].isalnum()) and w not in STOP and w not in _NEG and w != "n't"


def _sentences(text: str) -> list[str]:
    return [s for s in split_sentences(text) if s.strip()] or [text]


def _neg_scopes(t: _Text, claim: bool = False) -> list[tuple[int, int, set[str], str]]:
    """(cue position, scope end, content stems of the scope, its first content stem) for each negation
    cue: the scope is the words after the cue up to the clause's end or 8 words. Hedges ("might or might
    not", "whether or not") and "not only" are not negations."""
    out = []
    n = len(t.lower)
    for i, w in enumerate(t.lower):
        nxt = t.lower[i + 1] if i + 1 < n else ""
        after = t.lower[i + 2] if i + 2 < n else ""
        if w not in _NEG and not ((w in _REFUSAL and nxt == "to" and after.isalpha() and after not in STOP)
                                  or (w in ("ruled", "rules", "rule") and nxt == "out")):
            continue
        if (w, nxt) in _NEG_PHRASES_SKIP or "or" in t.lower[max(0, i - 3): i]:
            continue
        if w == "no" and nxt in ("more", "fewer", "less", "later", "earlier") and t.lower[i + 2: i + 3] == ["than"] \
                and t.lower[i + 3: i + 4] and (t.lower[i + 3][0].isdigit() or t.lower[i + 3] in _WORD_NUMBERS):
            continue  # "no more than two hours": a bound, not a negation
        scope: set[str] = set()
        head = ""
        end = i + 1
        limit = min(n, i + 9)
        while end < limit:
            if t.lower[end] == "," and end + 2 < n and t.lower[end + 1] in _ASIDES and t.lower[end + 2] == ",":
                end, limit = end + 3, min(n, limit + 3)  # "does not, however, add": the aside is not the scope's end
                continue
            if end == i + 1 and t.lower[end] in _NEG_MODIFIERS:  # "not yet signed": the head is "signed"
                end += 1
                continue
            if t.lower[end] in _CLAUSE_END or (end > i + 1 and t.lower[end] in _TIME_CLAUSE):
                break  # "did not thaw until 4 March": the date is not negated
            if end == i + 1 and t.lower[end] in ("to", "out") and w not in _NEG:
                end += 1  # "declined to fund", "ruled out a retrial": the scope starts after the particle
                continue
            if _is_content(t.lower[end]):
                scope.add(t.stems[end])
                if not (claim and end == i + 1 and t.lower[end] == "longer"):  # "no longer effective": "effective"
                    head = head or t.stems[end]
            end += 1
        out.append((i, end, scope, head))
    return out


def _negated_words(scopes) -> set[str]:
    """The content stems inside any of the negation ``scopes`` (:func:`_neg_scopes`)."""
    return set().union(*[sc for _, _, sc, _ in scopes]) if scopes else set()


def _outside(t: _Text, scopes) -> set[str]:
    """Content stems of ``t`` that stand outside every negation scope."""
    inside = {k for i, end, _, _ in scopes for k in range(i, end)}
    return {s for k, s in enumerate(t.stems) if k not in inside and _is_content(t.lower[k])}


def _numbers(text: str, t: _Text, claim: bool = False) -> set[str]:
    """Numbers (digits without separators, cardinal words), and months written as names ("May" only
    beside a number). In a claim, bounds ("before 1990", "more than 20") and a list's "9)" are left out."""
    out = set()
    for m in _NUMBER.finditer(text):
        if claim and (_BOUND_BEFORE.search(text[max(0, m.start() - 12): m.start()])
                      or (not text[: m.start()].strip() and text[m.end(): m.end() + 1] in (")", "."))):
            continue
        v = m.group(1).replace(",", "")
        out.add(v[:-2] if v.endswith(".0") else v)
    n = len(t.tokens)
    for i, (tok, low) in enumerate(zip(t.tokens, t.lower)):
        prev = t.lower[i - 1] if i else ""
        nxt = t.lower[i + 1] if i + 1 < n else ""
        if low in _WORD_NUMBERS and nxt not in _SCALE and prev not in _SCALE - {"and"} and \
                not (prev == "and" and i > 1 and t.lower[i - 2] in _SCALE) and not (claim and prev in _BOUND):
            out.add(_WORD_NUMBERS[low])
        elif low in _MONTHS and tok[0].isupper() and (low != "may" or prev[:1].isdigit() or nxt[:1].isdigit()):
            out.add(low)
    return out


def _names(claim: _Text) -> list[str]:
    """Capitalised words of the claim that are not its first word nor a function word."""
    out = []
    for i, (tok, low) in enumerate(zip(claim.tokens, claim.lower)):
        if i == 0 or not tok[0].isupper() or not tok[0].isalpha() or low in STOP or len(tok) < 2:
            continue
        if claim.lower[i - 1] in (".", ":", "!", "?", "("):
            continue
        if low in _MONTHS or low in _WORD_NUMBERS or tok.isupper() and len(tok) > 4:  # SHOUTED words
            continue
        out.append(tok)
    return out


def _passive_at(t: _Text, i: int) -> bool:
    """The verb at ``i`` is a passive participle: a form of "be" just before it, or "by" after it in the
    same clause (within 8 words; not "by" + a gerund)."""
    w = t.lower[i]
    if not (w.endswith(("ed", "en")) or w in _IRREGULAR_PARTICIPLES):
        return False
    if any(x in _BE for x in t.lower[max(0, i - 2): i]):
        return True
    if i and t.lower[i - 1] in ("and", "or"):  # "was begun by X and completed in 80 AD"
        for k in range(i - 2, max(-1, i - 10), -1):
            if t.lower[k] in _CLAUSE_END:
                break
            if t.lower[k] in _BE:
                return True
    for k in range(i + 1, min(len(t.lower), i + 9)):
        nxt = t.lower[k]
        if nxt == "by":
            return not (k + 1 < len(t.lower) and t.lower[k + 1].endswith("ing"))
        if nxt in _CLAUSE_END or nxt in _BE:
            return False
    return False


def _named(t: _Text, k: int, other: _Text | None = None) -> bool:
    """The word at ``k`` is a name: capitalised, not a month, and not only as the text's first word (a
    first word counts when ``other`` writes it capitalised as well, and neither in lower case)."""
    tok = t.tokens[k]
    if not tok[0].isalpha() or tok.lower() in _MONTHS or not tok[0].isupper():
        return False
    if k > 0 or tok.isupper() or t.tokens.count(tok) > 1:
        return True
    # a first word: a name if the other text writes it capitalised too and neither text writes it in lower case
    low = tok.lower()
    return other is not None and tok in other.tokens and low not in t.tokens and low not in other.tokens


def _first(stems: list[str], s: str) -> int:
    return stems.index(s)


@lru_cache(maxsize=2048)
def _text(text: str) -> _Text:
    """A text tokenised once: the stage checks one document against many sentences."""
    return _Text.of(text)


@lru_cache(maxsize=512)
def _sentence_texts(premise: str) -> tuple[_Text, ...]:
    return tuple(_text(s) for s in _sentences(premise))


class _Pair:
    def __init__(self, premise: str, claim: str):
        self.premise_text = premise
        self.claim_text = claim
        self.claim = _text(claim)
        self.premise = _text(premise)
        self.sents = _sentence_texts(premise)
        self.claim_content = self.claim.content()
        self.premise_content = self.premise.content()
        overlaps = [len(self.claim_content & s.content()) for s in self.sents]
        words = set(self.claim.lower)
        # the sentence sharing the most content words with the claim; of equals, the one sharing the most words
        tie = [len(words & set(s.lower)) for s in self.sents]
        self.best = self.sents[max(range(len(self.sents)), key=lambda k: (overlaps[k], tie[k]))] if self.sents else self.premise
        self.best_overlap = max(overlaps) if overlaps else 0

    def coverage(self) -> float:
        """Share of the claim's content words found anywhere in the premise."""
        c = self.claim_content
        return len(c & self.premise_content) / len(c) if c else 0.0

    def aligned(self) -> bool:
        """The claim and its best premise sentence talk about the same thing."""
        c = self.claim_content
        return bool(c) and self.best_overlap >= max(2, 0.5 * len(c))


def _best_sentence(p: _Pair, stems: set[str]) -> tuple[_Text | None, int]:
    """The premise sentence that shares the most of ``stems`` (the first of equals), and how many it shares."""
    overlaps = [len(stems & t.content()) for t in p.sents]
    if not overlaps:
        return None, 0
    j = max(range(len(p.sents)), key=lambda m: overlaps[m])
    return p.sents[j], overlaps[j]


def _negative_meaning(t: _Text, negated: set[str] = frozenset()) -> bool:
    """``t`` has a word that says "not" without a negation ("refused", "ruled out", "yet to"), other than a
    word the premise itself negates (``negated``: "was banned" against "was not banned" restates nothing)."""
    return any(w in _NEGATIVE_MEANING and (w != "ruled" or t.lower[k + 1: k + 2] == ["out"]) and t.stems[k] not in negated
               for k, w in enumerate(t.lower))


_STOPPED = {stem(w) for w in "stop stopped stops ceased ceases discontinued ended halted abandoned quit dropped "
                             "scrapped closed".split()}
_GOES_ON = {stem(w) for w in "still continue continues continued remain remains remained".split()}


def _cues(t: _Text) -> list[tuple[str, set[str]]]:
    """("stop" or "go on", the content stems within four words of the cue) for each cue of ``t`` that says
    something stopped ("stopped using", "was discontinued", "no longer", "shut down") or goes on ("still",
    "continues to", "remains in operation")."""
    out = []
    for k, (w, s) in enumerate(zip(t.lower, t.stems)):
        kind = None
        if s in _STOPPED or (w == "no" and t.lower[k + 1: k + 2] == ["longer"]) or (w == "shut" and "down" in t.lower[k + 1: k + 4]):
            kind = "stop"
        elif s in _GOES_ON:
            kind = "go on"
        if kind:
            near = {t.stems[m] for m in range(max(0, k - 4), min(len(t.tokens), k + 5))
                    if m != k and _is_content(t.lower[m]) and t.stems[m] not in _STOPPED | _GOES_ON | {"longer", "down"}}
            out.append((kind, near))
    return out


def _continuation(p: _Pair, sents: list[_Text]) -> Finding | None:
    """The claim says a thing goes on that the premise says stopped, or the other way round: "Varga still uses
    chrome mordants" where it "stopped using chrome mordants"; "has shut down its bleaching line" where "the
    bleaching line remains in operation". The two cues share two content words around them, in a sentence
    the claim aligns with."""
    mine = _cues(p.claim)
    if not mine:
        return None
    for t in sents:
        for kind, near in _cues(t):
            for kind2, near2 in mine:
                shared = near & near2 & p.claim_content
                if kind != kind2 and len(shared) >= 2:
                    return Finding("negation", f"the claim says {_show(p.claim, shared)} "
                                               f"{'goes on' if kind2 == 'go on' else 'stopped'}; the premise says it "
                                               f"{'stopped' if kind == 'stop' else 'goes on'}")
    return None


def _negation(p: _Pair) -> Finding | None:
    prem_scopes = _neg_scopes(p.premise)
    prem_negated = _negated_words(prem_scopes)
    prem_positive = _outside(p.premise, prem_scopes)
    claim_scopes = _neg_scopes(p.claim, claim=True)
    best_scopes = _neg_scopes(p.best)
    # the claim negates what the premise asserts: the negated word stands unnegated in the sentence it aligns
    # with, and no sentence of the premise negates it together with the claim's other negated words
    # the sentence the claim aligns with, or another that aligns with it as well (by the same measure) and holds
    # the negated word
    # ("Fishing vessels are no longer exempt" against "Fishing vessels remain exempt", a shorter sentence than
    # the one about the port that shares as many words)
    c = p.claim_content
    others = [t for t in p.sents if t is not p.best and len(c & t.content()) >= max(2, 0.5 * len(c))]
    for i, _, scope, head in claim_scopes:
        if p.claim.lower[i] == "without":  # "without compromising quality": seldom the claim's point
            continue
        rest = {s for s in scope - {head} if not s[:1].isdigit()}  # "no hotels in 2023": the year is not negated
        if not head or any(head in sc and (not rest or rest & sc) for _, _, sc, _ in prem_scopes):
            continue
        for t in ([p.best] if p.aligned() else []) + others:
            t_scopes = best_scopes if t is p.best else _neg_scopes(t)
            t_negated = _negated_words(t_scopes)
            if head not in _outside(t, t_scopes) or head in t_negated:
                continue
            if any((s in _REMOVAL or w in _REMOVAL) and s not in p.claim_content  # "no longer find X" from "is scrapping X"
                   for s, w in zip(t.stems, t.lower)):
                continue
            return Finding("negation", f"the claim says {p.claim.tokens[i]!r} of {_show(p.claim, {head})}, "
                                       "the premise does not")
    found = _continuation(p, ([p.best] if p.aligned() else []) + others)
    if found:
        return found
    if claim_scopes or len(p.claim.tokens) > 40:
        return None
    # the claim asserts what the premise only negates: the negated word of the sentence it aligns with ...
    if p.aligned() and not _negative_meaning(p.claim, prem_negated):
        for i, _, _, head in best_scopes:
            # the word right after the cue ("was not broken", "does not add"), not a name ("no Trucks")
            k = next((k for k in range(i + 1, min(i + 4, len(p.best.stems))) if p.best.stems[k] == head), None)
            if k is None or p.best.tokens[k][0].isupper():
                continue
            if head in p.claim_content and head not in prem_positive:
                return Finding("negation", f"the premise negates {_show(p.claim, {head})}, the claim asserts it")
    # ... or a negated verb of the premise together with a word the premise says only under that negation
    # ("did not protect infants" -> "protected infants"), or two such words
    if p.coverage() >= 0.7 and not _negative_meaning(p.claim, prem_negated):
        for _, _, sc, head in prem_scopes:
            only = (sc & p.claim_content) - prem_positive - {head}
            if head in p.claim_content and only and not p.premise.tokens[p.premise.stems.index(head)][0].isupper():
                return Finding("negation", f"the premise negates {_show(p.claim, only | {head})}, the claim asserts it")
    if p.coverage() >= 0.7 and not _negative_meaning(p.claim, prem_negated):
        only_negated = {s for s in p.claim_content if s in prem_negated and s not in prem_positive}
        if len(only_negated) >= 2:
            return Finding("negation", f"the premise negates {_show(p.claim, only_negated)}, the claim asserts it")
    return None


_NEG_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non")
# the forms a word takes when a prefix negates it: adjectives and participles ("unaffected", "inconsistent",
# "unnecessary"), not "inform" or "discover"
_NEGATABLE = re.compile(r"(?:ed|able|ible|al|ful|ive|ent|ant|ous|ly|ic|ar|ary|ate|ure|ing|ted)$")


def _hedged_at(t: _Text, k: int) -> bool:
    """The word at ``k`` follows "less", "than" or the like ("less predictable" for "more unpredictable")."""
    return k > 0 and t.lower[k - 1] in {"less", "than", "least", "hardly", "barely", "more", "most"}


def _prefix_negated(p: _Pair) -> Finding | None:
    """A word of the claim is a word of the aligned sentence negated by a prefix ("unaffected" where the
    sentence has "affected", "inconsistent" for "consistent"), or the other way round, the sentence not
    negating that word itself."""
    if not p.aligned():
        return None
    best = {w: k for k, w in enumerate(p.best.lower)}
    claim = {w: k for k, w in enumerate(p.claim.lower)}
    negated = _negated_words(_neg_scopes(p.best))
    claim_negated = _negated_words(_neg_scopes(p.claim, claim=True))
    for mine, theirs, mine_neg, theirs_neg, text in ((claim, best, claim_negated, negated, p.claim),
                                                     (best, claim, negated, claim_negated, p.best)):
        for w, k in mine.items():
            if w in theirs or not w.isalpha():
                continue
            for pre in _NEG_PREFIXES:
                base = w[len(pre):]
                if w.startswith(pre) and len(base) >= 5 and _NEGATABLE.search(base) and base in theirs \
                        and base not in mine and text.stems[k] not in mine_neg and stem(base) not in theirs_neg \
                        and not _hedged_at(p.claim, claim[w if text is p.claim else base]) \
                        and not (text is p.best and "than" in claim and "than" in best):  # a comparison's other side
                    # ("beds invaded by the limpet had less settlement than beds free of it" for "... than uninvaded beds")
                    shown = p.claim.tokens[claim[w if text is p.claim else base]]
                    other = p.best.tokens[best[base if text is p.claim else w]]
                    return Finding("antonym", f"the claim has {shown!r} where the premise has {other!r}")
    return None


def _antonym(p: _Pair) -> Finding | None:
    if not p.aligned():
        return None
    ants = _antonym_stems()
    best = set(p.best.stems)
    claim_neg = any(w in _NEG for w in p.claim.lower)
    if not claim_neg:
        found = _prefix_negated(p)
        if found:
            return found
    scopes = _neg_scopes(p.best)
    negated = _negated_words(scopes)
    for k, s in enumerate(p.claim.stems):
        if s in ants and s not in best and not claim_neg:
            opposite = (ants[s] & best) - negated  # "had not been discarded" says "kept"
            if opposite and not _comparison_turned(p, s, ants) and not _converse_turned(p, k, opposite):
                return Finding("antonym", f"the claim has {p.claim.tokens[k]!r} where the premise has "
                                          f"{_show(p.best, opposite)}")
    return None


def _clause_sides(t: _Text, k: int, room: int = 8) -> tuple[set[str], set[str]]:
    """The content stems around the word at ``k`` in its sentence: at most ``room`` content words on its
    left and on its right, past commas (an apposition: "Brightway, a logistics company, bought") but not
    past another clause's end. A word that opens the sentence ("Before Quillfeather hired her, Dalton
    worked at Ardent") reads as the clause after its comma and then the word: its left is that clause,
    its right the words up to the comma."""
    n = len(t.lower)
    stops = _CLAUSE_END - {","}

    def walk(m: int, step: int, stop: set[str]) -> tuple[set[str], int]:
        out: set[str] = set()
        while 0 <= m < n and len(out) < room and t.lower[m] not in stop:
            if _is_content(t.lower[m]):
                out.add(t.stems[m])
            m += step
        return out, m

    if k == 0 or t.lower[k - 1] in stops:  # the word opens its sentence or clause
        right, comma = walk(k + 1, 1, _CLAUSE_END)
        if comma < n and t.lower[comma] == ",":
            return walk(comma + 1, 1, stops)[0], right
    return walk(k - 1, -1, stops)[0], walk(k + 1, 1, stops)[0]


def _converse_turned(p: _Pair, k: int, opposite: set[str]) -> bool:
    """The claim's word at ``k`` is the converse of the premise sentence's (``opposite``) and the two sides
    trade places: words of the claim's left side stand only on the premise word's right, and words of its
    right side only on the premise word's left ("Calder Valley Water sold Eastmere Water 12 million litres"
    from "Eastmere Water bought 12 million litres from Calder Valley Water"), which says the same thing."""
    c, b = p.claim, p.best
    theirs = _converse_stems().get(c.stems[k], set()) & opposite
    if not theirs or (c.stems[k] in _NOT_ROLES and _before_noun(c, k)):  # "bought sorted aluminium" is a verb
        return False
    left, right = _clause_sides(c, k)
    for j, s in enumerate(b.stems):
        if s in theirs:
            left_b, right_b = _clause_sides(b, j)
            traded = ((left & right_b) - left_b, (right & left_b) - right_b)
            # a converse of time, place or quantity ("after" for "before", "below" for "above") trades both
            # sides; one between two parties ("bought" for "sold", "lost" for "won") may leave the other unnamed
            # or in a relative clause ("Norah Quill bred Kestrel Bay, which the Fenwick Stud bought" from "...
            # sold to the Fenwick Stud")
            if all(traded) or (any(traded) and c.stems[k] in _PARTIES):
                return True
    return False


def _converse_flips(p: _Pair) -> bool:
    """The claim says the premise sentence's relation with its converse ("behind" for "ahead", "sold" for
    "bought"), so its two sides are expected to trade places: the role and swap rules leave it to the
    antonym rule."""
    conv = _converse_stems()
    best = set(p.best.stems)
    c = p.claim
    return any(s in conv and s not in best and conv[s] & best and s not in _NOT_ROLES for s in c.stems)


# converses between two parties of one exchange or contest
_PARTIES = {stem(w) for w in "buy buys bought sell sells sold win wins won lose loses lost lend lent borrow borrowed "
                            "import imported export exported".split()}

# converses of time and quantity ("after", "more"): common words that seldom carry a sentence's roles, so they
# leave the role rules on
_NOT_ROLES = {stem(w) for w in "before after earlier later precede preceded preceding follow followed following more less fewer higher lower larger smaller bigger greater "
                               "longer shorter faster slower older younger heavier lighter".split()}


def _before_noun(t: _Text, k: int) -> bool:
    """The word at ``k`` stands before a lower-case content word, as an adjective before its noun ("her
    younger sister Anna"): a converse of time or quantity there relates the noun to its owner, not the
    clause's two sides (:func:`_converse_turned`)."""
    return k + 1 < len(t.lower) and t.tokens[k + 1].islower() and _is_content(t.lower[k + 1])


def _comparison_turned(p: _Pair, comp: str, ants: dict[str, set[str]]) -> bool:
    """The claim's "X <comp> than Y" is the premise's comparison turned round: the opposite comparative and the
    two sides traded ("the Amazon is shorter than the Nile" from "the Nile is longer than the Amazon"), which
    says the same thing."""
    theirs = _comparisons(p.best)
    for c, left, right in _comparisons(p.claim):
        if c != comp:
            continue
        for c_b, left_b, right_b in theirs:
            if c_b in ants.get(c, ()) and left & right_b and right & left_b and not (left & left_b and right & right_b):
                return True
    return False


def _canonical(x: str) -> str:
    """A number without leading zeros ("04" of "1:04:09" is the 4 of "4 minutes")."""
    return str(int(x)) if x.isdigit() else x


def _number(p: _Pair) -> Finding | None:
    claim_nums = _numbers(p.claim_text, p.claim, claim=True)
    if not claim_nums or p.coverage() < 0.5:
        return None
    prem_nums = _numbers(p.premise_text, p.premise)
    prem_text = p.premise_text.replace(",", "")
    canon = {_canonical(x) for x in prem_nums}
    missing = sorted(x for x in claim_nums if x not in prem_nums and _canonical(x) not in canon
                     and not re.search(rf"(?<![\d.]){re.escape(x)}(?![\d])", prem_text))
    derived = {x for x in missing if _derived(x, p, prem_nums)}
    missing = [x for x in missing if x not in derived]
    if missing:
        return Finding("number", f"{', '.join(missing)} not in the premise")
    return _number_slot(p, prem_nums, skip=derived)


_SHARE = re.compile(r"\b(half|a third|one third|a quarter|one quarter)\s+of\s+(?:the\s+|its\s+|their\s+)?(\d[\d,]*)\b", re.I)
_YEARS_LATER = re.compile(r"\b([A-Za-z]+|\d+)\s+years?\s+(later|after|afterwards|earlier|before)\b", re.I)


def _value(x: str) -> float | None:
    try:
        return float(x)
    except ValueError:
        return None


def _canonical_token(t: _Text, k: int) -> str:
    """The number token ``k`` of ``t`` stands for ("40", "4" for "four"), or ""."""
    return _WORD_NUMBERS.get(t.lower[k], t.tokens[k].replace(",", "") if t.tokens[k][:1].isdigit() else "")


# words of a claim that say it computes: a difference ("330 more finishers", "rose by three points"), a
# total ("1,200 seats in all"), a share ("30 percent" for "three in ten")
_DIFFERENCE_WORDS = {"more", "fewer", "less", "higher", "lower", "longer", "shorter", "larger", "smaller", "up",
                     "down", "rose", "risen", "fell", "fallen", "increase", "increased", "decrease", "decreased",
                     "gap", "difference", "points", "later", "after", "earlier", "before", "gained", "lost",
                     "dropped", "grew", "shrank", "cut", "shortened", "extra", "additional", "by", "ahead", "behind"}
_TOTAL_WORDS = {"total", "all", "combined", "together", "altogether", "overall", "sum"}
_PERCENT_AFTER = re.compile(r"^\s*(?:%|percent\b|per\s+cent\b)", re.I)
_IN_EVERY = re.compile(r"\b(\d[\d,]*|[a-z]+)\s+(?:in|out\s+of)\s+(?:every\s+)?(\d[\d,]*|[a-z]+)\b", re.I)
_TIMES = re.compile(r"\b(twice|thrice|half|([A-Za-z]+|\d+(?:\.\d+)?)\s+times)\b", re.I)


def _derived(x: str, p: _Pair, prem_nums: set[str]) -> bool:
    """The claim's number ``x`` follows from the premise's by one plain step: "twice" (2), "half of the 40
    seats" (20), a year and "two years later" (2018), a span of years between two years the premise
    gives ("276 years" from "from 1368 to 1644"); where the claim's words say it computes, the difference
    or sum of two of the premise's numbers ("330 more finishers" from 2,310 and 1,980; "three percentage
    points" from 8 and 11 percent), a share as a percentage ("30 percent" from "three in ten", "60
    percent" for the rest of 40 percent, "50 percent" for "by half"), or a number times or divided by a
    multiple the premise states ("15 splits" from "60 splits ..., four times as many as the old one")."""
    v = _value(x)
    if v is None:
        return False
    words = p.premise.lower
    if x.isdigit() and ((v == 2 and "twice" in words) or (v == 3 and "thrice" in words)):
        return True
    for m in _SHARE.finditer(p.premise_text):
        n = int(m.group(2).replace(",", ""))
        part = {"half": 2, "third": 3, "quarter": 4}[m.group(1).split()[-1].lower()]
        if n % part == 0 and v == n // part:
            return True
    years = {int(y) for y in prem_nums if y.isdigit() and 1000 <= int(y) <= 2100}
    for m in _YEARS_LATER.finditer(p.premise_text):
        n = _WORD_NUMBERS.get(m.group(1).lower(), m.group(1))
        if n.isdigit() and any(v == y + int(n) * (1 if m.group(2).lower().startswith(("later", "after")) else -1)
                               for y in years):
            return True
    c = p.claim
    claim_words = set(c.lower)
    spelled = [w for w, d in _WORD_NUMBERS.items() if d == x]
    if re.search(rf"\b(?:{'|'.join([re.escape(x)] + spelled)})\s+years\b", p.claim_text, re.I) \
            and any(v == abs(a - b) for a in years for b in years):
        return True
    close = lambda a, b: abs(a - b) < 1e-9 * max(1.0, abs(b))  # noqa: E731
    text = p.claim_text.replace(",", "")
    forms = "|".join([re.escape(x)] + spelled)
    percent = any(_PERCENT_AFTER.match(text[m.end():])
                  for m in re.finditer(rf"(?<![\d.])(?:{forms})(?![\d\w])", text, re.I))
    # the difference or sum of two numbers of one premise sentence ("2,310 finishers, up from 1,980"), never a
    # year; a difference of two percentages is in points ("improved by 3 percent" is not 8 -> 11 percent)
    if not (x.isdigit() and 1000 <= v <= 2100):
        for sent in p.sents:
            nums = sorted({y for y in map(_value, _numbers(" ".join(sent.tokens), sent)) if y is not None})
            pairs = [(a, b) for i, a in enumerate(nums) for b in nums[i + 1:]]
            if claim_words & _DIFFERENCE_WORDS and not percent and any(close(v, b - a) for a, b in pairs):
                return True
            if claim_words & _TOTAL_WORDS and any(close(v, a + b) for a, b in pairs):
                return True
    if percent:  # "three in ten", "12 out of 40"; the rest of a percentage; "half"
        shares = []
        for m in _IN_EVERY.finditer(p.premise_text):
            a, b = (_value(_WORD_NUMBERS.get(g.lower(), g.replace(",", ""))) for g in (m.group(1), m.group(2)))
            if a is not None and b:
                shares.append(100 * a / b)
        shares += [100 - a for a in map(_value, re.findall(r"(\d+(?:\.\d+)?)\s*(?:%|percent|per cent)",
                                                            p.premise_text, re.I)) if a is not None and 0 < a < 100]
        if "half" in words:
            shares.append(50.0)
        if any(abs(v - s) < 0.5 for s in shares):  # as the claim rounds it
            return True
    # a number of the same unit times or divided by a multiple the premise states ("15 splits" from "60
    # splits ..., four times as many")
    unit = {c.stems[k + 1] for k in range(len(c.tokens) - 1) if _canonical_token(c, k) == x}
    t = p.premise
    same_unit = {y for k in range(len(t.tokens) - 1) if t.stems[k + 1] in unit
                 for y in [_value(_canonical_token(t, k))] if y is not None}
    for m in _TIMES.finditer(p.premise_text):
        word = m.group(1).lower()
        k = {"twice": 2.0, "thrice": 3.0, "half": 2.0}.get(word)
        if k is None:
            k = _value(_WORD_NUMBERS.get(m.group(2).lower(), m.group(2)))
        if k and any(close(v, a / k) or close(v, a * k) for a in same_unit):
            return True
    return _derived_more(x, v, p, prem_nums, years, unit, percent) or _arithmetic(x, v, p, percent)


_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9}
_HEDGES = {"about", "around", "roughly", "approximately", "some", "nearly", "almost", "just", "over", "under"}
_CLOCK = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_SPAN_WORDS = re.compile(r"\b(a|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+(decades?|centur(?:y|ies))\b", re.I)
_ONE_IN = re.compile(r"\b(?:one|1)\s+(?:in|out\s+of)\s+(two|three|four|five|ten|\d+)\b", re.I)
_FRACTION_OF = {"half": 2, "third": 3, "quarter": 4, "fifth": 5, "tenth": 10}


def _amounts(raw: str, t: _Text) -> list[tuple[float, str]]:
    """The numbers of a sentence as amounts, each with the stem of its unit (the first content word after it,
    past "to", "and", another number or a scale word: "from 54 to 47 minutes" is 54 minutes): "2.3 million
    containers" is 2,300,000 containers. A year (1000-2100 without a separator) is left out: a year is not
    an operand of a sum."""
    out = []
    for m in _NUMBER.finditer(raw):
        digits = m.group(1).replace(",", "")
        v = _value(digits)
        if v is None or ("," not in m.group(1) and digits.isdigit() and 1000 <= v <= 2100):
            continue
        scale, unit = 1.0, ""
        for word in re.findall(r"[A-Za-z]+|\d[\d,.]*", raw[m.end(): m.end() + 60]):
            low = word.lower()
            if low in _SCALES and scale == 1.0:
                scale = _SCALES[low]
            elif low in ("to", "and", "or", "from") or word[0].isdigit() or low in _WORD_NUMBERS:
                continue
            else:
                unit = stem(low) if _is_content(low) else ""
                break
        # an amount in millions with its unit left out ("1.7 million in the same year") stands for the unit
        # of the amounts beside it
        out.append((v * scale, unit or ("*" if scale > 1.0 else "")))
    for k, low in enumerate(t.lower):  # "eighteen months"
        if low in _WORD_NUMBERS and k + 1 < len(t.lower) and t.lower[k + 1] not in _SCALE and _is_content(t.lower[k + 1]):
            out.append((float(_WORD_NUMBERS[low]), t.stems[k + 1]))
    return out


def _one_in(x: str, v: float, text: str, ptext: str) -> bool:
    """The claim's "one in ``x``" is a share the premise gives: "one in three" for "about a third", "fewer
    than one in five" for 19 percent (within ten points on the bound's side), "about one in four" for 26
    percent (within three)."""
    one_in = _ONE_IN.search(text)
    if not one_in or _WORD_NUMBERS.get(one_in.group(1).lower(), one_in.group(1)) != x:
        return False
    frac = {n: word for word, n in _FRACTION_OF.items()}.get(int(v))
    if frac and re.search(rf"\b(?:a|one)\s+{frac}\b", ptext, re.I):
        return True
    share = 100 / v if v else 0.0
    bound = text[max(0, one_in.start() - 16): one_in.start()].lower()
    for q in (float(m.group(1)) for m in re.finditer(r"(\d+(?:\.\d+)?)\s*(?:%|percent\b|per\s+cent\b)", ptext, re.I)):
        if (re.search(r"\b(?:fewer|less)\s+than\s*$", bound) and share - 10 <= q < share) or \
                (re.search(r"\bmore\s+than\s*$", bound) and share < q <= share + 10) or abs(q - share) <= 3:
            return True
    return False


def _arithmetic(x: str, v: float, p: _Pair, percent: bool) -> bool:
    """The claim's number is plain arithmetic on the premise's, wherever they stand: the difference or sum of
    two of its amounts ("Kallisund handled 600,000 more containers" from 2.3 million and, a sentence later,
    1.7 million; "1,700 breeding pairs" lost from 4,800 to 3,100), the rest of a whole after two parts
    ("rejected six" of 31 when 18 and 7 were accepted, in one sentence), minutes between two clock times
    ("35 minutes later" from 6:40 and 7:15), a span in years for "three decades" or "a decade", a fraction of
    an amount ("about 160" for "640 patients, about a quarter of whom"), "one in three" for "about a third",
    a year counted from a year of the sentence before ("a year later"; the same sentence is
    :func:`_derived_more`'s), a difference of any two amounts where the premise says "the remaining" or "the
    rest" ("148 were never published" for 212 and "64 of them"), "fewer than one in five" for 19 percent,
    and, after "about" and the like, a premise amount rounded ("about 251 million years" from 251.4). A
    percentage of the claim is left to :func:`_derived`."""
    c, text, ptext = p.claim, p.claim_text, p.premise_text
    spelled = [w for w, d in _WORD_NUMBERS.items() if d == x]
    forms = "|".join([re.escape(x)] + spelled)
    plain = text.replace(",", "")
    at = re.search(rf"(?<![\d.])(?:{forms})(?![\d\w])", plain, re.I)
    raws = _sentences(ptext)
    if x.isdigit() and 1000 <= v <= 2100 and not re.search(rf"\b{x[0]},{x[1:]}\b", text):  # a year
        for i, (raw, t) in enumerate(zip(raws, p.sents)):
            near = {int(y) for j in (i - 1, i) if 0 <= j < len(raws)
                    for y in _numbers(raws[j], p.sents[j]) if y.isdigit() and 1000 <= int(y) <= 2100}
            if (v - 1 in near and _YEAR_AFTER.search(raw)) or (v + 1 in near and _YEAR_BEFORE.search(raw)):
                return True
        return False
    if percent or at is None:
        return False
    after = re.match(r"\s*([A-Za-z]+)", plain[at.end():])
    scale = _SCALES.get(after.group(1).lower(), 1.0) if after else 1.0
    before = plain[: at.start()].split()
    hedged = bool(before) and before[-1].lower() in _HEDGES
    w = v * scale
    close = lambda a, b: abs(a - b) <= 1e-6 * max(1.0, abs(b))  # noqa: E731
    # where the claim's words say it computes, the difference or sum of two amounts of the premise in the
    # claim's unit (one of the three words after its number), from any of its sentences
    amounts = [_amounts(raw, t) for raw, t in zip(raws, p.sents)]
    units = {stem(u.lower()) for u in re.findall(r"[A-Za-z]+", plain[at.end():])[:3]}
    same = sorted({a for am in amounts for a, u in am if u and (u in units or (u == "*" and w >= 1e5))})
    if set(c.lower) & (_DIFFERENCE_WORDS | _QUICKER | _TOTAL_WORDS) and \
            any(close(w, b - a) or close(w, a + b) for i, a in enumerate(same) for b in same[i + 1:]):
        return True
    if re.search(r"\b(?:remaining|the\s+rest|the\s+remainder|the\s+others)\b", ptext, re.I):
        vals = sorted({a for am in amounts for a, _ in am})  # "212 watercolours ... 64 of them ... the remaining"
        if any(close(w, b - a) for i, a in enumerate(vals) for b in vals[i + 1:]):
            return True
    for raw, am in zip(raws, amounts):  # the rest of a whole after two of its parts, in a sentence that says so
        vs = [a for a, _ in am]
        if re.search(r"\b(?:rest|remainder|remaining|others)\b", raw, re.I) and \
                any(close(w, a - b - d) for a in vs for b in vs for d in vs if a > b + d and len({a, b, d}) == 3):
            return True
    clocks = [int(h) * 60 + int(m) for h, m in _CLOCK.findall(ptext)]
    if after and after.group(1).lower().startswith("minute") and \
            any(close(v, abs(a - b)) for i, a in enumerate(clocks) for b in clocks[i + 1:]):
        return True
    if after and after.group(1).lower().startswith("year"):
        for m in _SPAN_WORDS.finditer(ptext):
            n = 1 if m.group(1).lower() in ("a", "one") else float(_WORD_NUMBERS.get(m.group(1).lower(), m.group(1)))
            if close(v, n * (10 if m.group(2).lower().startswith("decade") else 100)):
                return True
    for raw, t in zip(raws, p.sents):  # "640 patients, about a quarter of whom": a fraction of the amount before it
        for m in re.finditer(r"\b(?:a|one)\s+(half|third|quarter|fifth|tenth)\s+of\s+(?:whom|which|them|these|those)\b",
                             raw, re.I):
            part = _FRACTION_OF[m.group(1).lower()]
            head = raw[: m.start()]
            if any(abs(w - a / part) <= (0.05 * a / part if hedged else 1e-6) for a, _ in _amounts(head, _text(head))):
                return True
    if _one_in(x, v, text, ptext):
        return True
    if hedged:  # "about 251 million" for 251.4 million: the premise amount rounded
        return any(abs(w - a) <= 0.01 * abs(a) and a != w for am in amounts for a, _ in am)
    return False


# a year named by its distance from another: "up from 1,980 the year before", "the following year"
_YEAR_BEFORE = re.compile(r"\b(?:the\s+(?:previous|preceding|prior)\s+year|the\s+year\s+before|a\s+year\s+(?:earlier|before))\b", re.I)
_YEAR_AFTER = re.compile(r"\b(?:the\s+(?:following|next)\s+year|the\s+year\s+after|a\s+year\s+later)\b", re.I)
_FRACTIONS = {"fifth": 20.0, "quarter": 25.0, "tenth": 10.0, "third": 100 / 3}
_FRACTION = re.compile(r"\b(a|one|two|three|four)\s+(fifths?|quarters?|tenths?|thirds?)\b", re.I)
_SPANS = {"decad": 10, "centuri": 100, "millennia": 1000, "millennium": 1000, "dozen": 12}  # by stem
# words of a claim that compare two amounts by their difference, beside _DIFFERENCE_WORDS
_QUICKER = {"quicker", "sooner", "cheaper", "warmer", "colder", "cooler", "taller", "deeper", "wider", "heavier",
            "lighter", "saving", "saved", "exceeded", "topped", "surpassed", "apart", "margin"}

# words of a claim that say it divides or multiplies: "each", "a month", "on average", "in total"
_PER = {"each", "per", "every", "apiece", "average", "averages", "averaged", "monthly", "annually", "annual",
        "yearly", "daily", "weekly", "hourly", "month", "year", "day", "week", "hour", "total", "combined",
        "altogether", "overall"}


def _derived_more(x: str, v: float, p: _Pair, prem_nums: set[str], years: set[int], unit: set[str],
                  percent: bool) -> bool:
    """More of :func:`_derived`'s plain steps: a year one before or after a year the premise names that way
    ("the year before" 2023: 2022); no goals for "goalless"; a span in decades, centuries or millennia ("six
    millennia" for 6,000 years, "fifty years" for half a century); a fraction as a percentage ("20 percent"
    for "a fifth"); a difference the claim words as "quicker", "warmer" and the like; the claim's number and
    another of its numbers in the ratio of a percentage the premise gives ("360 of the 1,200 homes" for 30 per
    cent of them); a number of the premise in the same unit times or divided by another number of the
    premise or the claim ("70 megawatts" each for 210 megawatts and three turbines; "ten times" for 5,000
    copies and 500 copies)."""
    close = lambda a, b: abs(a - b) < 1e-6 * max(1.0, abs(b))  # noqa: E731
    text, ptext = p.claim_text, p.premise_text
    raws = _sentences(ptext)  # p.sents, as written
    if x.isdigit() and 1000 <= v <= 2100:  # the year and the words that count from it in one sentence
        for sent, t in zip(raws, p.sents):
            near = {int(y) for y in _numbers(sent, t) if y.isdigit() and 1000 <= int(y) <= 2100}
            if (v + 1 in near and _YEAR_BEFORE.search(sent)) or (v - 1 in near and _YEAR_AFTER.search(sent)):
                return True
        return False
    if v == 0:
        return bool(re.search(r"\b(?:goalless|scoreless|nil)\b", ptext, re.I))
    prem_vals = {y for y in map(_value, prem_nums) if y is not None}
    for k in range(len(p.claim.tokens) - 1):
        if _canonical_token(p.claim, k) == x:
            per = _SPANS.get(p.claim.stems[k + 1])
            if per and v * per in prem_vals:
                return True
    if v == 50 and re.search(r"\bhalf\s+a\s+century\b", ptext, re.I) and re.search(r"\byears?\b", text, re.I):
        return True
    if percent:
        for m in _FRACTION.finditer(ptext):
            n = 1 if m.group(1).lower() in ("a", "one") else int(_WORD_NUMBERS[m.group(1).lower()])
            if abs(v - n * _FRACTIONS[m.group(2).lower().rstrip("s")]) < 0.5:
                return True
        return False
    claim_vals = {y for y in map(_value, _numbers(text, p.claim)) if y is not None} - {v}
    sents = [sorted({y for y in map(_value, _numbers(raw, t)) if y is not None}) for raw, t in zip(raws, p.sents)]
    if set(p.claim.lower) & _QUICKER and any(close(v, abs(a - b)) for nums in sents for a in nums for b in nums):
        return True
    shares = [float(m.group(1)) for m in re.finditer(r"(\d+(?:\.\d+)?)\s*(?:%|percent\b|per\s+cent\b)", ptext, re.I)]
    if any(close(v, a * s / 100) for a in claim_vals & prem_vals for s in shares):
        return True
    # times or divided by: a number of the claim's premise sentence in the claim number's unit (the word after
    # it, or the currency sign before it), and a factor from that sentence or the claim
    b = p.best
    best_vals = {y for y in map(_value, _numbers(raws[p.sents.index(b)] if b in p.sents else ptext, b))
                 if y is not None}
    factors = (best_vals | claim_vals) - {0.0, 1.0}
    content_unit = {u for u in unit if u.isalpha() and _is_content(u)} if set(p.claim.lower) & _PER else set()
    operands = {y for k in range(len(b.tokens) - 1) if b.stems[k + 1] in content_unit
                for y in [_value(_canonical_token(b, k))] if y is not None}
    cur = re.search(rf"([€$£¥])\s?{re.escape(x)}(?![\d])", text.replace(",", ""))
    if cur:  # the sentence's amounts in that currency
        in_best = {_canonical_token(b, k) for k in range(len(b.tokens))}
        operands |= {float(m.group(1)) for m in re.finditer(rf"{re.escape(cur.group(1))}\s?(\d+(?:\.\d+)?)(?![\d])",
                                                             ptext.replace(",", "")) if m.group(1) in in_best}
    if any(close(v, a * f) or close(v, a / f) for a in operands for f in factors if f != a):
        return True
    forms = "|".join([re.escape(x)] + [w for w, d in _WORD_NUMBERS.items() if d == x])
    after = re.search(rf"(?<![\d.])(?:{forms})\s+times\b", text.replace(",", ""), re.I)
    if after and unit:
        t = p.premise
        by_unit: dict[str, set[float]] = {}
        for k in range(len(t.tokens) - 1):
            y = _value(_canonical_token(t, k))
            if y:
                by_unit.setdefault(t.stems[k + 1], set()).add(y)
        return any(close(v, a / b) for vals in by_unit.values() for a in vals for b in vals if a != b)
    return False



def _number_slot(p: _Pair, prem_nums: set[str], skip: set[str] = frozenset()) -> Finding | None:
    """A number of the claim stands in the premise, but the word after it (its unit: "310 metres") follows
    another number there, and never this one ("142 metres" in the premise, 310 of something else); numbers
    in ``skip`` (computed from the premise's, :func:`_derived`) are not read this way; ``prem_nums`` are the
    premise's numbers as :func:`_numbers` reads them."""
    c = p.claim
    if p.coverage() < 0.5:
        return None
    follows: dict[str, set[str]] = {}
    t = p.premise
    for k in range(len(t.tokens) - 1):
        num = _canonical_token(t, k)
        if num and not (k > 1 and _named(t, k - 1) and t.tokens[k][:1].isdigit()  # not a name's ("Aster 3 units"),
                        and not re.fullmatch(r"[A-Z]{3}", t.tokens[k - 1])):  # but a currency's ("CHF 14.5 million")
            follows.setdefault(t.stems[k + 1], set()).add(num)
    for k in range(len(c.tokens) - 1):
        num = _canonical_token(c, k)
        if not num or not _is_content(c.lower[k + 1]):
            continue
        if k and c.lower[k - 1] in _BOUND:
            continue
        if num in skip:
            continue
        others = follows.get(c.stems[k + 1], set())
        if others and num not in others and not _derived(num, p, prem_nums):
            return Finding("number", f"{c.tokens[k]} {c.tokens[k + 1]}: the premise has "
                                     f"{', '.join(sorted(others))} {c.tokens[k + 1]}")
    return None


def _name(p: _Pair) -> Finding | None:
    if p.coverage() < 0.5:
        return None
    names = _names(p.claim)
    content = [t for t in p.claim.tokens[1:] if t[0].isalpha() and _is_content(t.lower())]
    if content and sum(t[0].isupper() for t in content) > 0.8 * len(content):  # a title-case headline
        return None
    prem_low = p.premise_text.lower().replace("-", " ")
    for name in names:
        if name.rstrip("s").isupper():  # an acronym (AMI, EKG, GANs) may stand for words the premise spells out
            continue
        low = re.sub(r"'s$", "", name.lower()).replace("-", " ")
        root = low[:4] if len(low) >= 6 else low  # German/Germany, Canadian/Canada, Greek/Greece
        if low not in prem_low and root not in prem_low:
            return Finding("name", f"{name!r} is not in the premise")
    return None


def _role(p: _Pair) -> Finding | None:
    """Two names on either side of a shared verb or comparative trade sides (voice taken into account)."""
    if not p.aligned() or _converse_flips(p):
        return None
    c, b = p.claim, p.best
    shared = {s for s in p.claim_content & b.content() if c.stems.count(s) == 1 and b.stems.count(s) == 1}
    for i, s in enumerate(c.stems):
        if s not in shared or not _pivot(c, i):
            continue
        before = [k for k in range(i) if c.stems[k] in shared and _named(c, k, b)]
        after = [k for k in range(i + 1, len(c.stems)) if c.stems[k] in shared and _named(c, k, b)]
        if not before or not after:
            continue
        ka, kz = before[-1], after[0]
        if i - ka > 4 or kz - i > 4:  # the verb's own arguments, not words from elsewhere in the sentence
            continue
        a, z = c.stems[ka], c.stems[kz]
        j, ja, jz = _first(b.stems, s), _first(b.stems, a), _first(b.stems, z)
        if not (_named(b, ja, c) and _named(b, jz, c)) or _joined(c, ka, kz):
            continue
        if _sides_traded(c, b, i, j, (ka, kz), (ja, jz)):
            return Finding("role", f"{c.tokens[ka]!r} and {c.tokens[kz]!r} trade places around {c.tokens[i]!r}")
    return (_subject_moved(p, shared) or _names_reordered(p) or _nouns_traded(p) or _pronoun_object(p) or _comparison_reversed(p)
            or _attributes_traded(p) or _relation_reversed(p))


# relations that hold both ways ("A is B's cousin" = "B is A's cousin")
_MUTUAL = {stem(w) for w in "cousin sibling twin friend partner spouse colleague neighbour neighbor rival teammate "
                            "classmate ally peer counterpart".split()}
_RELATION_ADJ = {"older", "younger", "elder", "eldest", "oldest", "youngest", "largest", "biggest", "main", "chief",
                 "only", "first", "former", "late", "step", "half"}


def _name_span(t: _Text, k: int, step: int, other: _Text) -> set[str]:
    """The stems of the name whose word at ``k`` ends (step -1) or starts (step 1) it."""
    out = set()
    while 0 <= k < len(t.tokens) and _named(t, k, other):
        out.add(t.stems[k])
        k += step
    return out


def _relations(t: _Text, other: _Text) -> list[tuple[set[str], str, set[str]]]:
    """(A, relation, B) for "A is B's <relation>", "A is the <relation> of B" and "B ... his/her <relation>
    A" (A is B's relation): the relation is its noun's stem with the adjectives before it ("older sister")."""
    out = []
    low, n = t.lower, len(t.tokens)

    def rel_at(k):  # adjectives then a lowercase noun from k: (relation, index after it)
        words = []
        while k < n and low[k] in _RELATION_ADJ:
            words.append(low[k])
            k += 1
        if k < n and t.tokens[k].isalpha() and t.tokens[k].islower() and _is_content(low[k]):
            return " ".join(words + [t.stems[k]]), k + 1
        return None, k

    for i, w in enumerate(low):
        if w in ("is", "was") and i > 0:
            k = i - 1
            if t.tokens[k] == ",":  # "FreshWay, in turn, is"
                k = next((m - 1 for m in range(k - 1, max(0, k - 5), -1) if t.tokens[m] == ","), -1)
            a = _name_span(t, k, -1, other) if k >= 0 else set()
            if not a or i + 2 >= n:
                continue
            j = i + 1
            if t.tokens[j].endswith("'s") and _named(t, j, other):  # "is B's largest customer"
                rel, _ = rel_at(j + 1)
                if rel:
                    out.append((a, rel, {t.stems[j]}))
            else:
                j += low[j] == "the"
                rel, after = rel_at(j)
                if rel and after < n and low[after] == "of":
                    b = _name_span(t, after + 1, 1, other)
                    if b:
                        out.append((a, rel, b))
        if w in ("his", "her", "their") and i > 0:
            rel, after = rel_at(i + 1)
            b = set()
            for m in range(i - 1, max(-1, i - 9), -1):  # the nearest name before, in the same clause
                if low[m] in _CLAUSE_END:
                    break
                if _named(t, m, other):
                    b = _name_span(t, m, -1, other)
                    break
            a = _name_span(t, after, 1, other) if rel else set()
            if rel and a and b:
                out.append((a, rel, b))
    return out


def _relation_reversed(p: _Pair) -> Finding | None:
    """A relation between two names turned round: "Anna Kowalski is the older sister of Marta" where the
    premise says "Anna Kowalski beat her older sister Marta", "Veltro Systems is FreshWay's largest customer"
    where it says "FreshWay is Veltro's largest customer" (mutual relations, "cousin", left alone)."""
    theirs = _relations(p.premise, p.claim)
    if not theirs:
        return None
    for a, rel, b in _relations(p.claim, p.premise):
        if rel.split()[-1] in _MUTUAL:
            continue
        for a2, rel2, b2 in theirs:
            if rel2 == rel and a & b2 and b & a2 and not (a & a2):
                noun = next(tok for tok, st in zip(p.claim.tokens, p.claim.stems) if st == rel.split()[-1])
                return Finding("role", f"the claim makes {_show(p.claim, a)} the {noun} of {_show(p.claim, b)}; "
                                       "the premise says it the other way round")
    return None


_OBJECT_PRONOUNS = {"her", "him", "them", "it", "us", "me"}


def _pronoun_object(p: _Pair) -> Finding | None:
    """The claim's "A <verb> B" (two names, active voice) where the premise sentence has "B <verb> her" (or
    him, them) and A only elsewhere: the premise says B did it ("Bellini later described her as the most
    gifted student" -> "Ellen Sato described Marco Bellini as the most gifted student")."""
    if not p.aligned():
        return None
    c, b = p.claim, p.best
    for i, s in enumerate(c.stems):
        if not _pivot(c, i) or _passive_at(c, i) or b.stems.count(s) != 1 or c.stems.count(s) != 1:
            continue
        ka = next((k for k in range(i - 1, max(-1, i - 3), -1) if _named(c, k, p.premise)), None)
        kz = next((k for k in range(i + 1, min(len(c.stems), i + 3)) if _named(c, k, p.premise)), None)
        if ka is None or kz is None or c.stems[ka] == c.stems[kz] or c.stems[ka] in b.stems:
            continue
        j = _first(b.stems, s)
        if _passive_at(b, j) or not any(b.lower[k] in _OBJECT_PRONOUNS for k in range(j + 1, min(len(b.lower), j + 3))):
            continue
        object_name = _name_span(c, kz, 1, p.premise)  # the whole name ("Marco Bellini")
        jb = next((k for k in range(j - 1, max(-1, j - 4), -1) if _named(b, k, c)), None)
        if jb is not None and b.stems[jb] in object_name and c.stems[ka] in p.premise.stems:
            pron = next(b.tokens[k] for k in range(j + 1, j + 3) if b.lower[k] in _OBJECT_PRONOUNS)
            return Finding("role", f"the premise says '{b.tokens[jb]} {b.tokens[j]} {pron}': {b.tokens[jb]!r} did it, "
                                   f"not {c.tokens[ka]!r}")
    return None


_BOUNDARY = {",", ";", "while", "whereas", "but"}


def _owners(t: _Text, names: set[str]) -> dict[str, str]:
    """Each word of ``t`` that is neither a name nor a verb, and stands once in it: the name of ``names``
    nearest before it (as the stem of that name's first word)."""
    out: dict[str, str] = {}
    owner = None
    for k, (tok, s) in enumerate(zip(t.tokens, t.stems)):
        if s in names:
            owner = s
            while k > 0 and t.stems[k - 1] in names:  # a name of several words goes by its first
                k -= 1
                owner = t.stems[k]
            continue
        if owner and (_is_content(t.lower[k]) or tok[0].isdigit()) and t.stems.count(s) == 1 and not _pivot(t, k) \
                and not tok[0].isupper():
            out[s] = owner
    return out


def _attributes_traded(p: _Pair) -> Finding | None:
    """Two values or two opposites said of two names trade names: "Mount Dallin rises to 2,310 metres, while Mount Kerrow
    reaches 1,980 metres" where the premise gives Kerrow 2,310 and Dallin 1,980, or "Louis received the
    western lands, while Charles took the eastern part" where it says the opposite. The claim's two names
    stand in clauses of their own, so that each word's name is not in doubt."""
    c, b = p.claim, p.premise
    names = {s for k, s in enumerate(c.stems) if _named(c, k, b) and s in b.stems and c.stems.count(s) == 1}
    if len(names) < 2:  # (a word of both names, "Mount" of Mount Kerrow and Mount Dallin, tells neither apart)
        return None
    # names in one clause of the claim (no boundary or other word between them) are one name ("Louis the German")
    first = [k for k, s in enumerate(c.stems) if s in names]
    groups, cur = [], [first[0]]
    for k in first[1:]:
        if any(c.lower[m] in _BOUNDARY or _is_content(c.lower[m]) and c.stems[m] not in names for m in range(cur[-1] + 1, k)):
            groups.append(cur)
            cur = [k]
        else:
            cur.append(k)
    groups.append(cur)
    group = {c.stems[k]: n for n, g in enumerate(groups) for k in g}
    ours, theirs = _owners(c, names), _owners(b, names)
    moved = [(s, group[ours[s]], group[theirs[s]]) for s in ours
             if s in theirs and ours[s] in group and theirs[s] in group and group[ours[s]] != group[theirs[s]]]
    ants = _antonym_stems()
    for s1, a1, z1 in moved:
        for s2, a2, z2 in moved:
            alike = (s1[0].isdigit() and s2[0].isdigit()) or s2 in ants.get(s1, ())  # two values, or opposites
            if alike and a1 == z2 and a2 == z1 and \
                    any(c.lower[m] in _BOUNDARY for m in range(groups[min(a1, a2)][-1], groups[max(a1, a2)][0])):
                return Finding("role", f"{_show(c, {s1})} and {_show(c, {s2})} trade names: the premise says "
                                       f"{_show(c, {s1})} of {_show(c, {c.stems[k] for k in groups[a2]})}")
    return None


def _name_spans(t: _Text, other: _Text) -> list[tuple[int, int, frozenset[str]]]:
    """(start, end, stems) of each run of names in ``t``."""
    out, k = [], 0
    while k < len(t.tokens):
        if _named(t, k, other):
            end = k
            while end < len(t.tokens) and _named(t, end, other):
                end += 1
            out.append((k, end, frozenset(t.stems[k:end])))
            k = end
        else:
            k += 1
    return out


def _names_reordered(p: _Pair) -> Finding | None:
    """Two names of the claim with the words between them ("Pelmarin can raise the level of Corvastin") stand
    the other way round in the premise sentence, the same words between them and more ("Corvastin can raise
    the level of the anticoagulant pelmarin"), in the same voice ("by" between both or neither), with "of"
    between both or neither ("Lucie is the daughter of Lucille" says "Lucille ... her daughter Lucie") and
    not a symmetric relation ("met", "married"); or the same verb between them and one word more, a title
    that moves with its name ("the dealer Paul Okafor outbid the collector Edda Strand" from the reverse)."""
    c, b = p.claim, p.best
    mine, theirs = _name_spans(c, b), _name_spans(b, c)
    for (s1, e1, n1), (s2, e2, n2) in zip(mine, mine[1:]):
        if n1 & n2 or any(c.lower[m] in _CLAUSE_END for m in range(e1, s2)):
            continue
        between = {c.stems[m] for m in range(e1, s2) if _is_content(c.lower[m])}
        # a converse ("sold" for "bought") is the antonym rule's; the same verb in both is this rule's
        if not between or len(between) > 6 or between & _SYMMETRIC:
            continue
        first = [t for t in theirs if t[2] & n1]
        second = [t for t in theirs if t[2] & n2]
        if not first or not second or set(first) & set(second):
            continue
        for (_, eb, _), (sa, _, _) in ((x, y) for x in second for y in first if x[1] <= y[0]):
            if any(b.lower[m] in (".", ";", "!", "?", "and", "or") for m in range(eb, sa)):
                continue  # "directed by Luhrmann and starring Kidman": two phrases, not one verb's two sides
            if any(eb <= x[0] and x[1] <= sa for x in first + second):
                continue  # the nearest two: one of the names again between them is not this order
            theirs_between = {b.stems[m] for m in range(eb, sa) if _is_content(b.lower[m])}
            # a title beside a name may move with it: "the dealer Paul Okafor outbid the collector Edda Strand"
            # against "the collector Edda Strand outbid the dealer Paul Okafor"
            titles = {b.stems[m] for x in first + second for m in range(max(0, x[0] - 3), x[0])
                      if _is_content(b.lower[m]) and not _named(b, m, c)}
            kept = between & theirs_between
            same_build = all((w in c.lower[e1:s2]) == (w in b.lower[eb:sa]) for w in ("by", "of"))
            titled = len(between - kept) == 1 and between - kept <= titles and \
                any(_verb(c, m) for m in range(e1, s2) if c.stems[m] in kept)
            if same_build and (between <= theirs_between or titled):
                return Finding("role", f"{_show(c, set(n1))} and {_show(c, set(n2))} stand the other way round "
                                       f"around {_show(c, between)} in the premise")
    return None


# verbs whose two sides may trade places without changing what is said ("the tenant met the landlord")
_SYMMETRIC = {stem(w) for w in "meet marry fight play tie draw compete collide merge partner share resemble border "
                                "face join divorce debate date".split()}
_BEFORE_VERB = {"was", "were", "is", "are", "has", "have", "had", "also", "later", "then", "first", "once", "been"}


def _verb(t: _Text, i: int) -> bool:
    w = t.lower[i]
    return _pivot(t, i) or (w.isalpha() and (w.endswith(("ed", "es")) or w in _IRREGULAR_LEMMA))


def _noun_before(t: _Text, i: int) -> int | None:
    """The common noun that ends the phrase just before the verb at ``i`` ("the farmer's dog bit"), if that
    phrase opens with a determiner or a possessive and no clause boundary comes between."""
    k = i - 1
    while k >= 0 and t.lower[k] in _BEFORE_VERB:
        k -= 1
    if k < 1 or i - k > 3 or not t.stems[k].isalpha() or not t.tokens[k].islower() or not _is_content(t.lower[k]):
        return None
    near = range(max(0, k - 3), k)
    if any(t.lower[m] in _CLAUSE_END for m in near):
        return None
    return k if any(t.lower[m] in _DETERMINERS or t.lower[m].endswith("'s") for m in near) else None


def _noun_after(t: _Text, i: int) -> int | None:
    """The first content word after the verb at ``i``, if it is a common noun with a determiner or a
    possessive between them ("sued the landlord", "examined the farmer's dog")."""
    for k in range(i + 1, min(len(t.lower), i + 4)):
        w = t.lower[k]
        if w in _CLAUSE_END:
            return None
        if _is_content(w):
            ok = t.stems[k].isalpha() and t.tokens[k].split("'")[0].islower() and \
                any(t.lower[m] in _DETERMINERS or t.lower[m].endswith("'s") for m in range(i + 1, k))
            return k if ok else None
    return None


def _nouns_traded(p: _Pair) -> Finding | None:
    """Two common nouns on either side of a shared verb trade sides: "the tenant sued the landlord" where the
    premise sentence says "the landlord sued the tenant", or "the dog bit a snake" where it says "the dog ...
    was bitten by a snake" (voice taken into account; verbs such as "met" or "married" left alone)."""
    c, b = p.claim, p.best
    common = p.claim_content & b.content()
    for i, s in enumerate(c.stems):
        if s not in common or c.stems.count(s) > 1 or b.stems.count(s) > 1 or s in _SYMMETRIC or not _verb(c, i):
            continue
        ka, kz = _noun_before(c, i), _noun_after(c, i)
        if ka is None or kz is None:
            continue
        a, z = c.stems[ka], c.stems[kz]
        if a not in common or z not in common or a == z or c.stems.count(a) > 1 or c.stems.count(z) > 1:
            continue
        j = _first(b.stems, s)  # each noun where the premise sentence has it nearest the verb
        ja = min((m for m, x in enumerate(b.stems) if x == a), key=lambda m: abs(m - j))
        jz = min((m for m, x in enumerate(b.stems) if x == z), key=lambda m: abs(m - j))
        if abs(ja - j) > 6 or abs(jz - j) > 6 or \
                any(b.lower[m] in _CLAUSE_END for m in range(min(ja, jz, j), max(ja, jz, j))):
            continue  # in the premise too, the verb's own arguments in one clause
        if _sides_traded(c, b, i, j, (ka, kz), (ja, jz)):
            return Finding("role", f"{c.tokens[ka]!r} and {c.tokens[kz]!r} trade places around {c.tokens[i]!r}")
    return None


def _sides_traded(c: _Text, b: _Text, i: int, j: int, claim_sides: tuple[int, int], premise_sides: tuple[int, int]) -> bool:
    """The claim's words on the two sides of its verb at ``i`` stand the other way round around the premise's
    verb at ``j``, the voice taken into account: "A acquired B" against "B acquired A" or "A was acquired by B"."""
    (_, kz), (ja, jz) = claim_sides, premise_sides
    reversed_, kept = jz < j < ja, ja < j < jz
    if not (reversed_ or kept):
        return False
    c_passive, b_passive = _passive_at(c, i), _passive_at(b, j)
    # a passive's second argument must be its agent ("by Google"), not a phrase such as "for Zootopia"
    if (c_passive and "by" not in c.lower[max(i, kz - 3): kz]) or \
            (b_passive and "by" not in b.lower[max(j, max(ja, jz) - 3): max(ja, jz)]):
        return False
    return reversed_ != (c_passive != b_passive)


_COMPARATIVE_WORDS = {"more", "less", "fewer", "better", "worse", "earlier", "later", "older", "younger"}


def _comparisons(t: _Text) -> list[tuple[str, set[str], set[str]]]:
    """Each "X <comparative> ... than Y" of a text: the comparative's stem, the content stems on its
    left (from the sentence's start or the previous comparison) and on its right (from "than" to the
    clause's end), words only (numbers are the number rule's), the stems found on both sides left out."""
    out, start = [], 0
    for i, w in enumerate(t.lower):
        if w != "than" or i < 1:
            continue
        comp = next((k for k in range(i - 1, max(-1, i - 4), -1)
                     if t.lower[k] in _COMPARATIVE_WORDS or (t.lower[k].endswith("er") and len(t.lower[k]) > 4)
                     and t.lower[k].isalpha()), None)
        nxt = t.lower[i + 1] if i + 1 < len(t.lower) else ""
        if comp is None or t.lower[i - 1] in ("rather", "other") or nxt[:1].isdigit() or nxt in _WORD_NUMBERS:
            continue  # "more than 500 million": a bound, not two things compared
        end = next((k for k in range(i + 1, len(t.lower)) if t.lower[k] in _CLAUSE_END), len(t.lower))
        left = {s for s, w_ in zip(t.stems[start:comp], t.lower[start:comp]) if _is_content(w_) and w_.isalpha()}
        right = {s for s, w_ in zip(t.stems[i + 1:end], t.lower[i + 1:end]) if _is_content(w_) and w_.isalpha()}
        out.append((t.stems[comp], left - right, right - left))
        start = end
    return out


def _comparison_reversed(p: _Pair) -> Finding | None:
    """The two sides of a comparison trade places: "the older method missed fewer cancers than the new
    test" where the premise sentence says "the new test missed fewer cancers than the older method"
    (the same comparative; an opposite one, "more" for "fewer", is a paraphrase and left alone)."""
    if not p.aligned():
        return None
    theirs = _comparisons(p.best)
    for comp, left, right in _comparisons(p.claim):
        for comp_b, left_b, right_b in theirs:
            if comp != comp_b:
                continue
            to_right, to_left = left & right_b, right & left_b
            if to_right and to_left and not (left & left_b and right & right_b):
                return Finding("role", f"{_show(p.claim, to_right)} and {_show(p.claim, to_left)} trade sides of "
                                       f"'{p.claim.tokens[p.claim.stems.index(comp)]} ... than'")
    return None


def _subject_moved(p: _Pair, shared: set[str]) -> Finding | None:
    """A thing made the subject of what a person did: the claim's subject, a common noun, stands after the
    same verb in the premise sentence whose subject is "he" or "she" ("He is known for the tower and for
    the statue" -> "The tower is known for the statue"), in the same voice."""
    c, b = p.claim, p.best
    for i, s in enumerate(c.stems):
        if s not in shared or not _pivot(c, i):
            continue
        subj = next((k for k in range(i) if _is_content(c.lower[k]) and c.lower[k] != "also"), None)
        if subj is None or i - subj > 4 or c.stems[subj] not in shared or not c.tokens[subj].islower():
            continue
        j, js = _first(b.stems, s), _first(b.stems, c.stems[subj])
        if js < j or _passive_at(c, i) != _passive_at(b, j):
            continue
        person = [w for w in b.lower[max(0, j - 4): j] if w in ("he", "she")]
        if person:
            return Finding("role", f"{c.tokens[subj]!r} is what {c.tokens[i]!r} is said of in the claim; in the "
                                   f"premise it is said of {person[-1]!r}, and {c.tokens[subj]!r} comes after it")
    return None


def _swap(p: _Pair) -> Finding | None:
    """The claim is its aligned premise sentence (or a part of it) with one word swapped for another word
    that the premise uses elsewhere: "Table captions should be placed below the figure" where the
    sentence says "Figure captions should be placed below the figure" and another says "Table captions
    should be placed above the table"; or with a name of the premise put in another name's place
    (:func:`_name_moved`, :func:`_name_in_slot`), or saying of its subject what the premise says of another
    (:func:`_said_of_another`)."""
    if not p.aligned() or _converse_flips(p):  # "A sold B to C" for "C bought B from A": the names move
        return None
    # the claim's words aligned with its premise sentence's (tokens that are words, by stem), for both cases
    cw = [k for k, t in enumerate(p.claim.tokens) if t[0].isalnum()]
    bw = [k for k, t in enumerate(p.best.tokens) if t[0].isalnum()]
    ops = SequenceMatcher(a=[p.best.stems[k] for k in bw], b=[p.claim.stems[k] for k in cw], autojunk=False).get_opcodes()
    return _word_swapped(p, cw, bw, ops) or _name_moved(p, cw, bw, ops) or _number_moved(p, cw, bw, ops) \
        or _name_in_slot(p) or _said_of_another(p)


_SLOT_PREPOSITIONS = {"by", "to", "from", "for", "with", "at", "on", "of", "in", "into", "under"}


def _foreign_runs(t: _Text, other: _Text) -> list[tuple[int, int]]:
    """(start, end) of each run of names in ``t`` whose words ``other`` does not use."""
    out, k = [], 0
    while k < len(t.tokens):
        if _named(t, k, other) and t.stems[k] not in other.stems:
            end = k
            while end < len(t.tokens) and _named(t, end, other) and t.stems[end] not in other.stems:
                end += 1
            out.append((k, end))
            k = end
        else:
            k += 1
    return out


def _slot_context(t: _Text, start: int, end: int) -> tuple[list[str], list[str]]:
    """The stems before a run of names (nearest first, past determiners and at most two lower-case title words:
    "by the contractor Basaltek" gives by) and the stem right after it."""
    before, k, titles = [], start - 1, 0
    while k >= 0 and len(before) < 2:
        w = t.lower[k]
        if w in _DETERMINERS:
            k -= 1
            continue
        if not before and titles < 2 and t.tokens[k].isalpha() and t.tokens[k].islower() and _is_content(w) \
                and k > 0 and (t.lower[k - 1] in _DETERMINERS or t.lower[k - 1] in _SLOT_PREPOSITIONS):
            titles += 1  # "the contractor", "organiser"
            k -= 1
            continue
        if not t.tokens[k][0].isalnum():
            break
        before.append(t.stems[k])
        k -= 1
    after = [t.stems[end]] if end < len(t.tokens) and t.tokens[end][0].isalpha() else []
    return before, after


_AUXILIARIES = {"is", "are", "was", "were", "has", "have", "had", "will", "would", "can", "could", "did", "does",
                "do", "also", "then", "later", "now", "still", "may", "might", "must", "should"}
_LISTING = _SLOT_PREPOSITIONS | {"including", "like", "as", "such", "among", "against", "than", "after", "before",
                                 "during", "via", "between", "about", "near", "over", "through"}


def _subject_run(t: _Text, other: _Text) -> tuple[int, int] | None:
    """The run of names a sentence opens with as its subject: the first run of names, before the sentence's
    first verb, not after a preposition and followed by a verb, an auxiliary or a comma ("Its founder, Osric
    Tallent, introduced"; "A smaller western arm, the Dunmere, has been silting up"); not a modifier ("a
    Telugu film", "Ferrow Point's southern antenna")."""
    k = 0
    while k < len(t.tokens):
        if _verb(t, k) and not _named(t, k, other):
            return None
        if _named(t, k, other) and not (k == 0 and t.lower[0] in _DETERMINERS):
            prev = k - 1
            while prev >= 0 and t.lower[prev] in _DETERMINERS:
                prev -= 1
            if prev >= 0 and t.lower[prev] in _LISTING:
                return None
            end = k
            while end < len(t.tokens) and _named(t, end, other):
                end += 1
            nxt = t.lower[end] if end < len(t.tokens) else ""
            if nxt == "," or nxt in _AUXILIARIES or (end < len(t.tokens) and _verb(t, end)):
                return k, end
            return None
        k += 1
    return None


def _main_word(t: _Text, end: int) -> str | None:
    """The first content word after a subject that ends at ``end``, past an aside (", who chairs the society,")
    and auxiliaries: the claim's main verb or predicate noun."""
    k = end
    if k < len(t.tokens) and t.lower[k] == ",":
        close = next((m for m in range(k + 1, len(t.tokens)) if t.lower[m] == ","), None)
        if close is None:
            return None
        k = close + 1
    while k < len(t.tokens) and (t.lower[k] in _AUXILIARIES or t.lower[k] in _DETERMINERS or not _is_content(t.lower[k])):
        k += 1
    return t.stems[k] if k < len(t.tokens) else None


def _said_of_another(p: _Pair) -> Finding | None:
    """The claim says of its subject (a name) what the premise says of another: the rest of the claim aligns
    with a premise sentence (three of its content words and 60%, the claim's main verb or predicate noun
    among them) whose subject is another name ("Wenna Tallent introduced the Kelda line in 2011" where the
    premise says "Its founder, Osric Tallent, introduced the Kelda line in 2011" and names Wenna only as his
    daughter); no sentence of the premise has the name (or part of it) with that much of the rest."""
    c = p.claim
    run = _subject_run(c, p.premise)
    if run is None:
        return None
    s, e = run
    names = {c.stems[k] for k in range(s, e)}
    rest = p.claim_content - names
    main = _main_word(c, e)
    if len(rest) < 3 or main is None:
        return None
    b, shared = _best_sentence(p, rest)
    if b is None or shared < max(3, 0.6 * len(rest)) or main not in b.stems:
        return None
    theirs = _subject_run(b, c)
    if theirs is None:
        return None
    other = {b.stems[k] for k in range(*theirs)}
    shared = names & set(b.stems)
    # the sentence may share a family name ("Osric Tallent" for "Wenna Tallent"), not the name itself
    if shared and (not shared <= other or not other - names or not names - shared):
        return None
    if not other - set(c.stems) or any(_same_family(c.lower[k], b.lower[m]) for k in range(s, e)
                                       for m in range(*theirs) if c.stems[k] not in shared):
        return None  # "Matt Bomer" and "Matthew Staton Bomer"
    if any((names - shared) & set(t.stems) and len(rest & t.content()) >= 0.6 * len(rest) for t in p.sents):
        return None
    return Finding("swap", f"the claim says of {_span(c, list(range(s, e)))} what the premise says of "
                           f"{_span(b, list(range(*theirs)))}")


def _same_family(a: str, b: str) -> bool:
    """Two forms of one name: a shared beginning of three letters or more that is most of the shorter word."""
    n = len(os.path.commonprefix([a, b]))
    return n >= 3 and n >= 0.6 * min(len(a), len(b))


def _name_in_slot(p: _Pair) -> Finding | None:
    """A name the premise uses elsewhere, put where the sentence the rest of the claim aligns with has another
    name: the same verb or noun right before or after both ("a turboprop leased to Kestrel Aero Services"
    where that sentence says "leased to Baltavia" and Kestrel Aero Services did other work; "Pellbridge
    Aviation" for "Skyvane Aviation"; "the Tessford interchange" for "the Harrowgate interchange"), and no
    other sentence of the premise saying the name with that word. A preposition counts only with the word
    before it ("designed by", "imported from")."""
    c = p.claim
    k = 0
    while k < len(c.tokens):
        if not _named(c, k, p.premise):
            k += 1
            continue
        s = k
        while k < len(c.tokens) and _named(c, k, p.premise):
            k += 1
        run = {c.stems[m] for m in range(s, k)}
        rest = p.claim_content - run
        if not rest or not run <= p.premise_content:
            continue  # a name the premise never uses is the name rule's
        b, shared = _best_sentence(p, rest)
        if b is None or shared < max(2, 0.5 * len(rest)):
            continue
        found = _slot_taken(p, b, s, k)
        if found:
            return found
    return None


def _slot_taken(p: _Pair, b: _Text, s: int, e: int) -> Finding | None:
    """The claim's names at ``s:e`` (those ``b`` does not use) stand where ``b`` has another name, by the words
    beside them (:func:`_name_in_slot`)."""
    c = p.claim
    while s < e and c.stems[s] in b.stems:
        s += 1
    while e > s and c.stems[e - 1] in b.stems:
        e -= 1
    if s == e:
        return None
    theirs = [(s2, e2) for s2, e2 in _foreign_runs(b, c) if any(_is_content(b.lower[m]) for m in range(s2, e2))]
    ours = {c.stems[m] for m in range(s, e)}
    if any(_same_family(c.lower[k], b.lower[m]) for k in range(s, e) for s2, e2 in theirs for m in range(s2, e2)):
        return None  # Italy/Italian, Vedic/Vedas
    before, after = _slot_context(c, s, e)
    # the noun a name stands before ("the Tessford interchange") is its slot; otherwise the name is a noun's
    # modifier ("a British actress") and the word before it is not the slot's
    modifies = bool(after) and after[0] not in _SLOT_PREPOSITIONS and _is_content(after[0])
    for s2, e2 in theirs:
        before2, after2 = _slot_context(b, s2, e2)
        hit = None
        if modifies and after == after2:
            hit = after[0]
        elif before and before2 and before[0] == before2[0] and not modifies:
            if before[0] not in _SLOT_PREPOSITIONS and _is_content(before[0]):
                hit = before[0]
            elif before[0] in _SLOT_PREPOSITIONS and len(before) > 1 and len(before2) > 1 and before[1] == before2[1] \
                    and _is_content(before[1]):
                hit = before[1]
        if not hit or not any(tok.islower() and st == hit for tok, st in zip(c.tokens, c.stems)) \
                or not any(tok.islower() and st == hit for tok, st in zip(b.tokens, b.stems)):
            continue  # the word beside both is not itself a name ("Veltrix's Kessick fab")
        if any(ours <= set(t.stems) and hit in t.stems for t in p.sents if t is not b):
            continue  # the premise says it of this name too
        return Finding("swap", f"the claim has {_span(c, list(range(s, e)))} where its premise sentence has "
                               f"{_span(b, list(range(s2, e2)))}")
    return None


def _word_swapped(p: _Pair, cw: list[int], bw: list[int], ops: list) -> Finding | None:
    c, b = p.claim, p.best
    changed = [op for op in ops if op[0] in ("replace", "insert")]  # a "delete" is premise words the claim leaves out
    if len(changed) != 1 or changed[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = changed[0]
    kept = sum(j2_ - j1_ for tag, _, _, j1_, j2_ in ops if tag == "equal")
    if i2 - i1 != 1 or j2 - j1 != 1 or kept < 5 or kept < 0.8 * len(cw):
        return None
    kb, kc = bw[i1], cw[j1]
    pw, cw_ = b.lower[kb], c.lower[kc]
    if not (_is_content(pw) and _is_content(cw_)) or not (pw.isalpha() and cw_.isalpha()):
        return None  # numbers are the number rule's
    if c.stems[kc] in _antonym_stems().get(b.stems[kb], set()) or c.stems[kc] not in p.premise_content:
        return None  # opposites are the antonym rule's; a word the premise never uses may be a paraphrase
    if any(p.claim_content <= t.content() for t in p.sents if t is not b):
        return None  # another sentence of the premise holds every word of the claim
    return Finding("swap", f"the claim has {c.tokens[kc]!r} where its premise sentence has {b.tokens[kb]!r}")


_COORD = {"and", "or", "nor", "both", "also", "as", "well", "either"}
_DETERMINERS = {"the", "a", "an", "its", "their", "his", "her", "our", "this", "that", "these", "those"}


def _mostly_kept(ops: list, cw: list[int]) -> bool:
    """The claim keeps at least four of its premise sentence's words, and 60% of its own words are kept ones."""
    kept = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag == "equal")
    return kept >= 4 and kept >= 0.6 * len(cw)


def _kept_around(ops: list, n: int) -> tuple[int, int]:
    """The number of words kept right before and right after the ``n``-th change of an alignment."""
    nb = ops[n - 1][4] - ops[n - 1][3] if n > 0 and ops[n - 1][0] == "equal" else 0
    na = ops[n + 1][4] - ops[n + 1][3] if n + 1 < len(ops) and ops[n + 1][0] == "equal" else 0
    return nb, na


def _name_moved(p: _Pair, cw: list[int], bw: list[int], ops: list) -> Finding | None:
    """A name of the premise put in another name's place: the claim is its aligned premise sentence with the
    names in one slot replaced by names the premise uses elsewhere ("Dr. Samuel Okafor led the team" where
    the sentence says "Dr. Lena Ford led the team" and the next "her colleague, Dr. Samuel Okafor, designed
    the software"), or with the words between a slot and a later name of the sentence left out, so that the
    later name takes the slot ("was held in Argentina" from "was held in Brazil, and Germany won it by
    beating Argentina"; a list, "in Paris and Berlin", is left alone). ``cw``/``bw``: the word tokens of the
    claim and of its premise sentence, ``ops``: their alignment (:func:`_swap`)."""
    c, b = p.claim, p.best
    if not _mostly_kept(ops, cw):
        return None
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        nb, na = _kept_around(ops, n)
        # a slot is known by the words around it: at least three kept, some after it, some before unless it opens
        # (or none after it where it ends the claim and at least two words come before)
        slot = (na >= 1 and nb + na >= 3 and (nb >= 1 or (i1 == 0 and j1 == 0))) or (na == 0 and j2 == len(cw) and nb >= 2)
        if tag == "replace" and slot and na == 0:  # the claim ends in the slot: the sentence's name there, not what follows
            i2 = next((k for k in range(i1, i2) if not _named(b, bw[k], c)), i2)
        if tag == "replace" and slot and 0 < i2 - i1 <= 4 and j2 - j1 <= 4:
            theirs = [bw[k] for k in range(i1, i2)]
            ours = [cw[k] for k in range(j1, j2)]
            if theirs[0] == 0 and len(theirs) > 1 and b.tokens[0][0].isupper() and not _named(b, 0, c):
                theirs = theirs[1:]  # a title opening the sentence: "Striker Paulo Mendes scored twice"
            if (all(_named(c, k, p.premise) for k in ours) and all(_named(b, k, c) for k in theirs)
                    and not any(c.lower[k][:4] == b.lower[m][:4] for k in ours for m in theirs)  # Italy/Italian
                    and all(c.stems[k] in p.premise_content for k in ours)
                    and not any(p.claim_content <= t.content() for t in p.sents if t is not b)
                    and not (na == 0 and _said_elsewhere(p, {c.stems[k] for k in ours}))):
                return Finding("swap", f"the claim has {_span(c, ours)} where its premise sentence has {_span(b, theirs)}")
        if tag == "delete" and nb >= 2 and na >= 1:
            gone = [bw[k] for k in range(i1, i2)]
            moved = cw[ops[n + 1][3]]
            if (2 <= len(gone) <= 12 and _named(b, gone[0], c) and _named(c, moved, b)
                    and (any(_pivot(b, k) and b.lower[k - 1] not in _DETERMINERS for k in gone)
                         or any(b.lower[k] in ("and", "but", "while", "whereas") and b.lower[k + 1] in _DETERMINERS
                                and b.tokens[k - 1] == "," for k in gone[1:-1]))  # a new clause: ", and a smaller part"
                    and not {b.lower[k] for k in gone[-2:]} & _COORD):
                return Finding("swap", f"the claim has {c.tokens[moved]!r} where its premise sentence has "
                                       f"{b.tokens[gone[0]]!r} ({b.tokens[gone[0]]!r} ... {c.tokens[moved]!r} left out)")
    return None


def _number_moved(p: _Pair, cw: list[int], bw: list[int], ops: list) -> Finding | None:
    """A number of the premise put in another number's place: the claim is its aligned premise sentence with
    the number of one slot (a few words kept on either side) replaced by a number the premise gives for
    something else ("patients taking the drug had 1.4 fewer migraine days" where the sentence says 3.1 and
    the next says the placebo group had 1.4). ``cw``/``bw``/``ops``: as for :func:`_name_moved`."""
    c, b = p.claim, p.best
    if not _mostly_kept(ops, cw):
        return None
    elsewhere = {t.tokens[k].replace(",", "") for t in p.sents if t is not b for k in range(len(t.tokens))
                 if t.tokens[k][0].isdigit()}
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag != "replace" or i2 - i1 > 3 or j2 - j1 > 3:
            continue
        nb, na = _kept_around(ops, n)
        if not (nb >= 2 and na >= 1 or nb >= 1 and na >= 2):
            continue
        theirs = [b.tokens[bw[k]].replace(",", "") for k in range(i1, i2) if b.tokens[bw[k]][0].isdigit()]
        ours = [c.tokens[cw[k]].replace(",", "") for k in range(j1, j2) if c.tokens[cw[k]][0].isdigit()]
        if len(theirs) == 1 and len(ours) == 1 and theirs != ours and ours[0] in elsewhere \
                and ours[0] not in {t.replace(",", "") for t in b.tokens}:
            return Finding("swap", f"the claim has {ours[0]} where its premise sentence has {theirs[0]}, a number the "
                                   "premise gives for something else")
    return None


def _said_elsewhere(p: _Pair, names: set[str]) -> bool:
    """Another sentence of the premise holds the names together with a verb of the claim ("portraying ...
    Sophia Amoruso" for "portrayed the role of Sophia Amoruso")."""
    verbs = {s for k, s in enumerate(p.claim.stems) if _pivot(p.claim, k) and _is_content(p.claim.lower[k])}
    return any(names <= set(t.stems) and verbs & set(t.stems) for t in p.sents if t is not p.best)


def _span(t: _Text, ks: list[int]) -> str:
    return "'" + " ".join(t.tokens[k] for k in ks) + "'"


def _pivot(t: _Text, i: int) -> bool:
    """A verb or comparative: a past form, a verb after an auxiliary, or a word followed by "than"."""
    w = t.lower[i]
    nxt = t.lower[i + 1] if i + 1 < len(t.lower) else ""
    prev = t.lower[i - 1] if i else ""
    if nxt == "than" or prev in ("more", "less"):
        return True
    if w.endswith("ed") and len(w) > 4:
        return True
    if w in _IRREGULAR_PARTICIPLES or w in {"beat", "bought", "sold", "won", "led", "met", "took", "gave", "told",
                                            "caught", "brought", "built", "chose", "ate", "fought", "found", "paid",
                                            "saw", "sent", "owns", "leads", "beats", "follows", "employs", "precedes"}:
        return True
    return prev in {"will", "would", "can", "could", "did", "does", "do", "to"} and w.isalpha()


def _joined(t: _Text, a: int, z: int) -> bool:
    """The two words are listed together ("A and B met"): a symmetric reading, not a role."""
    between = t.lower[a + 1: z]
    return any(w in ("and", "with", "between", "both", "each", "other") for w in between) and len(between) <= 2


def _show(t: _Text, stems: set[str]) -> str:
    words = []
    for tok, s in zip(t.tokens, t.stems):
        if s in stems and tok not in words:
            words.append(tok)
    return "'" + " ".join(words[:4]) + "'"


RULES = {"negation": _negation, "antonym": _antonym, "number": _number, "name": _name, "role": _role, "swap": _swap}


def find_conflicts(premise: str, claim: str, rules: Sequence[str] = tuple(RULES)) -> list[Finding]:
    """The conflicts :data:`RULES` find between ``claim`` and ``premise`` (empty: none found)."""
    if not premise.strip() or not claim.strip():
        return []
    p = _Pair(premise, claim)
    out = []
    for name in rules:
        f = RULES[name](p)
        if f is not None:
            out.append(f)
    return out


class CheckedVerifier(Verifier):
    """A base verifier whose score is capped at ``cap`` for a pair :func:`find_conflicts` flags: the pair
    cannot be called supported, nor partly supported (the stage's partial threshold is 0.2 as scored; a
    calibration shows both higher, in the same order: ``tests/test_calibration.py``). The base keeps the
    cache and the counters (``stats`` is the base's); ``flagged`` counts the capped pairs, per kind in
    ``flagged_by``."""

    def __init__(self, base: Verifier, cap: float = 0.1, rules: Sequence[str] = tuple(RULES)):
        unknown = [r for r in rules if r not in RULES]
        if unknown:
            raise ValueError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join(RULES)}")
        super().__init__(spec=f"{base.spec}+checks", threshold=base.threshold, batch_size=base.batch_size)
        self.base, self.cap, self.rules = base, float(cap), tuple(rules)
        self.stats = base.stats
        self.flagged = 0
        self.flagged_by: dict[str, int] = {}
        self._found: dict[Pair, list[Finding]] = {}
        self._explained: dict[Pair, list[Finding]] = {}  # what explain() looked for outside scoring (not counted)

    def _score(self, pairs: list[Pair]) -> list[float]:
        scores = self.base._score(pairs)  # cached, counted and recorded once, by the base
        out = []
        with self._lock:
            for pair, s in zip(pairs, scores):
                if s > self.cap and self._conflicts(pair):
                    s = self.cap
                out.append(s)
        return out

    def _conflicts(self, pair: Pair) -> list[Finding]:
        found = self._found.get(pair)
        if found is None:
            found = self._found[pair] = find_conflicts(pair[0], pair[1], self.rules)
            if found:
                self.flagged += 1
                for f in found:
                    self.flagged_by[f.kind] = self.flagged_by.get(f.kind, 0) + 1
        return found

    def explain(self, premise: str, claim: str) -> list[Finding]:
        """Why a pair is capped (empty: it is not); read from what scoring found when it looked, else
        looked for now (and kept: ``+lm`` asks about pairs scoring did not look at, those the base scored
        at or below the cap)."""
        pair = (premise, claim)
        with self._lock:
            found = self._found.get(pair, self._explained.get(pair))
        if found is None:
            found = find_conflicts(premise, claim, self.rules)
            with self._lock:
                self._explained[pair] = found
        return list(found)

    def clear_cache(self) -> None:
        with self._lock:
            self._found.clear()
            self._explained.clear()
        self.base.clear_cache()

    def __getattr__(self, name: str):  # the base's settings: max_length, max_windows, device, quantized, ...
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)
