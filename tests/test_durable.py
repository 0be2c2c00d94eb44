"""Durable runs: ``--checkpoint memory|sqlite:///...|postgresql://...`` resumes an item from its last
completed node.

* in process: a RAAC item whose model fails mid-TextAgent resumes on its checkpoint thread and makes
  only the calls after the last completed node; a finished thread gives its stored answer; the thread
  id follows the Context and the inputs; every graph's state round-trips through the strict store;
* SIGKILL: ``citegraph run raac`` through ``openai:`` against the loopback fake server, killed inside
  the item, re-run: SQLite, and a real PostgreSQL server (initdb + pg_ctl in a temp dir; skipped with
  the reason where the binaries are absent);
* bad specs: one line, exit status 2, before any model call (run, bench, ask).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from citegraph.cli import main
from citegraph.run.datasets import Item
from citegraph.run.runner import answer_item, run_dataset, thread_id
from citegraph.graphs.registry import build_graph, make_context
from citegraph.state import Document
from citegraph.tools.checkpoints import close_checkpointers, open_checkpointer, redact
from citegraph.testing import ScriptedChatModel
from citegraph.tools.models import register_chat_model
from citegraph.tools.verifier import FunctionVerifier, register_verifier

import pg_server
import raac_fake
from fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]
FRESH_CALLS = 12  # a fresh raac_fake item: generate + 5 feedback + 4 refine + 2 judge calls
IN_PROCESS_CALLS = 10  # the same with a stub verifier instead of the LLM judge


@pytest.fixture(autouse=True)
def _close_stores():
    yield
    close_checkpointers()


def _raac_item_in_process(tmp_path, fail_at: int | None):
    """A scripted RAAC run on a SQLite store whose model raises on call ``fail_at``."""
    replies = raac_fake.RaacReplies(latency=0)
    calls = {"n": 0}

    def script(messages, kwargs):
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise RuntimeError("connection reset")
        body = {"messages": [{"content": str(m.content)} for m in messages]}
        return replies(body)

    spec = f"fake:durable{fail_at}"
    register_chat_model(spec, ScriptedChatModel(script=script))
    register_verifier("stub:durable", FunctionVerifier(lambda p, h: 1.0, spec="stub:durable"))
    ctx = make_context("raac", llm=spec, verifier="stub:durable", k=5, objective_checks=False)
    docs = [Document(id=f"d{i}", **d) for i, d in enumerate(raac_fake.DOCS)]
    item = Item(id="x", question="What are Alpha and Beta?", documents=docs)
    saver = open_checkpointer(f"sqlite:///{tmp_path / 'ck.db'}")
    return build_graph("raac", checkpointer=saver), item, ctx, calls


def test_failed_item_resumes_from_its_last_completed_node(tmp_path):
    graph, item, ctx, calls = _raac_item_in_process(tmp_path, fail_at=6)  # the 3rd feedback fails
    thread = thread_id("raac", item, ctx)
    with pytest.raises(Exception, match="connection reset"):
        answer_item(graph, item, ctx, thread=thread)
    assert calls["n"] == 6
    snap = graph.get_state({"configurable": {"thread_id": thread}})
    assert snap.next == ("text_agent",)  # the parent waits on the TextAgent subgraph, mid-way

    ans, usage = answer_item(graph, item, ctx, thread=thread)
    # generate, feedback, refine, feedback, refine were done: only the failed call and the rest run
    assert calls["n"] - 6 == IN_PROCESS_CALLS - 5 == usage["llm_calls"]
    assert usage["resumed_from"]["next"] == ["text_agent"] and usage["thread_id"] == thread
    assert len(graph.get_state({"configurable": {"thread_id": thread}}).values["rounds"]) == 5
    assert ans.render() == raac_fake.SUMMARY

    # the thread is finished: its stored answer comes back without a model call
    n = calls["n"]
    again, usage2 = answer_item(graph, item, ctx, thread=thread)
    assert calls["n"] == n and usage2["llm_calls"] == 0
    assert usage2["resumed_from"]["next"] == [] and again.render() == ans.render()


def test_fresh_item_on_a_store_runs_whole(tmp_path):
    graph, item, ctx, calls = _raac_item_in_process(tmp_path, fail_at=None)
    ans, usage = answer_item(graph, item, ctx, thread=thread_id("raac", item, ctx))
    assert calls["n"] == usage["llm_calls"] == IN_PROCESS_CALLS and usage["resumed_from"] is None


def test_thread_id_follows_the_context_and_the_inputs(docs):
    item = Item(id="q1", question="Who founded Alpha?", documents=docs)
    a = thread_id("raac", item, make_context("raac", llm="fake:a"))
    assert a.startswith("citegraph:raac:q1:") and a == thread_id("raac", item, make_context("raac", llm="fake:a"))
    assert a != thread_id("raac", item, make_context("raac", llm="fake:a", k=2))  # another knob
    assert a != thread_id("raac", item, make_context("raac", llm="fake:b"))  # another model
    assert a != thread_id("raac:k=2", item, make_context("raac", llm="fake:a"))  # another bench variant
    other = Item(id="q1", question="Who founded Alpha?", documents=docs[:2])  # same id, other documents
    assert a != thread_id("raac", other, make_context("raac", llm="fake:a"))


def test_every_graph_round_trips_through_the_strict_store(tmp_path, monkeypatch):
    """The store's serializer is strict (only LangGraph's safe types and citegraph's state types):
    every method's state comes back typed, nothing is refused, no 'unregistered type' warning."""
    import citegraph.graphs.registry as registry
    import test_checkpoint

    saver = open_checkpointer(f"sqlite:///{tmp_path / 'all.db'}")
    real = registry.build_graph
    monkeypatch.setattr(registry, "build_graph", lambda name, checkpointer=None: real(name, checkpointer=saver))
    report = test_checkpoint.run_all()
    assert set(report) == set(registry.names())
    for method, r in report.items():
        assert r["refused"] == [] and r["unregistered"] == [], (method, r)
        assert r["answer_typed"] and r["round_trips"], method


