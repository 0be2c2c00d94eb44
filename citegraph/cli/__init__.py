"""The ``citegraph`` command line: one module per subcommand, each with ``register(subparsers)``.

    citegraph graphs
    citegraph ask vanilla --question "..." --docs docs.jsonl
    citegraph ask vanilla --example
    citegraph cite --text answer.txt --docs docs.jsonl
    citegraph run vanilla --input ../shared/data/alce/asqa_dev60.json --output out.json --limit 5
    citegraph verify --pairs claims.jsonl
    citegraph eval --input out.json
    citegraph index build --corpus papers.jsonl --index idx/
    citegraph bench --methods vanilla,summ --data ../shared/data/alce/asqa_dev60.json --limit 20 --out runs/asqa
    citegraph show out.json [other.json] [--html page.html] [--open]

Argument parsing and file I/O live here, never in ``citegraph.tools``. Bad input: one line on stderr,
exit status 2. Model failures: one line, exit status 3.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from citegraph.cli.common import EXIT_INPUT, EXIT_MODEL, apply_failure_args, apply_trace_arg, parse_set, print_answer
from citegraph.errors import InputError, ModelError
from citegraph.tools import failures, tracing
from citegraph.tools.models import want_server_slots

__all__ = ["main", "build_parser", "parse_set", "print_answer", "EXIT_INPUT", "EXIT_MODEL"]

# subcommand modules, in the order `citegraph --help` lists them
COMMANDS = ["graphs", "ask", "cite", "run", "verify", "eval", "bench", "index", "show", "trace", "mcp", "env"]


EPILOG = """\
examples:
  citegraph graphs                                              the methods, one line each
  citegraph graphs raac                                         one method's inputs, knobs and presets
  citegraph graphs vanilla --mermaid                            its graph as Mermaid, drawn from the code
  citegraph ask vanilla --example                               the bundled question and documents
  citegraph ask vanilla -q "When was it built?" --docs docs.jsonl --set attribution=repair
  citegraph cite --text answer.txt --docs docs.jsonl            check a given text's citations (no LLM)
  citegraph run vanilla --input data.json --output out.json --limit 5
  citegraph verify --pairs claims.jsonl                         premise/hypothesis entailment scores
  citegraph eval --input out.json                               writes out.score.json
  citegraph bench --methods vanilla,raac --data data.json --limit 20 --out runs/b
  citegraph index build --corpus papers.jsonl --index idx/      then: ask ... --index idx/
  citegraph show out.json --open                                the evidence view (HTML)
  citegraph trace show --checkpoint sqlite:///ck.db --thread T   a run's steps; trace fork/replay: time travel
  citegraph mcp                                                 an MCP server (stdio; --http for HTTP)
  citegraph env                                                 the CITEGRAPH_* variables: values here, what each does

'citegraph COMMAND --help' lists a command's options. Docs: README.md and docs/ in the repository.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="citegraph", description="Attributed generation methods as LangGraph graphs: answers whose every "
        "sentence cites the documents that support it.", epilog=EPILOG,
        formatter_class=lambda prog: argparse.RawDescriptionHelpFormatter(prog, max_help_position=14, width=110))
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"citegraph.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    parser = build_parser()
    args = parser.parse_args(argv)
    traced = False
    try:
        apply_failure_args(args)  # --retries/--timeout for this command only (main() may be called in-process)
        traced = apply_trace_arg(args)  # --trace URL: spans to a collector until the command ends
        return int(args.func(args) or 0)
    except InputError as e:
        print(f"citegraph: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except ModelError as e:
        saved = getattr(e, "run_summary", None)  # a run stopped: what it kept, what never ran
        print(f"citegraph: model error: {e}" + (f" ({saved})" if saved else ""), file=sys.stderr)
        return EXIT_MODEL
    except KeyboardInterrupt as e:
        saved = getattr(e, "run_summary", None) or "finished items are saved; re-run to resume"
        print(f"citegraph: interrupted ({saved})", file=sys.stderr)
        return 130
    finally:
        failures.reset_policy()

        want_server_slots(None)  # --concurrency's slots were this command's
        if traced:
            _stop_tracing()


def _stop_tracing() -> None:
    where, lost = tracing.endpoint(), tracing.flush()
    if lost:
        print(f"citegraph: warning: {lost} trace spans did not reach {where}", file=sys.stderr)
    tracing.disable()
