"""citegraph: attributed generation methods as LangGraph workflows.

    from citegraph import VanillaContext, as_tool, build_graph
    g = build_graph("vanilla")
    docs = [{"title": "Eiffel Tower", "text": "The tower is 330 metres tall."}]
    out = g.invoke({"question": "How tall is the Eiffel Tower?", "documents": docs}, context=VanillaContext(llm="local"))
    print(out["answer"].render())

    tool = as_tool("vanilla", llm="openai:gpt-4o-mini")   # a tool an agent calls (question, documents?)
"""

from citegraph.graphs.registry import build_graph, make_context
from citegraph.state import AttributedAnswer, CitedSentence, Document, Evidence
from citegraph.state.vanilla import VanillaContext



def as_tool(method: str, *, corpus: str = "", **context):
    """The method as a tool an agent calls with a question (documents optional when ``corpus`` is set):
    it returns the cited answer as text with its sources, and the AttributedAnswer as the artifact.
    ``context``: the method's knobs, plus ``name``/``description``/``checkpointer`` of the tool
    (:func:`citegraph.graphs.tool.as_tool`)."""
    from citegraph.graphs.tool import as_tool as _as_tool

    return _as_tool(method, corpus=corpus, **context)


__version__ = "0.1.0"
__all__ = ["AttributedAnswer", "CitedSentence", "Document", "Evidence", "VanillaContext", "as_tool", "build_graph",
           "make_context"]
