"""How GenerationPrograms (and its post-hoc variant) reads outside its run: its progress event
(``genprog_module``) and its trace (the program and, per bullet, the parsed call, its S-ids and the
answer sentence it made) as ``citegraph show`` renders it (``citegraph.nodes.display``)."""

from __future__ import annotations

from typing import Any

from citegraph.nodes.display import column, plural, table, trace_rows

_BULLETS = {"bullets": {"line": None, "program": "", "sids": [], "sentence": None, "repaired": False}}


def describe_event(ev: dict) -> str | None:
    if ev.get("event") == "genprog_module":
        return f"GenerationPrograms tree {ev.get('tree')}: module {ev.get('module')}/{ev.get('of')} ({ev.get('fn')})"
    return None


def trace_view(metadata: dict[str, Any]) -> dict[str, Any] | None:
    trace = metadata.get("trace")
    if not isinstance(trace, dict):  # records written before the trace summary still show their program
        program = metadata.get("program")
        return _view(program, [], []) if isinstance(program, str) and program.strip() else None
    t = trace_rows(trace, _BULLETS)
    if t is None:
        return None
    errors = trace.get("errors") if isinstance(trace.get("errors"), list) else []
    return _view(str(trace.get("program") or ""), t["bullets"], errors)


def _view(program: str, bullets: list[dict], errors: list) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"pre": program}]
    if bullets:
        blocks.append(table(
            [column("line", numeric=True), column("parsed call"), column("S-ids"), column("answer sentence", numeric=True)],
            [[b["line"], {"code": b["program"], "note": "(repaired)" if b["repaired"] else ""}, b["sids"], b["sentence"]]
             for b in bullets]))
    blocks += [{"warn": str(e)} for e in errors]
    return {"summary": f"GenerationPrograms program ({plural(len(bullets), 'bullet', 'bullets')})", "blocks": blocks}
