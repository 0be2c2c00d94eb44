"""Resume keyed by content, the checkpoint key's endpoint, and what a stopped or empty run says (#38).

* re-running into the same ``--output`` with another input file that reuses the ids re-runs exactly
  the items whose question / documents / settings changed; the output's args and records say which
  file made each answer, the replaced records are kept aside;
* a run against a server that answers 500 does not "succeed" from another server's answers in the
  shared checkpoint store (the thread id holds the endpoint): it asks its own server and fails;
* a run stopped by a run-ending model failure says what it kept and what never ran (exit 3);
* every item failed: no "wrote out.json" when no file exists; an answer with no sentence (an
  unparseable GenerationPrograms plan) is reported, not counted as a success.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from citegraph.cli import main
from citegraph.run.datasets import Item
from citegraph.run.runner import content_digest, thread_id
from citegraph.graphs.registry import make_context
from citegraph.state import Document

from fake_openai import FakeOpenAI, Raw

REPO = Path(__file__).resolve().parents[1]


def items_file(path: Path, questions: dict[str, str], doc: str = "Alpha was founded in 1901.") -> Path:
    path.write_text(json.dumps([{"id": i, "question": q, "docs": [{"title": "A", "text": doc}]}
                                for i, q in questions.items()]))
    return path


def echo_script(messages, kwargs):
    q = str(messages[-1].content).split("Question: ")[-1].split("\n")[0]
    return f"Answer to {q.strip()} [1]."


def test_another_input_reusing_ids_re_runs_the_changed_items(tmp_path, scripted, capsys):
    spec, model = scripted(echo_script)
    out = tmp_path / "out.json"
    a = items_file(tmp_path / "a.json", {"x": "Who founded Alpha?", "y": "When was Alpha founded?", "z": "Where is Alpha?"})
    assert main(["run", "vanilla", "-i", str(a), "-o", str(out), "--llm", spec]) == 0
    assert len(model.calls) == 3
    capsys.readouterr()

    # b.json reuses x and y: x asks another question, y is the same item; z is not in b.json
    b = items_file(tmp_path / "b.json", {"x": "Who sold Alpha?", "y": "When was Alpha founded?"})
    assert main(["run", "vanilla", "-i", str(b), "-o", str(out), "--llm", spec]) == 0
    err = capsys.readouterr().err
    assert len(model.calls) == 4  # only x ran again
    assert "1 new, 1 already done, 1 re-run because their question, documents or settings changed" in err

    final = json.loads(out.read_text())
    recs = {d["citegraph"]["item_id"]: d for d in final["data"]}
    assert recs["x"]["question"] == "Who sold Alpha?" and "Who sold Alpha" in recs["x"]["output"]
    assert recs["y"]["question"] == "When was Alpha founded?"
    # every record names the file it was made from; the args say the run's file and the others kept
    assert final["args"]["input"] == str(b)
    assert recs["x"]["citegraph"]["input"] == str(b)
    assert recs["y"]["citegraph"]["input"] == str(a) and recs["z"]["citegraph"]["input"] == str(a)
    assert final["args"]["other_inputs"] == {str(a): 2}
    # the answer to the old question x is not lost: it is kept aside
    old = [json.loads(line) for line in (tmp_path / "out.json.replaced.jsonl").read_text().splitlines()]
    assert [(r["citegraph"]["item_id"], r["question"]) for r in old] == [("x", "Who founded Alpha?")]

    # the same input again: nothing runs
    assert main(["run", "vanilla", "-i", str(b), "-o", str(out), "--llm", spec]) == 0
    assert len(model.calls) == 4 and "0 new, 2 already done" in capsys.readouterr().err


def test_changed_documents_under_the_same_file_re_run(tmp_path, scripted, capsys):
    spec, model = scripted(echo_script)
    out = tmp_path / "out.json"
    data = items_file(tmp_path / "d.json", {"x": "Who founded Alpha?"})
    assert main(["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", spec]) == 0
    items_file(data, {"x": "Who founded Alpha?"}, doc="Alpha was founded in 1902.")  # edited in place
    assert main(["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", spec]) == 0
    assert len(model.calls) == 2
    rec = json.loads(out.read_text())["data"][0]
    assert rec["docs"][0]["text"] == "Alpha was founded in 1902." and "other_inputs" not in json.loads(out.read_text())["args"]


def test_records_from_before_digests_resume_when_their_inputs_match(tmp_path, scripted, capsys):
    spec, model = scripted(echo_script)
    out = tmp_path / "out.json"
    data = items_file(tmp_path / "d.json", {"x": "Who founded Alpha?", "y": "Where is Alpha?"})
    assert main(["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", spec]) == 0
    old = json.loads(out.read_text())
    for d in old["data"]:  # as an output written before #38 looked
        del d["citegraph"]["input_digest"], d["citegraph"]["input"]
    old["data"][1]["question"] = "Where was Alpha?"  # ... one of whose items was another question
    out.write_text(json.dumps(old))
    assert main(["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", spec]) == 0
    assert len(model.calls) == 3  # y only
    assert "1 new, 1 already done, 1 re-run" in capsys.readouterr().err


def test_thread_id_holds_the_endpoint_of_openai_specs(docs, monkeypatch):
    item = Item(id="q1", question="Who founded Alpha?", documents=docs)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    a = thread_id("raac", item, make_context("raac", llm="openai:m", verifier="default"))
    judge = thread_id("raac", item, make_context("raac", llm="local", verifier="llm-judge:openai:m"))
    local = thread_id("raac", item, make_context("raac", llm="local"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
    assert a != thread_id("raac", item, make_context("raac", llm="openai:m", verifier="default"))
    assert judge != thread_id("raac", item, make_context("raac", llm="local", verifier="llm-judge:openai:m"))
    assert local == thread_id("raac", item, make_context("raac", llm="local"))  # the spec names the weights
    # the output's resume digest is the thread's without the endpoint: one function
    ctx = make_context("raac", llm="local")
    assert local.endswith(content_digest(item, ctx))


def _cli(args: list[str], base_url: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "t", "PYTHONPATH": str(REPO),
           "CITEGRAPH_RETRIES": "0"}
    return subprocess.run([sys.executable, "-m", "citegraph.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_a_failing_server_does_not_answer_from_another_servers_checkpoints(tmp_path):
    data = items_file(tmp_path / "d.json", {f"i{k}": f"Question {k}?" for k in range(3)})
    ck = f"sqlite:///{tmp_path / 'ck.db'}"
    with FakeOpenAI(lambda body: "Alpha was founded in 1901 [1].") as good, \
            FakeOpenAI(lambda body: Raw(b'{"error": {"message": "boom"}}', 500)) as bad:
        args = ["run", "vanilla", "-i", str(data), "--llm", "openai:m", "--checkpoint", ck]
        first = _cli([*args, "-o", str(tmp_path / "good.json")], good.url, tmp_path)
        assert first.returncode == 0, first.stderr[-2000:]
        assert len(good.requests) == 3

        res = _cli([*args, "-o", str(tmp_path / "bad.json")], bad.url, tmp_path)
        assert res.returncode == 1, res.stderr[-2000:]
        assert len(bad.requests) == 3  # it asked its own server, which failed every item
        assert "HTTP 500: boom" in res.stderr and "Traceback" not in res.stderr
        assert "no output written to" in res.stderr and "0 new, 0 already done, 3 failed" in res.stderr
        assert "wrote " not in res.stderr and not (tmp_path / "bad.json").exists()

        # the same server again: the stored answers serve it, with no request
        again = _cli([*args, "-o", str(tmp_path / "again.json")], good.url, tmp_path)
        assert again.returncode == 0 and len(good.requests) == 3, again.stderr[-2000:]
    recs = json.loads((tmp_path / "again.json").read_text())["data"]
    assert all(r["citegraph"]["usage"]["llm_calls"] == 0 for r in recs)


def test_a_stopped_run_says_what_it_kept(tmp_path, monkeypatch, capsys):
    data = items_file(tmp_path / "d.json", {f"i{k}": f"Question {k}?" for k in range(6)})
    out = tmp_path / "out.json"
    n = {"calls": 0}

    def reply(body):
        n["calls"] += 1
        if n["calls"] <= 2:
            return "Alpha was founded in 1901 [1]."
        return Raw(b'{"error": {"message": "invalid api key"}}', 401)

    with FakeOpenAI(reply) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        monkeypatch.setenv("OPENAI_API_KEY", "t")
        code = main(["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", f"openai:stop-{uuid.uuid4().hex[:6]}",
                     "--retries", "0"])
    err = capsys.readouterr().err
    assert code == 3
    line = [l for l in err.splitlines() if "model error" in l]
    assert len(line) == 1 and "HTTP 401" in line[0]
    assert f"2 of 6 kept in {out}, 3 never ran, 1 stopped or failed; re-run the same command to resume" in line[0]
    assert len(json.loads(out.read_text())["data"]) == 2


def test_every_item_failing_writes_nothing_and_says_so(tmp_path, monkeypatch, capsys):
    data = items_file(tmp_path / "d.json", {"i0": "Q0?", "i1": "Q1?"})
    out = tmp_path / "out.json"
    with FakeOpenAI(lambda body: Raw(b'{"error": {"message": "boom"}}', 500)) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        code = main(["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", f"openai:f-{uuid.uuid4().hex[:6]}",
                     "--retries", "0"])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert f"no output written to {out}: no item finished; 0 new, 0 already done, 2 failed (of 2)" in err
    assert "wrote" not in err


def test_an_unparseable_genprog_program_is_no_success(tmp_path, scripted, capsys):
    spec, model = scripted(lambda messages, kwargs: "I cannot write a program for this.")
    data = items_file(tmp_path / "d.json", {"x": "Who founded Alpha?"})
    out = tmp_path / "out.json"
    code = main(["run", "genprog", "-i", str(data), "-o", str(out), "--llm", spec])
    err = capsys.readouterr().err
    assert code == 1
    assert "item x failed: EmptyAnswer: the answer has no sentence" in err and "no program line gave a sentence" in err
    assert "0 failed, 1 with no answer sentence" in err
    rec = json.loads(out.read_text())["data"][0]  # kept, so a bench scores it (as an empty answer)
    assert rec["citegraph"]["answer"]["sentences"] == []
    assert any("no answer" in w for w in rec["citegraph"]["answer"]["warnings"])
