"""Screenshot of a `citegraph show` page in Debian's chromium (Playwright, never `playwright install`).

    python scripts/screenshot_show.py page.html docs/show.png [--click N] [--width 1280 --height 800]

``--click N`` (repeatable) clicks the N-th citation chip (0-based) first, so the shot shows a highlighted
document; ``--open-traces`` expands the trace summaries.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("html")
    ap.add_argument("png")
    ap.add_argument("--click", type=int, action="append", default=[],
                    help="click the N-th citation chip (0-based; repeatable: one pinned chip per answer column)")
    ap.add_argument("--open-traces", action="store_true", help="expand the trace summaries")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--scroll", type=int, default=0, help="scroll down this many pixels before the shot")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium not installed (Debian: apt-get install -y chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = b.new_page(viewport={"width": args.width, "height": args.height})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(Path(args.html).resolve().as_uri())
        if args.open_traces:
            page.evaluate("() => document.querySelectorAll('#rows details.trace').forEach(d => d.open = true)")
        for n in args.click:
            page.locator("#rows button.chip").nth(n).click()
        page.mouse.move(0, 0)  # no hover preview over the pinned chips
        if args.scroll:
            page.evaluate(f"() => window.scrollTo(0, {int(args.scroll)})")
        page.screenshot(path=args.png)
        b.close()
    if errors:
        print("page errors: " + "; ".join(errors), file=sys.stderr)
        return 1
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
