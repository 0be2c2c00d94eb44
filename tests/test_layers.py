"""The layering rule of CONTRIBUTING.md, checked on every import in the package (lazy ones inside
functions included): state < prompts < tools, corpus, metrics < nodes < graphs < run < eval < view < cli;
a module imports only its own layer and those below it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "citegraph"
LAYER = {"errors": 0, "settings": 0, "state": 0, "examples": 0, "prompts": 1, "tools": 2, "corpus": 2, "metrics": 2, "testing": 2,
         "nodes": 3, "graphs": 4, "run": 5, "eval": 6, "view": 7, "cli": 8}
# the known exceptions (none: the state reads [n] marks with state/marks.py; tools/citations.py parses)
ALLOWED: set[tuple[str, str]] = set()


def imports_up() -> list[tuple[str, str]]:
    found = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT)
        room = rel.parts[0].removesuffix(".py")
        if room == "__init__":
            continue
        assert room in LAYER, f"{rel}: a room the layering rule does not name (add it to CONTRIBUTING.md and here)"
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if names == ["citegraph"]:  # from citegraph import metrics: the room is the imported name
                names = [f"citegraph.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "citegraph" and len(parts) > 1 and LAYER.get(parts[1], 0) > LAYER[room] \
                        and (rel.as_posix(), name) not in ALLOWED:
                    found.append((rel.as_posix(), name))
    return found


def test_no_module_imports_a_layer_above_its_own():
    assert imports_up() == []


def room_imports() -> dict[str, set[str]]:
    """Room -> the other rooms its modules import (lazy imports included); a room is a top-level
    package or module of citegraph (``tools``, ``state``, ``errors``)."""
    graph: dict[str, set[str]] = {}
    for f in sorted(ROOT.rglob("*.py")):
        room = f.relative_to(ROOT).parts[0].removesuffix(".py")
        if room == "__init__":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if names == ["citegraph"]:
                names = [f"citegraph.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "citegraph" and len(parts) > 1 and parts[1] != room:
                    graph.setdefault(room, set()).add(parts[1])
    return graph


def test_no_import_cycle_between_rooms():
    """Rooms of one layer (tools, corpus, metrics) may import each other, but never in a circle."""
    graph = room_imports()
    assert "state" in graph.get("tools", set())  # the walk sees the imports
    cycles, done = [], set()

    def walk(room: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(room, ())):
            if nxt in path:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in done:
                walk(nxt, path + [nxt])
        done.add(room)

    for room in sorted(graph):
        walk(room, [room])
    assert cycles == []


def importers_of(module: str) -> list[str]:
    """The package's modules that import ``module`` or a name from it (lazy imports included)."""
    found = []
    for f in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == module or n.startswith(module + ".") for n in names):
                found.append(f.relative_to(ROOT).as_posix())
    return found


def test_production_code_never_imports_the_test_doubles():
    """``citegraph/testing.py`` (the scripted model, stub verifiers) is for tests, users' and ours: it
    sits beside tools/ and imports from it, and no module of the package imports it."""
    assert importers_of("citegraph.testing") == []
    assert "testing.py" in importers_of("citegraph.tools.models")  # the walk sees its imports


def test_tools_hold_nothing_that_only_one_method_uses():
    """``tools/`` is for what any method may call: a module there imported only by one method's
    ``nodes/<method>/`` package belongs in that package."""
    single = {}
    for f in sorted((ROOT / "tools").rglob("*.py")):
        rel = f.relative_to(ROOT).with_suffix("")
        module = "citegraph." + ".".join(p for p in rel.parts if p != "__init__")
        users = {u for u in importers_of(module) if not u.startswith("tools/")}
        # a method's package is nodes/<method>/; nodes/*.py (the shared stages) count as every method's
        rooms = {"/".join(u.split("/")[:2]) if u.startswith("nodes/") and u.count("/") >= 2 else u.split("/")[0]
                 for u in users}
        if len(rooms) == 1 and next(iter(rooms)).startswith("nodes/"):
            single[module] = sorted(users)
    assert single == {}


#: functions allowed past 80 lines, each with its reason
LONG_FUNCTIONS = {
    ("metrics/alce_exact.py", "alce_exact_citation_job"): "ALCE's eval.py, ported line for line so the parity can be read",
}


def test_no_function_runs_past_80_lines():
    """A long function becomes named steps a reader can follow; the exceptions say why."""
    long = {}
    for f in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long[(f.relative_to(ROOT).as_posix(), node.name)] = node.end_lineno - node.lineno + 1
    assert set(long) == set(LONG_FUNCTIONS), long
