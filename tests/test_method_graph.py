"""What ``graphs/base.py`` relies on in LangGraph, asserted through LangGraph's public API (issue #36):
a compiled MethodGraph is LangGraph's own compiled graph (the class ``StateGraph.compile`` returns,
with every attribute it sets, so a v2 run coerces its output as LangGraph's own graph does); every
public way to run it checks the run before any node's work (in the wrapped entry nodes); node errors
are wrapped where the node is added, and LangGraph's own control flow (interrupts, resume) still
passes through.

A LangGraph upgrade that changes how a node wrapper, the Runtime a node gets, or an interrupt
travels fails here."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from citegraph.errors import InputError, NodeError
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.registry import build_graph, names
from citegraph.state.base import BaseContext, InputState, OutputState, RunContextState, context_dataclass, knob


@context_dataclass
class Ctx(BaseContext):
    step: int = knob(1, "How much each run adds.", ge=1)


class S(InputState, OutputState, RunContextState):
    x: int = 0
    seen: list[int] = []


def counting_graph(calls: list[str], checkpointer=None, pause: bool = False) -> CompiledStateGraph:
    """START -> add -> (ask: an interrupt, when ``pause``) -> END; every node run is logged in ``calls``."""

    def add(state: S, runtime: Runtime[Ctx]) -> dict:
        calls.append("add")
        return {"x": state.x + runtime.context.step}

    def ask(state: S, runtime: Runtime[Ctx]) -> dict:
        calls.append("ask")
        got = interrupt({"x": state.x})
        return {"x": state.x + int(got), "seen": [runtime.context.step]}

    g = MethodGraph(S, context_schema=Ctx, input_schema=InputState, output_schema=OutputState)
    g.add_node("add", add)
    g.add_edge(START, "add")
    if pause:
        g.add_node("ask", ask)
        g.add_edge("add", "ask")
        g.add_edge("ask", END)
    else:
        g.add_edge("add", END)
    return g.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("name", names())
def test_compile_keeps_everything_langgraphs_compile_sets(name):
    ours = build_graph(name)
    plain = StateGraph.compile(ours.builder)  # LangGraph's own compile of the same builder
    assert type(ours) is CompiledStateGraph and type(plain) is CompiledStateGraph
    assert set(vars(ours)) == set(vars(plain)), "a compiled MethodGraph lost or gained LangGraph state"
    assert set(ours.nodes) == set(plain.nodes) and set(ours.channels) == set(plain.channels)


def test_a_v2_run_coerces_its_output_as_langgraphs_own_graph_does():
    class P(BaseModel):
        x: int = 0

    g = MethodGraph(P)
    g.add_node("inc", lambda s: {"x": s.x + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    ours, plain = g.compile(), StateGraph.compile(g)
    got, want = ours.invoke({"x": 1}, version="v2"), plain.invoke({"x": 1}, version="v2")
    assert want.value == P(x=2) and got.value == want.value and type(got.value) is P


def _drain_async(agen_or_coro):
    async def run():
        if hasattr(agen_or_coro, "__aiter__"):
            return [c async for c in agen_or_coro]
        return await agen_or_coro

    return asyncio.run(run())


ENTRY_POINTS = {
    "invoke": lambda g, inp, **kw: g.invoke(inp, **kw),
    "stream": lambda g, inp, **kw: list(g.stream(inp, **kw)),
    "batch": lambda g, inp, **kw: g.batch([inp], **kw),
    "ainvoke": lambda g, inp, **kw: _drain_async(g.ainvoke(inp, **kw)),
    "astream": lambda g, inp, **kw: _drain_async(g.astream(inp, **kw)),
    "abatch": lambda g, inp, **kw: _drain_async(g.abatch([inp], **kw)),
    "astream_events": lambda g, inp, **kw: _drain_async(g.astream_events(inp, version="v2", **kw)),
    "stream_v2": lambda g, inp, **kw: list(g.stream(inp, version="v2", **kw)),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_checks_the_run_before_a_node_runs(entry):
    calls: list[str] = []
    g = counting_graph(calls)
    run = ENTRY_POINTS[entry]
    with pytest.raises(InputError, match=r"^unknown setting\(s\) for Ctx: nope; known: "):
        run(g, {"question": "Q"}, context={"nope": 1})
    with pytest.raises(InputError, match=r"^Ctx.step must be at least 1, got 0$"):
        run(g, {"question": "Q"}, context={"step": 0})
    with pytest.raises(InputError, match="the question is empty"):
        run(g, {"question": " "}, context=Ctx())
    assert calls == []  # refused before the first node
    run(g, {"question": "Q"}, context={"step": 2})  # a dict Context is coerced to the graph's class
    assert calls == ["add"]


def test_node_errors_are_wrapped_and_ours_and_interrupts_pass_through():
    def broken(state: S) -> dict:
        return {"x": {}["missing"]}

    def refuses(state: S) -> dict:
        raise InputError("bad input found by a node")

    for node, want in ((broken, NodeError), (refuses, InputError)):
        g = MethodGraph(S, context_schema=Ctx)
        g.add_node("n", node)
        g.add_edge(START, "n")
        g.add_edge("n", END)
        with pytest.raises(want) as e:
            g.compile().invoke({"question": "Q"})
        if want is NodeError:
            assert str(e.value).startswith("node 'n' failed: KeyError") and isinstance(e.value.__cause__, KeyError)
        else:
            assert str(e.value) == "bad input found by a node"

    calls: list[str] = []
    g = counting_graph(calls, checkpointer=InMemorySaver(), pause=True)
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    out = g.invoke({"question": "Q"}, cfg, context=Ctx(step=3))
    assert out["__interrupt__"][0].value == {"x": 3}  # interrupt() reached the caller, not a NodeError
    # resumed with no Context: the run's own (step=3) is restored for the continuation
    g.invoke(Command(resume=10), cfg)
    state = g.get_state(cfg).values
    assert state["x"] == 13 and state["seen"] == [3] and calls == ["add", "ask", "ask"]


@pytest.mark.parametrize("name", names())
def test_graph_shapes_are_what_contributing_says(name):
    """CONTRIBUTING.md's claims about every graph's ends: a method that prompts its documents starts
    with the shared open-domain ``retrieve`` (graphs/retrieval.py); one whose documents are a corpus
    (``documents_are_a_corpus``: SQuAI, RAG, ODMDS) starts with a node of its own; ``cite``
    starts by splitting its text. Every graph but ``cite`` (which checks its text there and then
    rewrites) ends with the shared attribution stage."""
    from citegraph.graphs.registry import entry
    from citegraph.nodes.attribution import attribution
    from citegraph.nodes.retrieve import retrieve

    g = build_graph(name)
    edges = {(e.source, e.target) for e in g.get_graph().edges}
    first = {t for s, t in edges if s == START}
    last = {s for s, t in edges if t == END}
    shared_retrieve = g.builder.nodes.get("retrieve") is not None and \
        getattr(g.builder.nodes["retrieve"].runnable, "func", None).__wrapped__ is retrieve
    if name == "cite":
        assert first == {"split"} and last == {"rewrite"}
        return
    assert last == {"attribution"}, name
    assert g.builder.nodes["attribution"].runnable.func.__wrapped__ is attribution
    if getattr(entry(name).context_class(), "documents_are_a_corpus", False):
        assert not shared_retrieve and len(first) == 1, name
    else:
        assert first == {"retrieve"} and shared_retrieve, name


def test_the_package_stands_on_langgraphs_public_ground():
    """No class swap of a compiled graph, no subclass of LangGraph's compiled graph, no import of the API
    server's modules (``langgraph_api``: its internals change without notice); the app langgraph.json
    mounts imports only Starlette. Read from the source, so a new module is covered too."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "citegraph"
    found = []
    for f in sorted(root.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "__class__" for t in node.targets):
                found.append(f"{f.name}:{node.lineno}: __class__ assigned")
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += [f"{f.name}:{node.lineno}: imports {m}" for m in mods if m.split(".")[0] == "langgraph_api"]
            if isinstance(node, ast.ClassDef):
                bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                found += [f"{f.name}:{node.lineno}: subclasses {b}" for b in bases & {"CompiledStateGraph", "Pregel"}]
    assert found == []
    assert type(build_graph("vanilla")) is CompiledStateGraph


def test_contexts_are_pydantic_dataclasses_and_a_plain_dataclass_context_is_refused_by_name():
    """Every registered Context is a pydantic dataclass (so LangGraph's schema, Studio's form and our
    checks read one declaration); a Context written with the standard library's @dataclass would keep
    pydantic FieldInfo objects as its defaults, so the graph refuses it when it is built."""
    import dataclasses

    from pydantic.dataclasses import is_pydantic_dataclass

    from citegraph.graphs.registry import context_class

    assert all(is_pydantic_dataclass(context_class(n)) for n in names())

    @dataclasses.dataclass(kw_only=True)
    class PlainCtx(BaseContext):
        step: int = knob(1, "How much each run adds.", ge=1)

    with pytest.raises(TypeError, match=r"^PlainCtx derives from BaseContext: decorate it with @context_dataclass"):
        MethodGraph(S, context_schema=PlainCtx).add_node("add", lambda state: {})
