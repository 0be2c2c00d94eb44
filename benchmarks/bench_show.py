"""How `citegraph show` scales: build + render time, page size, and the page's responsiveness in
Debian's chromium (Playwright) for an output file of N items.

The output file is made without an LLM: one item of the bundled example is answered by a scripted
model through ``run_dataset`` (the real record format: answer, usage, provenance), then copied N
times with distinct ids, questions and sentence texts (so the verifier's cache cannot answer a copy). Each copy keeps the example's 5 documents.

    python benchmarks/bench_show.py --items 500                     # no verifier (evidence only)
    python benchmarks/bench_show.py --items 50 --verifier default   # + the shipped verifier's scores

Printed: seconds to build the page model and to render the HTML, the HTML size, and in chromium
(when installed): time to load the page and show its first page, to switch to the next page, and to
apply a filter (each measured in the page with performance.now(), forced layout included).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-sync"]
ANSWER = ("The Eiffel Tower was built from 1887 to 1889 [1]. It is 330 metres tall [2][4]. "
          "It is a popular landmark. Its height has changed because of antennas [2].")


def make_output(n: int, folder: Path) -> Path:
    from citegraph.graphs.registry import make_context
    from citegraph.run.datasets import bundled_example
    from citegraph.run.runner import run_dataset
    from citegraph.testing import ScriptedChatModel
    from citegraph.tools.models import register_chat_model

    register_chat_model("bench:show", ScriptedChatModel(script=[ANSWER]))
    one = folder / "one.json"
    run_dataset("vanilla", [bundled_example()], one, make_context("vanilla", llm="bench:show"))
    data = json.loads(one.read_text())
    recs = []
    for i in range(n):
        r = copy.deepcopy(data["data"][0])
        r["id"], r["question"] = f"q{i}", f"Question {i}: when was the Eiffel Tower built, and how tall is it?"
        r["citegraph"]["item_id"] = f"q{i}"
        # distinct sentences per copy, so the verifier's cache does not answer the copies for free
        for sent in r["citegraph"]["answer"]["sentences"]:
            sent["text"] = f"{sent['text'].rstrip('.')} (item {i})."
        recs.append(r)
    out = folder / f"bench_{n}.json"
    out.write_text(json.dumps({"args": data["args"], "data": recs}))
    return out


def in_browser(html: Path, chromium: str, repeats: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS)
        loads, nexts, filters = [], [], []
        for _ in range(repeats):
            page = b.new_page(viewport={"width": 1280, "height": 800})
            t0 = time.perf_counter()
            page.goto(html.resolve().as_uri(), wait_until="load")
            page.locator("#rows article.row").first.wait_for()
            loads.append(time.perf_counter() - t0)
            nexts.append(page.evaluate("""() => { const t = performance.now();
                document.getElementById('next').click(); void document.body.offsetHeight;
                return performance.now() - t; }"""))
            filters.append(page.evaluate("""() => { const t = performance.now(); const f = document.getElementById('filter');
                f.value = 'question 4'; f.dispatchEvent(new Event('input')); void document.body.offsetHeight;
                return performance.now() - t; }"""))
            page.close()
        b.close()
    return {"load_s": statistics.median(loads), "next_page_ms": statistics.median(nexts),
            "filter_ms": statistics.median(filters)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=500)
    ap.add_argument("--verifier", default="none", help="verifier spec for the page ('none': evidence only)")
    ap.add_argument("--page-size", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="browser loads (median reported)")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    from citegraph.view.page import build_page, render_page

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        out = make_output(args.items, folder)
        verifier = None if args.verifier == "none" else args.verifier
        v = None
        if verifier is not None:  # load the verifier first: its start-up is not the page's cost
            from citegraph.metrics import resolve_verifier

            v = resolve_verifier(verifier)
            v.score([("The tower is tall.", "It is tall.")])
        before = v.stats.pairs_scored if v is not None else 0
        t0 = time.perf_counter()
        page = build_page([out], verifier=verifier, page_size=args.page_size)
        t_build = time.perf_counter() - t0
        pairs = (v.stats.pairs_scored - before) if v is not None else 0
        t0 = time.perf_counter()
        html_text = render_page(page)
        t_render = time.perf_counter() - t0
        html = folder / "bench.html"
        html.write_text(html_text, encoding="utf-8")
        print(f"items={args.items} verifier={args.verifier} page_size={args.page_size}")
        if v is not None:
            print(f"verifier pairs scored (distinct, all checks): {pairs} ({pairs / t_build:.0f} pairs/s over the whole build)")
        print(f"build_page: {t_build:.2f} s   render_page: {t_render:.2f} s   html: {len(html_text.encode()) / 1e6:.2f} MB")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            print("chromium not installed: browser timings skipped (apt-get install -y chromium)")
            return 0
        r = in_browser(html, chromium, args.repeats)
        print(f"chromium (median of {args.repeats}): load + first page {r['load_s']:.2f} s   "
              f"next page {r['next_page_ms']:.0f} ms   filter {r['filter_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
