"""Running a method over a dataset: concurrency, resume by item id, append-and-flush output.

Output: ALCE-compatible JSON ``{"args": {...}, "data": [...]}`` where each item keeps its input
fields and gains ``output`` (the ``[n]``-cited text) and ``citegraph`` (our structured answer, its
cost counters, and the provenance of the process that made it: commit, libraries, models).
Finished items are appended to ``<output>.partial.jsonl`` (flushed and fsync'd; nothing already
written is rewritten, so a run's I/O grows with its items, not with their square), and the JSON file
is written atomically, in input order, when the run ends (finished, failed items, interrupted, or
stopped by a model failure); a killed run loses nothing already finished, and re-running the same
command skips finished items.

Failures follow ``citegraph.tools.failures``: a ``ModelReplyError`` (an empty or malformed reply, a
5xx or 429 after the retries, a prompt too long) fails its item and the run goes on; any other
``ModelError`` (an unreachable endpoint, a rejected key, a missing model) stops the run at once:
items in flight stop retrying and queued items are not started.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Callable

from citegraph.errors import InputError, ModelError, ModelReplyError
from citegraph.eval.datasets import Item
from citegraph.eval.provenance import provenance
from citegraph.graphs.registry import build_graph
from citegraph.state import AttributedAnswer
from citegraph.tools import failures
from citegraph.tools.checkpoints import open_checkpointer, redact
from citegraph.tools.models import reset_local_models
from citegraph.tools.usage import UsageTracker


def _jsonable(o: Any) -> Any:
    if hasattr(o, "model_dump"):
        return o.model_dump(mode="json")
    return str(o)


def thread_id(label: str, item: Item, context) -> str:
    """The checkpoint thread of one item under one configuration: ``citegraph:<label>:<item id>:<digest>``.

    ``label`` is the method or bench variant (readable in the store); the digest (sha256, 16 hex) covers
    the whole Context (models, verifier, every knob) and the item's inputs (question, documents,
    answer to attribute), so a run resumed under other settings, or on another file whose items reuse
    the same ids, starts its own thread instead of continuing another configuration's half-finished
    state. The code version is not in it: a checkpoint is resumed by the code that reads it."""
    inputs = {"question": item.question, "documents": item.documents, **item.inputs}
    ctx = asdict(context) if is_dataclass(context) else {}
    blob = json.dumps({"context": ctx, "inputs": inputs}, sort_keys=True, default=_jsonable, ensure_ascii=False)
    return f"citegraph:{label}:{item.id}:{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def answer_item(graph, item: Item, context, on_event: Callable[[dict], None] | None = None,
                *, thread: str | None = None) -> tuple[AttributedAnswer, dict[str, Any]]:
    """Invoke one graph on one item, with cost accounting. Returns the answer and its usage.

    ``on_event`` receives the run's progress as it happens: ``{"event": "node", "node": name}`` when a
    node finishes, and every custom-stream event the nodes emit (``citegraph.tools.progress``).

    ``thread`` (a graph compiled with a checkpointer, see :func:`thread_id`): the item runs on that
    checkpoint thread, saved after every super-step (``durability="sync"``). A thread whose latest
    checkpoint has next nodes (a run killed or failed mid-item) resumes from there
    (``invoke(None)``); a finished thread gives its stored answer without running. The usage then
    counts only the resumed part and says where it started (``usage["resumed_from"]``)."""
    tracker = UsageTracker()
    t0 = time.perf_counter()
    inputs: dict | None = {"question": item.question, "documents": item.documents, **item.inputs}
    config: dict[str, Any] = {"callbacks": [tracker], "run_name": f"{graph.name}:{item.id}"}
    kw: dict[str, Any] = {}
    resumed_from = None
    if thread is not None:
        config["configurable"] = {"thread_id": thread}
        kw["durability"] = "sync"  # a checkpoint is on disk before the next node starts
        snap = graph.get_state(config)
        if snap.values or snap.next:
            resumed_from = {"checkpoint_id": snap.config["configurable"].get("checkpoint_id"),
                            "step": (snap.metadata or {}).get("step"), "next": list(snap.next)}
        if snap.next:
            inputs = None  # continue from the last completed super-step
        elif snap.values.get("answer") is not None:
            ans = snap.values["answer"]
            usage = {**tracker.totals(), "seconds": round(time.perf_counter() - t0, 3), "nodes": {},
                     "thread_id": thread, "resumed_from": resumed_from}
            ans.metadata["usage"] = usage
            return ans, usage
        else:
            resumed_from = None
    with tracker.active():
        if on_event is None:
            out = graph.invoke(inputs, context=context, config=config, **kw)
        else:
            out = {}
            # subgraphs=True: RAAC's TextAgent and CitationAgent are subgraphs, and their events count
            for ns, mode, chunk in graph.stream(inputs, context=context, config=config, subgraphs=True,
                                                stream_mode=["custom", "updates", "values"], **kw):
                if mode == "values":
                    if not ns:
                        out = chunk
                elif mode == "custom":
                    on_event(chunk if isinstance(chunk, dict) else {"event": "custom", "value": chunk})
                else:
                    for node in chunk or {}:
                        on_event({"event": "node", "node": node, "graph": ns[-1].split(":")[0] if ns else graph.name})
    ans: AttributedAnswer = out["answer"]
    usage = {**tracker.totals(), "seconds": round(time.perf_counter() - t0, 3), "nodes": tracker.per_node()}
    if thread is not None:
        usage.update(thread_id=thread, resumed_from=resumed_from)
    ans.metadata["usage"] = usage
    return ans, usage


class ResumableWriter:
    """The output JSON plus its append-only journal."""

    def __init__(self, path: str | Path, args: dict[str, Any], overwrite: bool = False):
        self.path = Path(path)
        self.journal = self.path.with_name(self.path.name + ".partial.jsonl")
        self.args = args
        self._lock = threading.Lock()
        self.items: dict[str, dict] = {}
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if overwrite:
            self.journal.unlink(missing_ok=True)
            self.path.unlink(missing_ok=True)
        self._load()

    def _load(self) -> None:
        if self.path.exists():
            try:
                existing = json.loads(self.path.read_text())
            except json.JSONDecodeError:
                raise InputError(f"{self.path} exists but is not valid JSON; pass --overwrite to replace it") from None
            if not isinstance(existing, dict) or "data" not in existing:
                raise InputError(f"{self.path} exists and is not a citegraph/ALCE output file; pass --overwrite")
            old = existing.get("args", {})
            for key in ("method", "context"):
                if key in old and old[key] != self.args.get(key):
                    raise InputError(
                        f"{self.path} was written with a different {key} ({old[key]!r}); "
                        "use another --output or pass --overwrite"
                    )
            for d in existing["data"]:
                if "citegraph" in d:
                    self.items[d["citegraph"]["item_id"]] = d
        if self.journal.exists():
            for line in self.journal.read_text().splitlines():
                try:
                    d = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill: that item simply runs again
                self.items[d["citegraph"]["item_id"]] = d

    def done(self) -> set[str]:
        return set(self.items)

    def add(self, record: dict) -> None:
        """Append one finished item to the journal (the JSON file is written by :meth:`finish`)."""
        with self._lock:
            self.items[record["citegraph"]["item_id"]] = record
            with open(self.journal, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())

    def _rewrite(self) -> None:
        tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"args": self.args, "data": list(self.items.values())}, ensure_ascii=False, indent=1))
        os.replace(tmp, self.path)

    def finish(self, order: list[str]) -> None:
        """Write the JSON file (items in input order) and drop the journal (everything is in the
        JSON file). Nothing to write (no item finished, no earlier file): no file."""
        with self._lock:
            if not self.items and not self.path.exists():
                return
            ordered = {i: self.items[i] for i in order if i in self.items}
            ordered.update({k: v for k, v in self.items.items() if k not in ordered})
            self.items = ordered
            self._rewrite()
            self.journal.unlink(missing_ok=True)


def make_record(item: Item, ans: AttributedAnswer, usage: dict, provenance: dict | None = None) -> dict:
    rec = dict(item.raw)
    rec["output"] = ans.render()
    rec["citegraph"] = {"item_id": item.id, "answer": ans.model_dump(mode="json", exclude={"documents"}), "usage": usage}
    if provenance:
        rec["citegraph"]["provenance"] = provenance
    return rec


def run_dataset(
    method: str,
    items: list[Item],
    output: str | Path,
    context,
    *,
    concurrency: int = 1,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
    on_error: Callable[[Item, BaseException], None] | None = None,
    extra_args: dict | None = None,
    checkpoint: str | None = None,
) -> dict[str, Any]:
    """Run ``method`` on ``items`` into ``output`` (resumable). Returns counts.

    ``checkpoint`` (``memory``, ``sqlite:///file.db``, ``postgresql://...``): every item also runs on
    its own checkpoint thread (:func:`thread_id`), so an item cut short resumes from its last
    completed node instead of its start; ``overwrite`` then also discards the items' threads."""
    saver = open_checkpointer(checkpoint) if checkpoint else None  # a bad spec fails before any item
    ctx_dict = {k: v for k, v in asdict(context).items()}
    args = {"method": method, "context": ctx_dict, **(extra_args or {})}
    if checkpoint:
        args["checkpoint"] = redact(checkpoint)
    writer = ResumableWriter(output, args, overwrite=overwrite)
    done = writer.done()
    todo = [it for it in items if it.id not in done]
    graph = build_graph(method, checkpointer=saver)
    label = (extra_args or {}).get("variant") or method
    prov = provenance(getattr(context, "llm", None), getattr(context, "verifier", None))
    failed = 0
    finished = len(items) - len(todo)
    if progress:
        progress(finished, len(items))
    failures.allow_calls()

    def work(it: Item):
        if concurrency <= 1:
            # each item starts from an empty llama.cpp cache, so its answer does not depend on the
            # items before it (resume, --limit, the order of methods); with several workers the
            # cache is shared by interleaved items and runs are not reproducible anyway
            reset_local_models()
        thread = thread_id(label, it, context) if saver is not None else None
        if thread is not None and overwrite:
            saver.delete_thread(thread)
        ans, usage = answer_item(graph, it, context, thread=thread)
        writer.add(make_record(it, ans, usage, prov))

    # at most `concurrency` items in flight, the next one submitted only when one ends: after a
    # run-ending failure no queued item can start (a worker would otherwise pick it up at once)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    queue = iter(todo)
    running: dict = {}

    def submit_next() -> None:
        it = next(queue, None)
        if it is not None:
            running[pool.submit(work, it)] = it

    try:
        for _ in range(max(1, concurrency)):
            submit_next()
        while running:
            done_now, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done_now:
                it = running.pop(fut)
                exc = fut.exception()
                if exc is not None:
                    if isinstance(exc, ModelError) and not isinstance(exc, ModelReplyError):
                        raise exc  # the run stops: see the module docstring
                    failed += 1
                    if on_error:
                        on_error(it, exc)
                else:
                    finished += 1
                if progress:
                    progress(finished, len(items))
                submit_next()
    except BaseException:  # a run-ending model failure, Ctrl-C: in-flight items stop retrying
        failures.abort_calls()
        raise
    finally:
        pool.shutdown(wait=True)
        failures.allow_calls()
        writer.finish([it.id for it in items])
    return {"total": len(items), "skipped": len(items) - len(todo), "ran": len(todo) - failed, "failed": failed}
