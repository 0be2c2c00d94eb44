"""The attribution stage every graph ends with (Context knob ``attribution``: off / repair / strict).

RAAC's CitationAgent (Validator + Simplifier + Discovery) generalised to any answer, with the
verifier alone (no LLM call):

1. **Keep** what the verifier supports: every non-empty subset of a sentence's citations (at most
   ``max_docs``) is scored with the concatenated cited documents as the premise (ALCE's joint
   semantics); the smallest entailing subset is kept (ties: smallest sum of indices, as RAAC's
   Simplifier).
2. **Re-point / add**: a sentence whose citations do not entail it (or that has none) is scored
   against each document alone; the best entailing document becomes its citation. When no single
   document entails it, pairs (and the triple) of its three best documents are checked jointly — a
   sentence that joins two facts needs both.

   A document supports a sentence when the whole document entails it *or one of its sentences
   does* (what a sentence of a document entails, the document entails; the small cross-encoders we
   ship miss a supported sentence inside a longer premise surprisingly often: ``default`` gives 0.007
   to a sentence copied verbatim when the premise adds one more sentence after it). A set of
   documents is checked as ALCE does (the documents concatenated) and as the concatenation of each
   document's best sentence.
3. **Status**: ``supported`` (the kept set entails the sentence), ``partial`` (the best set scores at
   least ``partial`` but below the verifier's threshold: that set is cited and marked; ``partial`` is by
   default the verifier's own, chosen on held-out development pairs with its calibration),
   ``unsupported`` (nothing comes close: the sentence keeps no citation and is flagged). ``strict``
   then drops the unsupported sentences; the trace keeps them.
4. **Evidence**: for each kept citation the document sentence that best supports the answer
   sentence becomes an :class:`~citegraph.state.answer.Evidence` with its score (evidence a method
   attached itself, e.g. SQuAI's supporting sentences, is kept while its document stays cited).

5. **Second opinion** (a verifier that has one, e.g. ``default+checks+lm``): steps 1-3 run on the
   first verifier's scores alone; then only the pair that decided each sentence's status (the score
   its status rests on) goes to the second verifier where the first is unsure, and the sentences are
   decided again on the revised scores. A pair that was revised down can hand the decision to another
   pair, which gets its own second opinion in the next round (at most ``SECOND_ROUNDS``).

**Questions.** A sentence that asks ("Why are some pills different colours?") claims nothing, so no
document can support it, yet a cross-encoder scores a question against an on-topic passage as entailed.
The stage checks no question: it is flagged ``unsupported`` with no citation (action ``question``, score
0, the reason in ``conflicts``), and ``strict`` drops it like any unsupported sentence.

All scoring goes through three batched ``verifier.score`` calls per answer at most (the sentences'
own citations; the other documents for the sentences left unsupported; joint sets), plus one call of
the second verifier per round of step 5, and the verifier de-duplicates and caches pairs. What was done
to each sentence is recorded in ``answer.metadata["attribution"]`` (``SentenceAttribution`` records plus
the counts, and ``second_opinions``: the pairs the second verifier was asked about).
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from langgraph.runtime import Runtime

from citegraph.state import AttributedAnswer, CitedSentence, Document, Evidence
from citegraph.state.attribution import QUESTION_REASON, SentenceAttribution, SubsetCheck
from citegraph.tools.progress import emit
from citegraph.tools.sentences import is_question, split_sentences
from citegraph.tools.verifier import get_verifier
from citegraph.tools.verifier.base import DEFAULT_PARTIAL
from citegraph.tools.verifier.hf import top_windows

MAX_CITATIONS = 3
JOINT_POOL = 3  # the best single documents whose pairs/triple are checked jointly
#: a document's sentences checked alone against an answer sentence: the ones sharing the most words
#: with it (the Context knob ``attribution_sentences``)
SENTENCE_CANDIDATES = 4
#: rounds of second opinions on the deciding pairs (step 5), for a verifier that has a second opinion
SECOND_ROUNDS = 3


# --------------------------------------------------------------------------- shared with RAAC
def premise(documents: list[Document], subset: Sequence[int]) -> str:
    """The verifier premise for a set of 1-based document indices (sorted, newline-joined)."""
    return "\n".join(documents[i - 1].as_premise() for i in sorted(subset))


def subsets(citations: list[int], cap: int = MAX_CITATIONS) -> list[tuple[int, ...]]:
    """Every non-empty subset of (at most the first ``cap``) citations, ordered by the Simplifier's
    preference: fewer documents first, then the smallest sum of indices, then lexicographic."""
    cits = sorted(dict.fromkeys(citations[:cap]))
    out = [c for r in range(1, len(cits) + 1) for c in itertools.combinations(cits, r)]
    return sorted(out, key=lambda s: (len(s), sum(s), s))


def _preference(s: Sequence[int]) -> tuple:
    return (len(s), sum(s), tuple(s))


def minimal_subset(checks: list[SubsetCheck]) -> list[int]:
    """The Simplifier's choice among the entailing subsets (empty when none entails)."""
    ok = [tuple(c.subset) for c in checks if c.entails]
    return list(min(ok, key=_preference)) if ok else []


