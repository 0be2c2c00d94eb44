"""``citegraph env [--json]``: every ``CITEGRAPH_*`` variable, its value here (a bad one marked with what it
expects; a secret shown as set or unset) and what it does (:mod:`citegraph.settings`)."""

from __future__ import annotations

import json

from citegraph.cli.graphs import _console
from citegraph.settings import describe


def cmd_env(args) -> int:
    rows = describe()
    if args.json:
        for name, value, desc in rows:
            print(json.dumps({"variable": name, "value": value, "description": desc}, ensure_ascii=False))
        return 0
    from rich.markup import escape
    from rich.table import Table

    t = Table(show_header=True)
    t.add_column("variable", no_wrap=True)
    t.add_column("value here", overflow="fold")
    t.add_column("what it does", overflow="fold")
    for name, value, desc in rows:
        t.add_row(name, escape(value), escape(desc))
    _console().print(t)
    return 0


def register(sub) -> None:
    p = sub.add_parser("env", help="the CITEGRAPH_* environment variables: values here and what each does",
                       description="Every CITEGRAPH_* environment variable, its value in this environment (a bad "
                                   "value marked with what it expects) and what it does.")
    p.add_argument("--json", action="store_true", help="one JSON object per variable")
    p.set_defaults(func=cmd_env)
