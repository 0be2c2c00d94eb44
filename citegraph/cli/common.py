"""What every subcommand shares: exit codes, ``--set`` parsing, the method's Context, printing an answer."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from citegraph.corpus.passages import is_document_file, read_passages
from citegraph.errors import InputError
from citegraph.graphs.presets import PRESETS, get_preset, preset_overrides
from citegraph.graphs.registry import method_context
from citegraph.run.datasets import load_documents
from citegraph.run.workqueue import check_workers_db
from citegraph.settings import setting
from citegraph.state.attribution import QUESTION_REASON
from citegraph.state.base import CliText
from citegraph.tools import failures, tracing
from citegraph.tools.checkpoints import open_checkpointer
from citegraph.tools.models import parse_chat_spec, want_server_slots
from citegraph.tools.verifier.base import temperature_scaled

EXIT_INPUT = 2
EXIT_MODEL = 3


def parse_set(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--set k=v`` Context overrides; the Context reads each value by its knob's type (CliText)."""
    out: dict[str, Any] = {}
    for p in pairs or []:
        if "=" not in p:
            raise InputError(f"--set expects key=value, got {p!r}")
        k, v = p.split("=", 1)
        out[k.strip()] = CliText(v)
    return out


def context_from_args(method: Any, args, **extra: Any) -> Any:
    """The method's Context (``method``: a name or its registry entry) from ``--preset``, ``extra``
    (settings a subcommand's own flags give, e.g. ``ask --index``), ``--set`` (wins over both), and
    ``--llm`` / ``--verifier`` where the method has them (:func:`citegraph.graphs.registry.method_context`)."""
    return method_context(method, {**extra, **parse_set(getattr(args, "set", None))}, preset=getattr(args, "preset", None),
                          llm=getattr(args, "llm", None), verifier=getattr(args, "verifier", None))


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--llm", help="chat model spec (default: the method's Context default, 'local')")
    p.add_argument("--verifier", help="verifier spec, for methods that use one")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a Context knob (repeatable)")
    add_failure_args(p)
    add_preset_arg(p)


def add_failure_args(p: argparse.ArgumentParser) -> None:
    """``--retries`` / ``--timeout``: the failure policy of every model call (citegraph.tools.failures)."""
    p.add_argument("--retries", type=int, default=None, metavar="N",
                   help="extra attempts for a failed model call (429, 5xx, empty or malformed reply, "
                        "timeout); default 2, or CITEGRAPH_RETRIES")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds one call to a model endpoint may take; default 60, or CITEGRAPH_TIMEOUT")


def add_trace_arg(p: argparse.ArgumentParser) -> None:
    """``--trace URL``: OpenTelemetry spans of the run to an OTLP collector (citegraph.tools.tracing)."""
    p.add_argument("--trace", metavar="URL", default=None,
                   help="send OpenTelemetry traces (OpenInference conventions) to this OTLP/HTTP collector, "
                        "e.g. a local Phoenix at http://127.0.0.1:6006 (docs/operations.md#traces); or CITEGRAPH_TRACE")


def apply_trace_arg(args) -> bool:
    """Turn tracing on for ``--trace`` (or CITEGRAPH_TRACE); True when this command turned it on."""
    if not hasattr(args, "trace"):  # a command without the flag: its graphs read CITEGRAPH_TRACE when compiled
        return False
    if args.trace:
        tracing.enable(args.trace)
        return True
    return tracing.enable_from_env() is not None


def apply_failure_args(args) -> None:
    retries, timeout = getattr(args, "retries", None), getattr(args, "timeout", None)
    if retries is not None and retries < 0:
        raise InputError("--retries must be 0 or more")
    if timeout is not None and timeout <= 0:
        raise InputError("--timeout must be more than 0 seconds")
    if retries is not None or timeout is not None:
        failures.configure(retries=retries, timeout=timeout)


def add_checkpoint_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", metavar="SPEC", default=None,
                   help="durable runs: save each item's graph state after every node and resume an item cut short "
                        "from its last completed node (memory, sqlite:///path/to/file.db, postgresql://user@host:port/db)")


