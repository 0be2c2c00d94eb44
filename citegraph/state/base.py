"""State and Context pieces shared by every graph.

Every graph's input is :class:`InputState` (a question and its documents) and its output is
:class:`OutputState` (one :class:`~citegraph.state.answer.AttributedAnswer`). Knobs live in a
Context dataclass per graph, derived from :class:`BaseContext`; each field carries a description
that LangGraph Studio shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import BaseModel, Field

from citegraph.state.answer import AttributedAnswer, Document


def knob(default: Any, description: str) -> Any:
    """A Context field with a description (shown in Studio and in ``citegraph graphs``)."""
    return field(default=default, metadata={"description": description})


@dataclass(kw_only=True)
class BaseContext:
    """Knobs every graph has: which chat model and verifier, and decoding settings."""

    llm: str = knob("local", "Chat model spec: local, local-small, llamacpp:<path.gguf>, openai:<model>.")
    verifier: str = knob("default", "Entailment verifier spec: default, hf-classifier:<id>, hf-seq2seq:<id>, llm-judge[:<llm spec>].")
    temperature: float = knob(0.0, "Sampling temperature for generation (0 = greedy).")
    max_new_tokens: int = knob(300, "Maximum tokens the LLM may generate per call.")

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        return [(f.name, f.default, f.metadata.get("description", "")) for f in fields(cls)]


class InputState(BaseModel):
    """What a caller passes in: a question and the documents to answer from."""

    question: str = Field(description="The question (or query) to answer.")
    documents: list[Document] = Field(default_factory=list, description="Candidate documents, cited by 1-based position.")


class OutputState(BaseModel):
    """What every graph returns."""

    answer: AttributedAnswer | None = Field(default=None, description="The attributed answer.")