def subset_checks(verifier, documents: list[Document], text: str, subs: list[tuple[int, ...]]) -> list[SubsetCheck]:
    """One sentence against each document subset as the premise, in one batched verifier call."""
    scores = verifier.score([(premise(documents, sub), text.strip()) for sub in subs])
    return [SubsetCheck(subset=list(sub), score=round(float(sc), 4), entails=sc >= verifier.threshold)
            for sub, sc in zip(subs, scores)]


# --------------------------------------------------------------------------- the stage
def _best(checks: list[SubsetCheck]) -> SubsetCheck | None:
    """The highest-scoring set (ties: the smaller / earlier one)."""
    return min(checks, key=lambda c: (-c.score, *_preference(c.subset))) if checks else None


class _Scorer:
    """Collects (premise, hypothesis) pairs, scores them in one batched call, and reads them back. With a
    verifier that has a second opinion (``first_opinion`` / ``second_opinion``), pairs are scored by its
    first verifier alone; :meth:`revise` asks the second one about the pairs the stage names."""

    def __init__(self, verifier):
        self.verifier = verifier
        self.first = getattr(verifier, "first_opinion", verifier.score)
        self.second = getattr(verifier, "second_opinion", None)
        self.pairs: list[tuple[str, str]] = []
        self.scores: dict[tuple[str, str], float] = {}
        self.revised: set[tuple[str, str]] = set()  # pairs the second verifier was asked about (or not unsure of)
        self.asked = 0  # pairs the second verifier scored

    def want(self, premise_text: str, hypothesis: str) -> tuple[str, str]:
        pair = (premise_text, hypothesis.strip())
        if pair not in self.scores:
            self.pairs.append(pair)
        return pair

    def run(self) -> None:
        todo = list(dict.fromkeys(p for p in self.pairs if p not in self.scores))
        self.pairs = []
        if todo:
            self.scores.update(zip(todo, (float(x) for x in self.first(todo))))

    def revise(self, pairs: list[tuple[str, str]]) -> bool:
        """The second opinion on ``pairs`` (each asked once per answer); True when a score changed."""
        pairs = [p for p in dict.fromkeys(pairs) if p not in self.revised]
        if self.second is None or not pairs:
            return False
        self.revised.update(pairs)
        new = self.second(pairs, [self.scores[p] for p in pairs])
        self.asked += len(new)
        changed = False
        for k, v in new.items():
            changed |= v != self.scores[pairs[k]]
            self.scores[pairs[k]] = float(v)
        return changed

    def __getitem__(self, pair: tuple[str, str]) -> float:
        return self.scores[pair]


Decision = tuple[list[int], float, str]  # (kept citations, score, action) of one answer sentence


