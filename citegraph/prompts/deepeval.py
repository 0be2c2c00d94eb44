"""Our prompts for the three DeepEval metrics SQuAI reports (answer relevancy, faithfulness,
contextual relevancy). The definitions (what is extracted, what is counted) follow DeepEval's
metrics; the wording is ours (deepeval itself is not a dependency: see eval/deepeval_metrics.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Statements(BaseModel):
    statements: list[str] = Field(default_factory=list)


class Claims(BaseModel):
    claims: list[str] = Field(default_factory=list)


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]
    reason: str = ""


class Verdicts(BaseModel):
    verdicts: list[Verdict] = Field(default_factory=list)


class ContextVerdict(BaseModel):
    statement: str
    verdict: Literal["yes", "no"]


class ContextVerdicts(BaseModel):
    verdicts: list[ContextVerdict] = Field(default_factory=list)


def _numbered(items: list[str]) -> str:
    return "\n".join(f"{i}. {x}" for i, x in enumerate(items, 1))


def statements_prompt(answer: str) -> str:
    return (
        f"Text:\n{answer}\n\n"
        "Break the text into its individual statements: short, self-contained sentences, one fact or point each. "
        "Resolve pronouns. Do not add anything that the text does not say.\n"
        'Reply with JSON only: {"statements": ["...", "..."]}'
    )


def answer_relevancy_prompt(question: str, statements: list[str]) -> str:
    return (
        f"Question: {question}\n\nStatements:\n{_numbered(statements)}\n\n"
        "For each statement, in order, say whether it is relevant to answering the question: "
        '"yes" if relevant, "no" if irrelevant, "idk" if it is ambiguous or only supporting information.\n'
        f'Reply with JSON only, exactly {len(statements)} verdicts: '
        '{"verdicts": [{"verdict": "yes", "reason": "..."}, ...]}'
    )


def claims_prompt(answer: str) -> str:
    return (
        f"Text:\n{answer}\n\n"
        "List every factual claim the text makes, each as a short standalone sentence. Do not add claims "
        "of your own.\n"
        'Reply with JSON only: {"claims": ["...", "..."]}'
    )


def faithfulness_prompt(context: str, claims: list[str]) -> str:
    return (
        f"Retrieval context:\n{context}\n\nClaims:\n{_numbered(claims)}\n\n"
        "For each claim, in order, compare it with the retrieval context: "
        '"no" only if the context CONTRADICTS the claim; "yes" if the context agrees with it; '
        '"idk" if the context says nothing about it. Do not use your own knowledge.\n'
        f'Reply with JSON only, exactly {len(claims)} verdicts: '
        '{"verdicts": [{"verdict": "yes", "reason": "..."}, ...]}'
    )


def contextual_relevancy_prompt(question: str, context: str) -> str:
    return (
        f"Context:\n{context}\n\nQuestion: {question}\n\n"
        "Break the context into its statements and say for each whether it is relevant to the question "
        '("yes" or "no").\n'
        'Reply with JSON only: {"verdicts": [{"statement": "...", "verdict": "yes"}, ...]}'
    )


def statement_relevance_prompt(question: str, statement: str) -> str:
    """Contextual relevancy, logodds mode: one statement of the context, scored by the first token."""
    return (
        f"Question: {question}\n\nStatement: {statement}\n\n"
        "Does this statement help answer the question? Reply with only Yes or No."
    )
