"""Nodes shared by several graphs."""

from __future__ import annotations

from citegraph.state import AttributedAnswer, Document


def answer_from_text(
    text: str, question: str, documents: list[Document], *, method: str, attach_trailing: bool = True, **meta
) -> AttributedAnswer:
    """Parse an LLM's ``[n]``-cited text into the contract, recording the method and raw text."""
    return AttributedAnswer.from_text(
        text, question=question, documents=documents, attach_trailing=attach_trailing,
        metadata={"method": method, "raw_output": text, **meta},
    )