def add_workers_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers-db", metavar="POSTGRES_URL", default=None,
                   help="many workers, one job: start the same command on several processes or hosts with the same "
                        "PostgreSQL URL (postgresql://user@host:port/db; may be the --checkpoint database); each item "
                        "is claimed by exactly one live worker (a claim lapses when its worker dies: at once when its "
                        "database session ends, else after --workers-lease), and every worker's output ends with all "
                        "the items. Not with --overwrite")
    p.add_argument("--workers-lease", type=float, default=None, metavar="SECONDS",
                   help="with --workers-db: seconds a worker's claim holds without its heartbeat before another "
                        "worker takes the item over (default 30)")


def workers_args(args) -> dict[str, Any]:
    """``run_dataset``'s ``workers_db`` / ``lease_s`` from the flags (checked: one line, exit 2)."""
    spec, lease = getattr(args, "workers_db", None), getattr(args, "workers_lease", None)
    if lease is not None and not (lease > 0 and lease < 1e6):
        raise InputError("--workers-lease must be more than 0 seconds")
    if lease is not None and not spec:
        raise InputError("--workers-lease needs --workers-db")
    if spec:
        check_workers_db(spec)
        if getattr(args, "overwrite", False):
            raise InputError("--overwrite cannot be used with --workers-db: the workers share the job, and one "
                             "worker's overwrite would discard the others' items")
    return {"workers_db": spec, "lease_s": lease}


def concurrency_note(llm: str | None, concurrency: int) -> str | None:
    """With several items in flight: a ``server:`` model gets that many slots (unless
    ``$CITEGRAPH_SERVER_SLOTS`` says otherwise); for an in-process llama.cpp model, which evaluates one
    call at a time, the line to print that says how to decode them together instead."""
    if concurrency <= 1:
        return None
    try:
        spec = parse_chat_spec(llm or setting("llm"), InputError)
    except InputError:
        return None  # a registered name, or a bad spec the run itself reports
    if spec.kind == "server":
        want_server_slots(concurrency)
        return None
    if spec.in_process:
        return (f"note: {spec.text} runs one call at a time in this process; --llm server:{spec.arg} "
                f"decodes {concurrency} items' calls together (llama-server, built by make)")
    return None


def run_summary_line(output: str, stats: dict[str, Any]) -> str:
    """What a finished ``run`` says: where it wrote, and how many items were new, reused, failed."""
    import os

    parts = [f"{stats['ran'] - stats.get('late', 0)} new"]
    if stats.get("by_others"):
        parts.append(f"{stats['by_others']} by other workers")
    parts.append(f"{stats['skipped']} already done")
    if stats.get("replaced"):
        parts.append(f"{stats['replaced']} re-run because their question, documents or settings changed "
                     "(the old records are in the .replaced.jsonl file)")
    parts.append(f"{stats['failed']} failed")
    if stats.get("empty"):
        parts.append(f"{stats['empty']} with no answer sentence (kept, with the method's warnings)")
    counts = ", ".join(parts) + f" (of {stats['total']})"
    if not os.path.exists(output):
        return f"no output written to {output}: no item finished; {counts}"
    return f"wrote {output}: {counts}"


def open_checkpoint_arg(args):
    """The checkpointer ``--checkpoint`` names (None without it); a bad spec is an InputError here,
    before any item runs."""
    spec = getattr(args, "checkpoint", None)
    if not spec:
        return None

    return open_checkpointer(spec)


def add_preset_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default=None, metavar="NAME",
                   help="per-dataset settings from the papers (" + ", ".join(PRESETS) + "; `citegraph graphs` lists "
                        "them), applied before --set, which wins; recorded in the output's args")


def preset_args(method: str, args) -> dict[str, Any]:
    """What an output file's ``args`` records about ``--preset`` (nothing without one)."""
    name = getattr(args, "preset", None)
    if not name:
        return {}
    return {"preset": get_preset(name).name, "preset_settings": preset_overrides(name, method)}


_SUPPORT_MARK = {"supported": "[green]supported[/green]", "partial": "[yellow]partial[/yellow]",
                 "unsupported": "[red]unsupported: no document supports it[/red]"}