def test_run_dataset_overwrite_discards_the_items_threads(tmp_path, scripted):
    spec, model = scripted(["Alpha was founded in 1901 [1]."])
    items = [Item(id="a", question="Q?", documents=[Document(id="d", text="Alpha was founded in 1901.")])]
    ctx = make_context("vanilla", llm=spec)
    ck = f"sqlite:///{tmp_path / 'ck.db'}"
    run_dataset("vanilla", items, tmp_path / "o.json", ctx, checkpoint=ck)
    assert len(model.calls) == 1
    (tmp_path / "o.json").unlink()  # the journal's record is gone: the finished thread answers
    run_dataset("vanilla", items, tmp_path / "o.json", ctx, checkpoint=ck)
    rec = json.loads((tmp_path / "o.json").read_text())["data"][0]
    assert len(model.calls) == 1 and rec["citegraph"]["usage"]["resumed_from"]["next"] == []
    assert rec["output"] == "Alpha was founded in 1901 [1]."
    run_dataset("vanilla", items, tmp_path / "o.json", ctx, checkpoint=ck, overwrite=True)
    rec = json.loads((tmp_path / "o.json").read_text())
    assert len(model.calls) == 2 and rec["data"][0]["citegraph"]["usage"]["resumed_from"] is None
    assert rec["args"]["checkpoint"] == ck


def test_ask_with_a_checkpoint_reuses_a_finished_answer(tmp_path, scripted, capsys):
    spec, model = scripted(["The tower is 330 metres tall [2]."])
    args = ["ask", "vanilla", "--example", "--llm", spec, "--checkpoint", f"sqlite:///{tmp_path / 'ask.db'}"]
    assert main(args) == 0 and len(model.calls) == 1
    first = capsys.readouterr().out
    assert main(args) == 0 and len(model.calls) == 1
    second = capsys.readouterr().out
    assert "the stored answer of a finished run" in second and "0 LLM call(s)" in second
    assert first.split("\n[")[0] == second.split("\n[")[0]  # the same answer, printed the same


def test_concurrent_items_share_one_sqlite_store(tmp_path, scripted):
    spec, model = scripted(lambda messages, kwargs: "Alpha was founded in 1901 [1].")
    items = [Item(id=f"i{k}", question=f"Q{k}?", documents=[Document(id="d", text="Alpha was founded in 1901.")])
             for k in range(6)]
    db = tmp_path / "ck.db"
    stats = run_dataset("vanilla", items, tmp_path / "o.json", make_context("vanilla", llm=spec),
                        concurrency=3, checkpoint=f"sqlite:///{db}")
    assert stats["ran"] == 6 and stats["failed"] == 0 and len(model.calls) == 6
    with sqlite3.connect(db) as conn:
        threads = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert {t.split(":")[2] for t in threads} == {it.id for it in items}


