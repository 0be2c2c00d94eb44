"""`citegraph bench` resumed: every finished item is scored once (scores cached by what scoring reads),
and the report compares methods on the items every method finished (issue #22, item 7)."""

from __future__ import annotations

import json
import re

import pytest

from citegraph.cli import main
from citegraph.eval.bench import run_bench
from citegraph.tools.verifier import register_verifier
from stubs import KeywordVerifier
from test_eval_cli import DOCS, bench_script


@pytest.fixture
def counting_verifier():
    """A stub verifier without the in-memory pair cache, so every pair scored shows up in ``calls``."""
    v = KeywordVerifier(spec="stub:count", cache=False)
    register_verifier("stub:count", v)
    return v


def asqa(tmp_path, n=3):
    data = tmp_path / "asqa.json"
    data.write_text(json.dumps([{"sample_id": f"q{i}", "question": f"Capitals {i}?", "docs": DOCS,
                                 "qa_pairs": [{"short_answers": ["Paris"]}, {"short_answers": ["Berlin"]}],
                                 "annotations": [{"long_answer": "Paris and Berlin are capitals."}]} for i in range(n)]))
    return data


def pairs(v) -> int:
    return sum(len(c) for c in v.calls)


def test_a_second_bench_run_scores_nothing_and_a_changed_output_is_scored_again(tmp_path, scripted, counting_verifier, capsys):
    spec, model = scripted(bench_script)
    out = tmp_path / "bench"
    argv = ["bench", "--methods", "vanilla,summ", "--data", str(asqa(tmp_path)), "--out", str(out),
            "--llm", spec, "--verifier", "stub:count"]
    assert main(argv) == 0
    first = pairs(counting_verifier)
    assert first > 0 and "scored vanilla: 3 item(s) scored, 0 from the previous scores" in capsys.readouterr().err
    report = (out / "report.md").read_text()
    summary = (out / "summary.json").read_text()

    assert main(argv) == 0  # resumed: nothing to generate, nothing to score
    assert pairs(counting_verifier) == first
    assert "scored vanilla: 0 item(s) scored, 3 from the previous scores" in capsys.readouterr().err
    assert (out / "summary.json").read_text() == summary
    assert (out / "report.md").read_text() == report

    # one output changed (an item re-run, or edited): that item alone is scored again
    raw_path = out / "raw" / "vanilla.json"
    raw = json.loads(raw_path.read_text())
    rec = raw["data"][1]
    rec["output"] = "Paris is the capital of France."
    rec["citegraph"]["answer"]["sentences"] = [{"text": "Paris is the capital of France.", "citations": []}]
    raw_path.write_text(json.dumps(raw))
    res = run_bench(["vanilla", "summ"], out.parent / "asqa.json", out, llm=spec, verifier="stub:count")
    assert (res["scores"]["vanilla"]["scored"], res["scores"]["vanilla"]["reused"]) == (1, 2)
    assert (res["scores"]["summ"]["scored"], res["scores"]["summ"]["reused"]) == (0, 3)
    items = {s["id"]: s for s in res["scores"]["vanilla"]["items"]}
    assert items["q1"]["uncited_pct"] == 100.0 and items["q0"]["uncited_pct"] == 0.0
    assert [s["id"] for s in res["scores"]["vanilla"]["items"]] == ["q0", "q1", "q2"]

    # another verifier or scoring setting is another key: everything is scored again
    from citegraph.eval.scoring import score_file

    register_verifier("stub:count2", KeywordVerifier(spec="stub:count2", cache=False))
    assert score_file(raw_path, verifier="stub:count2", reuse=True)["scored"] == 3
    assert score_file(raw_path, verifier="stub:count2", reuse=True)["scored"] == 0
    assert score_file(raw_path, verifier="stub:count2", reuse=True, cut_newline=True)["scored"] == 3


def test_eval_scores_every_item_each_time(tmp_path, scripted, counting_verifier):
    """`citegraph eval` re-scores on request (no reuse): the cache is bench's."""
    spec, _ = scripted(bench_script)
    out = tmp_path / "bench"
    assert main(["bench", "--methods", "vanilla", "--data", str(asqa(tmp_path, 2)), "--out", str(out),
                 "--llm", spec, "--verifier", "stub:count"]) == 0
    n = pairs(counting_verifier)
    assert main(["eval", "--input", str(out / "raw" / "vanilla.json"), "--verifier", "stub:count"]) == 0
    assert pairs(counting_verifier) == 2 * n


def failing_script(messages, kwargs):
    """summ fails on item q1 (an error inside the method: that item fails, the run goes on); vanilla
    answers q1 without a citation, so its mean over all items differs from the one on the common items."""
    text = messages[-1].content
    if "Capitals 1?" in text:
        if re.search(r"\n(?:Summary):", text):
            raise ValueError("the endpoint sent garbage")
        if "Document [2]" in text:
            return "Paris is the capital of France."
    return bench_script(messages, kwargs)


