"""``citegraph eval --input out.json [--verifier SPEC] [--dataset asqa|eli5|qampari] [--alce]``.

Scores an output file (ours or ALCE's) and writes ``<name>.score.json``. With ``--nuggets [FILE]``:
AutoNuggetizer scores (V_strict, V, A_strict, A) by the ``--judge`` chat model instead, written to
``<name>.nuggets.json`` (journalled per item in ``<name>.nuggets.jsonl``, so a re-run resumes).
"""

from __future__ import annotations

from citegraph.cli.common import add_failure_args

import argparse
from typing import Any

from citegraph.errors import InputError
from citegraph.eval.nuggets import evaluate_output_file
from citegraph.eval.scoring import score_file
from citegraph.state.base import default_judge

LABELS = {
    "citation_rec": "ALCE citation recall", "citation_prec": "ALCE citation precision",
    "citation_f1": "ALCE citation F1", "raac_rec": "RAAC citation recall", "raac_prec": "RAAC citation precision",
    "raac_f1": "RAAC citation F1", "str_em": "STR-EM", "str_hit": "STR-HIT", "rougeLsum": "ROUGE-Lsum",
    "claims_nli": "Claim recall (ELI5)", "length": "Words", "uncited_pct": "Sentences without citation (%)", "supported_pct": "Sentences supported (%)", "flagged_pct": "Sentences flagged unsupported (%)", "cited_or_flagged_pct": "Sentences cited or flagged (%)",
    "module_entail_before": "Module outputs entailed, before refinement (%)",
    "module_entail_after": "Module outputs entailed, after refinement (%)", "n_sentences": "Sentences", "n_citations": "Citations",
}


def _flags(args) -> dict[str, Any]:
    cut = bool(args.cut_newline or args.alce)
    attach = not (args.no_attach_trailing or args.alce)
    if args.at_most_citations is not None and args.at_most_citations < 1:
        raise InputError("--at-most-citations must be at least 1")
    return {"cut_newline": cut, "attach_trailing": attach, "at_most_citations": args.at_most_citations,
            "alce": bool(args.alce)}


def cmd_nuggets(args) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    base = Path(args.output) if args.output else Path(args.input).with_suffix("")
    out = base if args.output else base.with_name(base.name + ".nuggets.json")
    journal = out.with_suffix(".jsonl")

    args.judge = args.judge or default_judge()
    res = evaluate_output_file(args.input, judge=args.judge, nuggets_file=args.nuggets or None,
                               claims_key=None if args.no_claims else "claims", window=args.window,
                               max_nuggets=args.max_nuggets, journal=journal, mode=args.assign_mode)
    out.write_text(json.dumps(res, indent=1))
    console = Console()
    summ = res["summary"]
    console.print(f"{len(res['items'])} item(s), judge {args.judge}: " + ", ".join(
        f"{k} {v:.3f}" for k, v in summ.items() if v is not None), markup=False)
    console.print(f"wrote {out}", markup=False)
    return 0


def cmd_eval(args) -> int:
    from rich.console import Console
    from rich.table import Table

    if args.nuggets is not None:
        return cmd_nuggets(args)

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
    for w in res.get("warnings") or []:
        Console(stderr=True).print(f"warning: {w}", markup=False)
    return 0


def _add_flag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", choices=["asqa", "eli5", "qampari", "generic"], default=None,
                   help="dataset type (default: inferred from the items' fields)")
    p.add_argument("--cut-newline", action="store_true", help="ALCE: keep only the output's first line")
    p.add_argument("--no-attach-trailing", action="store_true",
                   help="ALCE: a citation after the period belongs to the next sentence")
    p.add_argument("--alce", action="store_true",
                   help="score exactly as ALCE's eval.py does, item by item, quirks included (punkt sentences, "
                        "ALCE's citation regex and indexing, ROUGE-Lsum bootstrap median); implies both of the above")
    p.add_argument("--at-most-citations", type=int, default=3, help="citations counted per sentence (ALCE: 3)")


def register(subparsers) -> None:
    p = subparsers.add_parser("eval", help="score an output file (ours or ALCE's) and write <name>.score.json")
    p.add_argument("--input", "-i", required=True, help="output JSON of `citegraph run` or of ALCE's run.py")
    add_failure_args(p)
    p.add_argument("--verifier", default="default", help="entailment verifier spec (default: default)")
    p.add_argument("--output", "-o", default=None, help="score file (default: <input>.score.json)")
    _add_flag_args(p)
    g = p.add_argument_group("nugget evaluation (AutoNuggetizer)")
    g.add_argument("--nuggets", nargs="?", const="", default=None, metavar="FILE",
                   help="score V_strict/V/A_strict/A instead; FILE gives nuggets per item id (JSON lines {id, nuggets, "
                        "importance?}); without FILE an item's 'claims' are its vital nuggets, else nuggets are created from its docs")
    g.add_argument("--judge", default=None, help="chat model spec of the nugget judge (default: $CITEGRAPH_JUDGE, "
                                                 "else $CITEGRAPH_LLM, else local)")
    g.add_argument("--window", type=int, default=10, help="nuggets (and passages) per judge call (AutoNuggetizer: 10)")
    g.add_argument("--max-nuggets", type=int, default=30, help="nuggets kept when creating them (AutoNuggetizer: 30)")
    g.add_argument("--no-claims", action="store_true", help="do not use an item's 'claims' as its nuggets")
    g.add_argument("--assign-mode", choices=["list", "yesno"], default="list",
                   help="list: AutoNuggetizer's labelled lists (windows); yesno: per-nugget Yes/No log-odds (small judges)")
    p.set_defaults(func=cmd_eval)
