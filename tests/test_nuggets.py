"""The nugget evaluator: scores on a hand-made topic, windows of 10, label repair, the fidelity CSV reader,
the CLI flag."""

from __future__ import annotations

import json
import re

import pytest

from citegraph.eval.nuggets import (
    agreement, average, evaluate_topic, read_fidelity_csv, read_nuggets_file, topic_scores,
)


def test_scores_on_a_hand_made_topic():
    imp = ["vital", "vital", "vital", "vital", "okay", "okay"]
    asg = ["support", "partial_support", "not_support", "support", "support", "partial_support"]
    s = topic_scores(imp, asg)
    assert s["v_strict"] == pytest.approx(2 / 4)          # supported vital / vital
    assert s["v"] == pytest.approx((2 + 0.5) / 4)          # + half of the partially supported vital
    assert s["a_strict"] == pytest.approx(3 / 6)           # supported / all
    assert s["a"] == pytest.approx((3 + 0.5 * 2) / 6)
    # no vital nugget: the vital scores are 0 (as nuggetizer)
    assert topic_scores(["okay"], ["support"]) == {"v_strict": 0.0, "v": 0.0, "a_strict": 1.0, "a": 1.0}
    assert average([s, topic_scores(["vital"], ["support"])])["v_strict"] == pytest.approx(0.75)
    with pytest.raises(ValueError):
        topic_scores(["vital"], [])


def labeller(rule):
    """A scripted judge: reads the nugget list of the prompt and labels each nugget by ``rule``."""

    def reply(messages, kwargs):
        p = str(messages[-1].content)
        nuggets = json.loads(re.search(r"Nugget List: (\[.*?\])\n", p).group(1))
        return json.dumps({"labels": [rule(n, p) for n in nuggets]})

    return reply


def test_assignment_in_windows_of_ten_without_citations(scripted):
    nuggets = [f"fact {i}" for i in range(23)]
    spec, model = scripted(labeller(
        lambda n, p: "support" if re.search(rf"\b{n}\b", p.split("Nugget List")[0]) else "not_support"))
    answer = "We know fact 3 [1]. And fact 12 [2][3]."
    r = evaluate_topic("q?", answer, nuggets=nuggets, importance=["okay"] * 3 + ["vital"] * 3 + ["okay"] * 17, judge=spec)
    assert len(model.calls) == 3  # 10 + 10 + 3
    assert [len(json.loads(re.search(r"Nugget List: (\[.*?\])\n", str(c["messages"][-1].content)).group(1)))
            for c in model.calls] == [10, 10, 3]
    assert "[1]" not in str(model.calls[0]["messages"][-1].content)  # the judge does not see citations
    assert [i for i, a in enumerate(r.assignment) if a == "support"] == [3, 12]
    assert r.scores["v_strict"] == pytest.approx(1 / 3) and r.scores["a_strict"] == pytest.approx(2 / 23)


def test_wrong_label_count_is_retried_then_padded(scripted):
    spec, model = scripted(['{"labels": ["support"]}'])  # always one label for two nuggets
    r = evaluate_topic("q?", "a", nuggets=["x", "y"], importance=["vital", "vital"], judge=spec)
    assert r.assignment == ["not_support", "not_support"]
    assert any("no valid labels" in p for p in r.problems)
    # a label spelt differently is repaired
    spec, _ = scripted(['["Support", "partial support"]'])
    r = evaluate_topic("q?", "a", nuggets=["x", "y"], importance=["vital", "okay"], judge=spec)
    assert r.assignment == ["support", "partial_support"]