def test_bench_runs_each_variant_on_its_own_threads(tmp_path, scripted):
    from citegraph.eval.bench import run_bench

    spec, model = scripted(lambda messages, kwargs: "Alpha was founded in 1901 by Ann [1].")
    register_verifier("stub:bench-durable", FunctionVerifier(lambda p, h: 1.0, spec="stub:bench-durable"))
    data = tmp_path / "d.json"
    data.write_text(json.dumps([{"id": "a", "question": "Who founded Alpha?", "answer": "Ann",
                                 "docs": [{"title": "Alpha", "text": "Alpha was founded in 1901 by Ann."}]}]))
    run_bench(["vanilla", "vanilla:temperature=0.3"], data, tmp_path / "b", llm=spec, verifier="stub:bench-durable",
              checkpoint=f"sqlite:///{tmp_path / 'ck.db'}")
    ids = {m: json.loads((tmp_path / "b" / "raw" / f"{m}.json").read_text())["data"][0]["citegraph"]["usage"]["thread_id"]
           for m in ("vanilla", "vanilla:temperature=0.3")}
    assert ids["vanilla"].startswith("citegraph:vanilla:a:")
    assert ids["vanilla:temperature=0.3"].startswith("citegraph:vanilla:temperature=0.3:a:")
    assert len(model.calls) == 2


def test_streamed_item_resumes_too(tmp_path):
    """``ask`` on a terminal streams the run (on_event); the stream resumes from the checkpoint as well."""
    graph, item, ctx, calls = _raac_item_in_process(tmp_path, fail_at=4)
    thread = thread_id("raac", item, ctx)
    with pytest.raises(Exception, match="connection reset"):
        answer_item(graph, item, ctx, on_event=lambda ev: None, thread=thread)
    events: list[dict] = []
    ans, usage = answer_item(graph, item, ctx, on_event=events.append, thread=thread)
    assert calls["n"] - 4 == IN_PROCESS_CALLS - 3 == usage["llm_calls"]
    assert ans.render() == raac_fake.SUMMARY and any(e.get("node") == "finalize" for e in events)


# --------------------------------------------------------------------------- bad specs
def _bad_specs(tmp_path) -> list[tuple[str, str]]:
    not_db = tmp_path / "not.db"
    not_db.write_bytes(b"this is not an SQLite database, " * 64)
    return [
        ("redis://127.0.0.1:6379", "unknown store"),
        ("sqlite:///", "no file after sqlite:///"),
        (f"sqlite:///{tmp_path / 'missing' / 'ck.db'}", "does not exist"),
        (f"sqlite:///{tmp_path}", "is a directory"),
        (f"sqlite:///{not_db}", "not a usable SQLite database"),
        (f"postgresql://u:secret@127.0.0.1:{pg_server.free_port()}/db", "cannot connect to the database"),
    ]


@pytest.mark.parametrize("command", ["run", "bench", "ask"])
def test_bad_checkpoint_spec_is_one_line_and_exit_2(tmp_path, scripted, capsys, command):
    spec, model = scripted(["An answer [1]."])
    data = tmp_path / "d.json"
    data.write_text(json.dumps(raac_fake.dataset(1)))
    for ck, reason in _bad_specs(tmp_path):
        argv = {
            "run": ["run", "vanilla", "-i", str(data), "-o", str(tmp_path / "o.json"), "--llm", spec],
            "bench": ["bench", "--methods", "vanilla", "--data", str(data), "--out", str(tmp_path / "b"), "--llm", spec],
            "ask": ["ask", "vanilla", "--example", "--llm", spec],
        }[command] + ["--checkpoint", ck]
        assert main(argv) == 2, ck
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("citegraph: error: --checkpoint") and reason in err, err
        assert "secret" not in err  # a password is never printed
    assert model.calls == [] and not (tmp_path / "o.json").exists()


