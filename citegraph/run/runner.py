"""Running a method over a dataset: concurrency, resume by item id, append-and-flush output.

Output: ALCE-compatible JSON ``{"args": {...}, "data": [...]}`` where each item keeps its input
fields and gains ``output`` (the ``[n]``-cited text) and ``citegraph`` (our structured answer, its
cost counters, and the provenance of the process that made it: commit, libraries, models).
The file's format, its journal and its reader are :mod:`citegraph.run.output`'s. Finished items are
appended to ``<output>.partial.jsonl`` (flushed and fsync'd; nothing already
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
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Callable

from citegraph.errors import InputError, ModelError, ModelReplyError
from citegraph.graphs.registry import GraphEntry, entry
from citegraph.run import workqueue
from citegraph.run.datasets import Item
from citegraph.run.output import ResumableWriter, make_record  # noqa: F401 - the run's output file (run.output)
from citegraph.run.provenance import endpoint_url, provenance
from citegraph.state import AttributedAnswer
from citegraph.tools import failures
from citegraph.tools.checkpoints import open_checkpointer, redact
from citegraph.tools.models import reset_local_models
from citegraph.tools.usage import UsageTracker


def _jsonable(o: Any) -> Any:
    if hasattr(o, "model_dump"):
        return o.model_dump(mode="json")
    return str(o)


def model_endpoints(context) -> dict[str, str]:
    """The endpoints the Context's model specs reach, where a spec alone does not name it: an
    ``openai:`` spec (chat model or LLM judge) reaches ``OPENAI_BASE_URL``. Empty for local models
    (their spec names the weights)."""
    ctx = asdict(context) if is_dataclass(context) else {}
    if any(isinstance(v, str) and "openai:" in v for v in ctx.values()):
        return {"openai": endpoint_url()}
    return {}


def content_digest(item: Item, context, endpoints: dict[str, str] | None = None) -> str:
    """sha256 (16 hex) of what decides an item's answer: its question, documents and further inputs
    (the answer to attribute) and the whole Context (models, verifier, every knob); with
    ``endpoints`` (:func:`model_endpoints`) also the servers the models are reached at.

    The one digest both resumes use: an output file's record counts as done only for an item of the
    same digest (:func:`run_dataset`), and a checkpoint thread (:func:`thread_id`) adds the endpoints.
    The code version is not in it: a stored answer is re-used by the code that reads it."""
    inputs = {"question": item.question, "documents": item.documents, **item.inputs}
    ctx = asdict(context) if is_dataclass(context) else {}
    blob: dict[str, Any] = {"context": ctx, "inputs": inputs}
    if endpoints:
        blob["endpoints"] = endpoints  # absent for local models: their digests stay as they were
    text = json.dumps(blob, sort_keys=True, default=_jsonable, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def thread_id(label: str, item: Item, context) -> str:
    """The checkpoint thread of one item under one configuration: ``citegraph:<label>:<item id>:<digest>``.

    ``label`` is the method or bench variant (readable in the store); the digest is
    :func:`content_digest` with the model endpoints, so a run resumed under other settings, on
    another file whose items reuse the same ids, or against another server (``OPENAI_BASE_URL``)
    starts its own thread instead of continuing, or answering from, another configuration's state."""
    return f"citegraph:{label}:{item.id}:{content_digest(item, context, model_endpoints(context))}"


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


def run_dataset(
    method: str | GraphEntry,
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
    workers_db: str | None = None,
    lease_s: float | None = None,
) -> dict[str, Any]:
    """Run ``method`` on ``items`` into ``output`` (resumable). Returns counts: ``total``, ``skipped``
    (done before), ``ran`` (answered now), ``failed``, ``replaced`` (records of changed items, run
    again), ``empty`` (answers with no sentence: written, with the method's warnings, but not a
    success), and with ``workers_db`` ``by_others`` (gathered from other workers) and ``late``.

    Resume is keyed by content (:func:`content_digest`): a record in ``output`` counts as done only
    for an item of the same question, documents and settings; any other is run again.

    ``checkpoint`` (``memory``, ``sqlite:///file.db``, ``postgresql://...``): every item also runs on
    its own checkpoint thread (:func:`thread_id`), so an item cut short resumes from its last
    completed node instead of its start; ``overwrite`` then also discards the items' threads.

    ``workers_db`` (``postgresql://...``): this process is one of several workers sharing the items
    through that database (:mod:`citegraph.run.workqueue`); each item is claimed by one live worker
    (``lease_s``: seconds a claim holds without a heartbeat), and every worker's output ends with all
    the items any worker finished.

    A run stopped by a model failure (or Ctrl-C) re-raises it with ``run_summary`` set: what the output
    kept and what never ran."""
    method_entry = method if isinstance(method, GraphEntry) else entry(method)
    run = _DatasetRun(method_entry, items, output, context, concurrency=concurrency, overwrite=overwrite,
                      progress=progress, on_error=on_error, extra_args=extra_args, checkpoint=checkpoint,
                      workers_db=workers_db, lease_s=lease_s)
    stopped: BaseException | None = None
    try:
        run.fill()
        run.until_done()
    except BaseException as exc:  # a run-ending model failure, Ctrl-C: in-flight items stop retrying
        stopped = exc
        failures.abort_calls()
        raise
    finally:
        stats = run.finish(stopped)
    return stats