class _Attribution:
    """One answer under the stage: its sentences, the documents each may cite, the pairs scored so far
    (:class:`_Scorer`), and the steps :func:`attribute_answer` runs in order: :meth:`keep_own`,
    :meth:`repoint`, :meth:`check_jointly`, :meth:`second_opinions` (which re-runs the first three on revised
    scores), :meth:`sentences_out`. ``decided[i]`` is sentence ``i``'s
    decision once a step has made it; later steps leave it alone."""

    def __init__(self, answer: AttributedAnswer, verifier, *, max_docs: int, candidates: list[list[int]] | None,
                 sentences: int) -> None:
        self.docs = docs = answer.documents
        self.n = n = len(docs)
        self.thr = float(verifier.threshold)
        # the scores a reader sees are calibrated (Verifier.shown); decisions are made on the scores themselves
        self.shown = getattr(verifier, "shown", float)
        self.max_docs, self.sentences = max_docs, sentences
        self.sents = [s.model_copy(deep=True) for s in answer.sentences]
        # questions claim nothing: flagged without a check (sentences_out)
        self.questions = {i for i, s in enumerate(self.sents) if s.text.strip() and is_question(s.text)}
        self.todo = todo = [i for i, s in enumerate(self.sents) if s.text.strip() and i not in self.questions] if n else []
        self.written = {i: [c for c in self.sents[i].citations if 1 <= c <= n] for i in todo}
        self.cands = {i: [c for c in (candidates[i] if candidates is not None and i < len(candidates) else range(1, n + 1))
                          if 1 <= c <= n] for i in todo}
        self.pool = {i: list(dict.fromkeys([*self.cands[i], *self.written[i]])) for i in todo}
        self.doc_sents: dict[int, list[str]] = {}
        for i in todo:
            for c in self.pool[i]:
                if c not in self.doc_sents:
                    self.doc_sents[c] = [x.strip() for x in split_sentences(docs[c - 1].text) if x.strip()] or [docs[c - 1].text]
        self.checked: dict[tuple[int, int], list[str]] = {}  # (answer sentence, document) -> its sentences checked alone
        self.sc = _Scorer(verifier)
        self.own_subs = {i: subsets(self.written[i], max_docs) for i in todo}
        self.decided: dict[int, Decision] = {}
        self.basis: dict[int, tuple[int, ...]] = {}  # the documents whose check gave decided[i] its score
        self.source: dict[tuple[int, tuple[int, ...]], tuple[str, str]] = {}  # the pair behind each check's score
        self.joint: dict[int, list[tuple[int, ...]]] = {}
        self._vetoed: dict[tuple[int, tuple[int, ...]], bool] = {}

    # -- what is scored, and reading it back
    def want_doc(self, i: int, c: int) -> None:
        """Document ``c`` alone and its candidate sentences, against answer sentence ``i``."""
        if (i, c) in self.checked:
            return
        text = self.sents[i].text
        xs = self.doc_sents[c]
        self.checked[(i, c)] = top_windows(xs, text, self.sentences) if 0 < self.sentences < len(xs) else xs
        self.sc.want(premise(self.docs, (c,)), text)
        for x in self.checked[(i, c)]:
            self.sc.want(x, text)

    def sent_scores(self, i: int, c: int) -> list[tuple[float, str]]:
        """Document ``c``'s checked sentences against answer sentence ``i``, best first."""
        return sorted(((self.sc[(x, self.sents[i].text.strip())], x) for x in self.checked[(i, c)]), key=lambda t: -t[0])

    def single(self, i: int, c: int) -> tuple[float, tuple[str, str]]:
        """Document ``c`` against sentence ``i``: the score and the pair it comes from (the whole
        document, or its best sentence unless the checks vetoed the document)."""
        pair = (premise(self.docs, (c,)), self.sents[i].text.strip())
        if self.vetoed(i, (c,)):
            return self.sc[pair], pair
        best, text = self.sent_scores(i, c)[0]
        return (best, (text, pair[1])) if best > self.sc[pair] else (self.sc[pair], pair)

    def vetoed(self, i: int, sub) -> bool:
        """A verifier with structural checks found the documents ``sub`` as a whole in conflict with sentence
        ``i`` (it negates or renumbers what they say): then none of their sentences alone may support it."""
        explain = getattr(self.sc.verifier, "explain", None)
        if explain is None:
            return False
        key = (i, tuple(sorted(sub)))
        if key not in self._vetoed:
            self._vetoed[key] = bool(explain(premise(self.docs, sub), self.sents[i].text.strip()))
        return self._vetoed[key]

    def best_sentences_premise(self, i: int, sub) -> str:
        return "\n".join(self.sent_scores(i, c)[0][1] for c in sorted(sub))

    def check(self, i: int, sub) -> SubsetCheck:
        if len(sub) == 1:
            v, pair = self.single(i, sub[0])
        else:
            pair = (premise(self.docs, sub), self.sents[i].text.strip())
            v = self.sc[pair]
            if not self.vetoed(i, sub):
                best = (self.best_sentences_premise(i, sub), pair[1])
                if self.sc.scores.get(best, 0.0) > v:
                    v, pair = self.sc.scores[best], best
        self.source[(i, tuple(sub))] = pair
        return SubsetCheck(subset=list(sub), score=round(v, 4), entails=v >= self.thr)

    def decide(self, i: int, subset: Sequence[int], score: float, action: str, basis: Sequence[int] | None = None) -> None:
        """Sentence ``i``'s decision, and the documents whose check it rests on (``subset`` unless given)."""
        self.decided[i] = (list(subset), score, action)
        self.basis[i] = tuple(subset if basis is None else basis)

    # -- the steps
    def keep_own(self, simplify: bool) -> None:
        """1. The written citations' subsets (concatenated documents) and each cited document alone with its
        sentences: a sentence they support keeps their smallest entailing subset (all of them that entail
        it together, ``simplify`` off)."""
        for i in self.todo:
            for sub in self.own_subs[i]:
                self.sc.want(premise(self.docs, sub), self.sents[i].text)
            for c in self.written[i]:
                self.want_doc(i, c)
        self.sc.run()
        for i in self.todo:
            own = [self.check(i, sub) for sub in self.own_subs[i]]
            # simplify off: the largest set checked (all the written citations, or the first max_docs of them)
            whole = max(own, key=lambda c: len(c.subset), default=None)
            if not simplify and whole is not None and whole.entails:
                self.decide(i, whole.subset, whole.score,
                            "kept" if set(whole.subset) == set(self.written[i]) else "simplified")
                continue
            kept = minimal_subset(own)
            if kept:
                self.decide(i, kept, next(c.score for c in own if c.subset == kept),
                            "kept" if set(kept) == set(self.written[i]) else "simplified")

    def repoint(self) -> None:
        """2. The sentences their citations leave unsupported, against every other pooled document: the
        best entailing one becomes the citation; else the pairs (and the triple) of the best ones, and the
        sentence's own multi-document citations, wait for :meth:`check_jointly`."""
        for i in self.todo:
            if i not in self.decided:
                for c in self.pool[i]:
                    self.want_doc(i, c)
        self.sc.run()
        for i in self.todo:
            if i in self.decided:
                continue
            singles = sorted((self.check(i, (c,)) for c in self.cands[i]), key=lambda c: (-c.score, c.subset))
            if singles and singles[0].entails:
                self.decide(i, singles[0].subset, singles[0].score, "re-pointed" if self.written[i] else "added")
                continue
            top = sorted(c.subset[0] for c in singles[:JOINT_POOL])
            self.joint[i] = [t for r in range(2, min(self.max_docs, len(top)) + 1) for t in itertools.combinations(top, r)]
            self.joint[i] += [sub for sub in self.own_subs[i] if len(sub) > 1 and sub not in self.joint[i]]

    def check_jointly(self, partial: float) -> None:
        """3. Joint support for the sentences still undecided, with the best-sentences premise too; what
        no set entails is ``partial`` (its best set scores at least ``partial``) or flagged."""
        for i, subs in self.joint.items():
            for sub in subs:
                self.sc.want(premise(self.docs, sub), self.sents[i].text)
                self.sc.want(self.best_sentences_premise(i, sub), self.sents[i].text)
        self.sc.run()
        for i in self.todo:
            if i in self.decided:
                continue
            jc = [self.check(i, sub) for sub in self.joint.get(i, [])]
            kept = minimal_subset(jc)
            if kept:
                self.decide(i, kept, next(c.score for c in jc if c.subset == kept),
                            "re-pointed" if self.written[i] else "added")
                continue
            tried = [self.check(i, sub) for sub in self.own_subs[i]] + [self.check(i, (c,)) for c in self.cands[i]] + jc
            best = _best(tried)
            if best is not None and best.score >= partial:
                self.decide(i, best.subset, best.score, "partial")
            elif best is not None:
                self.decide(i, [], best.score, "flagged", basis=best.subset)
            else:
                self.decided[i] = ([], 0.0, "flagged")

    def second_opinions(self, simplify: bool, partial: float, rounds: int = SECOND_ROUNDS) -> None:
        """5. The second verifier's opinion on the pair each sentence's status rests on; where it moves a
        score, steps 1-3 decide again on the revised scores (no pair is scored twice), and the pairs that
        now decide get their opinion in the next round."""
        for _ in range(rounds):
            deciding = [self.source[(i, self.basis[i])] for i in self.todo if (i, self.basis.get(i)) in self.source]
            deciding += self.whole_documents_of_flagged()
            if not self.sc.revise(deciding):
                return
            self.decided.clear()
            self.basis.clear()
            self.joint.clear()
            self.keep_own(simplify)
            self.repoint()
            self.check_jointly(partial)

    def whole_documents_of_flagged(self) -> list[tuple[str, str]]:
        """For each sentence flagged unsupported whose best pair was one of its documents' sentences: the
        whole documents' pair too, so that a second verifier that reads a long document where the first
        read one window of it can answer for it (the verifier decides which pairs it takes)."""
        out = []
        for i in self.todo:
            key = (i, self.basis.get(i))
            if key in self.source and self.decided.get(i, ([], 0.0, ""))[2] == "flagged":
                whole = (premise(self.docs, self.basis[i]), self.sents[i].text.strip())
                if whole != self.source[key] and whole in self.sc.scores:
                    out.append(whole)
        return out

    def sentences_out(self, mode: str, max_evidence: int):
        """4. Each sentence with its decision as a status, its citations and its evidence (the kept
        documents' best sentences for it); ``strict`` drops the unsupported ones. Returns the sentences,
        the records, the dropped ones and ``(1-based index in the answer, position)`` of each checked one."""
        out_sents: list[CitedSentence] = []
        records: list[SentenceAttribution] = []
        dropped: list[dict[str, Any]] = []
        reported: list[tuple[int, int]] = []
        for i, s in enumerate(self.sents):
            if i in self.questions:
                self.decided[i] = ([], 0.0, "question")
            if i not in self.decided:  # an empty sentence, or no documents at all: nothing to check
                if not self.n and s.text.strip():
                    self.decided[i] = ([], 0.0, "flagged")
                else:
                    out_sents.append(s)
                    continue
            cits, score, action = self.decided[i]
            support = "partial" if action == "partial" else ("unsupported" if action in ("flagged", "question") else "supported")
            score = 0.0 if action == "question" else self.shown(score)  # a question: nothing was scored
            why = [QUESTION_REASON] if action == "question" else (self.conflicts(i, cits) if support != "supported" else [])
            rec = SentenceAttribution(sentence=i, text=s.text, before=list(s.citations), after=sorted(cits),
                                      action=action, support=support, score=round(score, 4), conflicts=why)
            records.append(rec)
            if support == "unsupported" and mode == "strict":
                rec.action = "dropped"
                dropped.append({"sentence": i, "text": s.text, "citations": list(s.citations), "score": round(score, 4)})
                continue
            reported.append((i + 1, len(out_sents)))
            out_sents.append(CitedSentence(text=s.text, citations=sorted(cits), evidence=self.evidence(i, cits, max_evidence),
                                           support=support, support_score=round(score, 4)))
        return out_sents, records, dropped, reported

    def conflicts(self, i: int, cits: list[int]) -> list[str]:
        """What a verifier with structural checks (``explain``) finds wrong with sentence ``i``: against the
        documents it cited, else the ones the stage kept, else the candidate sharing the most words with it
        among those it conflicts with (named: "[3] role: ..."); none for other verifiers."""
        explain = getattr(self.sc.verifier, "explain", None)
        if explain is None:
            return []
        text = self.sents[i].text.strip()
        docs = self.written.get(i) or cits
        if docs:
            found = [str(f) for f in explain(premise(self.docs, docs), text)]
            return [f"[{docs[0]}] {f}" for f in found] if len(docs) == 1 else found
        words = set(text.lower().split())
        for c in sorted(self.pool.get(i, []), key=lambda c: -len(words & set(self.docs[c - 1].text.lower().split()))):
            found = explain(premise(self.docs, (c,)), text)
            if found:
                return [f"[{c}] {f}" for f in found]
        return []

    def evidence(self, i: int, cits: list[int], max_evidence: int) -> list[Evidence]:
        """The evidence a method attached for the kept documents, and for the others their best sentences
        with their scores (two when no sentence entails it alone and the document does as a whole)."""
        evidence = [e for e in self.sents[i].evidence if e.doc in cits]
        have = {e.doc for e in evidence}
        for c in sorted(cits):
            if c not in have:
                ranked = self.sent_scores(i, c)
                k = max(1, max_evidence) if ranked[0][0] >= self.thr else max(2, max_evidence)
                evidence += [Evidence(doc=c, text=x, score=round(self.shown(v), 4)) for v, x in ranked[:k]]
        return evidence


