"""``citegraph eval`` and ``citegraph bench`` (registered by ``citegraph.cli`` when importable).

    citegraph eval --input out.json [--verifier SPEC] [--dataset asqa|eli5|qampari] [--alce]
    citegraph bench --methods vanilla,summ,snippet,rerank --data ../shared/data/alce/asqa_dev60.json \\
        --limit 20 --out bench/ [--llm local] [--verifier default]
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from citegraph.errors import InputError

LABELS = {
    "citation_rec": "ALCE citation recall", "citation_prec": "ALCE citation precision",
    "citation_f1": "ALCE citation F1", "raac_rec": "RAAC citation recall", "raac_prec": "RAAC citation precision",
    "raac_f1": "RAAC citation F1", "str_em": "STR-EM", "str_hit": "STR-HIT", "rougeLsum": "ROUGE-Lsum",
    "claims_nli": "Claim recall (ELI5)", "length": "Words", "uncited_pct": "Sentences without citation (%)",
    "module_entail_before": "Module outputs entailed, before refinement (%)",
    "module_entail_after": "Module outputs entailed, after refinement (%)", "n_sentences": "Sentences", "n_citations": "Citations",
}


def _flags(args) -> dict[str, Any]:
    cut = bool(args.cut_newline or args.alce)
    attach = not (args.no_attach_trailing or args.alce)
    if args.at_most_citations is not None and args.at_most_citations < 1:
        raise InputError("--at-most-citations must be at least 1")
    return {"cut_newline": cut, "attach_trailing": attach, "at_most_citations": args.at_most_citations}


def cmd_eval(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from citegraph.eval.scoring import score_file

    res = score_file(args.input, verifier=args.verifier, dataset=args.dataset, output=args.output, **_flags(args))
    ci = res["ci95"]
    t = Table(title=f"{res['input']} — {res['dataset']} · verifier {res['verifier']}", title_justify="left")
    t.add_column("metric")
    t.add_column("mean", justify="right")
    t.add_column("95% CI", justify="right")
    for k, v in res["summary"].items():
        if v is None or k == "n_items":
            continue
        band = f"[{ci[k][0]:.1f}, {ci[k][1]:.1f}]" if k in ci else ""
        t.add_row(LABELS.get(k, k), f"{v:.2f}", band)
    console = Console()
    console.print(t)
    console.print(f"{int(res['summary']['n_items'])} item(s); wrote {res['written']}", markup=False)
    return 0


def cmd_bench(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    from citegraph.cli import _parse_set
    from citegraph.eval.bench import run_bench

    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    console = Console(stderr=True)

    def progress(method: str, done: int, total: int) -> None:
        console.print(f"[bold]{escape(method)}[/bold] {done}/{total}", highlight=False)

    def on_error(method: str, item, exc: BaseException) -> None:
        console.print(f"[red]{escape(method)}: item {escape(str(item.id))} failed:[/red] {type(exc).__name__}: {escape(str(exc))}")

    res = run_bench(
        args.methods.split(","), args.data, args.out, limit=args.limit, llm=args.llm, verifier=args.verifier,
        overrides=_parse_set(args.set), dataset=args.dataset, concurrency=args.concurrency,
        overwrite=args.overwrite, progress=progress, on_error=on_error,
        on_method=lambda m, r: console.print(f"scored {m}: {r['written']}", markup=False),
    )
    print(res["table"])
    console.print(f"report: {res['report']} (summary.json, citation_f1_vs_tokens.png, raw/ in "
                  f"{os.path.dirname(res['report']) or '.'})", markup=False)
    failed = sum(r.get("failed", 0) for r in res["runs"].values())
    return 1 if failed else 0


def _add_flag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", choices=["asqa", "eli5", "qampari", "generic"], default=None,
                   help="dataset type (default: inferred from the items' fields)")
    p.add_argument("--cut-newline", action="store_true", help="ALCE: keep only the output's first line")
    p.add_argument("--no-attach-trailing", action="store_true",
                   help="ALCE: a citation after the period belongs to the next sentence")
    p.add_argument("--alce", action="store_true", help="both of the above: ALCE's exact behaviour")
    p.add_argument("--at-most-citations", type=int, default=3, help="citations counted per sentence (ALCE: 3)")


def add_eval_commands(subparsers) -> None:
    p = subparsers.add_parser("eval", help="score an output file (ours or ALCE's) and write <name>.score.json")
    p.add_argument("--input", "-i", required=True, help="output JSON of `citegraph run` or of ALCE's run.py")
    p.add_argument("--verifier", default="default", help="entailment verifier spec (default: default)")
    p.add_argument("--output", "-o", default=None, help="score file (default: <input>.score.json)")
    _add_flag_args(p)
    p.set_defaults(func=cmd_eval)

    p = subparsers.add_parser("bench", help="run, score and compare methods; writes a report folder (resumable)")
    p.add_argument("--methods", required=True, help="comma-separated, e.g. vanilla,summ,snippet,rerank; a variant adds its own settings: "
                   "genprog:refine=true, raac:use_calibration=false")
    p.add_argument("--data", required=True, help="ALCE-style JSON/JSONL with question + docs (+ gold fields)")
    p.add_argument("--limit", type=int, default=None, help="only the first N items")
    p.add_argument("--out", default="bench", help="report folder (default: ./bench)")
    p.add_argument("--llm", help="chat model spec for every method (default: each Context's, 'local')")
    p.add_argument("--verifier", help="verifier spec for the methods and the scoring (default: default)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a Context knob in every method that has it (repeatable)")
    p.add_argument("--dataset", choices=["asqa", "eli5", "qampari", "generic"], default=None,
                   help="dataset type for scoring (default: inferred)")
    p.add_argument("--concurrency", type=int, default=1, help="items in flight at once per method (1 keeps local-model runs reproducible item by item)")
    p.add_argument("--overwrite", action="store_true", help="discard existing raw outputs instead of resuming")
    p.set_defaults(func=cmd_bench)
