"""citegraph: attributed generation methods as LangGraph workflows.

    from citegraph import VanillaContext, as_tool, build_graph
    g = build_graph("vanilla")
    docs = [{"title": "Eiffel Tower", "text": "The tower is 330 metres tall."}]
    out = g.invoke({"question": "How tall is the Eiffel Tower?", "documents": docs}, context=VanillaContext(llm="local"))
    print(out["answer"].render())

    tool = as_tool("vanilla", llm="openai:gpt-4o-mini")   # a tool an agent calls (question, documents?)
    tool = as_tool(g, llm="openai:gpt-4o-mini")           # the same, from the graph already built
"""

from citegraph.graphs.registry import build_graph, make_context
from citegraph.graphs.tool import as_tool
from citegraph.state import AttributedAnswer, CitedSentence, Document, Evidence
from citegraph.state.vanilla import VanillaContext


__version__ = "0.1.0"
__all__ = ["AttributedAnswer", "CitedSentence", "Document", "Evidence", "VanillaContext", "as_tool", "build_graph",
           "make_context"]