def attribute_answer(answer: AttributedAnswer, verifier, *, mode: str = "repair", partial: float | None = None,
                     max_docs: int = MAX_CITATIONS, candidates: list[list[int]] | None = None,
                     max_evidence: int = 1, verifier_spec: str | None = None,
                     sentences: int = SENTENCE_CANDIDATES, simplify: bool = True) -> AttributedAnswer:
    """The stage on one answer (``mode`` repair or strict); returns a new answer, its evidence located in
    the documents (:meth:`AttributedAnswer.with_locations`), and sends one ``sentence_checked`` event per
    checked sentence. ``candidates[i]``
    limits the documents sentence ``i`` may be re-pointed to (default: all of the answer's).

    A document supports a sentence when the verifier says the whole document entails it, or one of
    its sentences does (a document entails what any of its sentences entails; small cross-encoders
    often miss a supported sentence inside a longer premise). A set of documents: the concatenated
    documents (ALCE's premise), or the concatenation of each one's best sentence. ``sentences``: how
    many of a document's sentences are checked alone against an answer sentence (those sharing the
    most words with it; 0: all of them).

    The sentences' own citations are checked first; the other documents only for the sentences
    those do not support (most of the cost of an answer that cites well is saved). ``simplify``: a
    sentence its own citations support keeps only their smallest entailing subset (RAAC's Simplifier);
    False keeps them all when together they entail it (at most ``max_docs`` of them).

    Scores are reported as the verifier shows them (:meth:`~citegraph.tools.verifier.Verifier.shown`:
    calibrated on held-out pairs where the spec has a calibration), and ``partial`` is on that scale;
    None: the verifier's own (chosen with its calibration; 0.2 without one)."""
    if mode not in ("repair", "strict"):
        raise ValueError(f"attribution mode must be repair or strict here, got {mode!r}")
    if partial is None:
        partial = float(getattr(verifier, "partial", DEFAULT_PARTIAL))
    unshown = getattr(verifier, "unshown", float)
    raw_partial = unshown(partial)  # the partial threshold as the scores are compared
    run = _Attribution(answer, verifier, max_docs=max_docs, candidates=candidates, sentences=sentences)
    run.keep_own(simplify)
    run.repoint()
    run.check_jointly(raw_partial)
    run.second_opinions(simplify, raw_partial)
    out_sents, records, dropped, reported = run.sentences_out(mode, max_evidence)
    out = answer.model_copy(update={"sentences": out_sents, "warnings": list(answer.warnings),
                                    "metadata": dict(answer.metadata)}).with_locations()
    for index, pos in reported:
        emit_checked(index, out.sentences[pos])
    counts = out.support_counts()
    changed = sum(r.action in ("simplified", "re-pointed", "added") for r in records)
    flagged = sum(r.support == "unsupported" and r.action != "question" for r in records)
    questions = len(run.questions)
    out.metadata["attribution"] = {
        "mode": mode, "verifier": verifier_spec or getattr(verifier, "spec", str(verifier)), "threshold": run.thr,
        "questions": questions,
        "partial": partial, "shown_temperature": getattr(verifier, "shown_temperature", 1.0), "counts": counts, "changed": changed, "dropped": dropped,
        "second_opinions": run.sc.asked,
        "sentences": [r.model_dump() for r in records],
    }
    if flagged and mode == "repair":
        out.warnings.append(f"attribution: {flagged} sentence(s) no document supports (flagged unsupported)")
    if questions and mode == "repair":
        out.warnings.append(f"attribution: {questions} question(s) flagged unsupported: a question states no claim to cite")
    if dropped:
        out.warnings.append(f"attribution (strict): dropped {len(dropped)} unsupported sentence(s); "
                            "the trace keeps them")
    return out


