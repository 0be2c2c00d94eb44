"""``citegraph trace``: list a checkpoint store's threads, show one thread's steps, and replay or fork
from a step as a new thread (the original unchanged), on SQLite and on a PostgreSQL the test starts."""

from __future__ import annotations

import json

import pytest

import pg_server
from citegraph.cli import main
from citegraph.graphs.registry import entry
from citegraph.run.datasets import Item
from citegraph.run.runner import answer_item, thread_id
from citegraph.state import Document
from citegraph.tools.checkpoints import close_checkpointers, open_checkpointer

DOCS = [Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann."),
        Document(id="b", title="Beta", text="Beta is a river in Chile.")]


def run_one(store: str, scripted) -> str:
    spec, _ = scripted(["Alpha was founded in 1901 [1]. Beta is a river in Chile [2]."])
    e = entry("vanilla")
    ctx = e.make_context(llm=spec, attribution="repair")
    item = Item(id="q1", question="What are Alpha and Beta?", documents=DOCS)
    t = thread_id("vanilla", item, ctx)
    answer_item(e.build(checkpointer=open_checkpointer(store)), item, ctx, thread=t)
    return t


def check_store(store: str, scripted, capsys) -> None:
    t = run_one(store, scripted)
    assert main(["trace", "list", "--checkpoint", store, "--json"]) == 0
    threads = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["thread_id"], x["method"], x["status"]) for x in threads] == [(t, "vanilla", "finished")]
    assert threads[0]["question"] == "What are Alpha and Beta?"
    assert main(["trace", "show", "--checkpoint", store, "--thread", t, "--json"]) == 0
    steps = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [s["nodes"] for s in steps] == [[], ["__start__"], ["retrieve"], ["generate"], ["attribute"], ["attribution"]]
    gen = next(s for s in steps if s["nodes"] == ["generate"])
    assert "generation" in gen["changed"] and gen["next"] == ["attribute"] and gen["seconds"] >= 0
    assert steps[-1]["next"] == [] and steps[-1]["changed"] == ["answer"]
    # each step's model and verifier calls: the one LLM call in `generate`, the verifier's pairs in the
    # attribution stage, nothing where no model was called
    calls = {tuple(s["nodes"]): s["calls"] for s in steps}
    (llm,) = calls[("generate",)]
    assert llm["node"] == "generate" and llm["llm_calls"] == 1 and llm["verifier_pairs"] == 0
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0
    stage = calls[("attribution",)]
    assert stage and sum(c["verifier_pairs"] for c in stage) > 0 and sum(c["llm_calls"] for c in stage) == 0
    assert calls[()] == calls[("__start__",)] == calls[("retrieve",)] == []
    assert "node_calls" not in {k for s in steps for k in s["changed"]}
    assert main(["trace", "show", "--checkpoint", store, "--thread", t]) == 0
    text = capsys.readouterr().out
    assert f"calls: 1 LLM call ({llm['prompt_tokens']:,}+{llm['completion_tokens']:,} tokens)" in text
    assert "verifier pairs" in text

    # fork after `generate` with another generation: the attribution stage checks the edited text
    assert main(["trace", "fork", "--checkpoint", store, "--thread", t, "--step", str(gen["step"]),
                 "--set", "generation=Alpha was founded in 1950 [1]."]) == 0
    out = capsys.readouterr().out
    new = out.splitlines()[0].removeprefix("new thread: ")
    assert new.startswith(t + ":fork:") and "Alpha was founded in 1950." in out and "unsupported" in out
    from citegraph.run.trace import TraceStore

    ts = TraceStore(store)
    assert ts.steps(t)[-1].values["answer"].render() == "Alpha was founded in 1901 [1]. Beta is a river in Chile [2]."
    forked = ts.steps(new)
    assert forked[-1].values["generation"] == "Alpha was founded in 1950 [1]."
    assert forked[-1].values["answer"].sentences[0].support == "unsupported"
    # replay: the same step again, unchanged, gives the original's answer on another new thread
    assert main(["trace", "replay", "--checkpoint", store, "--thread", t, "--step", str(gen["step"])]) == 0
    again = capsys.readouterr().out.splitlines()[0].removeprefix("new thread: ")
    assert ts.steps(again)[-1].values["answer"].render() == ts.steps(t)[-1].values["answer"].render()
    assert main(["trace", "list", "--checkpoint", store, "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3  # the original and its two new threads


def check_raac(store: str, scripted, capsys, monkeypatch) -> None:
    """A scripted RAAC run (its agents are subgraphs): list, show with each step's calls, fork after the
    TextAgent with an edited summary (its route after the TextAgent takes the Context: the fork runs it
    outside a run, with the recorded Context), the original unchanged."""
    import citegraph.nodes.raac.citation_agent as citation_mod
    from citegraph.run.trace import TraceStore
    from test_raac import Router, fb, hash_embed, make_verifier

    monkeypatch.setattr(citation_mod, "_embed", hash_embed)
    router = Router(gen=["Alpha was founded in 1901 [1]. Beta is a river in Chile [2]."], feedback=[fb(3)])
    spec, model = scripted(router)
    e = entry("raac")
    ctx = e.make_context(llm=spec, verifier=make_verifier(lambda p, h: 1.0)[0], objective_checks=False,
                         use_calibration=False)
    item = Item(id="r1", question="What are Alpha and Beta?", documents=DOCS)
    t = thread_id("raac", item, ctx)
    answer_item(e.build(checkpointer=open_checkpointer(store)), item, ctx, thread=t)
    assert main(["trace", "list", "--checkpoint", store, "--json"]) == 0
    assert t in {json.loads(x)["thread_id"] for x in capsys.readouterr().out.splitlines()}
    assert main(["trace", "show", "--checkpoint", store, "--thread", t, "--json"]) == 0
    steps = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    by_node = {tuple(s["nodes"]): s for s in steps}
    text, cite = by_node[("text_agent",)], by_node[("citation_agent",)]
    assert [c["node"] for c in text["calls"]] == ["generate", "feedback"]
    assert sum(c["llm_calls"] for s in steps for c in s["calls"]) == len(model.calls)
    assert sum(c["verifier_pairs"] for c in cite["calls"]) > 0
    edited = "Gamma won the 1990 prize [1]."
    assert main(["trace", "fork", "--checkpoint", store, "--thread", t, "--step", str(text["step"]),
                 "--set", f"summary={edited}"]) == 0
    new = capsys.readouterr().out.splitlines()[0].removeprefix("new thread: ")
    ts = TraceStore(store)
    forked, original = ts.steps(new), ts.steps(t)
    assert forked[-1].values["summary"] == edited and forked[-1].next == []  # ran on to the end
    assert [s.nodes for s in forked][-3:] == [["assess"], ["finalize"], ["attribution"]]
    assert original[-1].values["summary"] != edited and len(original) == len(steps)  # the original as it was


def test_trace_on_sqlite(tmp_path, scripted, capsys, monkeypatch):
    check_store(f"sqlite:///{tmp_path / 'ck.db'}", scripted, capsys)
    check_raac(f"sqlite:///{tmp_path / 'raac.db'}", scripted, capsys, monkeypatch)


@pytest.fixture(scope="module")
def postgres():
    yield from pg_server.postgres_fixture()


def test_trace_on_postgres(postgres, scripted, capsys, monkeypatch):
    try:
        check_store(postgres.new_database("trace"), scripted, capsys)
        check_raac(postgres.new_database("trace_raac"), scripted, capsys, monkeypatch)
    finally:
        close_checkpointers()


@pytest.mark.parametrize("argv, message", [
    (["show", "--thread", "citegraph:vanilla:nope:1"], "holds no thread 'citegraph:vanilla:nope:1'"),
    (["show", "--thread", "someone-elses-thread"], "is not a citegraph thread"),
    (["fork", "--thread", "{t}", "--step", "99", "--set", "question=x"], "has no step 99"),
    (["fork", "--thread", "{t}", "--step", "2", "--set", "nofield=x"], "holds no field nofield"),
    (["fork", "--thread", "{t}", "--step", "-1", "--set", "question=x"], "is the input, before any node ran"),
    (["fork", "--thread", "{t}", "--step", "2"], "fork needs at least one --set"),
    (["fork", "--thread", "{t}", "--step", "2", "--set", "question"], "expected FIELD=VALUE"),
])
def test_bad_ids_and_steps_are_one_line(tmp_path, scripted, capsys, argv, message):
    store = f"sqlite:///{tmp_path / 'ck.db'}"
    t = run_one(store, scripted)
    argv = [a.replace("{t}", t) for a in argv]
    assert main(["trace", argv[0], "--checkpoint", store, *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_show_with_the_checkpoint_lists_each_items_steps(tmp_path, scripted):
    from citegraph.view.page import build_page, render_page

    spec, _ = scripted(["Alpha was founded in 1901 [1]. Beta is a river in Chile [2]."])
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d.model_dump()) + "\n" for d in DOCS))
    store = f"sqlite:///{tmp_path / 'ck.db'}"
    out = tmp_path / "one.json"
    assert main(["ask", "vanilla", "-q", "What are <b>Alpha</b> and Beta?", "--docs", str(docs), "--llm", spec,
                 "--set", "attribution=repair", "--checkpoint", store, "--save", str(out)]) == 0
    page = build_page([out], verifier=None, checkpoint=store)
    steps = page.rows[0].cells[0].steps
    assert steps["summary"].startswith("Steps (6) of thread citegraph:vanilla:ask:")
    rows = steps["blocks"][0]["table"]["rows"]
    assert [r[1] for r in rows] == [["(input)"], ["__start__"], ["retrieve"], ["generate"], ["attribute"], ["attribution"]]
    html = render_page(page)
    assert '<details class="trace"><summary>Steps (6)' in html and "<b>Alpha</b>" not in html  # collapsed, escaped
    assert build_page([out], verifier=None).rows[0].cells[0].steps is None  # without the store: no steps
    other = build_page([out], verifier=None, checkpoint=f"sqlite:///{tmp_path / 'empty.db'}").rows[0].cells[0].steps
    assert "holds no thread" in other["blocks"][0]["note"]


def test_a_subgraphs_calls_are_recorded_once():
    """A compiled subgraph added as a node hands back its whole state, node_calls included: the reducer
    takes that list in place of the one it was given, so each node run is recorded once (and the steps
    add up to the run's calls)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START
    from langgraph.runtime import Runtime

    from citegraph.graphs.base import MethodGraph
    from citegraph.state.base import InputState, OutputState, RunContextState, add_node_calls
    from citegraph.state.vanilla import VanillaContext
    from citegraph.testing import scripted_model
    from citegraph.tools.models import get_chat_model

    class S(InputState, OutputState, RunContextState):
        notes: list[str] = []

    def ask(tag: str):
        def node(state: S, runtime: Runtime[VanillaContext]) -> dict:
            reply = get_chat_model(runtime.context.llm).invoke(f"{tag}: {state.question}")
            return {"notes": [*state.notes, f"{tag}={reply.content}"]}
        return node

    inner = MethodGraph(S, context_schema=VanillaContext)
    inner.add_node("inner_a", ask("a"))
    inner.add_node("inner_b", ask("b"))
    inner.add_edge(START, "inner_a"), inner.add_edge("inner_a", "inner_b"), inner.add_edge("inner_b", END)
    outer = MethodGraph(S, context_schema=VanillaContext)
    outer.add_node("first", ask("first"))
    outer.add_node("sub", inner.compile())
    outer.add_node("last", ask("last"))
    outer.add_edge(START, "first"), outer.add_edge("first", "sub"), outer.add_edge("sub", "last"), outer.add_edge("last", END)
    graph = outer.compile(checkpointer=InMemorySaver())
    spec, model = scripted_model(["ok"])
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"question": "Q?", "documents": [{"text": "A document."}]}, cfg, context=VanillaContext(llm=spec))
    calls = graph.get_state(cfg).values["node_calls"]
    assert [c["node"] for c in calls] == ["first", "inner_a", "inner_b", "last"] and len(model.calls) == 4
    assert all(c["llm_calls"] == 1 and "new" not in c for c in calls)
    # the reducer itself: a fresh record is appended; a handed-back list replaces the prefix it repeats
    x, y = {"node": "x"}, {"node": "y"}
    assert add_node_calls([x], [{**x, "new": True}]) == [x, x]  # the same node again, with the same counts
    assert add_node_calls([x], [x, y]) == [x, y] and add_node_calls([x], [y]) == [x, y]
