"""Context knobs keep their outward behaviour (issue #36: knob validation moved to pydantic): every
registered graph's context JSON schema (what LangGraph Studio shows), every Context's ``describe()``
(what ``citegraph graphs`` prints) and what each knob makes of a set of good and bad values (the
value it keeps, or the one-line InputError) equal a snapshot taken from the hand-rolled validator
before the change (tests/context_snapshot.json).

A change that adds or edits a knob on purpose re-writes the snapshot:
``python tests/test_context_snapshot.py --write`` (and the diff shows what Studio and the CLI now see)."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

SNAPSHOT = Path(__file__).with_name("context_snapshot.json")
ENV = ("CITEGRAPH_LLM", "CITEGRAPH_VERIFIER", "CITEGRAPH_JUDGE")


def _probes() -> list:
    from citegraph.state.base import CliText

    return [None, True, 0, -1, 3, 2.5, 5.0, 1e9, math.nan, "x", "9" * 81, [1],
            CliText("true"), CliText("0.5"), CliText("null"), CliText("1e5"), CliText("-1")]


def _label(v) -> str:
    return f"{type(v).__name__}:{v!r}" if len(repr(v)) < 40 else f"{type(v).__name__}:{repr(v)[:20]}...({len(v)})"


def _outcome(cls, name: str, value) -> str:
    from citegraph.errors import InputError

    try:
        got = getattr(cls(**{name: value}), name)
    except InputError as exc:
        return f"InputError: {exc}"
    return _label(got)


def snapshot() -> dict:
    from citegraph.graphs import registry
    from citegraph.state.base import knob_choices, knob_info

    saved = {k: os.environ.pop(k) for k in ENV if k in os.environ}
    try:
        # values: class -> knob -> a table's number in "tables" (one table per distinct outcome list,
        # the class name written as {cls}), so knobs that behave alike are stored once
        out: dict = {"schemas": {}, "describe": {}, "values": {}, "tables": []}
        classes = [registry.context_class(n) for n in registry.names()]
        choices = sorted({c for cls in classes for info in knob_info(cls).values() for c in knob_choices(info)})
        probes = _probes()
        for name in registry.names():
            cls = registry.context_class(name)
            out["schemas"][name] = registry.build_graph(name).get_context_jsonschema()
            key = f"{cls.__module__}:{cls.__qualname__}"
            out["describe"][key] = [list(row) for row in cls.describe()]
            if key in out["values"]:
                continue
            out["values"][key] = {}
            for name, info in knob_info(cls).items():
                tried = probes + (choices if knob_choices(info) else [])
                table = {_label(p): _outcome(cls, name, p).replace(cls.__name__ + ".", "{cls}.") for p in tried}
                if table not in out["tables"]:
                    out["tables"].append(table)
                out["values"][key][name] = out["tables"].index(table)
        return out
    finally:
        os.environ.update(saved)


def test_context_schemas_describe_and_validation_match_the_snapshot():
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(snapshot()))
    assert got["schemas"].keys() == want["schemas"].keys()
    for name in want["schemas"]:
        assert got["schemas"][name] == want["schemas"][name], name
    assert got["describe"] == want["describe"]
    for key, knobs in want["values"].items():
        for knob, table in knobs.items():
            assert got["tables"][got["values"][key][knob]] == want["tables"][table], f"{key}.{knob}"
    assert got == want


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_context_snapshot.py --write")
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