def test_creation_and_importance_when_not_given(scripted):
    def reply(messages, kwargs):
        p = str(messages[-1].content)
        if "Initial Nugget List" in p:
            have = json.loads(re.search(r"Initial Nugget List: (\[.*?\])\n", p).group(1))
            window = re.findall(r"^\[\d+\] (.*)$", p, re.M)
            return json.dumps({"nuggets": have + [w.split(".")[0] for w in window]})
        if "vital or okay" in p:
            nug = json.loads(re.search(r"Nugget List: (\[.*?\])\n", p).group(1))
            return json.dumps({"labels": ["vital" if "alpha" in n else "okay" for n in nug]})
        return labeller(lambda n, q: "support" if "alpha" in n else "not_support")(messages, kwargs)

    spec, model = scripted(reply)
    passages = [f"alpha {i}. more" if i % 2 else f"beta {i}. more" for i in range(12)]
    r = evaluate_topic("q?", "answer", passages=passages, judge=spec, max_nuggets=30)
    assert r.created and len(r.nuggets) == 12
    creation_calls = [c for c in model.calls if "Initial Nugget List" in str(c["messages"][-1].content)]
    assert len(creation_calls) == 2  # windows of 10 passages
    assert r.importance == ["vital" if "alpha" in n else "okay" for n in r.nuggets]
    assert r.scores["v_strict"] == 1.0 and r.scores["a_strict"] == 0.5
    r = evaluate_topic("q?", "answer", passages=passages, judge=spec, max_nuggets=5)
    assert len(r.nuggets) == 5


