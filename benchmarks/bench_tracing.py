#!/usr/bin/env python
"""What tracing costs: the same items answered with OpenTelemetry tracing off and on (spans to a local
Arize Phoenix this script starts on loopback, or to --url), one method at a time, in one process.

    python benchmarks/bench_tracing.py [--methods vanilla,raac] [--items 2] [--llm local] [--url URL]

Data: the package's bundled example, then the first items of ../shared/data/alce/asqa_dev60.json (5
documents each). Each item runs twice, off then on for even items and on then off for odd ones, with a
cold start each time: the verifier's cache cleared and the in-process model's saved prompt states off
(CITEGRAPH_PREFIX_STATES=0) and its last prompt replaced by an unrelated one, so neither run re-uses the
other's work; the model and the verifier are loaded before the first timed run. Seconds of a traced run
include sending the last spans (the flush). Run it on an otherwise idle machine. Prints a row per run,
then per method the total seconds off and on and their ratio. A few items cannot tell a difference of a
few percent from this machine's run-to-run noise (the alternating order keeps a drift from favouring one).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("CITEGRAPH_PREFIX_STATES", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def collector_at(url: str | None) -> contextlib.AbstractContextManager:
    """``url`` as it is, or a Phoenix started on loopback for the benchmark (tests/loopback.py)."""
    if url:
        return contextlib.nullcontext(url)
    sys.path.insert(0, str(REPO / "tests"))
    from loopback import phoenix

    return phoenix(Path(tempfile.mkdtemp(prefix="phoenix-bench-")), unavailable=sys.exit)


def scripted(n: int, url: str | None) -> int:
    sys.path.insert(0, str(REPO))
    from citegraph.graphs.registry import entry
    from citegraph.run.datasets import bundled_example
    from citegraph.run.runner import answer_item
    from citegraph.testing import scripted_model, stub_verifier
    from citegraph.tools import tracing

    item = bundled_example()
    reply = " ".join(f"{d.text.split('.')[0]} [{i}]." for i, d in enumerate(item.documents, 1))
    spec, _ = scripted_model([reply] * (2 * n + 2))
    ver = stub_verifier(lambda p, h: 0.9 if h[:20] in p else 0.1)
    e = entry("vanilla")
    graph, ctx = e.build(), e.make_context(llm=spec, verifier=ver, attribution="repair")
    times: dict[bool, list[float]] = {False: [], True: []}
    with collector_at(url) as url:
        answer_item(graph, item, ctx)  # warm
        for i in range(2 * n):
            traced = i % 2 == 1
            if traced:
                tracing.enable(url, project="bench-scripted")
            t0 = time.perf_counter()
            answer_item(graph, item, ctx)
            if traced:
                tracing.flush()
            times[traced].append(time.perf_counter() - t0)
            if traced:
                tracing.disable()
    import statistics

    off, on = statistics.median(times[False]) * 1000, statistics.median(times[True]) * 1000
    print(f"vanilla, scripted model, stub verifier, {len(item.documents)} documents, attribution=repair; {n} runs each")
    print(f"median ms per run: off {off:.1f}, on {on:.1f} (spans sent before the clock stops): +{on - off:.1f} ms")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default="vanilla,raac")
    ap.add_argument("--items", type=int, default=2, help="items per method: the bundled example, then ASQA's")
    ap.add_argument("--llm", default="local")
    ap.add_argument("--url", default=None, help="an OTLP/HTTP collector already running (default: start Phoenix)")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "alce" / "asqa_dev60.json"))
    ap.add_argument("--scripted", type=int, default=0, metavar="N",
                    help="instead: N runs of VANILLA with a scripted model and a stub verifier, off and on "
                         "alternately: the milliseconds tracing itself adds to a run (no model time to hide it)")
    args = ap.parse_args(argv)
    if args.scripted:
        return scripted(args.scripted, args.url)

    sys.path.insert(0, str(REPO))
    from citegraph.graphs.registry import entry
    from citegraph.run.datasets import bundled_example, load_items
    from citegraph.run.runner import answer_item
    from citegraph.tools import tracing
    from citegraph.tools.models.registry import get_chat_model
    from citegraph.tools.verifier import get_verifier

    items = [bundled_example()] + (load_items(args.data, limit=args.items - 1) if args.items > 1 else [])
    model = get_chat_model(args.llm)
    commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    totals: dict[tuple[str, bool], float] = {}
    with collector_at(args.url) as url:
        print(f"commit {commit}; llm {args.llm}; collector {url}; "
              f"CITEGRAPH_PREFIX_STATES={os.environ['CITEGRAPH_PREFIX_STATES']}")
        for method in args.methods.split(","):
            e = entry(method)
            graph = e.build()
            ctx = e.make_context(llm=args.llm)
            verifier = getattr(ctx, "verifier", None)
            if verifier:  # loaded before the first timed run, whichever mode it has
                get_verifier(verifier).score([("The tower is in Paris.", "The tower is in Paris.")])
            for i, item in enumerate(items):
                for traced in ((False, True) if i % 2 == 0 else (True, False)):
                    if verifier:
                        get_verifier(verifier).clear_cache()
                    model.invoke("Say OK.", max_tokens=1)  # the model's last prompt is now an unrelated one
                    if traced:
                        tracing.enable(url, project=f"bench-{method}")
                    t0 = time.perf_counter()
                    ans, usage = answer_item(graph, item, ctx)
                    lost = tracing.flush() if traced else 0
                    secs = time.perf_counter() - t0
                    if traced:
                        tracing.disable()
                    totals[(method, traced)] = totals.get((method, traced), 0.0) + secs
                    print(f"{method:8s} item {item.id:>24s} tracing {'on ' if traced else 'off'} {secs:8.2f} s  "
                          f"llm calls {usage.get('llm_calls', 0):3d}  tokens {usage.get('tokens', 0):6d}  "
                          f"sentences {len(ans.sentences)}" + (f"  spans lost {lost}" if lost else ""), flush=True)
            off, on = totals[(method, False)], totals[(method, True)]
            print(f"{method}: off {off:.1f} s, on {on:.1f} s over {len(items)} items: on/off {on / off:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
