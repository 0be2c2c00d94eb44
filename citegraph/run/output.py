"""The run-output file, in one place: ALCE-compatible JSON ``{"args": {...}, "data": [...]}``, each
record an input item's fields plus ``output`` (the ``[n]``-cited text) and ``citegraph`` (the structured
answer, its cost, provenance, and the digest of the inputs it was made from).

* :func:`make_record` builds a record; :func:`write_output` writes a file atomically (``ask --save``,
  and a run when it ends);
* :class:`ResumableWriter` is a run's writer: finished items are appended to :func:`journal_of`'s
  ``<output>.partial.jsonl`` (flushed and fsync'd) and folded into the JSON file at the end;
* :func:`read_output_file` reads a file back with a running (or killed) run's journal merged in
  (``eval``, ``show``, the benchmarks).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from citegraph.errors import InputError
from citegraph.run.datasets import Item, json_loads
from citegraph.state import AttributedAnswer


def journal_of(path: str | Path) -> Path:
    """The append-only journal beside an output file: ``<output>.partial.jsonl``."""
    p = Path(path)
    return p.with_name(p.name + ".partial.jsonl")


def write_output(path: str | Path, args: dict[str, Any], records: list[dict]) -> None:
    """``{"args": args, "data": records}`` to ``path`` atomically (a temporary file, then a rename)."""
    p = Path(path)
    tmp = p.with_name(p.name + f".tmp{os.getpid()}")
    try:
        tmp.write_text(json.dumps({"args": args, "data": records}, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _same_raw_inputs(rec: dict, item: Item) -> bool:
    """A record's input fields (copied from its item when it was written) are the item's."""
    raw = item.raw
    return all(rec.get(k) == raw.get(k) for k in ("question", "docs", "documents") if k in raw or k in rec)


def make_record(item: Item, ans: AttributedAnswer, usage: dict, provenance: dict | None = None, *,
                digest: str | None = None, source: str | None = None) -> dict:
    rec = dict(item.raw)
    rec["output"] = ans.render()
    rec["citegraph"] = {"item_id": item.id, "answer": ans.model_dump(mode="json", exclude={"documents"}), "usage": usage}
    if [(d.title, d.text) for d in ans.documents] != [(d.title, d.text) for d in item.documents]:
        # the citations point into the answer's documents (a retriever's order, chunks, an index's
        # passages), not the item's: the evaluator and the views read these
        rec["citegraph"]["documents"] = [d.model_dump(mode="json") for d in ans.documents]
    if digest:
        rec["citegraph"]["input_digest"] = digest
    if source:
        rec["citegraph"]["input"] = source
    if provenance:
        rec["citegraph"]["provenance"] = provenance
    return rec


class ResumableWriter:
    """The output JSON plus its append-only journal."""

    def __init__(self, path: str | Path, args: dict[str, Any], overwrite: bool = False):
        self.path = Path(path)
        self.journal = journal_of(self.path)
        self.replaced = self.path.with_name(self.path.name + ".replaced.jsonl")
        self.args = args
        self.old_args: dict[str, Any] = {}
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
                existing = json.loads(self.path.read_text(encoding="utf-8"))
            except (ValueError, RecursionError):  # invalid JSON, or not UTF-8
                raise InputError(f"{self.path} exists but is not valid JSON; pass --overwrite to replace it") from None
            if not isinstance(existing, dict) or not isinstance(existing.get("data"), list):
                raise InputError(f"{self.path} exists and is not a citegraph/ALCE output file; pass --overwrite")
            old = existing.get("args") if isinstance(existing.get("args"), dict) else {}
            self.old_args = old
            for key in ("method", "context"):
                if key in old and old[key] != self.args.get(key):
                    raise InputError(
                        f"{self.path} was written with a different {key} ({old[key]!r}); "
                        "use another --output or pass --overwrite"
                    )
            for d in existing["data"]:
                if isinstance(d, dict) and isinstance(d.get("citegraph"), dict) and "item_id" in d["citegraph"]:
                    self.items[d["citegraph"]["item_id"]] = d
        if self.journal.exists():
            for line in self.journal.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    d = json.loads(line)
                    self.items[d["citegraph"]["item_id"]] = d
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a kill: that item simply runs again

    def done(self) -> set[str]:
        return set(self.items)

    def keep_matching(self, items: list[Item], digests: dict[str, str]) -> int:
        """Resume by content: a record counts as done for an item only when it was made from the same
        question, documents and settings (its ``input_digest`` equals the item's :func:`content_digest`).
        A record of an item that changed (another input file reusing the ids, an edited question) is
        moved to ``<output>.replaced.jsonl`` (nothing written is lost) and the item runs again.
        A record written before digests were kept counts when its question and documents are the
        item's, as given in the input. Returns how many records were replaced."""
        stale = []
        for it in items:
            rec = self.items.get(it.id)
            if rec is None:
                continue
            cg = rec["citegraph"]
            have = cg.get("input_digest")
            if have is None and _same_raw_inputs(rec, it):
                cg["input_digest"] = digests[it.id]  # a record from before digests: the same inputs
                cg.setdefault("input", self.old_args.get("input"))
            elif have != digests[it.id]:
                stale.append(it.id)
        if stale:
            with self._lock, open(self.replaced, "a", encoding="utf-8") as f:
                for i in stale:
                    f.write(json.dumps(self.items.pop(i), ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
        return len(stale)

    def add(self, record: dict) -> None:
        """Append one finished item to the journal (the JSON file is written by :meth:`finish`)."""
        with self._lock:
            self.items[record["citegraph"]["item_id"]] = record
            with open(self.journal, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())

    def _rewrite(self) -> None:
        args = dict(self.args)
        if "input" in args:
            # each record names the input file that produced it; the args say so when that is not
            # only this run's file (records of other items kept from a run on another file)
            other: dict[str, int] = {}
            for rec in self.items.values():
                src = rec.get("citegraph", {}).get("input")
                if src and src != args["input"]:
                    other[src] = other.get(src, 0) + 1
            if other:
                args["other_inputs"] = other
        write_output(self.path, args, list(self.items.values()))

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


def read_output_file(path: str | Path) -> tuple[dict, list[dict]]:
    """``(args, records)`` of an output file: ``{"args"?, "data": [...]}`` or a bare list. A run
    still going (or killed) keeps its finished items in ``<file>.partial.jsonl``: they are read
    too (the JSON file is written when the run ends)."""
    p = Path(path)
    journal = journal_of(p)
    if not p.is_file() and not journal.is_file():
        raise InputError(f"output file not found: {p}")
    data: Any = {"data": []}
    if p.is_file():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{p}: not UTF-8 text") from None
        data = json_loads(text, str(p))  # invalid JSON, huge numbers, deep nesting: one line
    if journal.is_file() and isinstance(data, dict) and isinstance(data.get("data"), list):
        data = {**data, "data": _merge_journal(data["data"], journal)}
    args: dict = {}
    if isinstance(data, dict):
        args = data.get("args") if isinstance(data.get("args"), dict) else {}
        data = data.get("data")
    if not isinstance(data, list) or not data:
        raise InputError(f"{p}: expected {{'data': [...]}} (ALCE/citegraph output) with at least one item")
    for n, rec in enumerate(data, 1):
        if not isinstance(rec, dict):
            raise InputError(f"{p}: item {n} is not an object")
        if not isinstance(rec.get("output"), str):
            raise InputError(f"{p}: item {n} has no 'output' text (is this a dataset rather than an output file?)")
    return args, data


def _merge_journal(records: list, journal: Path) -> list:
    """``records`` with the journal's finished items (by item id; the journal's copy wins, a line cut
    by a kill is skipped)."""
    by_id: dict[Any, Any] = {}
    for n, rec in enumerate(records):
        by_id[((rec.get("citegraph") or {}).get("item_id") if isinstance(rec, dict) else None) or f"#{n}"] = rec
    for line in journal.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
            by_id[rec["citegraph"]["item_id"]] = rec
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return list(by_id.values())
