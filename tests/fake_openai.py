"""A loopback OpenAI-compatible chat server for tests (no network beyond 127.0.0.1)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that went away (it timed out, or was killed) is expected here: no traceback."""
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@dataclass
class Raw:
    """A reply sent exactly as given, as a faulty server sends it: any status, headers and body
    bytes (HTML, truncated JSON, invalid UTF-8), optionally after ``delay`` seconds (a hang)."""

    body: bytes | str = b""
    status: int = 200
    headers: dict = field(default_factory=dict)
    content_type: str = "application/json"
    delay: float = 0.0


class FakeOpenAI:
    """Serves ``POST /v1/chat/completions``. ``reply(request_json) -> str`` decides the content;
    with ``logprobs`` requested, ``top_logprobs`` come from ``self.top_logprobs`` (a list, or a function
    of the request that returns one)."""

    def __init__(self, reply: Callable[[dict], str],
                 top_logprobs: list[tuple[str, float]] | Callable[[dict], list[tuple[str, float]]] | None = None):
        self.reply = reply
        self.top_logprobs = top_logprobs or [("Yes", -0.1), ("No", -2.4)]
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # silence
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.requests.append(body)
                content = outer.reply(body)
                if isinstance(content, Raw):
                    if content.delay:
                        time.sleep(content.delay)
                    data = content.body.encode("utf-8", "surrogatepass") if isinstance(content.body, str) else content.body
                    return self._send(content.status, data, content.content_type, content.headers)
                if isinstance(content, dict):  # a whole response body, as a misbehaving server sends it
                    return self._send(200, json.dumps(content).encode())
                if body.get("stream"):
                    return self._stream(body, content)
                choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                if body.get("logprobs"):
                    listed = outer.top_logprobs(body) if callable(outer.top_logprobs) else outer.top_logprobs
                    tops = [{"token": t, "logprob": lp, "bytes": None} for t, lp in listed]
                    choice["logprobs"] = {"content": [{"token": tops[0]["token"], "logprob": tops[0]["logprob"],
                                                       "bytes": None, "top_logprobs": tops}]}
                out = {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                       "choices": [choice],
                       "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
                self._send(200, json.dumps(out).encode())

            def _send(self, status: int, data: bytes, ctype: str = "application/json", headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict, content: str) -> None:
                """Server-sent events, one word-sized delta each, then the usage chunk and [DONE]."""
                import re

                base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body.get("model", "m")}
                events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
                events += [{**base, "choices": [{"index": 0, "delta": {"content": piece}}]}
                           for piece in re.findall(r"\S+\s*|\s+", content)]
                events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    events.append({**base, "choices": [],
                                   "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
                data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                self._send(200, data.encode(), "text/event-stream")

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
