"""A resumed run keeps the run's Context (issue #22, item 4): the Context recorded in the state's
``run_context`` applies to a continuation that brings none, a Context sent with the continuation
wins, and the record is never part of what a caller sends or receives."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START
from langgraph.types import Command, Send
from pydantic import Field

from citegraph.graphs.base import MethodGraph, context_record
from citegraph.graphs.registry import build_graph, make_context, names
from citegraph.state import Document
from citegraph.state.base import BaseContext, RunContextState, RunRecord, context_dataclass, knob
from citegraph.state.genprog import GenProgContext
from citegraph.testing import ScriptedChatModel
from citegraph.tools.models import registry
from test_genprog import DOCS, router


@pytest.fixture
def local_model(monkeypatch):
    """The defaults' model spec ('local') answered by a scripted model, so a run that fell back to the
    defaults shows up as calls here instead of loading the embedded model."""
    model = ScriptedChatModel(script=router("- paraphrase(S3)", {"Paraphrase": "Beta flows in Chile."}))
    monkeypatch.setitem(registry._registry, "local", model)
    return model


def module_calls(model) -> list[str]:
    return [c["messages"][-1].content.split()[0] for c in model.calls if "**YOUR TASK**" not in c["messages"][-1].content]


def interrupted_genprog(scripted):
    spec, model = scripted(router("- paraphrase(S1)", {"Paraphrase": "Alpha began in 1901."}))
    g = build_graph("genprog", checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    out = g.invoke({"question": "Q", "documents": DOCS}, cfg, context=GenProgContext(llm=spec, review_program=True))
    assert "__interrupt__" in out and module_calls(model) == []  # planned, nothing executed yet
    return g, cfg, spec, model


def test_resume_without_a_context_keeps_the_runs_context(scripted, local_model):
    g, cfg, spec, model = interrupted_genprog(scripted)
    assert g.get_state(cfg).values["run_context"]["values"]["llm"] == spec
    out = g.invoke(Command(resume="accept"), cfg)  # no Context
    # the review node saw review_program=True (it took the resume value), and the tree, run by a Send
    # task whose input is not the state, called the run's model
    assert [(s.text, s.citations) for s in out["answer"].sentences] == [("Alpha began in 1901.", [1])]
    assert out["answer"].metadata["reviewed"] is True
    assert module_calls(model) == ["Paraphrase"] and local_model.calls == []


def test_resume_without_a_context_in_async_and_streamed(scripted, local_model):
    import asyncio

    g, cfg, spec, model = interrupted_genprog(scripted)

    async def resume():
        return [c async for c in g.astream(Command(resume="accept"), cfg, context={}, stream_mode="updates")]

    chunks = asyncio.run(resume())  # {} is what the API server passes when the client sent no Context
    assert any("attribute" in c for c in chunks)
    assert module_calls(model) == ["Paraphrase"] and local_model.calls == []


def test_a_context_sent_with_the_resume_wins_and_is_recorded(scripted, local_model):
    g, cfg, spec, model = interrupted_genprog(scripted)
    spec_b, model_b = scripted(router("- paraphrase(S1)", {"Paraphrase": "Alpha is from 1901."}))
    out = g.invoke(Command(resume="accept"), cfg, context=GenProgContext(llm=spec_b, review_program=True))
    assert out["answer"].sentences[0].text == "Alpha is from 1901."
    assert module_calls(model) == [] and module_calls(model_b) == ["Paraphrase"] and local_model.calls == []
    assert g.get_state(cfg).values["run_context"]["values"]["llm"] == spec_b


def test_a_new_input_without_a_context_is_a_new_run_with_the_defaults(scripted, local_model):
    g, cfg, spec, model = interrupted_genprog(scripted)
    g.invoke(Command(resume="accept"), cfg)
    out = g.invoke({"question": "Where is Beta?", "documents": DOCS}, cfg)  # same thread, new question
    assert out["answer"].sentences[0].text == "Beta flows in Chile."
    assert local_model.calls and module_calls(model) == ["Paraphrase"]
    assert g.get_state(cfg).values["run_context"]["values"]["llm"] == "local"


def test_the_record_is_in_every_state_and_in_no_input_or_output_schema():
    for method in names():
        g = build_graph(method)
        assert "run_context" in g.builder.schemas[g.builder.state_schema], method
        assert "run_context" not in g.get_input_jsonschema()["properties"], method
        assert "run_context" not in g.get_output_jsonschema()["properties"], method
    assert context_record(make_context("raac", llm="x", k=2))["values"]["k"] == 2


@context_dataclass
class TwoCtx(BaseContext):
    tag: str = knob("default-tag", "A tag the nodes write.")


class TwoState(RunContextState):
    tags: Annotated[list[str], operator.add] = Field(default_factory=list)


class Task(RunRecord):  # a Send payload carries the run's Context (filled in by the route)
    n: int


def test_parallel_first_nodes_and_a_send_fan_out_record_without_a_conflict():
    """Two nodes of one step both see no record and write it (a plain last-value channel would raise
    InvalidUpdateError); Send tasks read the Context restored for the whole continuation."""

    def left(state: TwoState, runtime) -> dict:
        return {"tags": [f"left:{runtime.context.tag}"]}

    def right(state: TwoState, runtime) -> dict:
        return {"tags": [f"right:{runtime.context.tag}"]}

    def gate(state: TwoState, runtime) -> dict:
        from langgraph.types import interrupt

        interrupt("go?")
        return {}

    def work(task: Task, runtime) -> dict:
        return {"tags": [f"work{task.n}:{runtime.context.tag}"]}

    g = MethodGraph(TwoState, context_schema=TwoCtx)
    for name, fn in [("left", left), ("right", right), ("gate", gate)]:
        g.add_node(name, fn)
    g.add_node("work", work, input_schema=Task)
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge(["left", "right"], "gate")
    g.add_conditional_edges("gate", lambda s: [Send("work", Task(n=i)) for i in range(3)], ["work"])
    g.add_edge("work", END)
    app = g.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    app.invoke({}, cfg, context=TwoCtx(tag="mine"))
    assert app.get_state(cfg).values["run_context"]["values"]["tag"] == "mine"
    out = app.invoke(Command(resume="yes"), cfg)
    assert sorted(out["tags"]) == ["left:mine", "right:mine", "work0:mine", "work1:mine", "work2:mine"]


def test_a_send_fan_out_method_runs_with_a_checkpointer(scripted):
    """GINGER (a Send per passage) with a checkpointer and a Context runs to its answer, the run's
    Context recorded."""
    from stubs import KeywordVerifier

    from citegraph.tools.verifier import register_verifier

    def reply(messages, kwargs):
        if "Find the information nuggets" in messages[-1].content:
            return '{"nuggets": ["Alpha was founded in 1901 by Ann"]}'
        return "Alpha was founded in 1901 by Ann [1]."

    spec, _ = scripted(reply)
    register_verifier("stub:resume", KeywordVerifier(spec="stub:resume"))
    g = build_graph("ginger", checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    docs = [Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann."),
            Document(id="b", title="Beta", text="Beta is a river in Chile.")]
    out = g.invoke({"question": "When was Alpha founded?", "documents": docs}, cfg,
                   context=make_context("ginger", llm=spec, verifier="stub:resume"))
    assert out["answer"].sentences
    assert g.get_state(cfg).values["run_context"]["values"]["llm"] == spec


def test_a_record_of_another_class_or_with_invalid_values_gives_no_context(caplog):
    from citegraph.graphs.base import context_from_record
    from citegraph.state.raac import RaacContext

    rec = context_record(GenProgContext(llm="fake:x", review_program=True))
    assert context_from_record(GenProgContext, rec) == GenProgContext(llm="fake:x", review_program=True)
    assert context_from_record(RaacContext, rec) is None  # another method's Context
    rec["values"]["max_new_tokens"] = "many"
    assert context_from_record(GenProgContext, rec) is None and "no longer valid" in caplog.text
    rec["values"] = {"llm": "fake:y", "knob_since_removed": 1}  # unknown knobs are dropped
    assert context_from_record(GenProgContext, rec).llm == "fake:y"
