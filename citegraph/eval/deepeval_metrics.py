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
                       (one call per context document; no statements → 0.0, as DeepEval)

DeepEval's faithfulness first extracts "truths" from the context; we give the context itself to the
verdict prompt (shorter for a small judge). A judge reply that does not parse after the retries, or
that returns no verdicts for a non-empty list, gives ``None`` for that metric (recorded), not a score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

from citegraph.prompts import deepeval as P
from citegraph.state.answer import Document
from citegraph.tools.models import structured


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
    statements = [s for s in st.statements if s.strip()]
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


def contextual_relevancy(question: str, context: Sequence[str], judge: str, max_tokens: int = 800,
                         cache: dict | None = None) -> MetricResult:
    """``cache`` (a dict the caller keeps): each (judge, question, context document) is judged once and
    re-used, e.g. by two systems given the same retrieved documents (greedy judges answer the same
    prompt the same way; a re-used judgement is marked ``cached`` in ``per_context``)."""
    problems: list[str] = []
    relevant = total = 0
    per_doc = []
    for i, c in enumerate(context):
        key = (judge, question, c)
        hit = cache is not None and key in cache
        if hit:
            vs = cache[key]
        else:
            vs, p = _ask(judge, P.contextual_relevancy_prompt(question, c), P.ContextVerdicts, max_tokens)
            problems += p
        if vs is None:
            problems.append(f"contextual relevancy: context {i + 1} did not parse")
            return MetricResult(None, {"per_context": per_doc}, problems)
        if cache is not None:
            cache[key] = vs
        r = sum(v.verdict == "yes" for v in vs.verdicts)
        relevant, total = relevant + r, total + len(vs.verdicts)
        per_doc.append({"relevant": r, "statements": len(vs.verdicts), **({"cached": True} if hit else {})})
    return MetricResult(relevant / total if total else 0.0, {"per_context": per_doc}, problems)


def context_texts(documents: Sequence[Document]) -> list[str]:
    return [d.as_premise() for d in documents]


def deepeval_scores(question: str, answer: str, context: Sequence[str], judge: str,
                    context_cache: dict | None = None) -> DeepEvalScores:
    """All three metrics of one answer; ``context`` is the retrieval context the answer was written from;
    ``context_cache``: see :func:`contextual_relevancy`."""
    ar = answer_relevancy(question, answer, judge)
    fa = faithfulness(answer, context, judge)
    cr = contextual_relevancy(question, context, judge, cache=context_cache)
    return DeepEvalScores(
        answer_relevancy=ar.score, faithfulness=fa.score, contextual_relevancy=cr.score,
        details={"answer_relevancy": ar.details, "faithfulness": fa.details, "contextual_relevancy": cr.details},
        problems=ar.problems + fa.problems + cr.problems,
    )
