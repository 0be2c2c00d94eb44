"""``citegraph ask METHOD --question ... --docs FILE | --index IDX | --example``: one question, answered and printed."""

from __future__ import annotations

import json
import time

from citegraph.cli.common import add_model_args, method_context, print_answer
from citegraph.errors import InputError


def cmd_ask(args) -> int:
    from citegraph.eval.datasets import Item, bundled_example, check_question, load_documents
    from citegraph.eval.runner import answer_item
    from citegraph.graphs.registry import build_graph

    if args.example:
        item = bundled_example()
        if args.question:
            item.question = check_question(args.question, "--question")
    else:
        if not args.docs and not args.index:
            raise InputError("--docs FILE.jsonl or --index IDX is required (or use --example)")
        if args.docs and args.index:
            raise InputError("give --docs or --index, not both")
        question = check_question(args.question, "--question")
        item = Item(id="ask", question=question, documents=load_documents(args.docs) if args.docs else [])
    ctx = method_context(args.method, args, **_retrieval_overrides(args))
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


def _retrieval_overrides(args) -> dict:
    """``--index`` and its retrieval settings as the Context's open-domain knobs."""
    if not args.index:
        return {}
    from citegraph.corpus import open_corpus

    open_corpus(args.index)  # a missing or unreadable index fails here with one line, before the model loads
    out: dict = {"corpus": args.index}
    for flag, knob_name in (("k", "top_k"), ("mode", "retrieval_mode"), ("alpha", "retrieval_alpha")):
        if getattr(args, flag) is not None:
            out[knob_name] = getattr(args, flag)
    return out


def register(sub) -> None:
    from citegraph.graphs.registry import names

    p = sub.add_parser("ask", help="answer one question from a documents file")
    p.add_argument("method", choices=names())
    p.add_argument("--question", "-q", default="")
    p.add_argument("--docs", help="JSONL file, one {id?, title?, text} document per line")
    p.add_argument("--example", action="store_true", help="use the bundled example question and documents")
    p.add_argument("--index", help="open-domain: retrieve the documents from this index (folder or chroma+http://...)")
    p.add_argument("--k", type=int, default=None, help="with --index: chunks retrieved (default: the top_k knob, 5)")
    p.add_argument("--mode", choices=["bm25", "dense", "hybrid", "rrf"], default=None, help="with --index: retrieval mode (default hybrid)")
    p.add_argument("--alpha", type=float, default=None, help="with --index, hybrid: weight of the dense score (default 0.5)")
    p.add_argument("--json", action="store_true", help="print the AttributedAnswer as JSON")
    add_model_args(p)
    p.set_defaults(func=cmd_ask)
