"""A method as a tool an agent calls: ``citegraph.as_tool("vanilla", corpus="idx/", llm="openai:gpt-4o-mini")``.

The calling model supplies the question (and, optionally, the documents); the method's Context is
fixed when the tool is made (a configured ``corpus`` retrieves the documents of a question-only call).
The tool returns the cited answer as text with its sources listed, for the agent to read and quote,
and the :class:`~citegraph.state.answer.AttributedAnswer` as the tool message's artifact
(``response_format="content_and_artifact"``) for the app. A call the method cannot answer (no
documents and no corpus, an empty question, a missing input) comes back to the agent as an error
message it can act on (``ToolMessage(status="error")``), never as an answer from nothing.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from citegraph.corpus import open_corpus
from citegraph.errors import InputError
from citegraph.graphs.base import check_run, coerce_context
from citegraph.graphs.registry import GRAPHS, entry
from citegraph.state.answer import AttributedAnswer, Document


class ToolDocument(BaseModel):
    """A document the calling model passes to the tool."""

    text: str = Field(description="The document's text.")
    title: str = Field(default="", description="Its title, if any.")
    id: str = Field(default="", description="An identifier to cite it by, if any.")


def _args_schema(with_corpus: bool) -> type[BaseModel]:
    docs_help = ("Optional: documents to answer from. Leave out to retrieve them from the configured corpus."
                 if with_corpus else
                 "The documents to answer from (required: this tool has no corpus to retrieve from).")

    class CitedAnswerArgs(BaseModel):
        question: str = Field(description="The question to answer, in full.")
        documents: list[ToolDocument] | None = Field(default=None, description=docs_help)

    return CitedAnswerArgs


def render_for_agent(answer: AttributedAnswer) -> str:
    """The answer as an agent reads it: the cited text, then one line per cited source
    (``[n] title, p. 7 (id: ...)``: the pages of its evidence, for a PDF), then any warnings."""
    lines = [answer.render() or "(the method wrote no answer from these documents)"]
    cited = answer.cited_documents()
    if cited:
        lines += ["", "Sources:"]
        for c in cited:
            d = answer.documents[c - 1]
            label = d.title or (d.text[:80] + ("…" if len(d.text) > 80 else ""))
            pages = sorted({e.page for s in answer.sentences for e in s.evidence if e.doc == c and e.page is not None})
            where = f", p. {', '.join(map(str, pages))}" if pages else ""
            lines.append(f"[{c}] {label}{where} (id: {d.id})")
    if answer.warnings:
        lines += ["", "Warnings:"] + [f"- {w}" for w in answer.warnings]
    return "\n".join(lines)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "graph"


def make_tool(graph: Any, context: Any = None, *, name: str | None = None, description: str | None = None,
              summary: str | None = None) -> StructuredTool:
    """``graph`` (a compiled citegraph method) as an agent's tool running under ``context`` (the method's
    Context, or None for its defaults and ``$CITEGRAPH_LLM``/``$CITEGRAPH_VERIFIER``). ``summary``: the
    method's one-line summary for the default description (default: its registry entry's)."""
    corpus = getattr(context, "corpus", "") if dataclasses.is_dataclass(context) else ""
    method = getattr(graph, "name", "graph")
    if description is None:
        if summary is None:
            summary = GRAPHS[method].summary if method in GRAPHS else f"citegraph method {method}."
        description = (f"Answer a question with citations: every sentence cites the documents that support it "
                       f"([n] = source n). Method: {summary} "
                       + ("Documents are retrieved from the configured corpus unless given."
                          if corpus else "Give the documents to answer from."))

    def _inputs(question: str, documents: list | None) -> dict[str, Any]:
        docs = [Document(**(d.model_dump() if isinstance(d, BaseModel) else dict(d))) for d in documents or []]
        if not (question or "").strip():
            raise ToolException("the question is empty: pass the question to answer")
        if not docs and not corpus:
            raise ToolException("no documents given and no corpus configured: pass the documents to answer from "
                                "(this tool was made without a corpus to retrieve them)")
        return {"question": question.strip(), "documents": docs}

    def _result(out: dict) -> tuple[str, AttributedAnswer]:
        answer = out["answer"]
        return render_for_agent(answer), answer

    def run(question: str, documents: list | None = None) -> tuple[str, AttributedAnswer]:
        inputs = _inputs(question, documents)
        try:
            return _result(graph.invoke(inputs, context=context))
        except InputError as e:
            raise ToolException(str(e)) from e

    async def arun(question: str, documents: list | None = None) -> tuple[str, AttributedAnswer]:
        inputs = _inputs(question, documents)
        try:
            return _result(await graph.ainvoke(inputs, context=context))
        except InputError as e:
            raise ToolException(str(e)) from e

    return StructuredTool.from_function(
        func=run, coroutine=arun, name=name or f"cited_answer_{_slug(method)}", description=description,
        args_schema=_args_schema(bool(corpus)), response_format="content_and_artifact", handle_tool_error=True)


def as_tool(method: Any, *, corpus: str = "", name: str | None = None, description: str | None = None,
            checkpointer: Any = None, **context: Any) -> StructuredTool:
    """The method as an agent's tool: ``as_tool("raac", corpus="idx/", llm="openai:gpt-4o-mini", k=2)``,
    or a graph already built (``as_tool(build_graph("raac"), llm=...)``; ``checkpointer`` is then the
    graph's own). ``context``: the method's knobs (an unknown one is an ``InputError`` here, as are
    unknown model specs)."""
    if corpus:
        context["corpus"] = corpus
    if isinstance(method, str):
        e = entry(method)  # resolved once, passed along
        ctx, summary = e.make_context(**context), e.summary
        graph = e.build(checkpointer=checkpointer)
    else:  # a compiled citegraph graph
        graph, summary = method, None
        ctx = coerce_context(graph.context_schema, context, graph.name) if context else None
    check_run(graph.context_schema, None, ctx)  # model and verifier specs, now rather than at the first call
    if corpus:
        open_corpus(corpus)  # a missing index fails here, not at the agent's first call
    return make_tool(graph, ctx, name=name, description=description, summary=summary)
