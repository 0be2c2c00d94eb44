"""Progress events on LangGraph's custom stream (``stream_mode="custom"``).

Long nodes say where they are: ``emit("raac_round", round=2, of=5, total=14)``. Inside a graph run
the event goes to LangGraph's stream writer (Studio and the SDK show it under the ``custom`` stream
mode; ``citegraph ask`` prints it under its progress line); outside a run, or when nobody streams the
``custom`` mode, it costs nothing and goes nowhere. Every event is a JSON-able dict with an
``event`` name; the names and their fields are listed in docs/operations.md ("Watching a run").
"""

from __future__ import annotations

from typing import Any


def emit(event: str, **data: Any) -> None:
    """Send ``{"event": event, **data}`` to the running graph's custom stream, if there is one."""
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except (ImportError, RuntimeError):  # not inside a graph run (a script, a test calling a tool directly)
        return
    writer({"event": event, **data})
