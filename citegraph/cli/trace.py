"""``citegraph trace``: a run's steps from its checkpoint store, and time travel from the command line
(:mod:`citegraph.run.trace`).

    citegraph trace list   --checkpoint sqlite:///runs/ck.db            # threads: method, question, when, status
    citegraph trace show   --checkpoint sqlite:///runs/ck.db --thread T # each step: nodes, seconds, fields changed
    citegraph trace replay --checkpoint ... --thread T --step 2         # run on again from step 2, as a new thread
    citegraph trace fork   --checkpoint ... --thread T --step 2 --set generation="..."   # ... with a field edited
"""

from __future__ import annotations

import dataclasses
import json

from citegraph.cli.common import print_answer
from citegraph.errors import InputError
from citegraph.run.trace import TraceStore, calls_line


def _store(args):
    return TraceStore(args.checkpoint)


def cmd_list(args) -> int:
    threads = _store(args).threads()
    if args.json:
        for t in threads:
            print(json.dumps(dataclasses.asdict(t), ensure_ascii=False))
        return 0
    for t in threads:
        q = t.question if len(t.question) <= 70 else t.question[:69] + "…"
        print(f"{t.thread_id}\n    {t.method} · {t.updated[:19]} · {t.steps} steps · {t.status} · {q}")
    if not threads:
        print("(no citegraph threads in this store)")
    return 0


def _short(v, width: int = 100) -> str:
    text = v.render() if hasattr(v, "render") else (json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else v)
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def cmd_show(args) -> int:
    steps = _store(args).steps(args.thread, args.method)
    if args.json:
        for s in steps:
            print(json.dumps({"step": s.step, "checkpoint_id": s.checkpoint_id, "nodes": s.nodes, "seconds": s.seconds,
                              "changed": s.changed, "calls": s.calls, "next": s.next, "created": s.created},
                             ensure_ascii=False))
        return 0
    for s in steps:
        took = f"{s.seconds:.2f}s" if s.seconds is not None else "-"
        ran = ", ".join(s.nodes) or "(input)"
        print(f"step {s.step:>2}  {ran:<24} {took:>8}  changed: {', '.join(s.changed) or '-'}"
              + (f"  next: {', '.join(s.next)}" if s.next else "  (end)"))
        if s.calls:
            print(f"          calls: {calls_line(s.calls)}")
        if args.values:
            for k in s.changed:
                print(f"          {k} = {_short(s.values.get(k))}")
    return 0


def _edits(pairs) -> dict:
    out = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise InputError(f"--set {p!r}: expected FIELD=VALUE")
        out[k.strip()] = v
    return out


def cmd_fork(args) -> int:
    edits = _edits(getattr(args, "set", None))
    if args.command_name == "fork" and not edits:
        raise InputError("fork needs at least one --set FIELD=VALUE (replay runs on from a step unchanged)")
    new, values = _store(args).fork(args.thread, args.step, edits, method=args.method, run=not args.no_run)
    print(f"new thread: {new}")
    ans = values.get("answer")
    if ans is not None and not args.no_run:
        print_answer(ans)
    return 0


def register(sub) -> None:
    p = sub.add_parser("trace", help="a run's steps from its --checkpoint store; replay or fork from a step")
    tsub = p.add_subparsers(dest="trace_command", required=True)

    def common(q, thread: bool = True):
        q.add_argument("--checkpoint", required=True, metavar="SPEC",
                       help="the store a run wrote with --checkpoint (sqlite:///path.db or postgresql://...)")
        if thread:
            q.add_argument("--thread", required=True, help="a thread id (citegraph trace list shows them)")
            q.add_argument("--method", default=None, help="the thread's method when its id does not say it")

    ls = tsub.add_parser("list", help="the threads: method, question, when, steps, status")
    common(ls, thread=False)
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)
    sh = tsub.add_parser("show", help="one thread's steps in order: nodes, seconds, fields changed, next")
    common(sh)
    sh.add_argument("--values", action="store_true", help="also each changed field's value (shortened)")
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(func=cmd_show)
    for name, helptext in (("replay", "run on again from a step, as a new thread (the original stays as it is)"),
                           ("fork", "like replay, with state fields edited first (--set FIELD=VALUE)")):
        q = tsub.add_parser(name, help=helptext)
        common(q)
        q.add_argument("--step", type=int, required=True, help="the step to start from (trace show lists them)")
        if name == "fork":
            q.add_argument("--set", action="append", metavar="FIELD=VALUE", help="a state field's new value (repeatable)")
        q.add_argument("--no-run", action="store_true", help="write the new thread's first checkpoint only")
        q.set_defaults(func=cmd_fork, command_name=name)
