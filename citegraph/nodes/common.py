"""Nodes shared by several graphs."""

from __future__ import annotations

from citegraph.state import AttributedAnswer, Document
from citegraph.tools.citations import extract_citations
from citegraph.tools.models import Reply, chat_reply


def answer_from_text(
    text: str, question: str, documents: list[Document], *, method: str, attach_trailing: bool = True, **meta
) -> AttributedAnswer:
    """Parse an LLM's ``[n]``-cited text into the contract, recording the method and raw text."""
    return AttributedAnswer.from_text(
        text, question=question, documents=documents, attach_trailing=attach_trailing,
        metadata={"method": method, "raw_output": text, **meta},
    )


def cited_reply(spec: str, prompt: str, n_docs: int, *, retries: int, reminder: str, **kwargs) -> tuple[Reply, list[str]]:
    """One chat call whose reply must cite the numbered documents. A reply with no ``[n]`` in 1..n_docs is
    asked again, in the same conversation (``reminder`` as the next user turn), up to ``retries`` times;
    the first reply that cites is kept, else the first reply. Returns the reply and what happened (empty
    when the first reply cited)."""
    from langchain_core.messages import AIMessage, HumanMessage

    def cites(text: str) -> bool:
        return any(1 <= i <= n_docs for i in extract_citations(text))

    first = reply = chat_reply(spec, prompt, **kwargs)
    notes: list[str] = []
    messages: list = [HumanMessage(prompt)]
    for attempt in range(1, retries + 1):
        if cites(reply.text):
            break
        messages += [AIMessage(reply.text), HumanMessage(reminder)]
        reply = chat_reply(spec, messages, **kwargs)
        notes.append(f"reply {attempt} cited no document; asked again: the new reply "
                     + ("cites" if cites(reply.text) else "cites none either"))
    if not cites(reply.text):
        reply = first
        if notes:
            notes.append("kept the first reply (uncited)")
    return reply, notes
