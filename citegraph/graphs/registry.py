"""Registry of method graphs: name → (module, Context class). Modules load lazily."""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class GraphEntry:
    name: str
    module: str
    context: str  # "module:Class"
    summary: str


GRAPHS: dict[str, GraphEntry] = {
    "vanilla": GraphEntry("vanilla", "citegraph.graphs.vanilla", "citegraph.state.vanilla:VanillaContext",
                          "ALCE VANILLA: one prompt with all documents; the LLM cites as [n]."),
}


def _load(path: str):
    mod, _, attr = path.partition(":")
    return getattr(importlib.import_module(mod), attr)


def names() -> list[str]:
    return list(GRAPHS)


def entry(name: str) -> GraphEntry:
    if name not in GRAPHS:
        from citegraph.errors import InputError

        raise InputError(f"unknown method {name!r}; available: {', '.join(GRAPHS)}")
    return GRAPHS[name]


def build_graph(name: str, checkpointer=None):
    """Compile the graph of a method. ``build_graph("vanilla").invoke({...}, context=VanillaContext())``."""
    return importlib.import_module(entry(name).module).build(checkpointer=checkpointer)


def context_class(name: str):
    return _load(entry(name).context)


def make_context(name: str, **overrides):
    """The method's Context with overrides; unknown keys are rejected with a clear error."""
    from dataclasses import fields

    from citegraph.errors import InputError

    cls = context_class(name)
    known = {f.name for f in fields(cls)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise InputError(f"unknown setting(s) for {name}: {', '.join(bad)}; known: {', '.join(sorted(known))}")
    return cls(**overrides)
