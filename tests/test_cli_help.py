"""`citegraph --help`: every subcommand on a line of its own with its one-line help, and an example of each."""

from __future__ import annotations

import re

import pytest

from citegraph.cli import COMMANDS, main


def test_help_lists_every_command_with_one_line_and_an_example(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    commands, _, examples = out.partition("\nexamples:\n")
    assert examples, "no examples section"
    for name in COMMANDS:
        assert re.search(rf"^    {name} +\S.+$", commands, re.M), f"{name!r} has no one-line help"
        assert re.search(rf"^  citegraph {name}( |$)", examples, re.M), f"no example of {name!r}"
    # one line each: no command's help wraps onto a continuation line
    listed = commands[commands.index("commands:"):].splitlines()
    assert not [l for l in listed if re.match(r"^ {10,}\S", l)], "a command's help wraps"


def test_no_command_exits_2_naming_command(capsys):
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2
    assert "COMMAND" in capsys.readouterr().err
