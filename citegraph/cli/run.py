"""``citegraph run METHOD --input DATA --output OUT.json``: a method over a dataset, resumable."""

from __future__ import annotations

import os

from citegraph.cli.common import (add_checkpoint_arg, add_model_args, add_trace_arg, add_workers_args, concurrency_note,
                                  context_from_args, open_checkpoint_arg, preset_args, run_summary_line, workers_args)
from citegraph.errors import InputError
from citegraph.graphs.registry import answer_methods, entry, names
from citegraph.metrics import resolve_verifier
from citegraph.run.datasets import attach_answers, check_answer_field, check_output_path, load_items
from citegraph.run.runner import run_dataset


def cmd_run(args) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be at least 1")
    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    method = entry(args.method)  # resolved once, passed along
    check_answer_field([method], args.answer_field)
    check_output_path(args.output)
    open_checkpoint_arg(args)  # an unknown scheme, bad path or unreachable database stops here
    items = load_items(args.input, limit=args.limit)
    if args.answer_field:
        items = attach_answers(items, args.answer_field)
    ctx = context_from_args(method, args)
    if args.verifier:  # a bad spec stops here, before the first item, not inside every item

        resolve_verifier(args.verifier)
    console = Console(stderr=True)
    errors: list[str] = []
    note = concurrency_note(getattr(ctx, "llm", None), args.concurrency)
    if note:
        console.print(note, markup=False, soft_wrap=True)

    workers = workers_args(args)  # bad worker flags: one line, before anything starts
    # the bar appears with the first progress report, after the output, the store and the workers'
    # database were opened: a bad one is the only line printed
    prog = Progress(
        TextColumn(f"[bold]{args.method}[/bold]"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False,
    )
    task = prog.add_task("run", total=len(items))

    def progress(done: int, total: int) -> None:
        if not prog.live.is_started:
            prog.start()
        prog.update(task, completed=done, total=total)

    def on_error(item, exc) -> None:
        errors.append(f"{item.id}: {type(exc).__name__}: {exc}")
        console.print(f"[red]item {escape(str(item.id))} failed:[/red] {type(exc).__name__}: {escape(str(exc))}", soft_wrap=True)

    try:
        stats = run_dataset(
            method, items, args.output, ctx, concurrency=args.concurrency,
            overwrite=args.overwrite, progress=progress, on_error=on_error,
            extra_args={"input": os.path.abspath(args.input), "limit": args.limit, **preset_args(args.method, args)},
            checkpoint=args.checkpoint, **workers,
        )
    finally:
        if prog.live.is_started:
            prog.stop()
    console.print(run_summary_line(args.output, stats), soft_wrap=True, markup=False)  # a path is text, not markup
    return 1 if stats["failed"] or stats.get("empty") or not os.path.exists(args.output) else 0


def register(sub) -> None:
    p = sub.add_parser("run", help="run a method over a dataset (resumable)")
    p.add_argument("method", choices=names())
    p.add_argument("--input", "-i", required=True, help="ALCE-style JSON or JSONL with question + docs per item")
    p.add_argument("--output", "-o", required=True, help="output JSON (ALCE-compatible)")
    p.add_argument("--limit", type=int, default=None, help="only the first N items")
    p.add_argument("--concurrency", type=int, default=1, help="items in flight at once (1 keeps local-model runs reproducible item by item)")
    p.add_argument("--overwrite", action="store_true", help="discard an existing output instead of resuming")
    p.add_argument("--answer-field", default=None, metavar="FIELD",
                   help=f"{', '.join(answer_methods())}: the item field holding the answer to attribute (e.g. output)")
    add_model_args(p)
    add_checkpoint_arg(p)
    add_trace_arg(p)
    add_workers_args(p)
    p.set_defaults(func=cmd_run)
