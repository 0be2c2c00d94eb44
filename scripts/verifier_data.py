"""The default verifier's training data recipe: readers for the extra sets and the minimal-pair
hard negatives built from supported training pairs (used by scripts/train_verifier.py).

Every synthetic negative changes ONE thing in a supported claim, so that the model cannot take the
shortcut "the claim's words are in the premise → supported":

* ``negation``      an auxiliary gets "not" (or loses it), "never"/"no longer" dropped, or a polarity
                    verb/adjective flipped (increased ↔ decreased, won ↔ lost, approved ↔ rejected, ...)
* ``role_swap``     two names of the claim trade places ("Google acquired YouTube" → "YouTube acquired
                    Google"), or the two sides of a comparison ("more than", "before", ...)
* ``entity_swap``   a name replaced by another name of the premise (the hard case) or of another premise
* ``number``        a number, year or month changed (or swapped for another of the premise)
* ``added_detail``  a time, place or qualifier phrase the premise does not state is added to the claim

Each negative keeps the id of the positive it came from (``pair_of``), so that the trainer can put
both in one batch. Nothing here reads the sets kept apart for acceptance (../shared/data/README.md).
"""

from __future__ import annotations

import collections
import json
import random
import re
from pathlib import Path

_WORD = re.compile(r"\w+")
_NUM = re.compile(r"(?<![\w\-.])\d+(?:[.,]\d+)?(?![\w\-])")  # not the 19 of COVID-19
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
# a name: capitalised words (with "of"/"de"/"the" inside), not at the very start of the sentence
_NAME = re.compile(r"(?<=[\s(\"'])(?:[A-Z][\w'\-]*[a-z][\w'\-]*)(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w'\-]*)*")
_AUX = re.compile(r"\b(is|are|was|were|will|can|could|would|should|has|have|had|does|did|do|may|must|might)\b(?! not\b)(?!n't)")
_PAST = re.compile(r"(?<=\s)[a-z]{3,}ed\b")
_NEG_DEL = re.compile(r"\b(?:not |never |no longer )|n't\b")
_LIST_WORDS = {"and", "or", "nor", "but", "with", "plus", "the"}
_CAP_STOP = set("The A An In On At For By From With This That These Those It Its He She They His Her Their "
                "However But And Or If When While After Before During Since Although".split())
# polarity pairs: each maps both ways
_FLIPS = [("increased", "decreased"), ("increase", "decrease"), ("increases", "decreases"), ("rose", "fell"),
          ("rise", "fall"), ("won", "lost"), ("win", "lose"), ("wins", "loses"), ("approved", "rejected"),
          ("accepted", "rejected"), ("allowed", "banned"), ("succeeded", "failed"), ("opened", "closed"),
          ("began", "ended"), ("gained", "lost"), ("higher", "lower"), ("larger", "smaller"), ("more", "fewer"),
          ("before", "after"), ("first", "last"), ("earlier", "later"), ("older", "younger"),
          ("supported", "opposed"), ("support", "oppose"), ("raised", "lowered"), ("expanded", "reduced"),
          ("improved", "worsened"), ("positive", "negative"), ("true", "false"), ("alive", "dead"),
          ("male", "female"), ("north", "south"), ("east", "west"), ("joined", "left"), ("bought", "sold"),
          ("always", "never"), ("included", "excluded"), ("confirmed", "denied"), ("legal", "illegal"),
          ("possible", "impossible"), ("likely", "unlikely"), ("able", "unable"), ("common", "rare"),
          ("strong", "weak"), ("best", "worst"), ("maximum", "minimum"), ("highest", "lowest")]
_FLIP = {a: b for a, b in _FLIPS} | {b: a for a, b in _FLIPS}
_FLIP_RE = re.compile(r"\b(" + "|".join(sorted(_FLIP, key=len, reverse=True)) + r")\b", re.I)
_COMPARE = re.compile(r"^(?P<a>.+?)\s+(?P<rel>(?:is|was|are|were)\s+(?:\w+er|more \w+|less \w+)\s+than|"
                      r"(?:came|happened|was born|died)\s+(?:before|after))\s+(?P<b>[^,.;]+?)(?P<end>[.;,]?)$")
