"""How a method is shown outside its run, in the shape every method's ``nodes/<method>/display.py``
returns and the shared rooms render without knowing the method:

* ``describe_event(ev) -> str | None``: one line for a progress event the method's nodes emit
  (``citegraph.tools.progress.emit``); None for an event it does not know. ``citegraph ask`` shows it.
* ``trace_view(metadata) -> dict | None``: what ``citegraph show`` renders of the method's trace
  (``answer.metadata["trace"]``, written by its final node): ``{"summary": str, "blocks": [...]}``,
  each block one of ``{"pre": text}``, ``{"table": {"columns": [...], "rows": [[cell, ...]]}}``,
  ``{"note": text}``, ``{"warn": text}`` or ``{"data": object}`` (a key/value table). A column is
  ``{"label": str, "title": str, "numeric": bool}``; a cell is a value, a list (shown comma-separated)
  or ``{"code": text, "note": text}``. None: the page shows the trace as a key/value table.

A module registers with the method's entry in ``citegraph/graphs/registry.py`` (``display=``)."""

from __future__ import annotations

from typing import Any


def column(label: str, title: str = "", numeric: bool = False) -> dict[str, Any]:
    return {"label": label, "title": title, "numeric": numeric}


def table(columns: list[dict[str, Any]], rows: list[list[Any]]) -> dict[str, Any]:
    return {"table": {"columns": columns, "rows": rows}}


def generic_view(data: Any, summary: str = "Trace summary") -> dict[str, Any]:
    """A trace shown as a key/value table."""
    return {"summary": summary, "blocks": [{"data": data}]}


def trace_rows(trace: dict, tables: dict[str, dict[str, Any]]) -> dict[str, list[dict]] | None:
    """Each table of a trace as rows with every column the view reads (missing → its default); None
    when the trace is not shaped that way (a table that is not a list of objects, or a list column
    that is not a list), so it is shown as a plain key/value table instead."""
    out: dict[str, list[dict]] = {}
    for name, columns in tables.items():
        rows = trace.get(name, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            return None
        found = []
        for r in rows:
            row = {k: r.get(k, d) for k, d in columns.items()}
            if any(isinstance(d, list) and not isinstance(row[k], list) for k, d in columns.items()):
                return None
            found.append(row)
        out[name] = found
    return out


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