def print_answer(ans, console=None, evidence: bool = True) -> None:
    """Each sentence followed by its citations and, when the attribution stage checked it, its support
    status (supported / partial / unsupported, with the verifier's score) and the evidence sentence of
    each citation (where each scores below the verifier's threshold, a line says that the passage as a
    whole supports the sentence and these are only its closest sentences); uncited sentences marked;
    cited docs listed."""
    from rich.console import Console
    from rich.markup import escape

    console = console or Console()
    att = ans.metadata.get("attribution") if isinstance(ans.metadata, dict) else None
    thr = att.get("threshold") if isinstance(att, dict) else None
    if thr is not None and 0 < thr < 1 and att.get("shown_temperature", 1.0) != 1.0:
        # evidence scores are shown calibrated: the threshold as shown on that scale (0.5 stays 0.5)
        thr = temperature_scaled(thr, float(att["shown_temperature"]))
    conflicts = ans.sentence_conflicts()
    if ans.question:
        console.print(f"[bold]Q:[/bold] {escape(ans.question)}\n")
    for i, (s, whys) in enumerate(zip(ans.sentences, conflicts), 1):
        cites = "".join(f"[{c}]" for c in s.citations)
        mark = f"[green]{escape(cites)}[/green]" if s.citations else "[red](no citation)[/red]"
        if s.support == "unsupported" and whys == [QUESTION_REASON]:  # flagged unchecked: nothing to support
            mark += " [red]unsupported: a question, it claims nothing[/red]"
            whys = []
        elif s.support:
            score = f" {s.support_score:.2f}" if s.support_score is not None else ""
            mark += f" {_SUPPORT_MARK[s.support]}[dim]{score}[/dim]"
        console.print(f"{i:>2}. {escape(s.text)} {mark}")
        for why in whys:  # a +checks verifier's reason for not calling it supported
            console.print(f"      [red]✗ {escape(why)}[/red]")
        if evidence:
            if s.support in ("supported", "partial") and thr is not None and s.evidence and all(
                    e.score is not None and e.score < thr for e in s.evidence):
                console.print("      [dim](no sentence alone entails it" + ("; the cited passage as a whole does"
                                                                           if s.support == "supported" else "") + ")[/dim]")
            for e in s.evidence:
                text = e.text if len(e.text) <= 160 else e.text[:157] + "…"
                score = f" ({e.score:.2f})" if e.score is not None else ""
                page = f" p. {e.page}" if e.page is not None else ""
                console.print(f"      [dim]\\[{e.doc}]{page} “{escape(text)}”{score}[/dim]")
    if not ans.sentences:
        console.print("[red](the model returned no answer)[/red]")
    if isinstance(att, dict):
        c = ans.support_counts()
        console.print(f"\n[bold]Attribution[/bold] ({escape(str(att.get('mode')))}, verifier "
                      f"{escape(str(att.get('verifier')))}): {c['supported']} supported, {c['partial']} partial, "
                      f"{c['unsupported']} unsupported" + (f", {len(att.get('dropped') or [])} dropped"
                                                          if att.get("dropped") else ""))
    cited = ans.cited_documents()
    if cited:
        console.print("\n[bold]Cited documents[/bold]")
        for c in cited:
            d = ans.documents[c - 1]
            snippet = d.text[:110] + ("…" if len(d.text) > 110 else "")
            pages = sorted({p for p, _, _ in d.pages})
            where = "" if not pages else (f", p. {pages[0]}" if len(pages) == 1 else f", pp. {pages[0]}-{pages[-1]}")
            console.print(f"  [{c}] {escape(d.title or d.id)}{where} — {escape(snippet)}")
    for w in ans.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")


def docs_arg(path: str, question: str = "", k: int = 0) -> list:
    """``--docs``: JSON lines of documents, or a PDF/text file or folder read as passages (each note,
    such as pages without text or the passages kept for the question, one line on stderr)."""
    if not is_document_file(path):
        return load_documents(path)
    got = read_passages(path, question, k=k)
    for note in got.notes:
        print(f"note: {note}", file=sys.stderr)
    return got.documents