def test_redact_hides_the_password():
    assert redact("postgresql://u:pw@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact("postgresql://u@h:5432/db") == "postgresql://u@h:5432/db"


# --------------------------------------------------------------------------- SIGKILL mid-item
def _cli(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "citegraph.cli", *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_resume(tmp_path, checkpoint: str | None, n_items: int, kill_at_call: int, latency: float = 0.05,
                rerun_output: str = "out.json") -> dict:
    """``citegraph run raac`` over ``n_items`` fake-server items; SIGKILL while request number
    ``kill_at_call`` is held unanswered (so the kill lands inside that call), then re-run to the end
    (into ``rerun_output``: another name is another worker, with a journal of its own)."""
    data, out = tmp_path / "data.json", tmp_path / "out.json"
    data.write_text(json.dumps(raac_fake.dataset(n_items)))
    replies = raac_fake.RaacReplies(latency, hold_at=kill_at_call)
    args = ["run", "raac", "-i", str(data), "-o", str(out), "--llm", "openai:fake",
            "--verifier", "llm-judge:openai:fake", *[x for s in raac_fake.SETTINGS for x in ("--set", s)]]
    if checkpoint:
        args += ["--checkpoint", checkpoint]
    with FakeOpenAI(replies) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "t", "PYTHONPATH": str(REPO)}
        p = _cli(args, env)
        try:
            assert replies.held.wait(timeout=120), "the run never reached the call to kill in"
            p.send_signal(signal.SIGKILL)
            p.wait()
        finally:
            replies.release.set()
        before = replies.count()
        assert before == kill_at_call
        if rerun_output != "out.json":
            out = tmp_path / rerun_output
            args[args.index("-o") + 1] = str(out)
        p = _cli(args, env)
        _, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr[-2000:]
        return {"calls_before": before, "calls_after": replies.count() - before, "stderr": stderr,
                "final": json.loads(out.read_text()), "out": out, "kinds": [k for k, _ in replies.log]}


def _check_final(res: dict, n_items: int) -> dict:
    data = res["final"]["data"]
    assert [d["citegraph"]["item_id"] for d in data] == [f"item{i}" for i in range(n_items)]  # once each, in order
    assert all(d["output"] == raac_fake.SUMMARY for d in data)
    assert not res["out"].with_name(res["out"].name + ".partial.jsonl").exists()  # finished: journal folded in
    return data[-1]["citegraph"]["usage"]


def test_sqlite_run_killed_mid_item_resumes_from_its_last_node(tmp_path):
    db = tmp_path / "ck.db"
    res = kill_resume(tmp_path, f"sqlite:///{db}", n_items=1, kill_at_call=6)
    usage = _check_final(res, 1)
    # five calls had finished (generate, feedback, refine, feedback, refine): only the rest is asked again
    assert res["calls_after"] == FRESH_CALLS - 5 == usage["llm_calls"]
    assert usage["resumed_from"]["next"] == ["text_agent"]
    with sqlite3.connect(db) as conn:
        threads = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert threads == {usage["thread_id"]}


def test_run_killed_mid_item_without_a_checkpoint_restarts_the_item(tmp_path):
    res = kill_resume(tmp_path, None, n_items=1, kill_at_call=6)
    usage = _check_final(res, 1)
    assert res["calls_after"] == FRESH_CALLS == usage["llm_calls"] and "resumed_from" not in usage


@pytest.fixture(scope="module")
def postgres():
    yield from pg_server.postgres_fixture()


def test_postgres_run_killed_mid_item_resumes_without_loss_or_duplicates(tmp_path, postgres):
    import psycopg

    # the second item is killed in its 6th call: the first is in the journal, the second resumes
    url = postgres.new_database("one_worker")
    res = kill_resume(tmp_path, url, n_items=2, kill_at_call=FRESH_CALLS + 6)
    usage = _check_final(res, 2)
    assert "1 new, 1 already done, 0 failed" in res["stderr"]
    assert res["calls_after"] == FRESH_CALLS - 5 == usage["llm_calls"] < FRESH_CALLS
    assert usage["resumed_from"]["next"] == ["text_agent"]
    with psycopg.connect(url) as conn:
        threads = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert {t.rsplit(":", 1)[0] for t in threads} == {"citegraph:raac:item0", "citegraph:raac:item1"}


def test_postgres_another_worker_takes_over_a_killed_workers_items(tmp_path, postgres):
    """A second process with an output (and journal) of its own, on the same store, input and settings:
    the finished item comes from the store without a model call, the half-finished one continues."""
    res = kill_resume(tmp_path, postgres.new_database("two_workers"), n_items=2, kill_at_call=FRESH_CALLS + 6,
                      rerun_output="worker_b.json")
    _check_final(res, 2)
    first, second = (d["citegraph"]["usage"] for d in res["final"]["data"])
    assert "2 new, 0 already done, 0 failed" in res["stderr"]
    assert first["llm_calls"] == 0 and first["resumed_from"]["next"] == []
    assert second["llm_calls"] == res["calls_after"] == FRESH_CALLS - 5
    assert second["resumed_from"]["next"] == ["text_agent"]
