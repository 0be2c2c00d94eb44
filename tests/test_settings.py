"""The CITEGRAPH_* variables: one owner (citegraph.settings), each read on its own with a one-line error
naming it, `citegraph env` listing them all, and no module reading one from the environment itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from citegraph.cli import main
from citegraph.errors import InputError
from citegraph.settings import Settings, env_name, setting

ROOT = Path(__file__).resolve().parents[1]


def test_a_variable_is_typed_checked_and_read_on_its_own(monkeypatch):
    monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", "4")
    monkeypatch.setenv("CITEGRAPH_TIMEOUT", "not a number")
    assert setting("server_slots") == 4 and setting("retries") is None  # another's bad value does not matter
    with pytest.raises(InputError, match=r"^CITEGRAPH_TIMEOUT='not a number': expected a number above 0$") as e:
        setting("timeout")
    assert "\n" not in str(e.value)
    monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", "65")
    with pytest.raises(InputError, match="CITEGRAPH_SERVER_SLOTS='65': expected a whole number between 1 and 64$"):
        setting("server_slots")
    monkeypatch.setenv("CITEGRAPH_LLM", "  ")
    assert setting("llm") == ""  # blank is unset


def test_the_readers_go_through_settings(monkeypatch):
    from citegraph.state.base import default_llm
    from citegraph.tools.failures import policy
    from citegraph.tools.models.llamacpp import prefix_states_capacity
    from citegraph.tools.models.registry import server_slots

    monkeypatch.setenv("CITEGRAPH_LLM", "openai:gpt-4o-mini")
    monkeypatch.setenv("CITEGRAPH_OPENAI_RETRIES", "5")  # the older name still counts
    monkeypatch.setenv("CITEGRAPH_PREFIX_STATES", "0")
    monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", "3")
    assert default_llm() == "openai:gpt-4o-mini" and policy().retries == 5
    assert prefix_states_capacity() == 0 and server_slots() == 3
    monkeypatch.setenv("CITEGRAPH_RETRIES", "1")
    assert policy().retries == 1  # the new name wins
    monkeypatch.setenv("CITEGRAPH_PREFIX_STATES", "-1")
    from citegraph.errors import ModelError

    with pytest.raises(ModelError, match="CITEGRAPH_PREFIX_STATES='-1': expected a whole number of 0 or more$"):
        prefix_states_capacity()  # found while a model loads: a model error, as before


def test_citegraph_env_lists_every_variable_and_marks_a_bad_one(monkeypatch, capsys):
    monkeypatch.setenv("CITEGRAPH_SERVER_SLOTS", "many")
    monkeypatch.setenv("CITEGRAPH_MCP_TOKEN", "s3cret")
    assert main(["env", "--json"]) == 0
    rows = {r["variable"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(rows) == {env_name(n) for n in Settings.model_fields}
    assert rows["CITEGRAPH_SERVER_SLOTS"]["value"] == "many  ! expected a whole number between 1 and 64"
    assert rows["CITEGRAPH_MCP_TOKEN"]["value"] == "(set)" and all(r["description"] for r in rows.values())
    assert main(["env"]) == 0 and "s3cret" not in capsys.readouterr().out


def test_no_module_reads_a_citegraph_variable_itself_and_each_is_documented():
    reads = re.compile(r"""(environ\.get\(|environ\[|getenv\()\s*["']CITEGRAPH_""")
    offenders = [str(f.relative_to(ROOT)) for f in (ROOT / "citegraph").rglob("*.py")
                 if f.name != "settings.py" and reads.search(f.read_text(encoding="utf-8"))]
    assert offenders == []
    ops = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert [env_name(n) for n in Settings.model_fields if f"`{env_name(n)}`" not in ops] == []
