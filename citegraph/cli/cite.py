"""``citegraph cite``: attribute a text someone (or some tool) already wrote.

    citegraph cite --text answer.txt --docs docs.jsonl
    citegraph cite --text answer.txt --index idx/ --json
    echo "The tower is 330 m tall." | citegraph cite --text - --docs docs.jsonl --rewrite

The text is split into sentences; each sentence's citations ([n] marks in the text, into --docs) are
checked by the verifier, re-pointed or added where another document supports it, and the sentence is
marked supported / partial / unsupported with its evidence sentence. Verifier only (no LLM) unless
--rewrite, which lets the LLM rewrite an unsupported sentence from its best evidence and checks it again.
"""

from __future__ import annotations

import json
import sys
import time

from citegraph.cli.common import add_failure_args, add_trace_arg, context_from_args, docs_arg, print_answer
from citegraph.corpus import open_corpus
from citegraph.errors import InputError
from citegraph.graphs.registry import entry
from citegraph.run.datasets import Item, read_utf8
from citegraph.run.runner import answer_item
from citegraph.tools.verifier import get_verifier


def _read_text(path: str) -> str:
    if path == "-":
        data = sys.stdin.buffer.read()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"--text -: standard input is not UTF-8 (byte {e.start})") from None
    else:
        try:
            text = read_utf8(path)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
            raise InputError(f"--text {path}: cannot read it ({e.strerror or e})") from None
    if not text.strip():
        raise InputError(f"--text {path}: no text to attribute (the file is empty)")
    return text


def cmd_cite(args) -> int:
    if bool(args.docs) == bool(args.index):
        raise InputError("give --docs FILE.jsonl or --index IDX (one of them) to attribute the text to")
    if args.k is not None and args.k < 1:
        raise InputError("--k must be at least 1")
    text = _read_text(args.text)
    docs = docs_arg(args.docs, args.question or "") if args.docs else []
    extra: dict = {}
    if args.index:
        open_corpus(args.index)  # a missing or unreadable index fails here with one line
        extra["corpus"] = args.index
        if args.k is not None:
            extra["top_k"] = args.k
    if args.rewrite:
        extra["rewrite"] = True
    cite = entry("cite")
    ctx = context_from_args(cite, args, **extra)
    try:
        get_verifier(ctx.verifier)  # an unknown verifier spec fails here, before any work
    except ValueError as e:
        raise InputError(str(e)) from None
    item = Item(id="cite", question=args.question or "", documents=docs, inputs={"answer_text": text})
    t0 = time.perf_counter()
    ans, usage = answer_item(cite.build(), item, ctx)
    if args.json:
        print(json.dumps(ans.model_dump(mode="json"), ensure_ascii=False, indent=1))
        return 0
    print_answer(ans)
    calls = f" · {usage['llm_calls']} LLM call(s)" if usage.get("llm_calls") else ""
    print(f"\n[cite · verifier {ctx.verifier}{calls} · {len(ans.sentences)} sentence(s) · "
          f"{len(ans.documents)} document(s) · {time.perf_counter() - t0:.1f}s]")
    return 0


def register(sub) -> None:
    p = sub.add_parser("cite", help="attribute a given text to documents or an index (verifier only; --rewrite uses the LLM)",
                       description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("--text", required=True, metavar="FILE", help="the text to attribute (UTF-8; '-' reads standard input)")
    p.add_argument("--docs", help="JSONL file, one {id?, title?, text} document per line ([n] in the text cites line n); "
                   "or a PDF, .txt/.md file or a folder of them, read as passages (every passage is a candidate)")
    p.add_argument("--index", help="retrieve candidate evidence per sentence from this index (folder or chroma+http://...)")
    p.add_argument("--k", type=int, default=None, help="with --index: chunks retrieved per sentence (default 3)")
    p.add_argument("--question", "-q", default="", help="optional: the question the text answers")
    p.add_argument("--rewrite", action="store_true",
                   help="let the LLM rewrite each unsupported sentence from its best evidence, then check it again")
    p.add_argument("--json", action="store_true", help="print the AttributedAnswer as JSON")
    p.add_argument("--llm", help="chat model spec for --rewrite (default 'local')")
    p.add_argument("--verifier", help="verifier spec (default 'default'; 'default+checks' adds the structural "
                                        "checks and prints why a sentence conflicts with its document)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a knob of cite (repeatable)")
    add_failure_args(p)
    add_trace_arg(p)
    p.set_defaults(func=cmd_cite)
