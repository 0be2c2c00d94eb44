"""Chat model objects given to a Context instead of a spec (``VanillaContext(llm=ChatAnthropic(...))``):
each is held here under a spec of its own, ``object:<class>:<id>``, which the Context keeps (a Context
stays a set of plain values) and the model layer resolves (:func:`citegraph.tools.models.get_chat_model`)."""

from __future__ import annotations

import threading
from typing import Any

_held: dict[str, Any] = {}
_lock = threading.Lock()


def hold(model: Any) -> str:
    """The spec of ``model`` (the same object, the same spec), held for this process."""
    spec = f"object:{type(model).__name__}:{id(model):x}"
    with _lock:
        _held[spec] = model
    return spec


def held(spec: str) -> Any | None:
    """The model object held under ``spec``, or None."""
    with _lock:
        return _held.get(spec)
