"""The ``citegraph`` command line.

    citegraph graphs
    citegraph ask vanilla --question "..." --docs docs.jsonl
    citegraph ask vanilla --example
    citegraph run vanilla --input ../shared/data/alce/asqa_dev60.json --output out.json --limit 5

Bad input: one line on stderr, exit status 2. Model failures: one line, exit status 3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import fields
from typing import Any, Sequence

from citegraph.errors import InputError, ModelError

EXIT_INPUT = 2
EXIT_MODEL = 3


# --------------------------------------------------------------------------- helpers
def _parse_set(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--set k=v`` Context overrides; the Context reads each value by its knob's type (CliText)."""
    from citegraph.state.base import CliText

    out: dict[str, Any] = {}
    for p in pairs or []:
        if "=" not in p:
            raise InputError(f"--set expects key=value, got {p!r}")
        k, v = p.split("=", 1)
        out[k.strip()] = CliText(v)
    return out


def _context(method: str, args) -> Any:
    from citegraph.graphs.registry import context_class, make_context

    overrides = _parse_set(getattr(args, "set", None))
    names = {f.name for f in fields(context_class(method))}
    for key in ("llm", "verifier"):
        val = getattr(args, key, None)
        if val and key in names:
            overrides[key] = val
    return make_context(method, **overrides)


def print_answer(ans, console=None) -> None:
    """Each sentence followed by its citations; uncited sentences marked; cited docs listed."""
    from rich.console import Console
    from rich.markup import escape

    console = console or Console()
    console.print(f"[bold]Q:[/bold] {escape(ans.question)}\n")
    for i, s in enumerate(ans.sentences, 1):
        cites = "".join(f"[{c}]" for c in s.citations)
        mark = f"[green]{escape(cites)}[/green]" if s.citations else "[red](no citation)[/red]"
        console.print(f"{i:>2}. {escape(s.text)} {mark}")
    if not ans.sentences:
        console.print("[red](the model returned no answer)[/red]")
    cited = ans.cited_documents()
    if cited:
        console.print("\n[bold]Cited documents[/bold]")
        for c in cited:
            d = ans.documents[c - 1]
            snippet = d.text[:110] + ("…" if len(d.text) > 110 else "")
            console.print(f"  [{c}] {escape(d.title or d.id)} — {escape(snippet)}")
    for w in ans.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")


# --------------------------------------------------------------------------- commands
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


def cmd_ask(args) -> int:
    from citegraph.eval.datasets import bundled_example, check_question, load_documents
    from citegraph.eval.runner import answer_item
    from citegraph.eval.datasets import Item
    from citegraph.graphs.registry import build_graph

    if args.example:
        item = bundled_example()
        if args.question:
            item.question = check_question(args.question, "--question")
    else:
        if not args.docs:
            raise InputError("--docs FILE.jsonl is required (or use --example)")
        question = check_question(args.question, "--question")
        item = Item(id="ask", question=question, documents=load_documents(args.docs))
    ctx = _context(args.method, args)
    graph = build_graph(args.method)
    t0 = time.perf_counter()
    ans, usage = answer_item(graph, item, ctx)
    if args.json:
        print(json.dumps(ans.model_dump(mode="json"), ensure_ascii=False, indent=1))
    else:
        print_answer(ans)
        print(
            f"\n[{args.method} · {ctx.llm} · {usage['llm_calls']} LLM call(s) · "
            f"{usage['prompt_tokens']}+{usage['completion_tokens']} tokens · {time.perf_counter() - t0:.1f}s]"
        )
    return 0


def cmd_run(args) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from citegraph.eval.datasets import load_items
    from citegraph.eval.runner import run_dataset

    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be at least 1")
    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    items = load_items(args.input, limit=args.limit)
    ctx = _context(args.method, args)
    console = Console(stderr=True)
    errors: list[str] = []

    with Progress(
        TextColumn(f"[bold]{args.method}[/bold]"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False,
    ) as prog:
        task = prog.add_task("run", total=len(items))

        def progress(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        def on_error(item, exc) -> None:
            errors.append(f"{item.id}: {type(exc).__name__}: {exc}")
            console.print(f"[red]item {escape(str(item.id))} failed:[/red] {type(exc).__name__}: {escape(str(exc))}", soft_wrap=True)

        stats = run_dataset(
            args.method, items, args.output, ctx, concurrency=args.concurrency,
            overwrite=args.overwrite, progress=progress, on_error=on_error,
            extra_args={"input": os.path.abspath(args.input), "limit": args.limit},
        )
    console.print(
        f"wrote {args.output}: {stats['ran']} new, {stats['skipped']} already done, {stats['failed']} failed "
        f"(of {stats['total']})",
        soft_wrap=True, markup=False,  # a path is text, not rich markup
    )
    return 1 if stats["failed"] else 0


# --------------------------------------------------------------------------- parser
def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--llm", help="chat model spec (default: the method's Context default, 'local')")
    p.add_argument("--verifier", help="verifier spec, for methods that use one")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a Context knob (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    from citegraph.graphs.registry import names

    parser = argparse.ArgumentParser(prog="citegraph", description="Attributed generation methods as LangGraph graphs.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("graphs", help="list the methods and their Context knobs")
    p.set_defaults(func=cmd_graphs)

    p = sub.add_parser("ask", help="answer one question from a documents file")
    p.add_argument("method", choices=names())
    p.add_argument("--question", "-q", default="")
    p.add_argument("--docs", help="JSONL file, one {id?, title?, text} document per line")
    p.add_argument("--example", action="store_true", help="use the bundled example question and documents")
    p.add_argument("--json", action="store_true", help="print the AttributedAnswer as JSON")
    _add_model_args(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("run", help="run a method over a dataset (resumable)")
    p.add_argument("method", choices=names())
    p.add_argument("--input", "-i", required=True, help="ALCE-style JSON or JSONL with question + docs per item")
    p.add_argument("--output", "-o", required=True, help="output JSON (ALCE-compatible)")
    p.add_argument("--limit", type=int, default=None, help="only the first N items")
    p.add_argument("--concurrency", type=int, default=1, help="items in flight at once (1 keeps local-model runs reproducible item by item)")
    p.add_argument("--overwrite", action="store_true", help="discard an existing output instead of resuming")
    _add_model_args(p)
    p.set_defaults(func=cmd_run)

    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Commands defined next to the code they drive (verifier, evaluator, benchmark)."""
    from citegraph.eval.commands import add_eval_commands
    from citegraph.tools.verifier import add_verify_command

    return [add_verify_command, add_eval_commands]


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as e:
        print(f"citegraph: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except ModelError as e:
        print(f"citegraph: model error: {e}", file=sys.stderr)
        return EXIT_MODEL
    except KeyboardInterrupt:
        print("citegraph: interrupted (finished items are saved; re-run to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
