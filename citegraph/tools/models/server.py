"""The embedded model behind llama.cpp's own server: :class:`LlamaServerChat`, a managed loopback
``llama-server`` subprocess with N slots.

Why: llama-cpp-python evaluates one sequence at a time behind one llama.cpp context, so calls that a
graph makes in parallel (SQuAI's per-document fan-out, GINGER's nuggets) and items that ``run`` /
``bench --concurrency N`` keep in flight wait for each other. ``llama-server`` (built by ``make`` from
the llama.cpp source that llama-cpp-python vendors: ``scripts/build_llama_server.sh``) decodes the
sequences of all busy slots in one step (continuous batching: decode reads the weights once per step
for every sequence), keeps each slot's KV cache for the next prompt with the same prefix, saves idle
slots' prompts to a host-memory cache (``--cache-ram``) so a question's documents are read once per
question even when several calls interleave, and takes a draft model for speculative decoding.

The server is started on the first call (a free loopback port, ``--parallel`` slots, the context
window per slot times the slots, unified KV cache), shared by every model of the same settings in
the process, and stopped at exit; it also ends when this process dies (Linux: parent-death signal).
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from citegraph.errors import ModelError, ModelReplyError
from citegraph.settings import setting
from citegraph.tools import failures
from citegraph.tools.models.base import LocalChatModel

#: the slots a server gets when nothing says otherwise (``$CITEGRAPH_SERVER_SLOTS``). One: on the
#: 2-core CPUs measured here, sequences decoded together share the same compute (decode is
#: compute-bound there, not memory-bound), so several slots only add contention; where cores or a GPU
#: leave decode memory-bound, more slots pay (docs/results/speed.md#speed)
DEFAULT_SLOTS = 1
#: tokens of the reply so far that must recur in the prompt before n-gram drafting proposes what followed
NGRAM_N = 6


def server_binary() -> str:
    """``$CITEGRAPH_LLAMA_SERVER``, else ``llama-server`` beside this interpreter (``make`` puts it
    there), else on ``PATH``; a one-line ``ModelError`` saying how to build it when none is found."""
    env = setting("llama_server")
    if env:
        if not os.access(env, os.X_OK):
            raise ModelError(f"CITEGRAPH_LLAMA_SERVER={env} is not an executable file")
        return env
    beside = Path(sys.executable).parent / "llama-server"
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("llama-server")
    if found:
        return found
    raise ModelError("llama-server is not built; run: make server (or bash scripts/build_llama_server.sh)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="citegraph-llama-server")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the atexit hook still stops it
        pass


class LlamaServer:
    """One ``llama-server`` process: start, health, stop. Use :func:`get_server` to share them."""

    def __init__(self, model_path: str, *, slots: int, n_ctx: int, threads: int | None = None,
                 draft_path: str | None = None, draft_max: int = 8, cache_ram_mib: int = 2048):
        self.model_path, self.slots, self.n_ctx = model_path, slots, n_ctx
        self.threads = threads or os.cpu_count() or 1
        self.draft_path, self.draft_max, self.cache_ram_mib = draft_path, draft_max, cache_ram_mib
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path: str | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self, port: int) -> list[str]:
        cmd = [
            server_binary(), "-m", self.model_path, "--host", "127.0.0.1", "--port", str(port),
            "--parallel", str(self.slots), "--ctx-size", str(self.n_ctx * self.slots), "--kv-unified",
            "--threads", str(self.threads), "--threads-batch", str(self.threads), "--batch-size", "512",
            "--cont-batching", "--cache-reuse", "256", "--cache-ram", str(self.cache_ram_mib),
            "--no-webui", "--seed", "0", "--jinja",
            # the in-process model's attention (llama-cpp-python's default), so greedy replies match it
            "--flash-attn", "off",
        ]
        if self.draft_path == "ngram":  # drafts looked up in the prompt and reply so far: no second model
            cmd += ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", str(NGRAM_N),
                    "--spec-ngram-simple-size-m", str(self.draft_max)]
        elif self.draft_path:
            cmd += ["--spec-type", "draft-simple", "--spec-draft-model", self.draft_path,
                    "--spec-draft-n-max", str(self.draft_max), "--spec-draft-threads", str(self.threads)]
        return cmd + shlex.split(setting("server_args"))

    def ensure_started(self, timeout: float = 180.0) -> "LlamaServer":
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return self
            self._stop_locked()  # a server that died: forget it and its log
            if not os.path.exists(self.model_path):
                raise ModelError(f"GGUF model file not found: {self.model_path}")
            port = _free_port()
            cmd = self.command(port)  # a missing binary stops here, before any file is made
            fd, self.log_path = tempfile.mkstemp(prefix="citegraph-llama-server-", suffix=".log")
            try:
                # started from a thread that lives as long as the process: Linux sends the parent-death
                # signal when the *thread* that forked the child ends (a pool's worker, say)
                self.proc = _spawner.submit(
                    subprocess.Popen, cmd, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, close_fds=True,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
                ).result()
            except OSError as e:
                self._stop_locked()
                raise ModelError(f"llama-server could not be started: {e}") from e
            finally:
                os.close(fd)
            self.port = port
            import httpx

            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    said = f"llama-server exited with {self.proc.returncode} while starting: {self.log_tail()}"
                    self._stop_locked()  # removes its log
                    raise ModelError(said)
                try:
                    if httpx.get(f"{self.base_url}/health", timeout=2.0).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            self._stop_locked()
            raise ModelError(f"llama-server did not become ready in {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, n: int = 3) -> str:
        try:
            lines = [ln.strip() for ln in Path(self.log_path or "").read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return "(no log)"
        return " | ".join(lines[-n:]) or "(empty log)"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.log_path:
            try:
                os.unlink(self.log_path)
            except OSError:
                pass
            self.log_path = None


_servers: dict[tuple, LlamaServer] = {}
_servers_lock = threading.Lock()


def get_server(model_path: str, *, slots: int, n_ctx: int, draft_path: str | None = None) -> LlamaServer:
    key = (model_path, slots, n_ctx, draft_path)
    with _servers_lock:
        if key not in _servers:
            _servers[key] = LlamaServer(model_path, slots=slots, n_ctx=n_ctx, draft_path=draft_path)
        return _servers[key]


def running_servers() -> list[LlamaServer]:
    with _servers_lock:
        return [s for s in _servers.values() if s.alive()]


@atexit.register
def stop_servers() -> None:
    with _servers_lock:
        servers = list(_servers.values())
    for s in servers:
        s.stop()


def _to_openai(m: BaseMessage) -> dict:
    role = {"human": "user", "ai": "assistant", "system": "system"}.get(m.type, "user")
    return {"role": role, "content": m.content if isinstance(m.content, str) else str(m.content)}


class LlamaServerChat(LocalChatModel):
    """A GGUF chat model served by a managed ``llama-server`` with ``slots`` parallel sequences.

    Takes the same call kwargs as :class:`~citegraph.tools.models.llamacpp.LlamaCppChat`
    (``temperature``, ``max_tokens``, ``stop``, ``json_schema``, ``grammar``); the Yes/No judges ask it,
    as any model behind an endpoint, for the first token's top-20 log-probabilities (``logprobs``;
    llama.cpp's softmax over all logits), which come back in ``response_metadata["logprobs"]``.
    Each reply's ``response_metadata`` carries the server's ``prompt_n`` (prompt tokens evaluated),
    ``cache_n`` (prompt tokens served from the KV cache) and timings.

    Greedy replies equal the in-process model's for a prompt read from scratch (same attention
    kernel, batch size and template). A prompt whose prefix comes from a slot or the host-memory
    cache is evaluated in pieces, whose logits differ slightly from a whole-prompt evaluation, so a
    greedy token can differ now and then -- the same effect as llama-cpp-python's prefix re-use;
    ``CITEGRAPH_SERVER_ARGS="--cache-ram 0"`` keeps only each slot's own last prompt.
    """

    json_schema_support = True
    model_path: str
    slots: int = DEFAULT_SLOTS
    n_ctx: int = 8192
    draft_path: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    _seed: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "citegraph-llama-server"

    @property
    def _identifying_params(self) -> dict:
        return {"model_path": self.model_path, "n_ctx": self.n_ctx, "slots": self.slots, "draft": self.draft_path}

    @property
    def server(self) -> LlamaServer:
        return get_server(self.model_path, slots=self.slots, n_ctx=self.n_ctx, draft_path=self.draft_path)

    @property
    def endpoint(self) -> str:
        s = self.server
        where = f" at {s.base_url}" if s.port else ""
        return f"llama-server {os.path.basename(self.model_path)}{where} ({self.slots} slots)"

    def _body(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> dict:
        temperature = kwargs.get("temperature", self.temperature)
        body: dict[str, Any] = {
            "messages": [_to_openai(m) for m in messages],
            "temperature": temperature,
            # max_completion_tokens: what the Yes/No judges bind for a model behind an endpoint
            "max_tokens": kwargs.get("max_tokens") or kwargs.get("max_completion_tokens") or self.max_tokens,
            "cache_prompt": True,
        }
        if stop or kwargs.get("stop"):
            body["stop"] = stop or kwargs.get("stop")
        if temperature and temperature > 0:
            self._seed += 1
            body["seed"] = self._seed  # reproducible yet distinct samples
        if kwargs.get("json_schema"):
            body["json_schema"] = kwargs["json_schema"]
        elif kwargs.get("grammar"):
            body["grammar"] = kwargs["grammar"]
        if kwargs.get("logprobs"):
            body["logprobs"] = True
            body["top_logprobs"] = int(kwargs.get("top_logprobs") or 20)
        return body

    def _post(self, body: dict, *, stream: bool = False):
        import httpx

        server = self.server.ensure_started()

        try:
            if stream:
                return server, httpx.Client(timeout=None).stream(
                    "POST", f"{server.base_url}/v1/chat/completions", json={**body, "stream": True})
            r = httpx.post(f"{server.base_url}/v1/chat/completions", json=body,
                           timeout=max(failures.policy().timeout, 600.0))
        except httpx.HTTPError as e:
            if not server.alive():
                raise ModelError(f"llama-server stopped: {server.log_tail()}") from e
            raise ModelReplyError(f"llama-server call failed: {type(e).__name__}: {e}") from e
        if r.status_code != 200:
            try:
                msg = r.json().get("error", {}).get("message") or r.text
            except ValueError:
                msg = r.text
            raise ModelReplyError(f"llama-server answered {r.status_code}: {str(msg)[:300]}")
        return server, r.json()

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        _, out = self._post(self._body(messages, stop, kwargs))
        return ChatResult(generations=[ChatGeneration(message=self._message(out))],
                          llm_output={"token_usage": out.get("usage") or {}})

    def _message(self, out: dict) -> AIMessage:
        choice = (out.get("choices") or [{}])[0]
        usage = out.get("usage") or {}
        timings = out.get("timings") or {}
        meta = {
            "finish_reason": choice.get("finish_reason"),
            "model_name": os.path.basename(self.model_path),
            "prompt_n": timings.get("prompt_n"), "cache_n": timings.get("cache_n"),
            "prompt_ms": timings.get("prompt_ms"), "predicted_n": timings.get("predicted_n"),
            "predicted_ms": timings.get("predicted_ms"),
            "draft_n": timings.get("draft_n"), "draft_n_accepted": timings.get("draft_n_accepted"),
        }
        if choice.get("logprobs"):
            meta["logprobs"] = choice["logprobs"]
        return AIMessage(
            content=(choice.get("message") or {}).get("content") or "",
            usage_metadata={
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            },
            response_metadata={k: v for k, v in meta.items() if v is not None},
        )

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        """Tokens as the server decodes them (server-sent events); the last chunk carries the usage
        and the finish reason, so the aggregated message equals what :meth:`_generate` returns."""
        import httpx

        body = self._body(messages, stop, kwargs)
        body["stream_options"] = {"include_usage": True}
        server, ctx = self._post(body, stream=True)
        usage, finish = {}, None
        try:
            with ctx as r:
                if r.status_code != 200:
                    r.read()
                    raise ModelReplyError(f"llama-server answered {r.status_code}: {r.text[:300]}")
                for line in r.iter_lines():
                    if not line.startswith("data: ") or line.strip() == "data: [DONE]":
                        continue
                    part = json.loads(line[6:])
                    usage = part.get("usage") or usage
                    choice = (part.get("choices") or [{}])[0]
                    finish = choice.get("finish_reason") or finish
                    delta = (choice.get("delta") or {}).get("content") or ""
                    if not delta:
                        continue
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=delta))
                    if run_manager is not None:
                        run_manager.on_llm_new_token(delta, chunk=chunk)
                    yield chunk
        except httpx.HTTPError as e:
            if not server.alive():
                raise ModelError(f"llama-server stopped: {server.log_tail()}") from e
            raise ModelReplyError(f"llama-server call failed: {type(e).__name__}: {e}") from e
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="",
            usage_metadata={"input_tokens": usage.get("prompt_tokens", 0),
                            "output_tokens": usage.get("completion_tokens", 0),
                            "total_tokens": usage.get("total_tokens", 0)},
            response_metadata={"finish_reason": finish, "model_name": os.path.basename(self.model_path)},
        ))

    def count_tokens(self, text: str) -> int:
        import httpx

        server = self.server.ensure_started()
        r = httpx.post(f"{server.base_url}/tokenize", json={"content": text, "add_special": False}, timeout=60.0)
        r.raise_for_status()
        return len(r.json().get("tokens") or [])
