"""The ``server:`` model spec: a managed llama-server subprocess (tests/fake_llama_server.py stands
in for the binary; the tests marked slow run the real one, built by ``make``, on the embedded model)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from citegraph.errors import InputError, ModelError, ModelReplyError

FAKE = Path(__file__).with_name("fake_llama_server.py")


@pytest.fixture
def fake_server(tmp_path, monkeypatch):
    """``server:<a dummy .gguf>`` served by the fake; yields (spec, log path). Every server started
    under it is stopped afterwards and forgotten by the registry."""
    from citegraph.tools.models import registry, server

    wrapper = tmp_path / "llama-server"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    wrapper.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("CITEGRAPH_LLAMA_SERVER", str(wrapper))
    monkeypatch.setenv("FAKE_LLAMA_LOG", str(log))
    monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", "3")
    spec = f"server:{model}"
    yield spec, log
    server.stop_servers()
    with server._servers_lock:
        server._servers.clear()
    with registry._registry_lock:
        registry._registry.pop(spec, None)


def _requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_server_specs_are_checked_before_any_work(tmp_path):
    from citegraph.tools.models import check_chat_spec

    assert check_chat_spec("server:local") == "server:local"
    assert check_chat_spec("server:local-small") == "server:local-small"
    with pytest.raises(InputError, match="server spec needs a model"):
        check_chat_spec("server:")
    with pytest.raises(InputError, match="GGUF model file not found"):
        check_chat_spec(f"server:{tmp_path}/missing.gguf")


def test_bad_slot_setting_is_one_clear_error(monkeypatch, tmp_path):
    from citegraph.tools.models.registry import _server_model

    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    for bad, says in (("many", "whole number"), ("0", "between 1 and 64")):
        monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", bad)
        with pytest.raises(ModelError, match=says):
            _server_model(str(tmp_path / "m.gguf"))


def test_missing_binary_says_how_to_build_it(monkeypatch, tmp_path):
    from citegraph.tools.models import server

    monkeypatch.delenv("CITEGRAPH_LLAMA_SERVER", raising=False)
    monkeypatch.setattr(server.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ModelError, match="make server"):
        server.server_binary()


def test_chat_through_the_managed_server(fake_server):
    from citegraph.tools.models import chat_reply, get_chat_model
    from citegraph.tools.usage import UsageTracker

    spec, log = fake_server
    tracker = UsageTracker()
    with tracker.active():
        reply = get_chat_model(spec).invoke("hello there", config={"callbacks": [tracker]})
    assert reply.content == "echo: hello there"
    assert reply.response_metadata["cache_n"] == 3 and reply.response_metadata["prompt_n"] >= 1
    assert tracker.totals()["cached_tokens"] == 3
    r = chat_reply(spec, "second call", max_tokens=7)
    assert r.text == "echo: second call" and r.finish_reason == "stop"
    reqs = [q for q in _requests(log) if q["path"] == "/v1/chat/completions"]
    assert reqs[-1]["body"]["max_tokens"] == 7 and reqs[-1]["body"]["cache_prompt"] is True
    argv = reqs[-1]["argv"]
    # slots from $CITEGRAPH_SERVER_SLOTS; each slot gets the model's context window; loopback only
    assert argv[argv.index("--parallel") + 1] == "3"
    assert argv[argv.index("--ctx-size") + 1] == str(3 * 8192)
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert "--kv-unified" in argv and "--cache-ram" in argv
    assert get_chat_model(spec).endpoint.startswith("llama-server model.gguf at http://127.0.0.1:")


def test_grammar_and_json_schema_reach_the_server(fake_server):
    from pydantic import BaseModel

    from citegraph.tools.models import cited_sentences, structured

    spec, log = fake_server
    out = cited_sentences(spec, "Who? [1] Alpha [2] Beta", n_docs=2)
    assert out.mode == "grammar"
    assert [s.citations for s in out.sentences] == [[1], [2]]

    class Answer(BaseModel):
        answer: str

    value, problems = structured(spec, "Answer in JSON", Answer)
    assert value.answer == "ok" and problems == []
    bodies = [q["body"] for q in _requests(log) if q["path"] == "/v1/chat/completions"]
    assert "root ::=" in bodies[0]["grammar"]
    assert bodies[1]["json_schema"]["properties"]["answer"]["type"] == "string"


def test_yes_no_judgements_from_the_servers_top_logprobs(fake_server):
    from citegraph.tools.models import yes_no_log_odds, yes_probability
    from citegraph.tools.usage import UsageTracker

    from langchain_core.runnables import RunnableLambda

    spec, log = fake_server
    tracker = UsageTracker()
    # as inside a graph node: the judge's model call is a LangChain call under the run's callbacks
    judge = RunnableLambda(lambda _: (yes_probability(spec, "Is it?"), yes_no_log_odds(spec, "Is it?")))
    with tracker.active():
        p, lo = judge.invoke(None, config={"callbacks": [tracker]})
    y, n = math.exp(-0.105), math.exp(-2.4)
    assert p == pytest.approx(y / (y + n))
    assert lo == pytest.approx(-0.105 + 2.4)
    t = tracker.totals()
    assert t["llm_calls"] == 2 and t["cached_tokens"] == 6
    body = [q["body"] for q in _requests(log) if q["path"] == "/v1/chat/completions"][-1]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 1


def test_streaming_aggregates_to_the_same_reply(fake_server):
    from citegraph.tools.models import get_chat_model

    spec, _ = fake_server
    chunks = list(get_chat_model(spec).stream("stream me"))
    whole = chunks[0]
    for c in chunks[1:]:
        whole = whole + c
    assert whole.content.strip() == "echo: stream me"
    assert whole.usage_metadata["input_tokens"] == 2 and whole.response_metadata["finish_reason"] == "stop"


def test_a_rejected_prompt_fails_the_item_not_the_run(fake_server):
    from citegraph.tools.models import chat_text

    spec, _ = fake_server
    with pytest.raises(ModelReplyError, match="exceeds the available context"):
        chat_text(spec, "please fail")


def test_token_counts_come_from_the_server(fake_server):
    from citegraph.tools.models import token_counter

    spec, _ = fake_server
    assert token_counter(spec)("three small words") == 3


def test_concurrent_calls_share_one_server(fake_server):
    from citegraph.tools.models import chat_text, running_servers

    spec, log = fake_server
    with ThreadPoolExecutor(6) as pool:
        replies = list(pool.map(lambda i: chat_text(spec, f"q{i}"), range(12)))
    assert replies == [f"echo: q{i}" for i in range(12)]
    assert len(running_servers()) == 1
    assert len({tuple(q["argv"]) for q in _requests(log)}) == 1  # one process answered all


def test_a_dead_server_is_started_again(fake_server):
    from citegraph.tools.models import chat_text, running_servers

    spec, _ = fake_server
    chat_text(spec, "one")
    (srv,) = running_servers()
    old_port, old_log = srv.port, srv.log_path
    srv.proc.kill()
    srv.proc.wait()
    assert chat_text(spec, "two") == "echo: two"
    assert srv.alive() and srv.port != old_port
    assert not os.path.exists(old_log)  # the dead server's log went with it


def test_start_failure_is_one_line_with_the_servers_words(fake_server, monkeypatch):
    from citegraph.tools.models import chat_text, server

    spec, _ = fake_server
    monkeypatch.setenv("FAKE_LLAMA_MODE", "fail")
    with pytest.raises(ModelError, match="exited with 1 while starting: .*fake failure") as e:
        chat_text(spec, "hi")
    assert "\n" not in str(e.value)
    (srv,) = list(server._servers.values())
    assert srv.log_path is None and not srv.alive()  # nothing left behind


def test_waits_for_a_model_still_loading(fake_server, monkeypatch):
    from citegraph.tools.models import chat_text

    spec, _ = fake_server
    monkeypatch.setenv("FAKE_LLAMA_MODE", "slow")
    assert chat_text(spec, "patience") == "echo: patience"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux only")
def test_the_server_ends_when_its_parent_is_killed(fake_server, tmp_path):
    spec, _ = fake_server
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        from citegraph.tools.models import chat_text, running_servers
        chat_text({spec!r}, "hi")
        print(running_servers()[0].proc.pid, flush=True)
        import time; time.sleep(60)
    """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("llama-server outlived its killed parent")


