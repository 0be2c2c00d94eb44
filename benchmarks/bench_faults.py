"""Each fault of an OpenAI-compatible endpoint → what ``citegraph run`` does, its exit code, and how
long it takes to fail, under the default failure policy (``citegraph.tools.failures``: 2 retries,
backoff or ``Retry-After``; ``--timeout`` per call).

Every fault is served on every call by a loopback fake server (``tests/fake_openai.py``) to a real
``citegraph run vanilla`` subprocess over ``--limit`` items. "Time to fail" is the wall time from the
first request to the process' exit (interpreter start-up and model resolution excluded).

    python benchmarks/bench_faults.py --items 3 --timeout 5
    python benchmarks/bench_faults.py --items 3 --timeout 5 --only "HTML with status" --only "invalid JSON"

For each fault, stderr also gives the run's CPU seconds, the 1-minute load average when it ended and the
gaps between its requests (the policy's waits: a retry 0.25-0.5 s, then 0.5-1 s, ~0 s to the next
item), so a row slowed by other processes on the machine can be told from one the policy made slow.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from fake_openai import FakeOpenAI, Raw  # noqa: E402

OK = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
      "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}


def completion(content) -> bytes:
    return json.dumps({**OK, "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": content}}]}).encode()


def faults(timeout: float) -> dict:
    return {
        "429 (Retry-After: 1)": Raw(b'{"error": {"message": "rate limited"}}', 429, {"retry-after": "1"}),
        "500": Raw(b'{"error": {"message": "boom"}}', 500),
        "503 with an HTML page": Raw(b"<html>Service Unavailable</html>", 503, content_type="text/html"),
        "HTML with status 200": Raw(b"<html>Sign in</html>", 200, content_type="text/html"),
        "invalid JSON body": Raw(b'{"id": "x", "choices": [', 200),
        "choices: []": Raw(json.dumps({**OK, "choices": []}).encode()),
        "empty content": Raw(completion("")),
        "null content": Raw(completion(None)),
        "non-UTF-8 body": Raw(completion("caf\u00e9").replace("caf\\u00e9".encode(), b"caf\xe9")),
        f"hang (> --timeout {timeout:g} s)": Raw(completion("late"), delay=timeout * 3),
        "401 bad key": Raw(b'{"error": {"message": "invalid api key"}}', 401),
        "404 no such model": Raw(b'{"error": {"message": "model not found"}}', 404),
        "3 MB reply": Raw(completion("Alpha is a town [1]. " * 150_000)),
        "citations [17] [-1] [0]": Raw(completion("Alpha is a town [17]. Beta is a river [-1][0].")),
        "lone surrogates": Raw(completion("Alpha \ud800 is a town [1].")),
        "brackets nested 50,000 deep": Raw(completion("[" * 50_000 + "]" * 50_000)),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=5.0, help="--timeout for the run (the hang lasts 3x this)")
    ap.add_argument("--method", default="vanilla")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="run only the faults whose name contains TEXT (repeatable; default: all)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the working folder (data, each run's output) and print its path; default: removed")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="citegraph-faults-"))
    try:
        return _run(args, tmp)
    finally:
        if args.keep:
            print(f"working folder kept: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(args, tmp: Path) -> int:
    data = tmp / "data.json"
    data.write_text(json.dumps([
        {"id": f"item{i}", "question": f"Where is Alpha {i}?",
         "docs": [{"title": "Alpha", "text": "Alpha is a town in France."},
                  {"title": "Beta", "text": "Beta is a river in Chile."}]} for i in range(args.items)]))
    rows = []
    for name, raw in faults(args.timeout).items():
        if args.only and not any(t.lower() in name.lower() for t in args.only):
            continue
        stamps: list[float] = []

        def reply(body, raw=raw):
            stamps.append(time.perf_counter())
            return raw

        out = tmp / f"out{len(rows)}.json"
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        with FakeOpenAI(reply) as srv:
            env = {**os.environ, "OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "k", "PYTHONPATH": str(REPO)}
            p = subprocess.run([sys.executable, "-m", "citegraph.cli", "run", args.method, "-i", str(data), "-o", str(out),
                                "--llm", "openai:m", "--verifier", "default", "--timeout", str(args.timeout)],
                               env=env, capture_output=True, text=True, cwd=REPO)
            end = time.perf_counter()
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            n_requests = len(srv.requests)
        errors = [l for l in p.stderr.splitlines() if "failed:" in l or "model error:" in l]
        traceback = "Traceback" in p.stderr
        if p.returncode == 0:
            size = out.stat().st_size if out.exists() else 0
            behaviour = f"{args.items} answered; output {size / 1024:.0f} KiB"
        elif p.returncode == 3:
            behaviour = "run stops: " + errors[-1].split(": ", 3)[-1][:90] if errors else "run stops"
        else:
            behaviour = f"{len(errors)} item(s) fail: " + (errors[0].split("ModelReplyError: ", 1)[-1].split(": ", 1)[-1][:90] if errors else "?")
        secs = (end - stamps[0]) if stamps else float("nan")
        rows.append((name, behaviour + (" + TRACEBACK" if traceback else ""), p.returncode, n_requests, secs))
        gaps = " ".join(f"{b - a:.2f}" for a, b in zip(stamps, stamps[1:]))
        cpu = cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime
        print(f"{name}: exit {p.returncode}, {n_requests} requests, {secs:.1f} s; the run's CPU {cpu:.1f} s, "
              f"load {os.getloadavg()[0]:.1f}; gaps between requests (s): {gaps or '-'}",
              file=sys.stderr, flush=True)

    print(f"\n`citegraph run {args.method}` on {args.items} items, default policy (2 retries), --timeout {args.timeout:g}\n")
    print("| fault (every call) | behaviour | exit | requests | time to fail (s) |")
    print("|---|---|---|---|---|")
    for name, behaviour, code, n, secs in rows:
        print(f"| {name} | {behaviour.replace('|', '/')} | {code} | {n} | {secs:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
