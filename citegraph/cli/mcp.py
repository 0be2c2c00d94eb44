"""``citegraph mcp``: citegraph as an MCP server (:mod:`citegraph.run.mcp`).

    citegraph mcp                                   # stdio: what desktop and IDE clients start
    citegraph mcp --http --port 8765                # streamable HTTP on http://127.0.0.1:8765/mcp
    citegraph mcp --http --host 0.0.0.0 --token $T  # another interface: a bearer token is then required

Tools: cite, ask, verify, search; saved runs under --runs are resources (their evidence view).
"""

from __future__ import annotations

import ipaddress
import os
import secrets

from citegraph.errors import InputError
from citegraph.settings import setting
from citegraph.view.page import build_page, render_page

ENV_TOKEN = "CITEGRAPH_MCP_TOKEN"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_guard(app, token: str):
    """An ASGI app that answers 401 to an HTTP request without ``Authorization: Bearer <token>``."""
    want = f"Bearer {token}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not secrets.compare_digest(got, want):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"citegraph mcp: a bearer token is required\n"})
                return
        await app(scope, receive, send)

    return guarded


def render_run(path) -> str:
    """A saved run's evidence view, the page ``citegraph show`` writes (no verifier: its own evidence)."""
    return render_page(build_page([path], verifier=None))


def cmd_mcp(args) -> int:
    from citegraph.run.mcp import Service, build_server  # deferred: it loads the mcp SDK

    token = args.token or setting("mcp_token")
    if args.http and not _loopback(args.host) and not token:
        raise InputError(f"--host {args.host} is not a loopback address: give --token (or ${ENV_TOKEN}) so that "
                         "only clients with that bearer token can call the tools")
    if args.runs and not os.path.isdir(args.runs):
        raise InputError(f"--runs {args.runs}: not a folder")
    server = build_server(Service(runs_dir=args.runs or None, verifier=args.verifier or None, render=render_run))
    if not args.http:
        server.run("stdio")
        return 0
    import uvicorn

    app = server.streamable_http_app(host=args.host)
    if token:
        app = bearer_guard(app, token)
    print(f"citegraph mcp: http://{args.host}:{args.port}/mcp" + (" (bearer token required)" if token else ""),
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def register(sub) -> None:
    p = sub.add_parser("mcp", help="run citegraph as an MCP server (stdio, or streamable HTTP with --http)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP: the interface to bind (default loopback only)")
    p.add_argument("--port", type=int, default=8765, help="HTTP: the port (default 8765)")
    p.add_argument("--token", default="", help=f"HTTP: require this bearer token (or ${ENV_TOKEN}); "
                                               "required when --host is not a loopback address")
    p.add_argument("--runs", default="", help="a folder of saved runs served as resources citegraph://runs/NAME")
    p.add_argument("--verifier", default="", help="the verifier spec of cite/verify/ask (default: $CITEGRAPH_VERIFIER "
                                                  "or default)")
    p.set_defaults(func=cmd_mcp)