# -- the real binary on the embedded model ---------------------------------------------------------

def _real_server_or_skip():
    from citegraph.tools.models import server

    try:
        server.server_binary()
    except ModelError as e:
        pytest.skip(str(e))
    try:
        from citegraph.tools.local_model import embedded_model_path

        embedded_model_path("local")
    except ModelError as e:
        pytest.skip(str(e))


@pytest.mark.slow
def test_real_server_cites_by_grammar_and_judges_like_the_in_process_model(monkeypatch):
    """One grammar reply (every sentence cites a listed document), two Yes/No judgements that agree
    with the in-process model's, and two calls in flight at once."""
    _real_server_or_skip()
    from citegraph.tools.models import chat_text, cited_sentences, yes_no_log_odds
    from citegraph.tools.models.server import stop_servers

    monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", "2")
    spec = "server:local"
    try:
        docs = ("[1] The Eiffel Tower was built from 1887 to 1889.\n"
                "[2] Gustave Eiffel's company designed and built the tower.\n")
        out = cited_sentences(spec, docs + "Question: When was the Eiffel Tower built, and by whom?", n_docs=2,
                              max_tokens=120)
        assert out.mode == "grammar" and out.sentences
        assert all(s.citations and set(s.citations) <= {1, 2} for s in out.sentences)
        q_yes = "Premise: The tower was built from 1887 to 1889.\nClaim: The tower was built in the 1880s.\nDoes the premise support the claim? Answer Yes or No."
        q_no = "Premise: The tower was built from 1887 to 1889.\nClaim: The tower was built in 1950.\nDoes the premise support the claim? Answer Yes or No."
        served = [yes_no_log_odds(spec, q) for q in (q_yes, q_no)]
        local = [yes_no_log_odds("local", q) for q in (q_yes, q_no)]
        assert served[0] > served[1]
        assert [v > 0 for v in served] == [v > 0 for v in local]
        with ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(lambda q: chat_text(spec, q, max_tokens=16), ["Say hello.", "Name a colour."]))
        assert all(r.strip() for r in replies)
    finally:
        stop_servers()


