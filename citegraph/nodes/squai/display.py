"""How SQuAI reads outside its run: its progress events (``squai_decompose``, ``squai_retrieve``,
``squai_judge``). Its trace is shown as a key/value table (no ``trace_view``)."""

from __future__ import annotations


def describe_event(ev: dict) -> str | None:
    kind = ev.get("event")
    if kind == "squai_decompose":
        return f"SQuAI: {len(ev.get('sub_questions') or [])} sub-question(s)"
    if kind == "squai_retrieve":
        return f"SQuAI sub-question {ev.get('sub_q')}: {ev.get('retrieved')} documents retrieved"
    if kind == "squai_judge":
        score = ev.get("rel_score")
        return f"SQuAI judge, sub-question {ev.get('sub_q')} doc {ev.get('rank')}: RelScore {'n/a' if score is None else f'{score:.2f}'}"
    return None
