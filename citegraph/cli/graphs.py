"""``citegraph graphs [METHOD] [--knobs] [--mermaid]``: the methods (one line each), one method in full, every
knob, or one method's graph as Mermaid."""

from __future__ import annotations

from citegraph.errors import InputError
from citegraph.graphs.presets import PRESETS
from citegraph.graphs.registry import GRAPHS, GraphEntry, entry, names


def method_inputs(method) -> str:
    """What a method's input takes, in words (the registry and the Context say it, no graph is built);
    ``method``: a name or its registry entry."""
    e = method if isinstance(method, GraphEntry) else entry(method)
    cls = e.context_class()
    docs = ("documents to retrieve among, or the corpus knob" if getattr(cls, "documents_are_a_corpus", False)
            else "documents, or the corpus knob")
    return f"question; {docs}" + (f"; {e.answer_input} (the answer to attribute)" if e.answer_input else "")


def _console():
    from rich.console import Console

    # piped or captured: a wide page so that nothing is cut; cells wrap (fold) rather than end in "…"
    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, 160))


def _knob_table(e, title: str | None = None):
    """``e``: the method's registry entry."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(title) if title else None, title_justify="left", show_header=True)
    t.add_column("Context knob", no_wrap=True)
    t.add_column("default", overflow="fold")
    t.add_column("description", overflow="fold")
    for n, default, desc in e.context_class().describe():
        # escaped: "[n]" and "[>= 1]" are text here, not rich markup
        t.add_row(n, escape(repr(default)), escape(desc))
    return t


def _presets_table(method: str | None = None):
    from rich.markup import escape
    from rich.table import Table

    t = Table(title="presets (--preset NAME on ask, run, bench; applied before --set, which wins)",
              title_justify="left", show_header=True)
    t.add_column("preset", no_wrap=True)
    t.add_column("method", no_wrap=True)
    t.add_column("settings", overflow="fold")
    t.add_column("source", overflow="fold")
    rows = 0
    for p in PRESETS.values():
        first = True
        for m, settings in p.settings.items():
            if method is not None and m != method:
                continue
            t.add_row(escape(p.name) if first else "", escape(m),
                      escape(", ".join(f"{k}={v!r}" for k, v in settings.items())), escape(p.source) if first else "")
            first, rows = False, rows + 1
    return t if rows else None


def cmd_graphs(args) -> int:
    from rich.markup import escape
    from rich.table import Table

    if args.mermaid:  # plain text, for a Markdown page or mermaid.live
        if not args.method:
            raise InputError("--mermaid draws one method: citegraph graphs METHOD --mermaid")
        print(entry(args.method).build().get_graph().draw_mermaid().strip())
        return 0
    console = _console()
    if args.method:
        e = entry(args.method)
        console.print(f"[bold]{escape(e.name)}[/bold] — {escape(e.summary)}")
        console.print(f"[bold]inputs:[/bold] {escape(method_inputs(e))}")
        console.print("[bold]output:[/bold] answer (AttributedAnswer: cited sentences into the documents)")
        console.print(_knob_table(e))
        presets = _presets_table(e.name)
        if presets is not None:
            console.print(presets)
        return 0
    if args.knobs:
        for name, e in GRAPHS.items():
            console.print(_knob_table(e, f"{name} — {e.summary}"))
        console.print(_presets_table())
        return 0
    if not console.is_terminal:  # piped: one line per method, nothing cut (the reader's terminal wraps it)
        for name, e in GRAPHS.items():
            print(f"{name:<16} {e.summary} [inputs: {method_inputs(e)}]")
        print("\n`citegraph graphs METHOD`: a method's knobs and presets; `citegraph graphs --knobs`: every method's")
        return 0
    t = Table(show_header=True, title="methods (`citegraph graphs METHOD`: its knobs; `--knobs`: every method's)",
              title_justify="left")
    t.add_column("method", no_wrap=True)
    t.add_column("purpose", overflow="fold")
    t.add_column("inputs", overflow="fold")
    for name, e in GRAPHS.items():
        t.add_row(escape(name), escape(e.summary), escape(method_inputs(e)))
    console.print(t)
    return 0


def register(sub) -> None:
    p = sub.add_parser("graphs", help="list the methods; one method's inputs and Context knobs; every knob (--knobs)")
    p.add_argument("method", nargs="?", choices=names(), default=None, help="show this method: purpose, inputs, knobs, presets")
    p.add_argument("--knobs", action="store_true", help="every method's Context knobs and the presets")
    p.add_argument("--mermaid", action="store_true",
                   help="print METHOD's graph as Mermaid, drawn from the compiled graph (as its docs page shows it)")
    p.set_defaults(func=cmd_graphs)
