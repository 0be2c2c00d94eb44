"""Nodes shared by several graphs."""

from __future__ import annotations

from typing import Any

from citegraph.state import AttributedAnswer, Document
from citegraph.state.marks import extract_citations
from citegraph.tools.citations import parse_answer
from citegraph.tools.models import Reply, chat_reply, cited_sentences


def answer_from_text(
    text: str, question: str, documents: list[Document], *, method: str, attach_trailing: bool = True, **meta
) -> AttributedAnswer:
    """Parse an LLM's ``[n]``-cited text into the contract, recording the method and raw text."""
    return parse_answer(
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


def constrained_reply(spec: str, prompt: str, n_docs: int, ctx: Any, **kwargs) -> tuple[Reply, str, list[str]]:
    """The final composition call with ``cite_format=constrained``: every sentence cites 1-2 of the
    ``n_docs`` numbered documents by construction (``tools.models.cited_sentences``), between the
    Context's ``cite_min_sentences`` and ``cite_max_sentences`` sentences. Returns the reply as
    ``[n]``-cited text, how it was constrained (grammar | json_schema | free) and what happened on
    the way, each note ready for the answer's warnings."""
    hi = ctx.cite_max_sentences
    lo = min(ctx.cite_min_sentences, hi)
    r = cited_sentences(spec, prompt, n_docs, min_sentences=lo, max_sentences=hi,
                        temperature=ctx.temperature, max_tokens=ctx.max_new_tokens, **kwargs)
    return Reply(r.text, r.finish_reason), r.mode, [f"cite_format=constrained ({r.mode}): {n}" for n in r.notes]


def composed(ctx: Any, prompt: str, n_docs: int, reminder: str) -> dict[str, Any]:
    """The final composition call as the Context's ``cite_format`` says, as a state update: constrained
    (:func:`constrained_reply`) or free with the citation retry (:func:`cited_reply`, ``reminder``)."""
    if ctx.cite_format == "constrained":
        reply, mode, notes = constrained_reply(ctx.llm, prompt, n_docs, ctx)
        return {"prompt": prompt, "generation": reply.text, "truncated": reply.truncated, "citation_retry": [],
                "cite_mode": mode, "cite_notes": notes}
    reply, retry = cited_reply(ctx.llm, prompt, n_docs, retries=ctx.citation_retries, reminder=reminder,
                               temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
    return {"prompt": prompt, "generation": reply.text, "truncated": reply.truncated, "citation_retry": retry,
            "cite_mode": "", "cite_notes": []}

