"""More bad input, table-driven (#38): every case is one line on stderr, exit status 2, no traceback,
and nothing written. With ``test_cli.py::test_bad_input_one_line_exit_2`` the table has more than 80
cases (``test_the_tables_hold_80_cases``).

Shapes a hostile or careless input takes: non-string titles, questions, texts and ids; lone
surrogate escapes (valid JSON, not text); integers over Python's 4,300-digit limit (in files and in
``--set``); JSON nested past the interpreter's stack; wrong top-level shapes; bad worker flags; broken
output files; the same through ``ask``, ``bench``, ``eval``, ``verify`` and ``show``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citegraph.cli import main

import pg_server

BIG = "9" * 5000  # over Python's int-string limit (4,300 digits)
DEEP = "[" * 100_000 + "]" * 100_000  # past the interpreter's recursion limit
NEST100 = "[" * 100 + "1" + "]" * 100  # parses; deeper than any input needs


def _w(p: Path, text: str) -> Path:
    p.write_text(text, encoding="utf-8")
    return p


def _wb(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def item(**kw) -> dict:
    base = {"id": "a", "question": "Who founded Alpha?", "docs": [{"title": "Alpha", "text": "Alpha was founded in 1901."}]}
    base.update(kw)
    return base


def items_json(t: Path, text: str, name: str = "in.json") -> str:
    """An input file holding ``text`` verbatim (JSON written by hand, so any escape survives)."""
    return str(_w(t / name, text))


def run(t: Path, text: str, *extra: str, name: str = "in.json") -> list[str]:
    return ["run", "vanilla", "-i", items_json(t, text, name), "-o", str(t / "o.json"), "--llm", "fake:never", *extra]


def run_ok(t: Path, *extra: str) -> list[str]:
    return run(t, json.dumps([item()]), *extra, name="ok.json")


def docs_file(t: Path, text: str) -> str:
    return str(_w(t / "d.jsonl", text))


def doc_title(v: str) -> str:
    return '[{"question": "q", "docs": [{"title": %s, "text": "x"}]}]' % v


def question(v: str) -> str:
    return '[{"question": %s, "docs": [{"text": "x"}]}]' % v


def doc_text(v: str) -> str:
    return '[{"question": "q", "docs": [{"text": %s}]}]' % v


def doc_id(v: str) -> str:
    return '[{"question": "q", "docs": [{"id": %s, "text": "x"}]}]' % v


CASES = [
    # non-string document fields
    (lambda t: run(t, doc_title("7")), "document 1: the title must be a string, got int"),
    (lambda t: run(t, doc_title('["a"]')), "the title must be a string, got list"),
    (lambda t: run(t, doc_title('{"a": 1}')), "the title must be a string, got dict"),
    (lambda t: run(t, doc_title("true")), "the title must be a string, got bool"),
    (lambda t: run(t, doc_text("5")), "document 1: the text must be a string, got int"),
    (lambda t: run(t, doc_text('["x"]')), "the text must be a string, got list"),
    (lambda t: run(t, doc_text('{"t": "x"}')), "the text must be a string, got dict"),
    (lambda t: run(t, doc_id('["x"]')), "the id must be a string or an integer, got list"),
    (lambda t: run(t, doc_id("true")), "the id must be a string or an integer, got bool"),
    (lambda t: run(t, '[{"question": "q", "docs": [42]}]'), "document 1 must be an object with a 'text' field"),
    (lambda t: run(t, '[{"question": "q", "docs": [null]}]'), "document 1 must be an object with a 'text' field"),
    (lambda t: run(t, '[{"question": "q", "docs": {"text": "x"}}]'), "item 1: documents must be a list"),
    (lambda t: run(t, '[{"question": "q", "docs": null}]'), "item 1: documents must be a list"),
    # non-string questions: named as such, not "empty"
    (lambda t: run(t, question("42")), "item 1: the question must be a string, got int"),
    (lambda t: run(t, question("4.5")), "the question must be a string, got float"),
    (lambda t: run(t, question('["q"]')), "the question must be a string, got list"),
    (lambda t: run(t, question('{"q": 1}')), "the question must be a string, got dict"),
    (lambda t: run(t, question("true")), "the question must be a string, got bool"),
    (lambda t: run(t, question("null")), "item 1: the question is empty"),
    (lambda t: run(t, '[{"docs": [{"text": "x"}]}]'), "item 1: the question is empty"),
    # lone surrogate escapes: valid JSON, not text
    (lambda t: run(t, question('"Who \\ud800 founded?"')), "a string holds a lone surrogate escape (\\ud800)"),
    (lambda t: run(t, doc_text('"Alpha \\udfff"')), "lone surrogate escape (\\udfff)"),
    (lambda t: run(t, doc_title('"\\udc00"')), "lone surrogate escape (\\udc00)"),
    (lambda t: run(t, '[{"question": "q", "\\ud83d": 1, "docs": [{"text": "x"}]}]'), "lone surrogate escape (\\ud83d)"),
    (lambda t: run(t, '[{"question": "q", "answer": ["\\ud800"], "docs": [{"text": "x"}]}]'), "lone surrogate escape"),
    (lambda t: run(t, '{"question": "q\\ud800", "docs": [{"text": "x"}]}\n', name="s.jsonl"), "s.jsonl:1: a string holds a lone surrogate"),
    # integers past 4,300 digits
    (lambda t: run(t, '[{"question": "q", "n": %s, "docs": [{"text": "x"}]}]' % BIG), "a number in the JSON is too long"),
    (lambda t: run(t, '[{"id": %s, "question": "q", "docs": [{"text": "x"}]}]' % BIG), "a number in the JSON is too long"),
    (lambda t: run(t, doc_title(BIG)), "a number in the JSON is too long"),
    (lambda t: run(t, '{"question": "q", "docs": [{"text": "x"}]}\n{"question": "q", "n": %s, "docs": []}\n' % BIG,
                   name="big.jsonl"), "big.jsonl:2: a number in the JSON is too long"),
    (lambda t: run_ok(t, "--set", f"max_new_tokens={BIG}"), "VanillaContext.max_new_tokens must be a number, got 5,000 characters"),
    (lambda t: run_ok(t, "--set", f"temperature={BIG}"), "VanillaContext.temperature must be a number, got 5,000 characters"),
    (lambda t: run_ok(t, "--set", f"max_new_tokens=-{BIG}"), "max_new_tokens must be a number, got 5,001 characters"),
    (lambda t: run_ok(t, "--set", f"max_new_tokens={DEEP[:2000]}{DEEP[-2000:]}"), "max_new_tokens must be a number"),
    # nesting
    (lambda t: run(t, DEEP), "the JSON nests too deeply"),
    (lambda t: run(t, '[{"question": "q", "x": %s, "docs": [{"text": "x"}]}]' % NEST100), "nests more than 64 levels deep"),
    (lambda t: run(t, '{"question": "q", "docs": [{"text": "x"}]}\n' + DEEP + "\n", name="deep.jsonl"), "deep.jsonl:2: the JSON nests too deeply"),
    (lambda t: run(t, '{"data": %s}' % DEEP), "the JSON nests too deeply"),
    # top-level shapes
    (lambda t: run(t, "42"), "item 1 is not an object"),
    (lambda t: run(t, "null"), "item 1 is not an object"),
    (lambda t: run(t, '["q"]'), "item 1 is not an object"),
    (lambda t: run(t, '[[1, 2]]'), "item 1 is not an object"),
    (lambda t: run(t, '{"data": 5}'), "expected a list of items"),
    (lambda t: run(t, '[{"question": "q", "docs": [{"text": "x"}]}] trailing'), "invalid JSON (Extra data)"),
    (lambda t: run(t, '[]'), "no items"),
    # other flags of run
    (lambda t: run_ok(t, "--set", "max_new_tokens=1e999"), "max_new_tokens must be an integer, got inf"),
    (lambda t: run_ok(t, "--set", "max_new_tokens=true"), "max_new_tokens must be an integer, got True"),
    (lambda t: run_ok(t, "--set", "temperature=nan"), "temperature must be a finite number"),
    (lambda t: run_ok(t, "--set", "temperature=-1"), "temperature must be at least 0.0"),
    (lambda t: run_ok(t, "--set", "noequals"), "--set expects key=value"),
    (lambda t: run_ok(t, "--concurrency", "0"), "--concurrency must be at least 1"),
    (lambda t: run_ok(t, "--timeout", "-5"), "--timeout must be more than 0 seconds"),
    (lambda t: run_ok(t, "--workers-db", "mysql://u@h/db"), "--workers-db 'mysql://u@h/db': expected a PostgreSQL URL"),
    (lambda t: run_ok(t, "--workers-db", "postgresql://u@127.0.0.1:1/db", "--workers-lease", "0"), "--workers-lease must be more than 0"),
    (lambda t: run_ok(t, "--workers-lease", "5"), "--workers-lease needs --workers-db"),
    (lambda t: run_ok(t, "--workers-db", "postgresql://u@127.0.0.1:1/db", "--overwrite"), "--overwrite cannot be used with --workers-db"),
    (lambda t: run_ok(t, "--workers-db", f"postgresql://u:pw@127.0.0.1:{pg_server.free_port()}/db"), "cannot connect to the database"),
    # an existing output that is not one
    (lambda t: run_ok(t, "-o", str(_w(t / "o1.json", "{broken"))), "exists but is not valid JSON"),
    (lambda t: run_ok(t, "-o", str(_w(t / "o2.json", "[1, 2]"))), "is not a citegraph/ALCE output file"),
    (lambda t: run_ok(t, "-o", str(_w(t / "o3.json", '{"data": 5}'))), "is not a citegraph/ALCE output file"),
    (lambda t: run_ok(t, "-o", str(_wb(t / "o4.json", b'{"data": ["caf\xe9"]}'))), "exists but is not valid JSON"),
    # ask
    (lambda t: ["ask", "vanilla", "-q", "q", "--docs", docs_file(t, '{"title": 3, "text": "x"}\n')], "the title must be a string, got int"),
    (lambda t: ["ask", "vanilla", "-q", "q", "--docs", docs_file(t, '{"text": "x\\ud800"}\n')], "lone surrogate escape"),
    (lambda t: ["ask", "vanilla", "-q", "q", "--docs", docs_file(t, '{"text": "x", "n": %s}\n' % BIG)], "a number in the JSON is too long"),
    (lambda t: ["ask", "vanilla", "-q", "q", "--docs", docs_file(t, DEEP)], "the JSON nests too deeply"),
    (lambda t: ["ask", "vanilla", "-q", "q", "--docs", docs_file(t, '{"text": 12}\n')], "the text must be a string, got int"),
    (lambda t: ["ask", "vanilla", "-q", "   ", "--docs", docs_file(t, '{"text": "x"}\n')], "question is empty"),
    (lambda t: ["ask", "vanilla", "--example", "--set", f"max_new_tokens={BIG}"], "max_new_tokens must be a number, got 5,000 characters"),
    # bench
    (lambda t: ["bench", "--methods", "vanilla", "--data", items_json(t, question("7")), "--out", str(t / "b")], "the question must be a string, got int"),
    (lambda t: ["bench", "--methods", "vanilla", "--data", items_json(t, question('"\\ud800"')), "--out", str(t / "b")], "lone surrogate"),
    (lambda t: ["bench", "--methods", "vanilla", "--data", items_json(t, doc_title(BIG)), "--out", str(t / "b")], "too long"),
    (lambda t: ["bench", "--methods", "", "--data", items_json(t, json.dumps([item()])), "--out", str(t / "b")], "--methods needs at least one method"),
    (lambda t: ["bench", "--methods", "vanilla,vanilla", "--data", items_json(t, json.dumps([item()])), "--out", str(t / "b")], "lists a method twice"),
    (lambda t: ["bench", "--methods", "vanilla:bogus=1", "--data", items_json(t, json.dumps([item()])), "--out", str(t / "b")], "vanilla has no setting bogus"),
    (lambda t: ["bench", "--methods", "vanilla", "--data", items_json(t, json.dumps([item()])), "--out", str(t / "b"),
                "--set", f"max_new_tokens={BIG}"], "max_new_tokens must be a number"),
    (lambda t: ["bench", "--methods", "vanilla", "--data", items_json(t, json.dumps([item()])), "--out", str(t / "b"),
                "--workers-db", "sqlite:///x.db"], "expected a PostgreSQL URL"),
    # eval, verify, show on broken files
    (lambda t: ["eval", "--input", str(t / "none.json")], "output file not found"),
    (lambda t: ["eval", "--input", items_json(t, '{"data": [{"output": "x", "n": %s}]}' % BIG, "e1.json")], "a number in the JSON is too long"),
    (lambda t: ["eval", "--input", items_json(t, DEEP, "e2.json")], "the JSON nests too deeply"),
    (lambda t: ["eval", "--input", items_json(t, '{"data": [{"output": "x\\ud800"}]}', "e3.json")], "lone surrogate"),
    (lambda t: ["verify", "--pairs", docs_file(t, '{"premise": "a", "hypothesis": "b", "n": %s}\n' % BIG)], "d.jsonl:1: a number in the JSON is too long"),
    (lambda t: ["verify", "--pairs", docs_file(t, '{"premise": "a\\ud800", "hypothesis": "b"}\n')], "lone surrogate"),
    (lambda t: ["verify", "--pairs", docs_file(t, DEEP + "\n")], "the JSON nests too deeply"),
    (lambda t: ["verify", "--pairs", docs_file(t, '{"premise": 1, "hypothesis": "b"}\n')], "missing string field 'premise'"),
    (lambda t: ["show", items_json(t, DEEP, "s1.json")], "the JSON nests too deeply"),
    (lambda t: ["show", items_json(t, '{"data": [{"output": "x", "n": %s}]}' % BIG, "s2.json")], "too long"),
]


@pytest.mark.parametrize("n", range(len(CASES)))
def test_more_bad_input_one_line_exit_2(tmp_path, capsys, n):
    argv_maker, needle = CASES[n]
    argv = argv_maker(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert code == 2, err[-500:]
    assert needle in err and len(err.splitlines()) == 1, err[-500:]
    assert err.startswith("citegraph: error: ") and len(err) < 800
    assert not (tmp_path / "o.json").exists()


def test_the_tables_hold_80_cases():
    import test_cli

    existing = next(m for m in test_cli.test_bad_input_one_line_exit_2.pytestmark if m.name == "parametrize")
    assert len(existing.args[1]) + len(CASES) >= 80
