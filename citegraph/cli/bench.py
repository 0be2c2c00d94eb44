"""``citegraph bench --methods vanilla,summ,... --data DATA --limit N --out DIR``: run, score, compare (resumable)."""

from __future__ import annotations

import os

from citegraph.cli.common import (add_checkpoint_arg, add_failure_args, add_preset_arg, add_trace_arg, add_workers_args,
                                  concurrency_note, open_checkpoint_arg, parse_set, workers_args)
from citegraph.errors import InputError
from citegraph.eval.bench import run_bench
from citegraph.graphs.registry import answer_methods


def cmd_bench(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    open_checkpoint_arg(args)  # a bad --checkpoint stops here, before any item runs
    workers = workers_args(args)
    console = Console(stderr=True)
    note = concurrency_note(args.llm, args.concurrency)
    if note:
        console.print(note, markup=False, soft_wrap=True)

    def progress(method: str, done: int, total: int) -> None:
        console.print(f"[bold]{escape(method)}[/bold] {done}/{total}", highlight=False)

    def on_error(method: str, item, exc: BaseException) -> None:
        console.print(f"[red]{escape(method)}: item {escape(str(item.id))} failed:[/red] {type(exc).__name__}: {escape(str(exc))}")

    res = run_bench(
        args.methods.split(","), args.data, args.out, limit=args.limit, llm=args.llm, verifier=args.verifier,
        overrides=parse_set(args.set), preset=args.preset, dataset=args.dataset, concurrency=args.concurrency,
        overwrite=args.overwrite, progress=progress, on_error=on_error, answer_field=args.answer_field, checkpoint=args.checkpoint,
        score_verifiers=args.score_verifier or (), **workers,
        on_method=lambda m, r: console.print(f"scored {m}: {r['scored']} item(s) scored, {r['reused']} from the "
                                             f"previous scores -> {r['written']}", markup=False),
    )
    print(res["table"])
    for spec, table in res["extra_tables"].items():
        print(f"\nscored by {spec}:\n{table}")
    console.print(f"report: {res['report']} (summary.json, citation_f1_vs_tokens.png, raw/ in "
                  f"{os.path.dirname(res['report']) or '.'})", markup=False)
    failed = sum(r.get("failed", 0) + r.get("empty", 0) for r in res["runs"].values())  # an empty answer is no success
    return 1 if failed else 0



def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="run, score and compare methods; writes a report folder (resumable)")
    p.add_argument("--methods", required=True, help="comma-separated, e.g. vanilla,summ,snippet,rerank; a variant adds its own settings: "
                   "genprog:refine=true, raac:use_calibration=false")
    p.add_argument("--data", required=True, help="ALCE-style JSON/JSONL with question + docs (+ gold fields)")
    p.add_argument("--limit", type=int, default=None, help="only the first N items")
    p.add_argument("--out", default="bench", help="report folder (default: ./bench)")
    p.add_argument("--llm", help="chat model spec for every method (default: each Context's, 'local')")
    p.add_argument("--verifier", help="verifier spec for the methods and the scoring (default: default)")
    p.add_argument("--score-verifier", action="append", metavar="SPEC",
                   help="also score the outputs with this verifier, reported in a table of its own and saved item by "
                        "item (repeatable; e.g. llm-judge:local:table16, RAAC's Table 16 evaluator); the methods still "
                        "run with --verifier")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a Context knob in every method that has it (repeatable)")
    add_preset_arg(p)
    p.add_argument("--dataset", choices=["asqa", "eli5", "qampari", "generic"], default=None,
                   help="dataset type for scoring (default: inferred)")
    p.add_argument("--concurrency", type=int, default=1, help="items in flight at once per method (1 keeps local-model runs reproducible item by item)")
    p.add_argument("--overwrite", action="store_true", help="discard existing raw outputs instead of resuming")
    p.add_argument("--answer-field", default=None, metavar="FIELD",
                   help=f"{', '.join(answer_methods())}: the item field holding the answer to attribute (e.g. output)")
    add_failure_args(p)
    add_checkpoint_arg(p)
    add_trace_arg(p)
    add_workers_args(p)
    p.set_defaults(func=cmd_bench)
