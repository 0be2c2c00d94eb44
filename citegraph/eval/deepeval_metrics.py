"""The three DeepEval metrics SQuAI reports, as DeepEval defines them, with our prompts and our
chat model as the judge (any spec: ``local``, ``openai:<model>``).

Why not the deepeval package: installing it (4.3.1) into the environment adds pytest plugins
(pytest-asyncio, pytest-xdist, pytest-rerunfailures, pytest-repeat) that change how every test
suite here runs, and posthog telemetry; so the definitions are implemented here:

- answer relevancy   = statements of the answer not judged irrelevant ("yes" or "idk") / all statements
                       (no statements → 1.0, as DeepEval)
- faithfulness       = claims of the answer not CONTRADICTED by the retrieval context / all claims
                       (an unsupported claim, verdict "idk", is not penalised — as in DeepEval, which is
                       why every system in the paper scores >= 0.95; no claims → 1.0)
- contextual relevancy = relevant statements of the retrieval context / all its statements
                       (no statements → 0.0, as DeepEval). DeepEval extracts and judges the statements
                       in one call per context document (``mode="json"``); by default we take the
                       document's sentences as its statements and judge each by first-token Yes/No
                       log-odds (``mode="logodds"``: see :func:`contextual_relevancy` for why)

DeepEval's faithfulness first extracts "truths" from the context; we give the context itself to the
verdict prompt (shorter for a small judge). A judge reply that does not parse after the retries, or
that returns no verdicts for a non-empty list, gives ``None`` for that metric (recorded), not a score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

from citegraph.prompts import deepeval as P
from citegraph.state.answer import Document
from citegraph.tools.models import NoLogprobsError, judge_many, structured
from citegraph.tools.sentences import split_sentences


@dataclass
class MetricResult:
    score: float | None
    details: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


@dataclass
class DeepEvalScores:
    answer_relevancy: float | None
    faithfulness: float | None
    contextual_relevancy: float | None
    details: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def mean(self) -> float | None:
        xs = [self.answer_relevancy, self.faithfulness, self.contextual_relevancy]
        return None if any(x is None for x in xs) else sum(xs) / 3

    def as_dict(self) -> dict:
        return {**asdict(self), "mean": self.mean}


def _ask(judge: str, prompt: str, schema, max_tokens: int):
    return structured(judge, prompt, schema, retries=1, fallback=lambda: None, temperature=0.0, max_tokens=max_tokens)


def _verdict_score(verdicts: list[str], n_items: int, what: str, problems: list[str]) -> float | None:
    if n_items == 0:
        return 1.0
    if not verdicts:
        problems.append(f"{what}: no verdicts for {n_items} item(s)")
        return None
    if len(verdicts) != n_items:
        problems.append(f"{what}: {len(verdicts)} verdicts for {n_items} item(s); scored over the first "
                        f"{min(len(verdicts), n_items)}")
        verdicts = verdicts[:n_items]
    return sum(v != "no" for v in verdicts) / len(verdicts)


def answer_relevancy(question: str, answer: str, judge: str, max_tokens: int = 600) -> MetricResult:
    problems: list[str] = []
    st, p = _ask(judge, P.statements_prompt(answer), P.Statements, max_tokens)
    problems += p
    if st is None:
        return MetricResult(None, {}, problems + ["answer relevancy: statements did not parse"])
    r = statements_relevancy(question, [s for s in st.statements if s.strip()], judge, max_tokens)
    return MetricResult(r.score, r.details, problems + r.problems)


def statements_relevancy(question: str, statements: list[str], judge: str, max_tokens: int = 600) -> MetricResult:
    """Answer relevancy's second step on given statements: the share not judged irrelevant to ``question``
    (also how a judge is checked: the statements of one question's answer against another question)."""
    problems: list[str] = []
    if not statements:
        return MetricResult(1.0, {"statements": []}, problems)
    vs, p = _ask(judge, P.answer_relevancy_prompt(question, statements), P.Verdicts, max_tokens)
    problems += p
    verdicts = [v.verdict for v in vs.verdicts] if vs is not None else []
    score = _verdict_score(verdicts, len(statements), "answer relevancy", problems)
    return MetricResult(score, {"statements": statements, "verdicts": verdicts}, problems)


def faithfulness(answer: str, context: Sequence[str], judge: str, max_tokens: int = 600) -> MetricResult:
    problems: list[str] = []
    cl, p = _ask(judge, P.claims_prompt(answer), P.Claims, max_tokens)
    problems += p
    if cl is None:
        return MetricResult(None, {}, problems + ["faithfulness: claims did not parse"])
    claims = [c for c in cl.claims if c.strip()]
    if not claims:
        return MetricResult(1.0, {"claims": []}, problems)
    ctx = "\n\n".join(f"[{i}] {c}" for i, c in enumerate(context, 1))
    vs, p = _ask(judge, P.faithfulness_prompt(ctx, claims), P.Verdicts, max_tokens)
    problems += p
    verdicts = [v.verdict for v in vs.verdicts] if vs is not None else []
    score = _verdict_score(verdicts, len(claims), "faithfulness", problems)
    return MetricResult(score, {"claims": claims, "verdicts": verdicts}, problems)


CONTEXT_JUDGES = ("logodds", "json")


def contextual_relevancy(question: str, context: Sequence[str], judge: str, max_tokens: int = 800,
                         cache: dict | None = None, mode: str = "logodds") -> MetricResult:
    """Relevant statements of the retrieval context / all its statements.

    ``mode="json"`` is DeepEval's procedure: one call per context document that breaks it into
    statements and gives each a yes/no verdict. ``mode="logodds"`` (default): the statements are the
    document's sentences (``tools.sentences``) and each is relevant iff the judge's first-token
    log p(Yes) − log p(No) for "does this statement help answer the question" is > 0 (the same
    log-odds path as SQuAI's Agent 3). The embedded 1.5B judge said "yes" to every statement of
    every document in json mode, unrelated ones included; its log-odds separate a question's own
    chunks from other questions' (benchmarks/bench_squai.py reports both). A judge without logprobs
    falls back to json mode, recorded.

    ``cache`` (a dict the caller keeps): each (judge, mode, question, context document) is judged once
    and re-used, e.g. by two systems given the same retrieved documents (greedy judges answer the same
    prompt the same way; a re-used judgement is marked ``cached`` in ``per_context``)."""
    if mode not in CONTEXT_JUDGES:
        raise ValueError(f"contextual relevancy mode {mode!r}: choose from {CONTEXT_JUDGES}")
    problems: list[str] = []
    relevant = total = 0
    per_doc = []
    for i, c in enumerate(context):
        key = (judge, mode, question, c)
        hit = cache is not None and key in cache
        if hit:
            doc = cache[key]
        else:
            doc, p = _context_doc(question, c, judge, max_tokens, mode)
            problems += p
        if doc is None:
            problems.append(f"contextual relevancy: context {i + 1} did not parse")
            return MetricResult(None, {"per_context": per_doc}, problems)
        if cache is not None:
            cache[key] = doc
        relevant, total = relevant + doc["relevant"], total + doc["statements"]
        per_doc.append({**doc, **({"cached": True} if hit else {})})
    return MetricResult(relevant / total if total else 0.0, {"per_context": per_doc}, problems)


def _context_doc(question: str, context: str, judge: str, max_tokens: int, mode: str) -> tuple[dict | None, list[str]]:
    """One context document's relevant and total statements (and, in logodds mode, each one's log-odds)."""
    if mode == "logodds":
        statements = [x for x in split_sentences(context) if x.strip()]
        try:  # one document's statements at once (in flight together on an endpoint)
            lo = judge_many(judge, [P.statement_relevance_prompt(question, x) for x in statements], kind="yes_no_log_odds")
        except NoLogprobsError as e:
            doc, p = _context_doc(question, context, judge, max_tokens, "json")
            return doc, [f"contextual relevancy: {judge} gives no logprobs ({e}); judged in json mode"] + p
        return {"relevant": sum(x > 0 for x in lo), "statements": len(lo), "mode": "logodds",
                "log_odds": [round(x, 3) for x in lo]}, []
    vs, p = _ask(judge, P.contextual_relevancy_prompt(question, context), P.ContextVerdicts, max_tokens)
    if vs is None:
        return None, p
    return {"relevant": sum(v.verdict == "yes" for v in vs.verdicts), "statements": len(vs.verdicts), "mode": "json"}, p


def context_texts(documents: Sequence[Document]) -> list[str]:
    return [d.as_premise() for d in documents]


def deepeval_scores(question: str, answer: str, context: Sequence[str], judge: str,
                    context_cache: dict | None = None, context_mode: str = "logodds") -> DeepEvalScores:
    """All three metrics of one answer; ``context`` is the retrieval context the answer was written from;
    ``context_cache`` and ``context_mode``: see :func:`contextual_relevancy`."""
    ar = answer_relevancy(question, answer, judge)
    fa = faithfulness(answer, context, judge)
    cr = contextual_relevancy(question, context, judge, cache=context_cache, mode=context_mode)
    return DeepEvalScores(
        answer_relevancy=ar.score, faithfulness=fa.score, contextual_relevancy=cr.score,
        details={"answer_relevancy": ar.details, "faithfulness": fa.details, "contextual_relevancy": cr.details},
        problems=ar.problems + fa.problems + cr.problems,
    )