def test_speculative_decoding_flags(fake_server, tmp_path, monkeypatch):
    from citegraph.tools.models.registry import _server_model

    draft = tmp_path / "draft.gguf"
    draft.write_bytes(b"GGUF")
    spec, _ = fake_server
    path = spec.partition(":")[2]
    monkeypatch.setenv("CITEGRAPH_SERVER_DRAFT", str(draft))
    cmd = _server_model(path).server.command(1234)
    assert cmd[cmd.index("--spec-type") + 1] == "draft-simple" and cmd[cmd.index("--spec-draft-model") + 1] == str(draft)
    monkeypatch.setenv("CITEGRAPH_SERVER_DRAFT", "ngram")
    cmd = _server_model(path).server.command(1234)
    assert cmd[cmd.index("--spec-type") + 1] == "ngram-simple" and "--spec-draft-model" not in cmd
    monkeypatch.delenv("CITEGRAPH_SERVER_DRAFT")
    monkeypatch.setenv("CITEGRAPH_SERVER_ARGS", "--threads-http 3")
    cmd = _server_model(path).server.command(1234)
    assert "--spec-type" not in cmd and cmd[-2:] == ["--threads-http", "3"]


def test_concurrency_note_names_the_server_and_sizes_its_slots(monkeypatch):
    from citegraph.cli.common import concurrency_note

    monkeypatch.delenv("CITEGRAPH_SERVER_SLOTS", raising=False)
    monkeypatch.delenv("CITEGRAPH_LLM", raising=False)
    assert concurrency_note("local", 1) is None
    assert "--llm server:local " in concurrency_note("local", 4)
    assert "--llm server:/m.gguf " in concurrency_note("llamacpp:/m.gguf", 2)
    assert "--llm server:local " in concurrency_note(None, 2)  # the default model
    assert concurrency_note("openai:gpt-4o-mini", 4) is None
    from citegraph.tools.models import want_server_slots
    from citegraph.tools.models.registry import server_slots

    try:
        assert concurrency_note("server:local", 3) is None
        assert server_slots() == 3 and "CITEGRAPH_SERVER_SLOTS" not in os.environ  # asked for, not written
        monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", "2")
        concurrency_note("server:local", 5)
        assert server_slots() == 2  # an explicit setting wins
    finally:
        want_server_slots(None)
