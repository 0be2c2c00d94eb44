"""Time to first token: VANILLA on the bundled example, in-process and through `langgraph dev`.

    python benchmarks/bench_first_token.py [--llm local] [--skip-server]

Prints, for the same prompt:
  * prompt processing: a 1-token completion of the VANILLA prompt after the KV cache is emptied;
  * in-process: the first token chunk of ``graph.stream(..., stream_mode="messages")``;
  * server: the first ``messages`` event received by an SDK client of ``langgraph dev`` (what Studio
    shows), after a warm-up run that loads the model into the server process.
The goal (issue #25): first token within prompt processing + 1 s.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--skip-server", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from langchain_core.callbacks import BaseCallbackHandler

    from citegraph.graphs.registry import build_graph
    from citegraph.run.datasets import bundled_example
    from citegraph.state.vanilla import VanillaContext
    from citegraph.tools.models import chat_reply, reset_local_models

    item = bundled_example()
    inputs = {"question": item.question, "documents": [d.model_dump() for d in item.documents]}
    graph = build_graph("vanilla")
    ctx = VanillaContext(llm=args.llm)

    class Capture(BaseCallbackHandler):
        messages = None

        def on_chat_model_start(self, serialized, messages, **kw):
            Capture.messages = messages[0]

    # warm-up: loads the model, captures the exact prompt
    graph.invoke(inputs, context=ctx, config={"callbacks": [Capture()]})
    reset_local_models()
    t0 = time.perf_counter()
    chat_reply(args.llm, Capture.messages, max_tokens=1)
    prompt_s = time.perf_counter() - t0

    reset_local_models()
    t0, first, n = time.perf_counter(), None, 0
    for chunk, _meta in graph.stream(inputs, context=ctx, stream_mode="messages"):
        if chunk.content:
            n += 1
            first = first or time.perf_counter() - t0
    total = time.perf_counter() - t0
    rows = [("prompt processing (1-token completion)", prompt_s, None, None),
            ("in-process stream_mode=messages", first, total, n)]

    if not args.skip_server:
        from langgraph_sdk import get_sync_client

        port = free_port()
        env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1"}
        log = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
        proc = subprocess.Popen([str(Path(sys.executable).with_name("langgraph")), "dev", "--no-browser", "--no-reload",
                                 "--port", str(port), "--host", "127.0.0.1", "--config", str(REPO / "langgraph.json")],
                                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            client = get_sync_client(url=f"http://127.0.0.1:{port}")
            for _ in range(180):
                try:
                    client.assistants.search(limit=1)
                    break
                except Exception:  # noqa: BLE001 - not up yet
                    time.sleep(1)
            warm = {"question": "What is Beta?", "documents": [{"title": "Beta", "text": "Beta is a river in Chile."}]}
            client.runs.wait(None, "vanilla", input=warm, context={"llm": args.llm})
            t0, first, n = time.perf_counter(), None, 0
            for part in client.runs.stream(None, "vanilla", input=inputs, context={"llm": args.llm},
                                           stream_mode="messages-tuple"):
                if part.event == "messages" and (part.data[0].get("content") or ""):
                    n += 1
                    first = first or time.perf_counter() - t0
            rows.append(("langgraph dev + SDK (what Studio shows)", first, time.perf_counter() - t0, n))
        finally:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)

    print(f"VANILLA, bundled example, llm={args.llm}, {os.cpu_count()} CPU cores")
    print("| path | first token (s) | whole answer (s) | token chunks |")
    print("|---|---|---|---|")
    for name, first, total, n in rows:
        f = "n/a" if first is None else f"{first:.2f}"
        t = "" if total is None else f"{total:.2f}"
        print(f"| {name} | {f} | {t} | {'' if n is None else n} |")
    goal = prompt_s + 1.0
    worst = max(r[1] for r in rows[1:] if r[1] is not None)
    print(f"goal: first token <= prompt processing + 1 s = {goal:.2f} s -> {'met' if worst <= goal else 'NOT met'} "
          f"(slowest path {worst:.2f} s)")


if __name__ == "__main__":
    main()
