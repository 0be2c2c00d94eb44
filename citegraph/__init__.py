"""citegraph: attributed generation methods as LangGraph workflows.

    from citegraph import build_graph, VanillaContext
    g = build_graph("vanilla")
    out = g.invoke({"question": q, "documents": docs}, context=VanillaContext(llm="local"))
    print(out["answer"].render())
"""

from citegraph.graphs.registry import build_graph, make_context
from citegraph.state import AttributedAnswer, CitedSentence, Document, Evidence
from citegraph.state.vanilla import VanillaContext

__version__ = "0.1.0"
__all__ = ["AttributedAnswer", "CitedSentence", "Document", "Evidence", "VanillaContext", "build_graph", "make_context"]