_DETAIL_TEMPLATES = ["for the first time", "for the second time", "in {year}", "in {place}", "in {month} {year}",
                     "after {number} years", "only", "mainly because of {thing}", "with the help of {name}",
                     "at the age of {age}"]


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def names_in(text: str) -> list[str]:
    out = []
    for m in _NAME.finditer(" " + text):
        n = m.group(0).strip()
        if m.start() <= 1:  # the first word of a sentence is capitalised anyway: not known to be a name
            continue
        if n.split()[0] not in _CAP_STOP and len(n) > 2:
            out.append(n)
    return list(dict.fromkeys(out))


def _sub_once(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _match_case(old: str, new: str) -> str:
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


# ------------------------------------------------------------------------------------------------
def negation(premise: str, hyp: str, rng: random.Random) -> str | None:
    options = []
    m = _NEG_DEL.search(hyp)
    if m:
        options.append(_sub_once(hyp, m.start(), m.end(), "").replace("  ", " ").replace(" .", "."))
    m = _AUX.search(hyp)
    if m:
        options.append(_sub_once(hyp, m.end(), m.end(), " not"))
    elif not _NEG_DEL.search(hyp):  # no auxiliary: "never" before the first past-tense verb ("The drug reduced" → "The drug never reduced")
        m = _PAST.search(hyp)
        if m and m.start() > 0:
            options.append(_sub_once(hyp, m.start(), m.start(), "never "))
    flips = list(_FLIP_RE.finditer(hyp))
    if flips:
        f = rng.choice(flips)
        new = _match_case(f.group(0), _FLIP[f.group(0).lower()])
        if new.lower() not in words(premise) or new.lower() not in words(hyp):
            options.append(_sub_once(hyp, f.start(), f.end(), new))
    options = [o for o in options if o != hyp]
    return rng.choice(options) if options else None


_IRREGULAR = ("beat|bought|sold|won|hit|led|met|left|took|gave|told|taught|caught|brought|built|chose|drove|ate|"
              "fed|fought|found|hired|kept|paid|saw|sent|struck|overtook|outsold|outran|succeeded|replaced|"
              "defeated|acquired|founded|sued|signed|married|interviewed|trained|employs|owns|leads|beats|follows")
_VERB = re.compile(r"\b(?:[a-z]{3,}ed|" + _IRREGULAR + r")\b")
_NP_END = re.compile(r"\s(?:in|on|at|for|from|with|after|before|during|by|to|of|because|when|while|since|and|but|"
                     r"who|which|that)\b|[,;.:!?]")


_NP_START = {"the", "a", "an", "this", "that", "these", "those", "his", "her", "their", "its", "our", "my", "your",
             "one", "two", "three", "some", "many", "most", "several", "both", "each", "every", "no"}
_NOT_IN_NP = {"is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "will", "would", "can", "could",
              "may", "might", "must", "should", "shall", "do", "does", "did", "not", "to", "also", "then", "that", "which",
              "who", "than", "as", "if", "when", "while", "because", "and", "or", "but", "there", "here"}


def _noun_phrase(np: str, first: bool) -> bool:
    """A plain noun phrase: a determiner, a possessive or a name first; no auxiliary, adverb, clause word or
    punctuation inside (heuristics: no tagger ships here)."""
    ws = np.split()
    if not ws or any(ch in np for ch in ',;:()[]"“”‘’*'):
        return False
    lead = ws[0].lower()
    is_name = all(w[:1].isupper() for w in ws if w.lower() not in ("of", "de", "van", "von"))
    if not (lead in _NP_START or ws[0].endswith("'s") or is_name):
        return False
    if first and lead in _NP_START and len(ws) == 1:
        return False
    return not any(w.lower() in _NOT_IN_NP or (w.endswith("ly") and len(w) > 4) for w in ws[1:])


def np_swap(hyp: str) -> str | None:
    """The subject and the object of the first transitive verb trade places ("The veterinarian examined
    the farmer's dog after ..." → "The farmer's dog examined the veterinarian after ...")."""
    text = hyp.strip()
    m = _VERB.search(text)
    if not m or m.start() == 0:
        return None
    subj = text[: m.start()].strip()
    rest = text[m.end():]
    e = _NP_END.search(rest)
    obj = (rest[: e.start()] if e else rest).strip()
    tail = rest[e.start():] if e else ""
    if not (1 <= len(subj.split()) <= 5 and 1 <= len(obj.split()) <= 6) or subj.lower() == obj.lower():
        return None
    if not (_noun_phrase(subj, first=True) and _noun_phrase(obj, first=False)):
        return None  # "Research has | found | a human influence": an auxiliary or adverb, not a subject
    if any(w.lower() in ("it", "he", "she", "they", "we", "i", "you", "this", "there") for w in subj.split()[:1]):
        return None  # a pronoun subject does not make a swapped object
    if any(c.isdigit() for c in subj + obj):
        return None

    def as_start(np: str) -> str:
        return np[:1].upper() + np[1:]

    def as_object(np: str) -> str:
        first = np.split()[0]
        common = ("a", "an", "the", "most", "many", "some", "all", "several", "both", "each", "every", "no")
        return np[:1].lower() + np[1:] if first in _CAP_STOP or first.lower() in common else np

    return f"{as_start(obj)} {m.group(0)} {as_object(subj)}{tail}"


def role_swap(premise: str, hyp: str, rng: random.Random) -> str | None:
    m = _COMPARE.match(hyp.strip())
    if m and rng.random() < 0.5:  # the two sides of a comparison
        a, b = m.group("a"), m.group("b").strip()
        a = a[:1].lower() + a[1:] if a.split()[0] in _CAP_STOP else a
        return f"{b[:1].upper() + b[1:]} {m.group('rel')} {a}{m.group('end')}"
    swapped = np_swap(hyp)  # subject and object: the cleaner swap where the sentence has one
    if swapped and rng.random() < 0.7:
        return swapped
    names = [n for n in names_in(hyp) if n.lower() in premise.lower()]
    if len(names) < 2:
        return swapped
    a, b = rng.sample(names, 2)
    if a in b or b in a:
        return None
    i, j = sorted((hyp.index(a), hyp.index(b)))
    between = hyp[i:j].split()[1:]
    if not any(len(w) > 2 and w.islower() and w not in _LIST_WORDS for w in between):  # "Wuhan, China", "A and B"
        return None  # a list, not two roles
    out = hyp.replace(a, "\0").replace(b, a).replace("\0", b)
    return out if out != hyp else None


def entity_swap(premise: str, hyp: str, rng: random.Random, bank: list[str]) -> str | None:
    hn = names_in(hyp)
    if not hn:
        return None
    old = rng.choice(hn)
    in_prem = [n for n in names_in(premise) if n not in hn and n.lower() not in hyp.lower() and old not in n and n not in old]
    pool = in_prem if in_prem and rng.random() < 0.6 else [n for n in rng.sample(bank, min(20, len(bank)))
                                                            if n.lower() not in premise.lower() and n != old]
    if not pool:
        return None
    return hyp.replace(old, rng.choice(pool), 1)


def number(premise: str, hyp: str, rng: random.Random) -> str | None:
    months = list(_MONTH.finditer(hyp))
    nums = list(_NUM.finditer(hyp))
    if months and (not nums or rng.random() < 0.3):
        m = rng.choice(months)
        return _sub_once(hyp, m.start(), m.end(), rng.choice([x for x in _MONTHS if x != m.group(0)]))
    if not nums:
        return None
    m = rng.choice(nums)
    old = m.group(0)
    others = sorted(set(_NUM.findall(premise)) - {old})
    if others and rng.random() < 0.4:
        new = rng.choice(others)
    else:
        v = float(old.replace(",", ""))
        if v.is_integer():
            iv = int(v)
            delta = rng.choice([1, 2, 3, 5, 10]) if 1000 < iv < 2100 else rng.choice([1, 2, 3, 10, iv or 1])
            new = str(iv + rng.choice([-1, 1]) * delta if iv - delta > 0 else iv + delta)
        else:
            new = f"{v * rng.choice([0.5, 1.5, 2, 0.8]):g}"
    return _sub_once(hyp, m.start(), m.end(), new) if new != old else None


def added_detail(premise: str, hyp: str, rng: random.Random, bank: list[str]) -> str | None:
    pw = words(premise)
    fill = {
        "year": str(rng.randint(1850, 2024)),
        "month": rng.choice(_MONTHS),
        "number": str(rng.randint(2, 40)),
        "age": str(rng.randint(18, 80)),
        "place": rng.choice(bank) if bank else "Paris",
        "name": rng.choice(bank) if bank else "John Smith",
        "thing": rng.choice(["rising costs", "public pressure", "a lack of funding", "bad weather", "new rules",
                             "a court ruling", "health problems", "strong demand"]),
    }
    tmpl = rng.choice(_DETAIL_TEMPLATES)
    phrase = tmpl.format(**fill)
    if words(phrase) <= pw:  # the premise already says it
        return None
    body = hyp.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else ""
    body = body[:-1] if end else body
    if tmpl == "only":
        m = _AUX.search(body)
        if not m:
            return None
        return _sub_once(body, m.end(), m.end(), " only") + end
    return f"{body} {phrase}{end}"


RULES = ("negation", "role_swap", "entity_swap", "number", "added_detail")


def perturb(premise: str, hyp: str, rule: str, rng: random.Random, bank: list[str]) -> str | None:
    if rule == "negation":
        return negation(premise, hyp, rng)
    if rule == "role_swap":
        return role_swap(premise, hyp, rng)
    if rule == "entity_swap":
        return entity_swap(premise, hyp, rng, bank)
    if rule == "number":
        return number(premise, hyp, rng)
    return added_detail(premise, hyp, rng, bank)


def minimal_pair_negatives(rows: list[dict], n: int, rng: random.Random, per_row: int = 2,
                           rules: tuple[str, ...] = RULES) -> tuple[list[dict], dict]:
    """Up to ``n`` negatives, one changed detail each, from the entailed rows (at most ``per_row`` of
    different ``rules`` from one row). The rules with the fewest negatives so far are tried first, so the
    rarer ones (role swaps fit fewer claims) are not crowded out; a negative carries ``pair_of`` = the
    index in ``rows`` of the supported pair it came from."""
    pos = [i for i, r in enumerate(rows) if r["y"] == 1 and 3 <= len(r["hypothesis"].split()) <= 60]
    rng.shuffle(pos)
    bank = sorted({nm for r in rows[:20000] for nm in names_in(r["hypothesis"])})
    out, by_rule = [], collections.Counter()
    quota = {rule: n // len(rules) + (1 if k < n % len(rules) else 0) for k, rule in enumerate(rules)}
    for i in pos:
        if len(out) >= n:
            break
        r = rows[i]
        todo = [rule for rule in rules if by_rule[rule] < quota[rule]]
        rng.shuffle(todo)
        todo.sort(key=lambda rule: by_rule[rule] / max(quota[rule], 1))
        made = 0
        for rule in todo:
            hyp = perturb(r["premise"], r["hypothesis"], rule, rng, bank)
            if hyp and hyp.strip() != r["hypothesis"].strip():
                by_rule[rule] += 1
                out.append({"premise": r["premise"], "hypothesis": hyp, "label": "synthetic_negative",
                            "source": "synthetic/" + rule, "y": 0, "pair_of": i})
                made += 1
                if made >= per_row or len(out) >= n:
                    break
    return out, dict(sorted(by_rule.items()))


# ------------------------------------------------------------------------------------------------
def read_fever_nli(path: Path, n: int, rng: random.Random) -> list[dict]:
    """FEVER-NLI (binary, TSV ``label<TAB>premise<TAB>hypothesis``): a seeded sample of ``n`` rows
    (all when n < 0). Only dev.txt is for training; test.txt is the benchmark's."""
    if path.name.startswith("test"):
        raise ValueError("FEVER-NLI test.txt is kept for measurement, never for training")
    rows = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                continue
            lab, p, h = parts
            rows.append({"premise": p, "hypothesis": h, "label": lab, "source": "fever_nli/dev",
                         "y": int(lab == "entailment")})
    rng.shuffle(rows)
    return rows if n < 0 else rows[:n]


def read_factcg(folder: Path, n: int, rng: random.Random) -> list[dict]:
    """FactCG's synthetic pairs (``text_a`` document, ``text_b`` a one-claim list, ``orig_label``);
    claims without a document (most multi-hop rows) are skipped."""
    rows = []
    for name in ("CG2C_doc.json", "CG2C_musique_minhop3.json"):
        path = folder / name
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                doc = (r.get("text_a") or "").strip()
                claims = r.get("text_b")
                if isinstance(claims, str):
                    try:
                        claims = json.loads(claims.replace("\\'", "'")) if claims.startswith('["') else eval_list(claims)
                    except ValueError:
                        claims = [claims]
                if not doc or not claims:
                    continue
                rows.append({"premise": doc, "hypothesis": str(claims[0]), "label": str(r.get("orig_label")),
                             "source": "factcg/" + name.split(".")[0], "y": int(str(r.get("orig_label")) == "1")})
    rng.shuffle(rows)
    return rows if n < 0 else rows[:n]


def eval_list(text: str) -> list[str]:
    """A Python list literal of strings (FactCG writes ``"['claim']"``), read without eval."""
    import ast

    v = ast.literal_eval(text)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"not a list of strings: {text[:80]!r}")
    return v


def long_premises(rows: list[dict], n: int, rng: random.Random, max_words: int = 380) -> list[dict]:
    """Pairs whose short premise is put in the middle of 150-380 words of other premises of the same
    source (the label stays: the added sentences are about other things). The trainer then cuts the
    long premise into windows as inference does, so the model learns to find support mid-passage."""
    by_src = collections.defaultdict(list)
    for r in rows:
        if len(r["premise"].split()) < 60:
            by_src[r["source"]].append(r)
    cands = [r for rs in by_src.values() for r in rs if len(rs) > 20]
    rng.shuffle(cands)
    out = []
    for r in cands[:n]:
        others = by_src[r["source"]]
        before, after, budget = [], [], rng.randint(150, max_words)
        while sum(len(x.split()) for x in before + after) < budget:
            o = rng.choice(others)["premise"]
            if o != r["premise"]:
                (before if rng.random() < 0.5 else after).append(o)
        out.append({**r, "premise": " ".join(before + [r["premise"]] + after), "source": "synthetic/long_premise"})
    return out


# ------------------------------------------------------------------------------------------------
# Supported claims shorter than their premise sentence. A model trained with "added detail" and
# "entity swap" negatives learns that a claim whose words are not contiguous in the premise is
# unsupported, and starts rejecting "Paris is the capital of France." from "Paris is the capital and
# most populous city of France."; these positives teach that a claim may say less than its sentence.
_CLAUSE_CUT = re.compile(r",\s+(?:which|who|whose|where|and|while|whereas|making|leading|including|as well as)\s")
_ASIDE = re.compile(r",\s+(?!(?:unless|if|except|although|though|not|no|never|without|but|or|nor|only)\b)"
                    r"([^,;:()]{3,60}?),\s+")
_LEAD = re.compile(r"^(?:In|On|By|During|After|Before|Since|Since the|Between|From|At)\s[^,]{2,40},\s+(?=[A-Z])")
_COORD = re.compile(r"\b(the|a|an|its|his|her|their)\s+((?:\w+\s){0,2}?\w+)\s+and\s+((?:\w+\s){0,2}?\w+)\s+(of|in|for)\s")
_NEGATING = re.compile(r"\b(?:not|no|never|n't|without|neither|nor|unless|except|only|if|may|might|could|"
                       r"would|claimed|alleged|reportedly|rumou?red|denied|false)\b", re.I)


def _sentence_like(text: str) -> bool:
    ws = text.split()
    return 5 <= len(ws) <= 40 and text[:1].isupper() and any(_VERB.search(" " + w) or _AUX.search(w) for w in ws)


_FUNCTION = {"of", "in", "on", "at", "to", "for", "the", "a", "an", "and", "or", "by", "with", "from", "as"}
_SUBORDINATE = re.compile(r"^(?:Despite|Although|Though|While|When|Whenever|If|Unless|Because|As|Since|"
                          r"After|Before|Until|Once|Whereas|With|Without|For|By|To|That|Which|Who)\b")
_AUX_WORD = re.compile(r"\b(?:is|are|was|were|be|been|has|have|had|will|can|does|did)\b")


def shorten(sentence: str, rng: random.Random) -> str | None:
    """One supported claim made from a sentence by saying less: the clause after ", which/and/..." cut,
    an aside between commas dropped, a leading time or place phrase dropped ("In 1998, "), or one of two
    coordinated nouns kept ("the capital and most populous city of" → "the capital of"). ``None`` when
    no cut keeps a plain sentence, or the sentence hedges or negates (a cut could change what it
    asserts), or opens with a subordinate clause (a cut could leave only the condition)."""
    s = " ".join(sentence.split())
    if _NEGATING.search(s) or not s.endswith(".") or _SUBORDINATE.match(s) or "(" in s or ";" in s:
        return None
    cuts = []
    m = _CLAUSE_CUT.search(s)
    if m and m.start() > 20 and s[: m.start()].count(",") == 0:
        cuts.append(s[: m.start()] + ".")
    m = _ASIDE.search(s)
    if (m and s.count(",") == 2 and m.start() > 3 and not re.search(r"\b(?:and|or)\b|\d", m.group(1))
            and not _AUX_WORD.search(m.group(1)) and not s[m.start() - 1].isdigit()):
        cuts.append(s[: m.start()] + " " + s[m.end():])
    m = _LEAD.match(s)
    if m and re.search(r"\d|^\w+\s+(?:the\s+)?[A-Z]", m.group(0)) and s.count(",") == 1:
        rest = s[m.end():]
        cuts.append(rest[:1].upper() + rest[1:])
    m = _COORD.search(s)
    if m and not (set(m.group(2).split()) | set(m.group(3).split())) & _FUNCTION:
        keep = m.group(2) if rng.random() < 0.5 else m.group(3)
        cuts.append(s[: m.start()] + f"{m.group(1)} {keep} {m.group(4)} " + s[m.end():])
    cuts = [c for c in cuts if _sentence_like(c) and c != s and len(c.split()) <= len(s.split()) - 2
            and not _SUBORDINATE.match(c)]
    return rng.choice(cuts) if cuts else None


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def sub_claims(rows: list[dict], n: int, rng: random.Random) -> list[dict]:
    """Up to ``n`` supported pairs: a premise of ``rows`` (any label: the premise is text, the claim is
    made from it) and one of its sentences shortened by :func:`shorten`. At most one per premise."""
    seen, out = set(), []
    order = list(range(len(rows)))
    rng.shuffle(order)
    for i in order:
        if len(out) >= n:
            break
        premise = rows[i]["premise"]
        if premise in seen or len(premise.split()) > 400:
            continue
        seen.add(premise)
        sents = [x for x in _SPLIT.split(premise) if 8 <= len(x.split()) <= 60]
        rng.shuffle(sents)
        for sent in sents[:3]:
            claim = shorten(sent, rng)
            if claim:
                out.append({"premise": premise, "hypothesis": claim, "label": "synthetic_entailed",
                            "source": "synthetic/sub_claim", "y": 1})
                break
    return out
