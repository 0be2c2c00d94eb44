"""``citegraph ask METHOD --question ... --docs FILE | --index IDX | --example``: one question, answered and printed."""

from __future__ import annotations

import json
from pathlib import Path
import time

from citegraph.cli.common import (_SUPPORT_MARK, add_checkpoint_arg, add_model_args, add_trace_arg,
                                  context_from_args, docs_arg, open_checkpoint_arg, print_answer)
from citegraph.corpus import open_corpus
from citegraph.errors import InputError
from citegraph.graphs.registry import answer_methods, entry, names
from citegraph.run.datasets import Item, bundled_example, check_question, read_utf8
from citegraph.run.output import make_record, write_output
from citegraph.run.runner import answer_item, thread_id
from citegraph.state.base import RETRIEVAL_MODES


#: the events any run may send, whatever the method (a node finished, verifier batches, an index build)
SHARED_EVENTS = {
    "node": lambda ev: f"finished {ev.get('node')}",
    "verifier_batch": lambda ev: f"verifier {ev.get('verifier')}: {ev.get('done')}/{ev.get('total')}",
    "index_build": lambda ev: f"indexing: {ev.get('docs_seen')} documents read, {ev.get('chunks_added')} chunks added",
    "sentence_checked": lambda ev: f"checked sentence {ev.get('index')}: {ev.get('status')}",
}


def describe_event(ev: dict, method=None) -> str:
    """One line for a progress event (the same events Studio shows under the custom stream mode): the
    method's own words for its events (``method``: its registry entry, ``describe_event``), else ours
    for the events every run may send, else its fields as key=value."""
    line = method.describe_event(ev) if method is not None else None
    if line is not None:
        return line
    kind = ev.get("event")
    if kind in SHARED_EVENTS:
        return SHARED_EVENTS[kind](ev)
    rest = ", ".join(f"{k}={v}" for k, v in ev.items() if k != "event")
    return f"{kind}: {rest}" if rest else str(kind)


def checked_line(ev: dict) -> str:
    """A ``sentence_checked`` event as one line (rich markup, escaped): ``2. text [3] supported 0.91 (p. 7)``."""
    from rich.markup import escape

    cites = escape("".join(f"[{c}]" for c in ev.get("citations") or [])) or "[red](no citation)[/red]"
    status = ev.get("status")
    score = f" [dim]{ev['score']:.2f}[/dim]" if isinstance(ev.get("score"), (int, float)) else ""
    pages = sorted({e["page"] for e in ev.get("evidence") or [] if e.get("page") is not None})
    where = f" [dim](p. {', '.join(map(str, pages))})[/dim]" if pages else ""
    return f"{ev.get('index')}. {escape(str(ev.get('text', '')))} {cites} {_SUPPORT_MARK.get(status, '')}{score}{where}"


