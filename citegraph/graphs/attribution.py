"""The attribution stage at the end of every graph: ``last → attribution → END`` (a no-op when the
Context's ``attribution`` knob is off; see ``citegraph/nodes/attribution.py``)."""

from __future__ import annotations

from langgraph.graph import END

from citegraph.nodes.attribution import attribution


def end_with_attribution(g, last: str) -> None:
    """``last → attribution → END`` instead of ``last → END``."""
    g.add_node("attribution", attribution)
    g.add_edge(last, "attribution")
    g.add_edge("attribution", END)