def emit_checked(index: int, s: CitedSentence) -> None:
    """One ``sentence_checked`` event on the custom stream per checked sentence, before the stage
    returns its answer: its 1-based index, text, citations, status, score and evidence (with its page
    where known), so a UI can show "sentence 2: supported by [3]" before the whole answer is done."""
    emit("sentence_checked", index=index, text=s.text, citations=list(s.citations), status=s.support,
         score=s.support_score, evidence=[{"doc": e.doc, "text": e.text, "score": e.score, "page": e.page}
                                          for e in s.evidence])


def stage_options(ctx: Any) -> dict[str, Any]:
    """A Context's ``attribution_*`` knobs as :func:`attribute_answer`'s keyword arguments."""
    return {"partial": ctx.attribution_partial, "max_docs": ctx.attribution_max_docs,
            "sentences": ctx.attribution_sentences, "simplify": ctx.attribution_simplify}


def attribution(state: Any, runtime: Runtime) -> dict:
    """Graph node: the stage on ``state.answer`` as the Context's ``attribution`` knob says."""
    ctx = runtime.context
    mode = getattr(ctx, "attribution", "off")
    answer = getattr(state, "answer", None)
    if answer is None or not answer.sentences:
        return {}
    if mode == "off":  # the answer as the method wrote it, its evidence located in the documents
        return {"answer": answer.with_locations()} if answer.needs_locations() else {}
    verifier = get_verifier(ctx.verifier)
    # a graph that retrieved evidence per sentence (cite) limits each sentence to its own candidates
    candidates = getattr(state, "attribution_candidates", None) or None
    return {"answer": attribute_answer(answer, verifier, mode=mode, candidates=candidates, verifier_spec=ctx.verifier,
                                       **stage_options(ctx))}
