"""The graphs inside a user's own app: no Context, a subgraph under a parent with its own Context,
two methods in one parent, and a graph as a tool (issue #22, item 4; issue #39: tests/test_agent_app.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from citegraph.graphs.registry import build_graph
from citegraph.graphs.tool import as_tool
from citegraph.state import Document
from citegraph.testing import ScriptedChatModel
from citegraph.tools.models import registry
from test_raac import Router, fb

DOCS = [Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann."),
        Document(id="b", title="Beta", text="Beta is a river in Chile.")]


@pytest.fixture
def default_llm(monkeypatch):
    """The Contexts' default model spec ('local') answered by a scripted model for this test."""
    model = ScriptedChatModel(script=Router(gen=["Alpha was founded in 1901 [1]."], feedback=[fb(3)],
                                            refine=["Alpha was founded in 1901 [1]."],
                                            vanilla=["Alpha was founded in 1901 [1]. Beta is in Chile [2]."]))
    monkeypatch.setitem(registry._registry, "local", model)
    from citegraph.tools.verifier import FunctionVerifier, register_verifier

    register_verifier("default", FunctionVerifier(lambda p, h: 1.0, spec="default"))
    yield model
    from citegraph.tools.verifier import clear_verifier_cache

    clear_verifier_cache()


def test_plain_invoke_without_context_uses_the_defaults(default_llm):
    out = build_graph("vanilla").invoke({"question": "What are Alpha and Beta?", "documents": DOCS})
    assert [s.citations for s in out["answer"].sentences] == [[1], [2]]
    out = build_graph("raac").invoke({"question": "What is Alpha?", "documents": DOCS})  # routers too
    assert out["answer"].sentences[0].citations == [1]


def test_two_methods_as_subgraphs_under_a_parent_with_its_own_context(default_llm):
    @dataclass
    class AppContext:
        user: str = "ann"

    class AppState(TypedDict, total=False):
        question: str
        documents: list
        answer: object

    parent = StateGraph(AppState, context_schema=AppContext)
    parent.add_node("vanilla", build_graph("vanilla"))
    parent.add_node("raac", build_graph("raac"))
    parent.add_edge(START, "vanilla")
    parent.add_edge("vanilla", "raac")
    parent.add_edge("raac", END)
    out = parent.compile().invoke({"question": "What is Alpha?", "documents": DOCS}, context=AppContext())
    assert out["answer"].sentences and out["answer"].sentences[0].citations == [1]
    assert default_llm.calls  # the subgraphs took their own defaults (llm 'local'), not the app's Context


def test_a_graph_as_a_tool(default_llm):
    """The tool's text is the cited answer with its sources; the AttributedAnswer is the artifact
    (an agent loop drives it in tests/test_agent_app.py)."""
    tool = as_tool(build_graph("vanilla"), name="cited_answer", description="Answer with citations.")
    args = {"question": "What are Alpha and Beta?", "documents": [d.model_dump() for d in DOCS]}
    text = tool.invoke(args)
    assert text.startswith("Alpha was founded in 1901 [1]. Beta is in Chile [2].\n\nSources:\n[1] Alpha (id: a)")
    msg = tool.invoke({"type": "tool_call", "name": "cited_answer", "id": "c1", "args": args})
    assert msg.artifact.render() == "Alpha was founded in 1901 [1]. Beta is in Chile [2]."
