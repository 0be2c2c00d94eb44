"""How RAAC reads outside its run: its progress events (``raac_round``, ``raac_calibration``) and its
trace (``state/raac.py: trace_summary``: TextAgent rounds, CitationAgent validations and discoveries,
Summary Calibration decisions) as ``citegraph show`` renders it (``citegraph.nodes.display``)."""

from __future__ import annotations

from typing import Any

from citegraph.nodes.display import column, generic_view, table, trace_rows
from citegraph.prompts.raac import ASPECTS

_SHORT = {"completeness": "compl.", "objectivity": "obj.", "specificity": "spec.", "length": "length",
          "citation_recall": "cit. rec.", "citation_precision": "cit. prec."}
_TABLES = {
    "rounds": {"pass": 0, "round": None, "kind": "", "scores": {}, "total": None, "overruled": []},
    "validations": {"pass": 0, "sentence": None, "cited": [], "kept": [], "dropped": []},
    "discoveries": {"pass": 0, "sentence": None, "proposed": [], "kept": [], "verified": None},
    "calibrations": {"pass": 0, "documents": [], "f1": None, "decision": "", "next": "", "reason": ""},
}


def describe_event(ev: dict) -> str | None:
    kind = ev.get("event")
    if kind == "raac_round":
        total = ev.get("total")
        return (f"RAAC round {ev.get('round')}/{ev.get('of')}: feedback total {total if total is not None else 'n/a'}"
                + (f" (stop: {ev['stop']})" if ev.get("stop") else ""))
    if kind == "raac_calibration":
        return f"RAAC calibration {ev.get('calibration_round')}: {ev.get('decision')} -> {ev.get('next')}"
    return None


def trace_view(metadata: dict[str, Any]) -> dict[str, Any] | None:
    trace = metadata.get("trace")
    if not isinstance(trace, dict):
        legacy = metadata.get("raac")  # records written before the trace summary
        return generic_view(legacy) if isinstance(legacy, dict) else None
    t = trace_rows(trace, _TABLES)
    if t is None or not all(isinstance(r["scores"], dict) for r in t["rounds"]):
        return None
    n_disc = len(t["discoveries"])
    summary = (f"RAAC trace: {len(t['rounds'])} TextAgent round(s), {len(t['validations'])} validation(s), "
               f"{n_disc} discover{'y' if n_disc == 1 else 'ies'}, {len(t['calibrations'])} calibration decision(s)")
    blocks: list[dict[str, Any]] = [table(
        [column("pass", numeric=True), column("round", numeric=True), column("kind")]
        + [column(_SHORT[a], a, numeric=True) for a in ASPECTS] + [column("total", numeric=True), column("overruled")],
        [[r["pass"], r["round"], r["kind"], *(r["scores"].get(a, "") for a in ASPECTS), r["total"], r["overruled"]]
         for r in t["rounds"]])]
    if trace.get("text_stop"):
        blocks.append({"note": f"TextAgent stopped: {trace['text_stop']}"})
    if t["validations"]:
        blocks.append(table([column("pass", numeric=True), column("sentence", numeric=True), column("cited"),
                             column("kept"), column("dropped")],
                            [[v["pass"], v["sentence"], v["cited"], v["kept"], v["dropped"]] for v in t["validations"]]))
    if t["discoveries"]:
        blocks.append(table([column("pass", numeric=True), column("uncited sentence", numeric=True), column("proposed"),
                             column("kept"), column("verified")],
                            [[d["pass"], d["sentence"], d["proposed"], d["kept"], d["verified"]] for d in t["discoveries"]]))
    if t["calibrations"]:
        blocks.append(table([column("pass", numeric=True), column("documents"), column("citation F1", numeric=True),
                             column("decision"), column("next"), column("reason")],
                            [[c["pass"], c["documents"], c["f1"], c["decision"], c["next"], c["reason"]]
                             for c in t["calibrations"]]))
    blocks.append({"note": "Indices are each pass's working numbering; the calibration row's documents map them "
                           "to this page's [n]."})
    return {"summary": summary, "blocks": blocks}
