#!/usr/bin/env python
"""The MCP server's warm calls: ``citegraph mcp`` started over stdio as a client starts it, then the
same ``cite`` call N times; prints the seconds of the first call (which loads the verifier) and of the
later ones (verifier time only), and the server's start.

    python benchmarks/bench_mcp.py [--calls 5] [--sentences 5]

Data: the package's bundled example (a question and 5 documents); each call's text is N of its sentences,
each marked "(note k)" for call k: the verifier caches scored pairs, so a repeated text would measure the
cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--sentences", type=int, default=5)
    args = ap.parse_args(argv)
    import anyio
    from mcp import Client, StdioServerParameters

    sys.path.insert(0, str(REPO))
    from citegraph.run.datasets import bundled_example
    from citegraph.tools.sentences import split_sentences

    ex = bundled_example()
    docs = [{"id": d.id, "title": d.title, "text": d.text} for d in ex.documents]
    pool = [s for d in ex.documents for s in split_sentences(d.text)]
    # another text each call (the verifier's cache would answer a repeated pair without scoring it)
    texts = [" ".join(f"{pool[(k * args.sentences + j) % len(pool)].rstrip('.')} (note {k})." for j in range(args.sentences))
             for k in range(args.calls)]
    sents = texts[0].split(". ")
    params = StdioServerParameters(command=sys.executable, args=["-m", "citegraph.cli", "mcp"], cwd=str(REPO),
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def go():
        t0 = time.perf_counter()
        async with Client(params, read_timeout_seconds=600) as c:
            started = time.perf_counter() - t0
            times = []
            for text in texts:
                t = time.perf_counter()
                r = await c.call_tool("cite", {"text": text, "documents": docs})
                assert not r.is_error, r.content
                times.append(time.perf_counter() - t)
            return started, times, r.structured_content["counts"]

    started, times, counts = anyio.run(go)
    print(f"server start (stdio, to initialized): {started:.2f} s")
    print(f"cite, {args.sentences} sentences x {len(docs)} documents (another text each call): first call {times[0]:.2f} s (loads the verifier); "
          f"later calls median {statistics.median(times[1:]):.2f} s (min {min(times[1:]):.2f}, max {max(times[1:]):.2f}, "
          f"n={len(times) - 1})")
    print(f"statuses of the last call: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