def test_fidelity_csv_reader(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text(
        "qid;query;sysA;sysB;sysA_automatically_detected_nuggets;sysA_nuggets_importance;sysA_nuggets_assignments;"
        "sysA_v_strict_score;sysB_automatically_detected_nuggets;sysB_nuggets_importance;sysB_nuggets_assignments;sysB_v_strict_score\n"
        "q1;what?;Answer A;\"Answer; B\";['n1', \"n2's\"];['vital', 'okay'];['support', 'not_support'];1.0;"
        "['n1'];['vital'];['partial_support'];0.0\n")
    (t,) = read_fidelity_csv(f)
    assert t.qid == "q1" and t.query == "what?" and sorted(t.systems) == ["sysA", "sysB"]
    a = t.systems["sysA"]
    assert a.response == "Answer A" and a.nuggets == ["n1", "n2's"] and a.importance == ["vital", "okay"]
    assert a.assignment == ["support", "not_support"] and a.v_strict == 1.0
    assert t.systems["sysB"].response == "Answer; B"
    # the file's V_strict is the arithmetic of its own labels
    assert topic_scores(a.importance, a.assignment)["v_strict"] == a.v_strict


def test_released_fidelity_file_is_consistent():
    from conftest import shared_path

    topics = read_fidelity_csv(shared_path("trec_rag", "rag24", "ginger_assignments_gpt4", "nrg-fluency_top_20.csv"))
    assert len(topics) == 301
    assert sorted(topics[0].systems) == ["baseline_top_5", "ginger-fluency_top_10", "ginger-fluency_top_20",
                                         "ginger-fluency_top_5", "ginger_top_5"]
    for t in topics[:50]:
        for s in t.systems.values():
            assert topic_scores(s.importance, s.assignment)["v_strict"] == pytest.approx(s.v_strict)


def test_agreement():
    r = agreement(["support", "not_support", "partial_support", "support"], ["support", "not_support", "support", "support"])
    assert r["accuracy"] == 0.75 and 0 < r["kappa"] < 1


def test_nuggets_file_reader(tmp_path):
    f = tmp_path / "n.jsonl"
    f.write_text('{"id": "a", "nuggets": ["x", "y"], "importance": ["vital", "okay"]}\n{"qid": "b", "nuggets": ["z"]}\n')
    assert read_nuggets_file(f) == {"a": {"nuggets": ["x", "y"], "importance": ["vital", "okay"]}, "b": {"nuggets": ["z"]}}
    from citegraph.errors import InputError

    f.write_text('{"id": "a", "nuggets": ["x"], "importance": ["high"]}\n')
    with pytest.raises(InputError):
        read_nuggets_file(f)


def test_cli_nuggets_flag_with_claims_and_given_nuggets(tmp_path, scripted, capsys):
    from citegraph.cli import main

    spec, model = scripted(labeller(lambda n, p: "support" if n.split()[0] in p.split("Nugget List")[0] else "not_support"))
    out = tmp_path / "out.json"
    out.write_text(json.dumps({"args": {}, "data": [
        {"id": "i1", "question": "q1", "output": "Cats purr [1].", "claims": ["Cats purr", "Dogs bark", "Birds sing"],
         "docs": [{"title": "t", "text": "Cats purr."}]},
        {"id": "i2", "question": "q2", "output": "Dogs bark.", "claims": ["Dogs bark"], "docs": []}]}))
    assert main(["eval", "--input", str(out), "--nuggets", "--judge", spec]) == 0
    res = json.loads((tmp_path / "out.nuggets.json").read_text())
    assert [r["scores"]["v_strict"] for r in res["items"]] == pytest.approx([1 / 3, 1.0])
    assert res["summary"]["v_strict"] == pytest.approx(2 / 3)
    # resumable: a second run reads the journal and calls the judge no more
    n = len(model.calls)
    assert main(["eval", "--input", str(out), "--nuggets", "--judge", spec]) == 0
    assert len(model.calls) == n
    given = tmp_path / "given.jsonl"
    given.write_text('{"id": "i1", "nuggets": ["Birds sing"], "importance": ["vital"]}\n')
    assert main(["eval", "--input", str(out), "--nuggets", str(given), "--judge", spec, "--output", str(tmp_path / "g.json")]) == 0
    res = json.loads((tmp_path / "g.json").read_text())
    assert res["items"][0]["nuggets"] == ["Birds sing"] and res["items"][0]["scores"]["v_strict"] == 0.0


def test_yesno_mode_asks_per_nugget(scripted):
    # fully captured → support; partly → partial_support; else not_support
    def judge(text):
        nugget = re.search(r"Nugget: (.*)\n", text).group(1)
        full = "fully capture" in text
        return {"alpha": 0.9, "beta": 0.2 if full else 0.8, "gamma": 0.1}[nugget]

    spec, model = scripted([], judge=judge)
    r = evaluate_topic("q?", "answer [1].", nuggets=["alpha", "beta", "gamma"], importance=["vital"] * 3,
                       judge=spec, mode="yesno")
    assert r.assignment == ["support", "partial_support", "not_support"]
    assert r.scores["v"] == pytest.approx(0.5)
    from citegraph.eval.nuggets import assign_nuggets

    probs: list = []
    assign_nuggets("q?", "answer", ["alpha", "beta", "gamma"], spec, mode="yesno", p_yes=probs)
    assert probs == [[0.9], [0.2, 0.8], [0.1, 0.1]]  # kept for fitting thresholds on labelled data
    from citegraph.errors import InputError

    with pytest.raises(InputError):
        evaluate_topic("q?", "a", nuggets=["x"], importance=["vital"], judge=spec, mode="vote")


def test_thresholds_fitted_on_p_yes_recover_the_labels_a_half_cut_misses():
    from citegraph.eval.nuggets import fit_thresholds, labels_from_scores

    assert labels_from_scores([0.9, 0.6, 0.2], 0.8, 0.5) == ["support", "partial_support", "not_support"]
    assert labels_from_scores([0.9, 0.6], 1.01, 0.5) == ["partial_support"] * 2  # support switched off
    # a judge that says "Yes" to everything but ranks well: gold support >= 0.85, partial 0.65-0.85
    p = [0.95, 0.9, 0.86, 0.8, 0.7, 0.66, 0.6, 0.55, 0.52]
    gold = ["support"] * 3 + ["partial_support"] * 3 + ["not_support"] * 3
    best = fit_thresholds(p, gold)
    assert best["kappa"] == pytest.approx(1.0) and labels_from_scores(p, best["support_at"], best["partial_at"]) == gold
    assert agreement(labels_from_scores(p, 0.5, 0.5), gold)["kappa"] == pytest.approx(0.0)  # the 0.5 cut: all support
    with pytest.raises(Exception, match="as many scores as labels"):
        fit_thresholds([0.5], [])


def test_fidelity_report_fits_on_half_the_topics_and_tests_on_the_rest():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_nugget_fidelity as b

    def row(qid, system, p, gold):
        return {"qid": qid, "system": system, "mode": "yesno", "p_yes": [[x] for x in p],
                "ours": ["support" if x >= 0.5 else "not_support" for x in p], "gpt4o": gold,
                "importance": ["vital"] * len(p)}

    # system A supports both vital nuggets by GPT-4o, B one, C none; the judge's P(Yes) ranks them right
    # but is >= 0.5 everywhere, so at the 0.5 cut every system looks the same
    systems = ["A", "B", "C"]
    probs = {"A": ([0.95, 0.9], ["support", "support"]), "B": ([0.9, 0.6], ["support", "not_support"]),
             "C": ([0.62, 0.58], ["not_support", "not_support"])}
    rows = [row(f"t{i}", s, *probs[s]) for i in range(4) for s in systems]
    text = b.report(rows, systems)
    # both ways round: fitted on the even-numbered topics, then on the odd-numbered ones
    assert "fitted on the 2 even-numbered topic(s)" in text and "fitted on the 2 odd-numbered topic(s)" in text
    fitted = [x for x in text.splitlines() if x.startswith("| fitted thresholds")]
    as_run = [x for x in text.splitlines() if x.startswith("| P(Yes) >= 0.5")]
    assert len(fitted) == len(as_run) == 2
    for f, a in zip(fitted, as_run):
        assert f.split("|")[3].strip() == "1.000" and f.split("|")[5].strip() == "1.000"  # accuracy, tau
        assert a.split("|")[3].strip() == "0.500"
    # each system's V_strict on the test topics: at 0.5 all look alike, fitted they match GPT-4o's
    vs = {x.split("|")[1].strip(): [float(c) for c in x.split("|")[2:5]] for x in text.splitlines()
          if len(x.split("|")) == 6 and x.split("|")[1].strip() in ("A", "C")}  # the test-topic tables
    assert vs["A"] == [1.0, 1.0, 1.0] and vs["C"] == [1.0, 0.0, 0.0]


def test_fidelity_bench_resumes_and_reports_each_mode_of_a_shared_journal_apart(tmp_path, scripted, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_nugget_fidelity as b

    f = tmp_path / "x.csv"
    f.write_text(
        "qid;query;sysA;sysA_automatically_detected_nuggets;sysA_nuggets_importance;sysA_nuggets_assignments;"
        "sysA_v_strict_score\nq1;what?;Answer A;['n1'];['vital'];['support'];1.0\n")
    journal = tmp_path / "j.jsonl"
    journal.write_text(json.dumps({"qid": "q1", "system": "sysA", "mode": "list", "ours": ["not_support"],
                                   "gpt4o": ["support"], "importance": ["vital"], "p_yes": [], "seconds": 1.0}) + "\n")
    spec, model = scripted(judge=0.9)
    b.main(["--file", str(f), "--topics", "1", "--judge", spec, "--mode", "yesno", "--journal", str(journal)])
    out = capsys.readouterr().out
    # the list-mode row is not taken for a yes/no one: the yes/no run judged the response itself
    rows = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [r["mode"] for r in rows] == ["list", "yesno"] and rows[1]["ours"] == ["support"]
    assert "(1 system responses" in out and "| accuracy [95% interval over topics] | 1.000 [1.000, 1.000] |" in out
    b.main(["--file", str(f), "--topics", "1", "--judge", spec, "--mode", "list", "--journal", str(journal),
            "--report-only"])
    assert "| accuracy [95% interval over topics] | 0.000 [" in capsys.readouterr().out  # the list row, alone
