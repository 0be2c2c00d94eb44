"""``citegraph show OUT.json [B.json] [--html page.html] [--open]``: the evidence view.

One self-contained static HTML page (no server, no network) per output file, or two files side by
side: each answer sentence with its citation chips; hovering or clicking a chip shows the cited
document with the supporting sentence(s) highlighted (the answer's evidence, else the sentences the
verifier scores highest), unsupported citations and uncited sentences marked.
"""

from __future__ import annotations

from pathlib import Path

from citegraph.errors import InputError
from citegraph.view.page import build_page, render_page


def default_html(paths: list[str]) -> Path:
    """``out.json`` → ``out.html``; two files → ``a_vs_b.html`` beside the first."""
    stems = [Path(p).name[:-5] if Path(p).name.endswith(".json") else Path(p).name for p in paths]
    return Path(paths[0]).with_name("_vs_".join(stems) + ".html")


def cmd_show(args) -> int:
    import sys

    verifier = None if str(args.verifier).lower() in ("none", "off", "") else args.verifier
    html = Path(args.html) if args.html else default_html(args.files)
    if html.is_dir():
        raise InputError(f"--html must be a file, got a directory: {html}")
    if html.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"--html must name an .html file, got {html}")
    if not html.parent.is_dir():
        raise InputError(f"--html: folder does not exist: {html.parent}")
    def on_scoring(name: str, n: int) -> None:
        print(f"{name}: scoring {n} citation pairs with the {verifier!r} verifier (--verifier none skips)",
              file=sys.stderr)

    page = build_page(args.files, verifier=verifier, top=args.top, page_size=args.page_size, on_scoring=on_scoring,
                      checkpoint=args.checkpoint)
    html.write_text(render_page(page), encoding="utf-8")
    out = html
    print(f"wrote {out} ({len(page.rows)} question(s), {len(page.files)} file(s))")
    if args.open:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())
    return 0


def register(sub) -> None:
    p = sub.add_parser("show", help="write a self-contained HTML evidence view of one output file, or two side by side")
    p.add_argument("files", nargs="+", metavar="OUT.json", help="output file(s) of `citegraph run` / `bench` (or ALCE's); two are shown side by side")
    p.add_argument("--html", help="page to write (default: OUT.html beside the first file; a_vs_b.html for two)")
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument("--verifier", default="default",
                   help="verifier that scores each citation and picks the sentences to highlight when the answer has no evidence ('none' skips; default: default)")
    p.add_argument("--top", type=int, default=2, help="document sentences highlighted per citation without evidence (default 2)")
    p.add_argument("--page-size", type=int, default=20, help="questions per page (default 20)")
    p.add_argument("--checkpoint", default=None, metavar="SPEC",
                   help="the store the run wrote with --checkpoint: each item shows its steps (collapsed)")
    p.set_defaults(func=cmd_show)
