"""benchmarks/compare_scores.py: the paired difference of two scored runs of the same items."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import compare_scores  # noqa: E402


def _scores(path: Path, values: dict[str, float]) -> str:
    path.write_text(json.dumps({"ids": list(values), "items": [{"id": k, "citation_f1": v} for k, v in values.items()]}))
    return str(path)


def test_paired_difference_over_the_common_items(tmp_path, capsys):
    a = _scores(tmp_path / "a.json", {"q1": 100.0, "q2": 50.0, "q3": 0.0, "q4": 80.0})
    b = _scores(tmp_path / "b.json", {"q1": 50.0, "q2": 50.0, "q3": 0.0})  # q4 only in A
    assert compare_scores.main([a, b]) == 0
    line = capsys.readouterr().out
    assert "n 3 (A 4, B 3)" in line
    assert "A 50.0 · B 33.3" in line
    assert "A − B +16.7" in line
    assert "A > B on 1, A < B on 0, equal on 2" in line


def test_interval_brackets_the_mean():
    mean, lo, hi = compare_scores.paired([1.0, 2.0, 3.0, 10.0], [0.0, 0.0, 0.0, 0.0])
    assert mean == 4.0 and lo < mean < hi
    assert compare_scores.paired([5.0] * 5, [5.0] * 5) == (0.0, 0.0, 0.0)


def test_bad_input_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit, match="no such scores file"):
        compare_scores.main([str(tmp_path / "missing.json"), str(tmp_path / "missing.json")])
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(SystemExit, match="not a bench_attribution scores file"):
        compare_scores.main([str(bad), str(bad)])
    a = _scores(tmp_path / "a.json", {"q1": 1.0})
    b = _scores(tmp_path / "b.json", {"q2": 1.0})
    assert compare_scores.main([a, b]) == 2
    assert "share no item" in capsys.readouterr().err


def test_files_joined_by_commas_are_pooled_in_order(tmp_path, capsys):
    a1 = _scores(tmp_path / "a1.json", {"q1": 100.0, "q2": 0.0})
    a2 = _scores(tmp_path / "a2.json", {"q1": 20.0})
    b1 = _scores(tmp_path / "b1.json", {"q1": 50.0, "q2": 0.0})
    b2 = _scores(tmp_path / "b2.json", {"q1": 80.0})
    assert compare_scores.main([f"{a1},{a2}", f"{b1},{b2}"]) == 0
    line = capsys.readouterr().out
    assert "n 3 (A 3, B 3)" in line and "A > B on 1, A < B on 1, equal on 1" in line
    assert compare_scores.main([f"{a1},{a2}", b1]) == 2
    assert "as many files" in capsys.readouterr().err