def test_the_table_compares_methods_on_the_common_items(tmp_path, scripted, counting_verifier, capsys):
    spec, _ = scripted(failing_script)
    out = tmp_path / "bench"
    argv = ["bench", "--methods", "vanilla,summ", "--data", str(asqa(tmp_path)), "--out", str(out),
            "--llm", spec, "--verifier", "stub:count"]
    assert main(argv) == 1  # an item failed
    table = capsys.readouterr().out
    assert re.search(r"\| vanilla \| 2 \| 100\.0 ", table) and re.search(r"\| summ \| 2 \| 100\.0 ", table)
    report = (out / "report.md").read_text()
    assert "- compared on the 2 item(s) that every method finished (the common items), of 3 selected" in report
    assert "| vanilla | 3 | 0 | 0 |" in report and "| summ | 2 | 1 | 1 |" in report
    # vanilla's own three items, shown apart and said not to be a comparison
    assert "not a comparison" in report and re.search(r"\| vanilla \| 3 \| 66\.7 ", report)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["vanilla"]["n_items"] == 2 and summary["vanilla"]["citation_rec"] == 100.0
    assert summary["summ"]["n_finished"] == 2 and summary["summ"]["n_missing"] == 1 and summary["vanilla"]["n_missing"] == 0

    n = pairs(counting_verifier)
    assert main(argv) == 1  # summ's item fails again; nothing finished is scored again
    assert pairs(counting_verifier) == n
    assert "| summ | 2 | 1 | 1 |" in (out / "report.md").read_text()


def test_a_report_without_failures_has_no_item_table(tmp_path, scripted, counting_verifier):
    spec, _ = scripted(bench_script)
    out = tmp_path / "bench"
    res = run_bench(["vanilla", "summ"], asqa(tmp_path, 2), out, llm=spec, verifier="stub:count")
    report = (out / "report.md").read_text()
    assert res["common"] == ["q0", "q1"] and "(the common items)\n" in report
    assert "missing (not finished)" not in report and "not a comparison" not in report


class _Stopping(KeywordVerifier):
    """Scores like KeywordVerifier until ``stop_after`` batches, then stops the run (a killed judge)."""

    def __init__(self, spec: str, stop_after: int | None = None, **kw):
        super().__init__(spec=spec, cache=False, **kw)
        self.stop_after = stop_after

    def _score_uncached(self, pairs):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt("judge stopped")
        return super()._score_uncached(pairs)


class _Contrary(KeywordVerifier):
    """Entails exactly what KeywordVerifier does not: a second opinion that must show up in its own table."""

    def _score_uncached(self, pairs):
        return [1.0 - p for p in super()._score_uncached(pairs)]


def test_score_verifier_gets_its_own_table_and_keeps_what_it_scored_when_stopped(tmp_path, scripted, counting_verifier, capsys):
    spec, _ = scripted(bench_script)
    out = tmp_path / "bench"
    data = asqa(tmp_path)
    # a judge that stops while scoring the second item: the first item's scores are on disk
    judge = _Stopping("stub:judge", stop_after=1)
    register_verifier("stub:judge", judge)
    with pytest.raises(KeyboardInterrupt):
        run_bench(["vanilla"], data, out, llm=spec, verifier="stub:count", score_verifiers=["stub:judge"])
    part = json.loads((out / "raw" / "vanilla.score.stub_judge.json").read_text())
    assert part["incomplete"] == "1 of 3 item(s) scored" and [s["id"] for s in part["items"]] == ["q0"]
    assert part["verifier"] == "stub:judge" and len(part["item_keys"]) == 1

    # resumed: the judge scores only the two items it had not; the main verifier nothing again
    judge.stop_after = None
    before, main_pairs = len(judge.calls), pairs(counting_verifier)
    res = run_bench(["vanilla"], data, out, llm=spec, verifier="stub:count", score_verifiers=["stub:judge"])
    x = res["extra_scores"]["stub:judge"]["vanilla"]
    assert (x["scored"], x["reused"]) == (2, 1) and len(judge.calls) - before == 2  # one write per item
    assert pairs(counting_verifier) == main_pairs
    full = json.loads((out / "raw" / "vanilla.score.stub_judge.json").read_text())
    assert "incomplete" not in full and [s["id"] for s in full["items"]] == ["q0", "q1", "q2"]

    # a contrary judge: its table differs from the main one, and only in the verifier's columns
    register_verifier("stub:contrary", _Contrary(spec="stub:contrary", cache=False))
    res = run_bench(["vanilla"], data, out, llm=spec, verifier="stub:count", score_verifiers=["stub:contrary"])
    main_f1 = res["scores"]["vanilla"]["summary"]["citation_f1"]
    other = res["extra_scores"]["stub:contrary"]["vanilla"]["summary"]
    assert main_f1 is not None and other["citation_f1"] != main_f1
    assert other["str_em"] == res["scores"]["vanilla"]["summary"]["str_em"]
    report = (out / "report.md").read_text()
    assert "Scored by `stub:contrary` as well" in report
    table = res["extra_tables"]["stub:contrary"]
    assert "Cit. F1" in table and "STR-EM" not in table and "Tokens" not in table
    assert json.loads((out / "summary.stub_contrary.json").read_text())["vanilla"]["citation_f1"] == other["citation_f1"]

    # the CLI: repeated flags, a judge named twice is one line and exit 2, before any work
    assert main(["bench", "--methods", "vanilla", "--data", str(data), "--out", str(out), "--llm", spec,
                 "--verifier", "stub:count", "--score-verifier", "stub:contrary"]) == 0
    assert "scored by stub:contrary:" in capsys.readouterr().out
    assert main(["bench", "--methods", "vanilla", "--data", str(data), "--out", str(out), "--llm", spec,
                 "--verifier", "stub:count", "--score-verifier", "stub:count"]) == 2
    assert "names a verifier twice" in capsys.readouterr().err
