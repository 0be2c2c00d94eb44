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
    from citegraph.graphs.presets import PRESETS

    t = Table(title="presets (--preset NAME on ask, run, bench; applied before --set, which wins)",
              title_justify="left", show_header=True)
    t.add_column("preset")
    t.add_column("method")
    t.add_column("settings")
    t.add_column("source")
    for p in PRESETS.values():
        for i, (method, settings) in enumerate(p.settings.items()):
            t.add_row(escape(p.name) if i == 0 else "", escape(method),
                      escape(", ".join(f"{k}={v!r}" for k, v in settings.items())),
                      escape(p.source) if i == 0 else "")
    console.print(t)
    return 0


def register(sub) -> None:
    p = sub.add_parser("graphs", help="list the methods, their Context knobs and the presets")
    p.set_defaults(func=cmd_graphs)
