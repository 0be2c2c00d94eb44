"""The app ``langgraph dev`` / the LangGraph API server mounts beside our graphs (``langgraph.json``'s
``http.app``, LangGraph's documented way to add middleware). Two pure ASGI middlewares:

- :class:`ContextKeysMiddleware` keeps an unknown Context key from being dropped without a word. The
  server filters a run's Context by the graph's Context schema before the graph sees it, so a misspelt
  knob (``{"contxt_window": 4096}``) would silently run with the default. The middleware reads the body
  of a request that creates a run and, when it carries a Context, adds the keys it sent as the
  ``x-citegraph-context-keys`` header; the server copies that header into the run's ``configurable``
  (langgraph.json's ``http.configurable_headers`` names it), and the graph's entry nodes refuse a key
  that is not a knob with the one line the CLI prints (``graphs/base.py``). Nothing else of the request
  changes. Batches (``/runs/batch``) and crons are left alone: the server's own filter applies to them.
- :class:`McpJsonMiddleware` makes the server's own ``/mcp`` endpoint (each graph a tool) answer a
  ``tools/call`` with JSON a client can read: the server writes a run's output as a Python repr
  (``{'answer': {'question': ...``, single quotes); the reply's text becomes the AttributedAnswer as
  JSON, and ``structuredContent`` the same object. ``citegraph mcp`` is the full MCP server (typed
  tools, progress, resources); this is for clients that already use the server's endpoint.

Imports Starlette, which comes with the server (the ``studio`` extra); nothing else imports this module.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware

from citegraph.graphs.base import CONTEXT_KEYS_HEADER

#: the routes that create one run: /runs, /runs/stream, /runs/wait, and the same under /threads/{id}
RUN_ROUTE = re.compile(r"^(/threads/[^/]+)?/runs(/stream|/wait)?/?$")


def context_keys(body: bytes) -> list[str] | None:
    """The keys of the Context a run request's JSON body carries; None when it carries none (or is
    not a JSON object, which the server itself refuses)."""
    try:
        payload = json.loads(body or b"null")
    except ValueError:
        return None
    ctx = payload.get("context") if isinstance(payload, dict) else None
    return sorted(map(str, ctx)) if isinstance(ctx, dict) and ctx else None


class _PostMiddleware:
    """Pure ASGI middleware for the POST requests to the paths ``route`` matches (:meth:`handle`);
    everything else passes to the app as it is."""

    route: re.Pattern[str]

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("method") == "POST" and self.route.match(scope.get("path", "")):
            await self.handle(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def handle(self, scope: dict, receive: Any, send: Any) -> None:
        raise NotImplementedError


class ContextKeysMiddleware(_PostMiddleware):
    """A POST that creates a run gets :data:`CONTEXT_KEYS_HEADER` (a JSON list) when its body has a
    Context; its body is passed on unchanged."""

    route = RUN_ROUTE

    async def handle(self, scope: dict, receive: Any, send: Any) -> None:
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        keys = context_keys(body)
        if keys is not None:
            header = CONTEXT_KEYS_HEADER.encode()
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != header]
            scope = {**scope, "headers": headers + [(header, json.dumps(keys).encode())]}
        await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send)


def _replay(messages: list[dict], receive: Any) -> Any:
    """A ``receive`` that gives ``messages`` first, then whatever the client sends next."""
    pending = list(messages)

    async def replay() -> dict:
        return pending.pop(0) if pending else await receive()

    return replay


#: the server's MCP endpoint
MCP_ROUTE = re.compile(r"^/mcp/?$")


def mcp_reply_as_json(body: bytes) -> bytes | None:
    """A ``/mcp`` JSON-RPC reply whose one text content is the Python repr of a run's output, with that
    output as JSON (the ``answer`` alone when it is all the output holds) in the text and as
    ``structuredContent``; None when the reply is anything else (an error, a list of tools, not JSON)."""
    try:
        message = json.loads(body or b"null")
    except ValueError:
        return None
    result = message.get("result") if isinstance(message, dict) else None
    content = result.get("content") if isinstance(result, dict) and not result.get("isError") else None
    if not (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)
            and content[0].get("type") == "text" and isinstance(content[0].get("text"), str)):
        return None
    try:  # literals only: the repr of what the server decoded from the run's JSON output
        value = ast.literal_eval(content[0]["text"])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    output = value["answer"] if set(value) == {"answer"} and isinstance(value["answer"], dict) else value
    result["content"] = [{"type": "text", "text": json.dumps(output, ensure_ascii=False)}]
    result["structuredContent"] = output
    return json.dumps(message, ensure_ascii=False).encode()


class McpJsonMiddleware(_PostMiddleware):
    """A JSON reply of ``POST /mcp`` goes through :func:`mcp_reply_as_json` (its ``content-length``
    set anew); every other response passes as it is, streamed."""

    route = MCP_ROUTE

    async def handle(self, scope: dict, receive: Any, send: Any) -> None:
        start: dict | None = None
        chunks: list[bytes] = []

        async def buffered(message: dict) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                if b"application/json" in headers.get(b"content-type", b""):
                    start = message
                    return
            elif start is not None and message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = b"".join(chunks)
                body = mcp_reply_as_json(body) or body
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                await send({**start, "headers": headers + [(b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
            await send(message)

        await self.app(scope, receive, buffered)


app = Starlette(middleware=[Middleware(ContextKeysMiddleware), Middleware(McpJsonMiddleware)])
