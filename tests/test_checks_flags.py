"""scripts/checks_flags.py: the structural checks' flags at a git revision against the working tree's."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import checks_flags  # noqa: E402


def _git_checkout() -> bool:
    if shutil.which("git") is None:
        return False
    res = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", "HEAD:citegraph/tools/verifier/checks.py"],
                         capture_output=True)
    return res.returncode == 0


needs_git = pytest.mark.skipif(not _git_checkout(), reason="not a git checkout with checks.py committed")


@needs_git
def test_the_committed_rules_against_the_working_tree_count_each_suites_flags(capsys):
    assert checks_flags.main(["--ref", "HEAD", "--sets", "minimal"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| minimal |"))
    sup, old_fa, new_fa, uns, old_c, new_c, moved = map(int, re.findall(r"\d+", row))
    assert (sup, uns) == (114, 111)  # the first suite's supported and unsupported pairs
    assert 0 < old_c <= uns and old_fa <= sup
    if not subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD", "--",
                           "citegraph/tools/verifier/checks.py"]).returncode:
        assert (old_fa, old_c, moved) == (new_fa, new_c, 0)  # the same rules on both sides


@needs_git
def test_a_revision_without_the_checks_or_an_unknown_set_is_a_clear_error(capsys):
    assert checks_flags.main(["--ref", "no-such-revision"]) == 2
    assert "--ref no-such-revision" in capsys.readouterr().err
    assert checks_flags.main(["--ref", "HEAD", "--sets", "nonsense"]) == 2
    assert "unknown nonsense" in capsys.readouterr().err


@needs_git
def test_groups_add_a_row_per_category_that_sums_to_the_sets_row(capsys):
    assert checks_flags.main(["--ref", "HEAD", "--sets", "minimal", "--groups"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| minimal")]
    whole, groups = rows[0], rows[1:]
    assert len(groups) >= 8 and all(r.startswith("| minimal / ") for r in groups)
    total = [int(x) for x in re.findall(r"\d+", whole)]
    parts = [[int(x) for x in re.findall(r"\d+", r.split("|", 2)[2])] for r in groups]
    assert [sum(col) for col in zip(*parts)] == total
