"""The CLI: bad input → one line + exit 2; `run` resumes after a kill without losing or
duplicating items (a real subprocess against a loopback OpenAI-compatible server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citegraph.cli import main

from fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]


def write_dataset(path: Path, n: int) -> Path:
    items = [{"id": f"item{i}", "question": f"Question {i}?",
              "docs": [{"title": f"T{i}", "text": f"Fact {i} is true."}, {"title": "Other", "text": "Noise."}]}
             for i in range(n)]
    path.write_text(json.dumps(items))
    return path


@pytest.mark.parametrize("argv_maker,needle", [
    (lambda t: ["run", "vanilla", "-i", str(t / "missing.json"), "-o", str(t / "o.json")], "file not found"),
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "bad.json", "{not json")), "-o", str(t / "o.json")], "invalid JSON"),
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "nodoc.json", json.dumps([{"question": "q", "docs": [{"title": "x", "text": ""}]}]))), "-o", str(t / "o.json")], "has no text"),
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "noq.json", json.dumps([{"question": " ", "docs": [{"text": "x"}]}]))), "-o", str(t / "o.json")], "question is empty"),
    (lambda t: ["ask", "vanilla", "--question", "", "--docs", str(_w(t / "d.jsonl", '{"text": "x"}\n'))], "question is empty"),
    (lambda t: ["ask", "vanilla", "--question", "q", "--docs", str(t / "nope.jsonl")], "file not found"),
    (lambda t: ["ask", "vanilla", "--question", "q", "--docs", str(_w(t / "d2.jsonl", '{"text": "x"}\n')), "--set", "bogus=1"], "unknown setting"),
    (lambda t: ["run", "vanilla", "-i", str(write_dataset(t / "ok.json", 2)), "-o", str(t / "o.json"), "--limit", "0"], "--limit"),
    (lambda t: ["ask", "raac", "--example", "--set", "k=abc"], "RaacContext.k must be an integer, got 'abc'"),
    (lambda t: ["ask", "raac", "--example", "--set", "tau=1.5"], "RaacContext.tau must be at most 1.0"),
    (lambda t: ["ask", "genprog", "--example", "--set", "qfs_mode=bogus"], "qfs_mode must be one of none, extractive"),
    (lambda t: ["run", "vanilla", "-i", str(write_dataset(t / "ok2.json", 2)), "-o", str(t / "o2.json"), "--set", "max_new_tokens=0"],
     "VanillaContext.max_new_tokens must be at least 1, got 0"),
    (lambda t: ["run", "genprog-posthoc", "-i", str(write_dataset(t / "ok3.json", 2)), "-o", str(t / "o3.json")],
     "genprog-posthoc attributes an existing answer: name the items' answer field with --answer-field"),
    (lambda t: ["run", "genprog-posthoc", "-i", str(write_dataset(t / "ok4.json", 2)), "-o", str(t / "o4.json"),
                "--answer-field", "output"], "item item0: no 'output' text to attribute"),
    (lambda t: ["run", "vanilla", "-i", str(write_dataset(t / "ok5.json", 2)), "-o", str(t / "o5.json"),
                "--answer-field", "output"], "--answer-field: none of vanilla reads an answer"),
    (lambda t: ["bench", "--methods", "vanilla,genprog-posthoc", "--data", str(write_dataset(t / "ok6.json", 2)),
                "--out", str(t / "b")], "genprog-posthoc attributes an existing answer"),
    # encodings, outputs and verifiers: one line before any work, never a traceback (issue #22, item 6)
    (lambda t: ["run", "vanilla", "-i", str(_wb(t / "u16.json", json.dumps([{"question": "q", "docs": [{"text": "x"}]}]).encode("utf-16"))),
                "-o", str(t / "o.json")], "the file is UTF-16; save it as UTF-8"),
    (lambda t: ["run", "vanilla", "-i", str(_wb(t / "l1.json", '[{"question": "q", "docs": [{"text": "Fa\xe7t"}]}]'.encode("latin-1"))),
                "-o", str(t / "o.json")], "not UTF-8 text (byte 40: 0xe7)"),
    (lambda t: ["ask", "vanilla", "-q", "q", "--docs", str(_wb(t / "d16.jsonl", b'\xff\xfe{"text": "x"}'))], "the file is UTF-16"),
    (lambda t: ["run", "vanilla", "-i", str(write_dataset(t / "ok7.json", 1)), "-o", str(t)], "--output is a directory"),
    (lambda t: ["run", "vanilla", "-i", str(write_dataset(t / "ok8.json", 1)), "-o", "/proc/citegraph-no/o.json"],
     "cannot create the output's folder /proc/citegraph-no"),
    (lambda t: ["run", "rerank", "-i", str(write_dataset(t / "ok9.json", 1)), "-o", str(t / "o9.json"), "--verifier", "bogus"],
     "unknown verifier spec 'bogus'"),
    # more shapes of a bad input file, and bad failure-policy flags
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "empty.json", "")), "-o", str(t / "o.json")], "file is empty"),
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "obj.json", '{"foo": 1}')), "-o", str(t / "o.json")], "expected a list of items"),
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "ds.json", '[{"question": "q", "docs": "x"}]')), "-o", str(t / "o.json")],
     "item 1: documents must be a list"),
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "nd.json", '[{"question": "q", "docs": []}]')), "-o", str(t / "o.json")], "item 1: no documents"),
    (lambda t: ["run", "vanilla", "-i", str(_w(t / "b.jsonl", '{"question": "q", "docs": [{"text": "x"}]}\n{broken\n')), "-o", str(t / "o.json")],
     "b.jsonl:2: invalid JSON"),
    (lambda t: ["run", "vanilla", "-i", str(write_dataset(t / "ok9.json", 1)), "-o", str(t / "o.json"), "--retries", "-1"], "--retries must be 0 or more"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, argv_maker, needle):
    code = main(argv_maker(tmp_path))
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert needle in err and len(err.splitlines()) == 1


def _w(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


def _wb(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def test_existing_output_is_never_clobbered_by_different_settings(tmp_path, capsys):
    out = tmp_path / "o.json"
    out.write_text(json.dumps({"args": {"method": "vanilla", "context": {"llm": "other"}}, "data": []}))
    code = main(["run", "vanilla", "-i", str(write_dataset(tmp_path / "d.json", 1)), "-o", str(out), "--llm", "fake:x"])
    assert code == 2 and "different context" in capsys.readouterr().err
    assert json.loads(out.read_text())["args"]["context"]["llm"] == "other"


def _run_cli(args, env):
    return subprocess.Popen([sys.executable, "-m", "citegraph.cli", *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_run_resumes_after_kill_without_loss_or_duplicates(tmp_path):
    n = 8
    data = write_dataset(tmp_path / "data.json", n)
    out = tmp_path / "out.json"
    journal = tmp_path / "out.json.partial.jsonl"

    def reply(body):
        time.sleep(0.4)
        q = body["messages"][-1]["content"].split("Question: ")[-1].split("?")[0]
        return f"{q} holds [1]. Another claim [2][3]."

    with FakeOpenAI(reply) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "t", "PYTHONPATH": str(REPO)}
        args = ["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", "openai:fake"]
        p = _run_cli(args, env)
        deadline = time.time() + 120
        while time.time() < deadline:
            if journal.exists() and len(journal.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait()
        first = len(srv.requests)
        done_before = {json.loads(l)["citegraph"]["item_id"] for l in journal.read_text().splitlines() if l.strip()}
        assert 3 <= len(done_before) < n, "the kill should land mid-run"
        # finished items are only appended (the JSON file is written when a run ends, so a kill
        # leaves none); the reader `eval` uses sees them through the journal
        assert not out.exists()
        from citegraph.eval.scoring import read_output_file

        _, mid = read_output_file(out)
        assert {d["citegraph"]["item_id"] for d in mid} == done_before

        p = _run_cli(args, env)
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        assert f"{n - len(done_before)} new, {len(done_before)} already done" in stderr
        # the second run only asked for the unfinished items
        assert len(srv.requests) - first == n - len(done_before)

    final = json.loads(out.read_text())
    ids = [d["citegraph"]["item_id"] for d in final["data"]]
    assert ids == [f"item{i}" for i in range(n)]  # all items, once each, in input order
    assert not journal.exists()
    for d in final["data"]:
        i = d["id"][4:]
        assert d["output"] == f"Question {i} holds [1]. Another claim [2]."  # [3] is out of range
        assert d["citegraph"]["answer"]["warnings"]
        assert d["citegraph"]["usage"]["llm_calls"] == 1
    assert final["args"]["method"] == "vanilla" and final["args"]["context"]["llm"] == "openai:fake"


def test_ask_prints_sentences_citations_and_uncited(tmp_path, scripted, capsys):
    spec, _ = scripted(["The tower is 330 metres tall [2]. It is in Paris [1][4]. It is pretty."])
    code = main(["ask", "vanilla", "--example", "--llm", spec])
    out = capsys.readouterr().out
    assert code == 0
    assert "The tower is 330 metres tall. [2]" in out
    assert "It is pretty. (no citation)" in out
    assert "Cited documents" in out and "[4] Champ de Mars" in out


def test_graphs_draws_a_method_as_its_compiled_graph(capsys):
    from citegraph.graphs.registry import build_graph

    assert main(["graphs", "squai", "--mermaid"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == build_graph("squai").get_graph().draw_mermaid().strip()
    assert "decompose" in out and "attribution" in out and out.startswith("---")
    assert main(["graphs", "--mermaid"]) == 2
    assert "--mermaid draws one method" in capsys.readouterr().err


def test_graphs_lists_knobs_with_their_valid_values(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    assert main(["graphs", "--knobs"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # brackets are text, not rich markup: "[n]" and the ranges survive
    assert "the LLM cites as [n]." in out
    assert "[one of: none, extractive, abstractive, extract_then_generate]" in out
    assert "[0.0 to 1.0]" in out and "[>= 1]" in out


def test_run_genprog_posthoc_attributes_the_answer_field(tmp_path, scripted):
    """run genprog-posthoc reads each item's answer (--answer-field) and attributes it: model calls are
    made and the answer's sentences are the given ones (it used to do nothing and exit 0)."""
    spec, model = scripted(["- compression(S1)"])
    items = [{"id": "x", "question": "Question?", "output": "Fact 0 is true.",
              "docs": [{"title": "T0", "text": "Fact 0 is true."}, {"title": "Other", "text": "Noise."}]}]
    data = _w(tmp_path / "d.json", json.dumps(items))
    out = tmp_path / "o.json"
    assert main(["run", "genprog-posthoc", "-i", str(data), "-o", str(out), "--answer-field", "output",
                 "--llm", spec]) == 0
    rec = json.loads(out.read_text())["data"][0]
    sents = rec["citegraph"]["answer"]["sentences"]
    assert model.calls and [s["text"] for s in sents] == ["Fact 0 is true."]
    assert sents[0]["citations"] == [1]
