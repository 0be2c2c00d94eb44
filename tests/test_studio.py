"""`langgraph dev` (the server behind LangGraph Studio), started offline on a free port: every graph
in langgraph.json loads with its typed state and Context knobs, and a run through the SDK returns
an AttributedAnswer (the model is a loopback OpenAI-compatible fake)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI
from loopback import free_port

pytestmark = pytest.mark.studio
REPO = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).with_name("langgraph")


ANSWER = "The tower is 330 metres tall [2]. It opened in 1889 [1][3]."


def reply(body: dict):
    """The cited answer; for a question that says BROKEN, a response with no choices (as a misbehaving
    server sends it), which fails inside the model client with an IndexError."""
    if "BROKEN" in json.dumps(body.get("messages", [])):
        return {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
    if "**YOUR TASK**" in json.dumps(body.get("messages", [])):  # GenerationPrograms' planner
        return "- paraphrase(S2)"
    return ANSWER


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not LANGGRAPH.exists():
        pytest.skip("langgraph CLI not installed (pip install 'citegraph[studio]')")
    sdk = pytest.importorskip("langgraph_sdk")
    fake = FakeOpenAI(reply)
    fake.__enter__()
    port = free_port()
    work = tmp_path_factory.mktemp("studio")
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1",
           "OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "t", "HF_HUB_OFFLINE": "1"}
    log = open(work / "dev.log", "w")
    proc = subprocess.Popen(
        [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port), "--host", "127.0.0.1",
         "--config", str(REPO / "langgraph.json")],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    client = sdk.get_sync_client(url=url)
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            break
        try:
            client.assistants.search(limit=1)
            break
        except Exception:
            time.sleep(1)
    else:
        proc.kill()
    if proc.poll() is not None:
        log.close()
        pytest.fail("langgraph dev exited:\n" + (work / "dev.log").read_text()[-3000:])
    yield client, fake
    os.killpg(proc.pid, 15)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
    log.close()
    fake.__exit__(None, None, None)


def test_every_graph_loads_with_state_and_context(server):
    client, _ = server
    graphs = json.loads((REPO / "langgraph.json").read_text())["graphs"]
    found = {a["graph_id"]: a for a in client.assistants.search(limit=100)}
    assert set(graphs) <= set(found)
    for gid in graphs:
        schemas = client.assistants.get_schemas(found[gid]["assistant_id"])
        ctx = schemas["context_schema"]["properties"]
        assert "llm" in ctx and ctx["llm"].get("description"), gid
        assert all(p.get("description") for p in ctx.values()), f"{gid}: a Context knob lacks a description"
        assert {"question", "documents"} <= set(schemas["input_schema"]["properties"]), gid
        assert "answer" in schemas["output_schema"]["properties"], gid
        assert schemas["state_schema"]["properties"], gid
        # what langgraph dev's /mcp endpoint gives an agent as the tool's description
        assert found[gid].get("description") == graphs[gid]["description"], gid


def test_run_vanilla_through_the_server(server):
    client, fake = server
    docs = [{"title": "Eiffel", "text": "Opened 1889."}, {"title": "Height", "text": "330 m."},
            {"title": "Fair", "text": "1889 World's Fair."}]
    out = client.runs.wait(None, "vanilla", input={"question": "Eiffel Tower?", "documents": docs},
                           context={"llm": "openai:fake-model"})
    sents = out["answer"]["sentences"]
    assert [s["citations"] for s in sents] == [[2], [1, 3]]
    assert fake.requests and fake.requests[-1]["model"] == "fake-model"


DOCS = [{"title": "Eiffel", "text": "Opened 1889."}, {"title": "Height", "text": "330 m."},
        {"title": "Fair", "text": "1889 World's Fair."}]


def test_tokens_and_progress_events_stream_through_the_sdk(server):
    """What Studio shows while a run is in flight: token chunks (messages), node updates, and our
    progress events (custom), subgraphs included."""
    client, _ = server
    pieces, nodes, custom = [], set(), []
    for part in client.runs.stream(None, "vanilla", input={"question": "Eiffel Tower?", "documents": DOCS},
                                   context={"llm": "openai:fake-model"}, stream_mode=["messages-tuple", "updates"]):
        if part.event == "messages":
            chunk, meta = part.data
            pieces.append(chunk.get("content") or "")
            nodes.add(meta.get("langgraph_node"))
    assert len([p for p in pieces if p]) > 5 and "".join(pieces) == ANSWER
    assert nodes == {"generate"}
    for part in client.runs.stream(None, "raac", input={"question": "Eiffel Tower?", "documents": DOCS},
                                   context={"llm": "openai:fake-model", "k": 1}, stream_mode=["custom"],
                                   stream_subgraphs=True):
        if part.event.startswith("custom"):
            custom.append(part.data)
    kinds = [e["event"] for e in custom]
    assert "raac_round" in kinds and "verifier_batch" in kinds and "raac_calibration" in kinds
    assert kinds.index("raac_round") < kinds.index("verifier_batch")


def test_a_failing_node_reports_its_name_class_and_message(server):
    client, _ = server
    thread = client.threads.create()
    out = client.runs.wait(thread["thread_id"], "vanilla", input={"question": "BROKEN?", "documents": DOCS},
                           context={"llm": "openai:fake-model"}, raise_error=False)
    text = json.dumps(out)
    assert "An internal error occurred" not in text
    # a reply with no choices is a model failure under the failure policy: its one-line reason
    # reaches the client (not LangGraph's "An internal error occurred")
    assert '"error": "ModelReplyError"' in text and "malformed reply: no choices in the reply" in text, text[:500]


def test_a_run_resumed_without_its_context_keeps_it(server):
    """genprog with review_program interrupts after planning; the resume sends no Context (as Studio
    and a plain SDK call do) and still runs with the run's: the review takes the resume value and the
    program's module calls reach the run's model, not the embedded default."""
    client, fake = server
    thread = client.threads.create()["thread_id"]
    out = client.runs.wait(thread, "genprog", input={"question": "How tall?", "documents": DOCS},
                           context={"llm": "openai:model-a", "review_program": True})
    assert out["__interrupt__"][0]["value"]["parsed"] == "- paraphrase(S2)"
    before = len(fake.requests)
    out = client.runs.wait(thread, "genprog", command={"resume": "accept"})
    resumed = fake.requests[before:]
    assert resumed and {r["model"] for r in resumed} == {"model-a"}
    assert out["answer"]["metadata"]["reviewed"] is True
    assert [s["citations"] for s in out["answer"]["sentences"]] == [[2]]


def test_the_sdk_gets_the_same_one_line_errors_as_the_cli(server):
    """Issue #39: the server no longer drops an unknown context key; the run fails before any model
    call with the line `citegraph ask` prints (and so for an unknown spec and an input with nothing to
    answer from)."""
    client, fake = server
    before = len(fake.requests)
    cases = [
        ({"question": "Eiffel?", "documents": DOCS}, {"llm": "openai:fake-model", "bogus_knob": 3},
         "unknown setting(s) for vanilla: bogus_knob; known: "),
        ({"question": "Eiffel?", "documents": DOCS}, {"llm": "openai:fake-model", "verifier": "foo"},
         "VanillaContext.verifier: unknown verifier spec 'foo'"),
        ({"question": "", "documents": []}, {"llm": "openai:fake-model"},
         "the question is empty and there are no documents and no corpus to answer from"),
    ]
    for inp, ctx, needle in cases:
        out = client.runs.wait(client.threads.create()["thread_id"], "vanilla", input=inp, context=ctx, raise_error=False)
        text = json.dumps(out)
        assert '"error": "InputError"' in text and needle in text, text[:500]
    assert len(fake.requests) == before  # no model call was made


def test_the_servers_mcp_endpoint_returns_the_answer_as_json(server):
    """langgraph dev's own /mcp endpoint (each graph a tool): a tools/call reply carries the
    AttributedAnswer as JSON text and as structuredContent (the server alone writes a Python repr;
    langgraph.json's app rewrites it, citegraph/graphs/webapp.py)."""
    import httpx

    client, _ = server
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "vanilla", "arguments": {"question": "Eiffel Tower?", "documents": DOCS},
                       "context": {"llm": "openai:fake-model"}}}
    got = httpx.post(f"{client.http.client.base_url}/mcp", json=call, timeout=120,
                     headers={"Accept": "application/json, text/event-stream"})
    result = got.json()["result"]
    answer = json.loads(result["content"][0]["text"])
    assert [s["citations"] for s in answer["sentences"]] == [[2], [1, 3]]
    assert result["structuredContent"] == answer
