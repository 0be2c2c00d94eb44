#!/usr/bin/env python
"""Draw each method's graph into its docs page, from the compiled graph itself (LangGraph's
``get_graph().draw_mermaid()``), so a page's figure is the code's and cannot drift from it.

    python scripts/draw_graphs.py           # rewrite the figures in docs/methods/*.md
    python scripts/draw_graphs.py --check   # exit 1 when a page's figure is not the graph's (the tests run this)

A figure sits between ``<!-- graph:METHOD -->`` and ``<!-- /graph -->``; a page without one gets a
"## The graph" section before its first section.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = {"alce-baselines.md": ["vanilla", "summ", "snippet", "rerank"], "raac.md": ["raac"],
         "genprog.md": ["genprog", "genprog-posthoc"], "ginger.md": ["ginger"], "odmds.md": ["odmds"],
         "squai.md": ["squai", "rag"]}


def figure(method: str) -> str:
    from citegraph.graphs.registry import build_graph

    mermaid = build_graph(method).get_graph().draw_mermaid().strip()
    return f"<!-- graph:{method} -->\n`{method}`, drawn from the compiled graph (dashed: a routed edge; `citegraph graphs {method} --mermaid` prints it):\n\n```mermaid\n{mermaid}\n```\n<!-- /graph -->"


def render(text: str, methods: list[str]) -> str:
    for m in methods:
        block = figure(m)
        pat = re.compile(rf"<!-- graph:{re.escape(m)} -->.*?<!-- /graph -->", re.S)
        if pat.search(text):
            text = pat.sub(lambda _: block, text)
            continue
        if "\n## The graph\n" not in text:
            at = text.find("\n## ")
            text = (text[:at].rstrip("\n") + "\n\n## The graph\n\n" + block + "\n" + text[at:]) if at >= 0 \
                else text.rstrip("\n") + "\n\n## The graph\n\n" + block + "\n"
        else:  # another method's figure is there: this one after the last figure of the section
            at = text.rfind("<!-- /graph -->") + len("<!-- /graph -->")
            text = text[:at] + "\n\n" + block + text[at:]
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    stale = []
    for page, methods in PAGES.items():
        path = REPO / "docs" / "methods" / page
        old = path.read_text(encoding="utf-8")
        new = render(old, methods)
        if new != old:
            stale.append(page)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"figures out of date in {', '.join(stale)}: run python scripts/draw_graphs.py", file=sys.stderr)
        return 1
    print(("stale: " if args.check else "rewrote: ") + (", ".join(stale) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
