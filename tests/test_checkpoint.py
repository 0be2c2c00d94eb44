"""Every graph's state survives a checkpointer in LangGraph's strict msgpack mode.

LangGraph's default (permissive) serializer warns "Deserializing unregistered type citegraph..." for
each custom type it reads back from a checkpoint, and says such types will be blocked in a future
version. With ``LANGGRAPH_STRICT_MSGPACK=true`` (read when langgraph is imported) a compiled graph
allows exactly the types reachable from its schemas, so every type we keep in state must be
reachable from the annotations; one hidden behind ``Any`` would be refused. The runs happen in a
subprocess because the flag is read at import time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def run_all() -> dict:
    """Run every graph with a checkpointer; report refused types and whether the state round-trips."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
    from stubs import KeywordVerifier

    from citegraph.graphs.registry import (
        build_graph,
        make_context,
        names,
    )
    from citegraph.state import AttributedAnswer, Document
    from citegraph.testing import ScriptedChatModel
    from citegraph.tools.models import register_chat_model
    from citegraph.tools.verifier import register_verifier

    docs = [Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann. Alpha is a town."),
            Document(id="b", title="Beta", text="Beta is a river in Chile. Beta is long.")]
    def reply(messages, kwargs):
        # GenerationPrograms' planner gets a program over S-ids; every other prompt gets one cited
        # sentence, on which the structured steps (feedback, notes) fall back, so their fallback
        # records are in the checkpoint too
        if "**YOUR TASK**" in messages[-1].content:
            return "- fusion(paraphrase(S1), S2)"
        if "Find the information nuggets" in messages[-1].content:  # GINGER's detection
            return '{"nuggets": ["Alpha was founded in 1901 by Ann"]}'
        return "Alpha was founded in 1901 by Ann [1]."

    register_chat_model("fake:ckpt", ScriptedChatModel(script=reply))
    register_verifier("stub:ckpt", KeywordVerifier(spec="stub:ckpt"))
    events: list[dict] = []
    register_serde_event_listener(events.append)
    report = {}
    for method in names():
        del events[:]
        ctx = make_context(method, llm="fake:ckpt", verifier="stub:ckpt")
        graph = build_graph(method, checkpointer=InMemorySaver())
        cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
        inputs = {"question": "When was Alpha founded?", "documents": docs}
        if method in ("genprog-posthoc", "cite"):  # attribute a given answer
            inputs["answer_text"] = "Alpha was founded in 1901 by Ann."
        out = graph.invoke(inputs, config=cfg, context=ctx)
        values = graph.get_state(cfg).values
        report[method] = {
            "refused": sorted({f"{e['module']}.{e['name']}" for e in events if "blocked" in e["kind"]}),
            "unregistered": sorted({f"{e['module']}.{e['name']}" for e in events if "unregistered" in e["kind"]}),
            "answer_typed": isinstance(values.get("answer"), AttributedAnswer) and bool(values["answer"].sentences),
            "round_trips": {k: values.get(k) for k in out} == out,
            "fields": sorted(out),
        }
    return report


def run(strict: bool) -> dict:
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true" if strict else "false",
           "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(Path(__file__))], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def strict():
    return run(strict=True)


def test_every_graph_state_round_trips_in_strict_mode(strict):
    from citegraph.graphs.registry import names

    assert sorted(strict) == sorted(names())
    for method, r in strict.items():
        assert r["refused"] == [], f"{method}: types the strict serializer refused: {r['refused']}"
        assert r["unregistered"] == []
        assert r["answer_typed"], method
        # the whole state, trace records included, comes back equal to what the run produced
        assert r["round_trips"], method


def test_permissive_mode_is_what_warns():
    # the control: without strict mode LangGraph reports our types as unregistered (the warning
    # users see), so the strict run above is not passing just because nothing was checkpointed
    r = run(strict=False)
    assert "citegraph.state.answer.AttributedAnswer" in r["vanilla"]["unregistered"]
    assert all(x["round_trips"] for x in r.values())


if __name__ == "__main__":
    print(json.dumps(run_all()))
