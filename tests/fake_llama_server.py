"""A stand-in for llama.cpp's ``llama-server`` (loopback only): it takes the real binary's flags,
serves ``/health``, ``/v1/chat/completions`` (plain, grammar, json_schema, logprobs, streaming),
and ``/tokenize``, and appends every request to ``$FAKE_LLAMA_LOG`` (JSONL).

``$FAKE_LLAMA_MODE``: ``fail`` exits 1 at start with a load error; ``slow`` answers /health with 503
for the first second (a model still loading).
Run as ``python tests/fake_llama_server.py --port N ...``; tests point ``$CITEGRAPH_LLAMA_SERVER`` at
a wrapper script that does so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--ctx-size", type=int, default=0)
    args, _ = p.parse_known_args()
    mode = os.environ.get("FAKE_LLAMA_MODE", "")
    log = os.environ.get("FAKE_LLAMA_LOG")
    if mode == "fail":
        print("llama_model_load: error loading model: fake failure", flush=True)
        sys.exit(1)
    t_start = time.monotonic()

    def record(path: str, body: dict) -> None:
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"path": path, "body": body, "argv": sys.argv[1:]}) + "\n")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _json(self, status: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                if mode == "slow" and time.monotonic() - t_start < 1.0:
                    return self._json(503, {"error": {"message": "Loading model"}})
                return self._json(200, {"status": "ok"})
            self._json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            url = urlparse(self.path)
            record(url.path + ("?" + url.query if url.query else ""), body)
            if url.path == "/tokenize":
                return self._json(200, {"tokens": list(range(len(body.get("content", "").split())))})
            if url.path != "/v1/chat/completions":
                return self._json(404, {"error": {"message": "not found"}})
            last = body["messages"][-1]["content"]
            if "json_schema" in body:
                content = json.dumps({"answer": "ok"})
            elif "grammar" in body:
                content = "Alpha was founded in 1901 [1]. Beta is in Chile [2]."
            elif "please fail" in last:
                return self._json(400, {"error": {"message": "the request exceeds the available context size"}})
            else:
                content = f"echo: {last}"
            n_prompt = sum(len(m["content"].split()) for m in body["messages"])
            usage = {"prompt_tokens": n_prompt, "completion_tokens": len(content.split()), "total_tokens": n_prompt + len(content.split())}
            timings = {"prompt_n": max(n_prompt - 3, 1), "cache_n": 3, "prompt_ms": 1.0, "predicted_n": len(content.split()), "predicted_ms": 1.0}
            choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            if body.get("logprobs"):
                choice["message"]["content"] = "Yes"
                choice["logprobs"] = {"content": [{"token": "Yes", "logprob": -0.105, "top_logprobs": [
                    {"token": "Yes", "logprob": -0.105}, {"token": " no", "logprob": -2.4}, {"token": "Maybe", "logprob": -5.0}]}]}
            if body.get("stream"):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for word in content.split(" "):
                    part = {"choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(part)}\n\n".encode())
                end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
                return
            self._json(200, {"choices": [choice], "usage": usage, "timings": timings})

    class Quiet(ThreadingHTTPServer):
        daemon_threads = True

    Quiet(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
