"""``citegraph graphs``: the methods and their Context knobs."""

from __future__ import annotations


def cmd_graphs(args) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from citegraph.graphs.registry import GRAPHS, context_class

    console = Console()
    for name, e in GRAPHS.items():
        # escaped: "[n]" and "[>= 1]" are text here, not rich markup
        t = Table(title=escape(f"{name} — {e.summary}"), title_justify="left", show_header=True)
        t.add_column("Context knob")
        t.add_column("default")
        t.add_column("description")
        for n, default, desc in context_class(name).describe():
            t.add_row(n, escape(repr(default)), escape(desc))
        console.print(t)
    return 0


def register(sub) -> None:
    p = sub.add_parser("graphs", help="list the methods and their Context knobs")
    p.set_defaults(func=cmd_graphs)