def _answer_with_progress(graph, item, ctx, method, thread: str | None = None):
    """Run the graph with a one-line status on stderr that follows its progress events (``method``:
    the registry entry)."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True)
    if not console.is_terminal:  # piped or captured: no spinner, no noise
        return answer_item(graph, item, ctx, thread=thread)
    t0 = time.perf_counter()
    with console.status(f"{method.name}: starting", spinner="dots") as status:
        def on_event(ev: dict) -> None:
            status.update(f"{escape(method.name)} · {time.perf_counter() - t0:.0f}s · {escape(describe_event(ev, method))}")
            if ev.get("event") == "sentence_checked":  # each sentence as soon as it is checked, above the status
                console.print(f"[dim]checked[/dim] {checked_line(ev)}", soft_wrap=True)

        return answer_item(graph, item, ctx, on_event=on_event, thread=thread)


def _text_arg(value: str | None, path: str | None, flag: str) -> str | None:
    """``--X TEXT`` or ``--X-file FILE``; ``-`` (either) reads stdin. None when neither is given."""
    import sys

    if value is not None and path is not None:
        raise InputError(f"give --{flag} or --{flag}-file, not both")
    if value == "-" or path == "-":
        return sys.stdin.read()
    if path is not None:
        from pathlib import Path

        if not Path(path).is_file():
            raise InputError(f"--{flag}-file: file not found: {path}")
        return read_utf8(path)
    return value


def _answer_input(args, method) -> dict:
    """The answer a method attributes (its entry's ``answer_input``) from ``--answer`` /
    ``--answer-file``; refused for a method that reads none, required for one that does."""
    text = _text_arg(args.answer, args.answer_file, "answer")
    key = method.answer_input
    if key is None:
        if text is not None:
            raise InputError(f"--answer: {args.method} writes its own answer (only {', '.join(answer_methods())} "
                             "attribute a given one)")
        return {}
    if text is None or not text.strip():
        raise InputError(f"{args.method} attributes an existing answer: give it with --answer TEXT or --answer-file FILE")
    return {key: text.strip()}


def cmd_ask(args) -> int:
    method = entry(args.method)  # resolved once, passed along
    question = _text_arg(args.question, args.question_file, "question")
    where = "--question-file" if args.question_file else "--question"
    inputs = _answer_input(args, method)
    if args.example:
        item = bundled_example()
        if question:
            item.question = check_question(question, where)
    else:
        if not args.docs and not args.index:
            raise InputError("--docs FILE.jsonl or --index IDX is required (or use --example)")
        if args.docs and args.index:
            raise InputError("give --docs or --index, not both")
        question = check_question(question, where)
        item = Item(id="ask", question=question, documents=[])
    item.inputs.update(inputs)
    if args.save and Path(args.save).exists():
        raise InputError(f"--save {args.save}: the file exists; give a new path (nothing is overwritten)")
    ctx = context_from_args(method, args, **_retrieval_overrides(args))
    if not args.example and args.docs:
        item.documents = docs_arg(args.docs, question, k=int(getattr(ctx, "top_k", 0) or 10))
    saver = open_checkpoint_arg(args)
    graph = method.build(checkpointer=saver)
    thread = None
    if saver is not None:
        thread = thread_id(args.method, item, ctx)
    t0 = time.perf_counter()
    ans, usage = _answer_with_progress(graph, item, ctx, method, thread)
    if args.save:
        _save(args.save, args.method, item, ans, usage, ctx)
    if args.json:
        print(json.dumps(ans.model_dump(mode="json"), ensure_ascii=False, indent=1))
    else:
        print_answer(ans)
        res = usage.get("resumed_from")
        note = ""
        if res:
            note = (f" · resumed at step {res['step']} ({', '.join(res['next'])})" if res["next"]
                    else " · the stored answer of a finished run (--checkpoint)")
        print(
            f"\n[{args.method}{f' · preset {args.preset}' if args.preset else ''} · {ctx.llm} · {usage['llm_calls']} LLM call(s) · "
            f"{usage['prompt_tokens']}+{usage['completion_tokens']} tokens · {time.perf_counter() - t0:.1f}s{note}]"
        )
        if args.save:
            print(f"saved to {args.save}; open it in the evidence view: citegraph show {args.save} --open")
    return 0


def _save(path: str, method: str, item, ans, usage: dict, ctx) -> None:
    """The answer as a one-item output file of ``citegraph run``'s format (what ``show``, ``eval``
    read), written atomically."""
    import dataclasses

    item.raw = {"id": item.id, "question": item.question, **(item.raw or {}),
                "docs": [d.model_dump(mode="json") for d in item.documents]}
    ctx_dict = json.loads(json.dumps(dataclasses.asdict(ctx), default=str))
    try:
        write_output(path, {"method": method, "context": ctx_dict, "command": "ask"}, [make_record(item, ans, usage)])
    except OSError as e:
        raise InputError(f"--save {path}: cannot write it ({e.strerror or e})") from None


def _retrieval_overrides(args) -> dict:
    """``--index`` and its retrieval settings as the Context's open-domain knobs."""
    if not args.index:
        return {}

    open_corpus(args.index)  # a missing or unreadable index fails here with one line, before the model loads
    out: dict = {"corpus": args.index}
    for flag, knob_name in (("k", "top_k"), ("mode", "retrieval_mode"), ("alpha", "retrieval_alpha")):
        if getattr(args, flag) is not None:
            out[knob_name] = getattr(args, flag)
    return out


def register(sub) -> None:
    p = sub.add_parser("ask", help="answer one question from a documents file")
    p.add_argument("method", choices=names())
    p.add_argument("--question", "-q", default=None, help="the question ('-': read it from stdin)")
    p.add_argument("--question-file", metavar="FILE", default=None,
                   help="read the question from a UTF-8 file ('-': stdin), for a question longer than a command line")
    p.add_argument("--docs", help="JSONL file, one {id?, title?, text} document per line; or a PDF, .txt/.md file or a "
                   "folder of them, read as passages (a long one: the question's top passages by BM25)")
    p.add_argument("--example", action="store_true", help="use the bundled example question and documents")
    p.add_argument("--index", help="open-domain: retrieve the documents from this index (folder or chroma+http://...)")
    p.add_argument("--k", type=int, default=None, help="with --index: chunks retrieved (default: the top_k knob, 5)")
    p.add_argument("--mode", choices=RETRIEVAL_MODES, default=None, help="with --index: retrieval mode (default hybrid)")
    p.add_argument("--alpha", type=float, default=None, help="with --index, hybrid: weight of the dense score (default 0.5)")
    p.add_argument("--answer", default=None, metavar="TEXT",
                   help=f"{', '.join(answer_methods())}: the answer to attribute ('-': read it from stdin)")
    p.add_argument("--answer-file", default=None, metavar="FILE",
                   help=f"{', '.join(answer_methods())}: read the answer to attribute from a file")
    p.add_argument("--json", action="store_true", help="print the AttributedAnswer as JSON")
    p.add_argument("--save", metavar="FILE.json", default=None,
                   help="also write the answer as a one-item output file (what `citegraph show` and `eval` read); "
                        "an existing file is never overwritten")
    add_model_args(p)
    add_checkpoint_arg(p)
    add_trace_arg(p)
    p.set_defaults(func=cmd_ask)