class _DatasetRun:
    """One :func:`run_dataset` call, as named steps: set up (the output's writer and what it already holds,
    the graph, the work queue when workers share the items), :meth:`work` one item, :meth:`fill` the pool up
    to ``concurrency`` items in flight, :meth:`until_done` (settle each finished item, refill, wait for other
    workers), :meth:`finish` (the counts, the queue released, the output finished, a stopped run's summary)."""

    def __init__(self, method_entry: GraphEntry, items: list[Item], output, context, *, concurrency: int,
                 overwrite: bool, progress, on_error, extra_args: dict | None, checkpoint: str | None,
                 workers_db: str | None, lease_s: float | None) -> None:
        self.workqueue = workqueue
        method = method_entry.name
        if workers_db and overwrite:
            raise InputError("--overwrite cannot be used with --workers-db: the workers share the job, and one "
                             "worker's overwrite would discard the others' items; use another --output and database")
        self.saver = open_checkpointer(checkpoint) if checkpoint else None  # a bad spec fails before any item
        self.queue = workqueue.WorkQueue(workers_db, lease_s=lease_s or workqueue.DEFAULT_LEASE_S) if workers_db else None
        ctx_dict = {k: v for k, v in asdict(context).items()}
        args = {"method": method, "context": ctx_dict, **(extra_args or {})}
        if checkpoint:
            args["checkpoint"] = redact(checkpoint)
        if workers_db:
            args["workers_db"] = redact(workers_db)
        try:
            self.writer = writer = ResumableWriter(output, args, overwrite=overwrite)
        except BaseException:
            if self.queue is not None:
                self.queue.close()
            raise
        self.items, self.context, self.overwrite = items, context, overwrite
        self.concurrency, self.progress, self.on_error = max(1, concurrency), progress, on_error
        self.source = (extra_args or {}).get("input")
        self.label = label = (extra_args or {}).get("variant") or method
        self.digests = digests = {it.id: content_digest(it, context) for it in items}
        self.replaced = writer.keep_matching(items, digests)
        done = writer.done()
        self.todo = [it for it in items if it.id not in done]
        self.graph = method_entry.build(checkpointer=self.saver)
        self.prov = provenance(getattr(context, "llm", None), getattr(context, "verifier", None))
        self.counts = {"failed": 0, "empty": 0, "ran": 0}
        self.finished = len(items) - len(self.todo)
        self.by_id = {it.id: it for it in items}
        self.keys = keys = {it.id: f"{label}:{it.id}:{digests[it.id]}" for it in items}
        self.key_list = [keys[it.id] for it in items]
        self.item_of_key = {keys[it.id]: it for it in items}
        self.claimed: set[str] = set()  # keys this worker holds
        self.before_done = 0
        if self.queue is not None:
            self.queue.register(self.key_list, [it.id for it in items],
                                done={keys[i]: writer.items[i] for i in done if i in keys})
            self.queue.start_heartbeat()
            self.before_done = self.finished = self.queue.counts(self.key_list)["done"]
        if progress:
            progress(self.finished, len(items))
        failures.allow_calls()
        # at most `concurrency` items in flight, the next one submitted only when one ends: after a
        # run-ending failure no queued item can start (a worker would otherwise pick it up at once)
        self.pool = ThreadPoolExecutor(max_workers=self.concurrency)
        self.local_queue = iter(self.todo)
        self.running: dict = {}
        self.started: set[str] = set()

    def work(self, it: Item):
        if self.concurrency <= 1:
            # each item starts from an empty llama.cpp cache, so its answer does not depend on the
            # items before it (resume, --limit, the order of methods); with several workers the
            # cache is shared by interleaved items and runs are not reproducible anyway
            reset_local_models()
        saver = self.saver
        thread = thread_id(self.label, it, self.context) if saver is not None else None
        if thread is not None and self.overwrite:
            saver.delete_thread(thread)
        ans, usage = answer_item(self.graph, it, self.context, thread=thread)
        if not ans.sentences and thread is not None:
            saver.delete_thread(thread)  # no answer: a re-run asks the model again, not the store
        rec = make_record(it, ans, usage, self.prov, digest=self.digests[it.id], source=self.source)
        if self.queue is None or self.queue.finish(self.keys[it.id], rec):
            self.writer.add(rec)
        return ans

    def next_item(self) -> Item | None:
        if self.queue is None:
            return next(self.local_queue, None)
        got = self.queue.claim(self.key_list)
        if got is None:
            return None
        self.claimed.add(got[0])
        return self.item_of_key[got[0]]

    def fill(self) -> None:
        while len(self.running) < self.concurrency:
            it = self.next_item()
            if it is None:
                return
            self.started.add(it.id)
            self.running[self.pool.submit(self.work, it)] = it

    def until_done(self) -> None:
        queue = self.queue
        while True:
            if not self.running:
                if queue is None:
                    return
                c = queue.counts(self.key_list)
                if c["todo"] == 0 and c["claimed"] == 0:
                    return  # every item is done or failed
                time.sleep(self.workqueue.POLL_S)  # another worker holds the rest: wait, take over a dead one's
                self.fill()
                continue
            done_now, _ = wait(list(self.running), timeout=self.workqueue.POLL_S if queue else None,
                               return_when=FIRST_COMPLETED)
            for fut in done_now:
                self.settle(fut)
            self.fill()

    def settle(self, fut) -> None:
        """One finished item: counted as ran, empty or failed; a run-ending model failure is raised."""
        it = self.running.pop(fut)
        counts, queue, key = self.counts, self.queue, self.keys[it.id]
        exc = fut.exception()
        if exc is not None:
            if isinstance(exc, ModelError) and not isinstance(exc, ModelReplyError):
                raise exc  # the run stops: see the module docstring
            counts["failed"] += 1
            if queue is not None:
                queue.fail(key, f"{type(exc).__name__}: {exc}")
                self.claimed.discard(key)
            if self.on_error:
                self.on_error(it, exc)
        else:
            self.claimed.discard(key)
            counts["ran"] += 1
            if not fut.result().sentences:
                counts["empty"] += 1
                if self.on_error:
                    self.on_error(it, EmptyAnswer(fut.result()))
        if self.progress:
            self.progress(queue.counts(self.key_list)["done"] if queue else self.finished + counts["ran"],
                          len(self.items))

    def finish(self, stopped: BaseException | None) -> dict[str, Any]:
        self.pool.shutdown(wait=True)
        failures.allow_calls()
        items, counts, todo, writer = self.items, self.counts, self.todo, self.writer
        stats = {"total": len(items), "skipped": len(items) - len(todo), "ran": counts["ran"],
                 "failed": counts["failed"], "replaced": self.replaced, "empty": counts["empty"]}
        if self.queue is not None:
            try:
                self.queue.release(sorted(self.claimed))  # a stopped worker's items go back to the others
                if stopped is None:
                    stats.update(_gather(self.queue, self.key_list, self.item_of_key, writer, self.before_done, counts))
            finally:
                self.queue.close()
        writer.finish([it.id for it in items])
        if stopped is not None:
            kept = sum(i in writer.items for i in self.by_id)
            never = len(todo) - len(self.started)
            lost = len(items) - kept - never
            stopped.run_summary = (f"{kept} of {len(items)} kept in {writer.path}, {never} never ran"
                                   + (f", {lost} stopped or failed" if lost else "")
                                   + "; re-run the same command to resume")
        return stats


class EmptyAnswer(Exception):
    """Reported through ``on_error`` for an answer with no sentence (written to the output, not a success)."""

    def __init__(self, ans: AttributedAnswer):
        why = "; ".join(ans.warnings[-3:]) or "the method produced no sentence"
        super().__init__(f"the answer has no sentence ({why})")


def _gather(queue, key_list: list[str], item_of_key: dict[str, Item], writer: ResumableWriter,
            before_done: int, counts: dict[str, int]) -> dict[str, int]:
    """Every record the workers stored for these items goes into this worker's output; the job's counts."""
    res = queue.results(key_list)
    for key in key_list:
        r = res.get(key) or {}
        rec = r.get("record")
        if r.get("state") == "done" and isinstance(rec, dict) and writer.items.get(item_of_key[key].id) != rec:
            writer.add(rec)
    done = sum(1 for r in res.values() if r.get("state") == "done")
    return {"skipped": before_done, "by_others": max(0, done - before_done - (counts["ran"] - queue.late)),
            "failed": sum(1 for r in res.values() if r.get("state") == "failed"), "late": queue.late}
