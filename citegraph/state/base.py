"""State and Context pieces shared by every graph.

Every graph's input is :class:`InputState` (a question and its documents) and its output is
:class:`OutputState` (one :class:`~citegraph.state.answer.AttributedAnswer`). Knobs live in a
Context dataclass per graph, derived from :class:`BaseContext`; each field carries a description
that LangGraph Studio shows.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import MISSING, dataclass, field, fields
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, Field

from citegraph.state.answer import AttributedAnswer, Document


def knob(default: Any, description: str, *, ge: float | None = None, le: float | None = None,
         choices: tuple[str, ...] | None = None) -> Any:
    """A Context field with a description (shown in Studio and in ``citegraph graphs``) and its valid
    range: ``ge``/``le`` bounds (an integer knob is a count or a limit, so at least 0 unless said
    otherwise) or the ``choices`` of a string."""
    meta: dict[str, Any] = {"description": description}
    if ge is not None:
        meta["ge"] = ge
    if le is not None:
        meta["le"] = le
    if choices is not None:
        meta["choices"] = tuple(choices)
    return field(default=default, metadata=meta)


RETRIEVAL_MODES = ("bm25", "dense", "hybrid", "rrf")  # citegraph.corpus.MODES
_SIMPLE_TYPES = {"bool": bool, "int": int, "float": float, "str": str}
_BOUND_KEYS = ("ge", "le", "choices")


class CliText(str):
    """A knob value as typed on a command line (``--set k=v``, a bench variant ``method:k=v``). The
    Context reads it by the knob's type: verbatim for a string knob (``--set embedding=1e5`` stays
    "1e5"), as JSON otherwise (``true``, ``3``, ``0.5``, ``null`` = the default)."""


def _from_text(typ: Any, value: Any) -> Any:
    if not isinstance(value, CliText):
        return value
    if typ is str:
        return str(value)
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return str(value)


def _knob_types(cls: type) -> dict[str, Any]:
    """The knobs' types; from the annotation strings when a hint cannot be resolved (a Context
    defined in a function, or annotated with a TYPE_CHECKING-only name)."""
    try:
        return get_type_hints(cls)
    except (NameError, TypeError):
        return {f.name: f.type if isinstance(f.type, type) else _SIMPLE_TYPES.get(str(f.type)) for f in fields(cls)}


def _knob_meta(cls: type, name: str) -> dict[str, Any]:
    """A knob's metadata, with the bounds of a parent's field when a subclass re-declares it (a new
    default) without repeating them."""
    meta: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        f = getattr(klass, "__dataclass_fields__", {}).get(name)
        if f is None:
            continue
        if any(k in f.metadata for k in _BOUND_KEYS):
            meta = {k: v for k, v in meta.items() if k not in _BOUND_KEYS}
        meta.update(f.metadata)
    return meta


def _bounds(typ: Any, meta: dict[str, Any]) -> tuple[float | None, float | None]:
    """(lowest, highest) valid value of a numeric knob; an integer knob is at least 0 unless said."""
    return meta.get("ge", 0 if typ is int else None), meta.get("le")


def _checked(owner: str, name: str, typ: Any, value: Any, meta: dict[str, Any]) -> Any:
    """``value`` as the knob's type, within its range; InputError (one line) otherwise."""
    from citegraph.errors import InputError

    where = f"{owner}.{name}"
    if typ is bool:
        if not isinstance(value, bool):
            raise InputError(f"{where} must be true or false, got {value!r}")
    elif typ is int:
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)) \
                and float(value).is_integer():
            value = int(value)  # 5.0 from a JSON client
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise InputError(f"{where} must be an integer, got {value!r}")
        value = int(value)
    elif typ is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise InputError(f"{where} must be a finite number, got {value!r}")
        value = float(value)
    elif typ is str:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = str(value)  # `--set embedding=123` parses as JSON
        if not isinstance(value, str):
            raise InputError(f"{where} must be a string, got {value!r}")
        if meta.get("choices") and value not in meta["choices"]:
            raise InputError(f"{where} must be one of {', '.join(meta['choices'])}, got {value!r}")
    if typ in (int, float):
        lo, hi = _bounds(typ, meta)
        if lo is not None and value < lo:
            raise InputError(f"{where} must be at least {lo}, got {value!r}")
        if hi is not None and value > hi:
            raise InputError(f"{where} must be at most {hi}, got {value!r}")
    return value


@dataclass(kw_only=True)
class BaseContext:
    """Knobs every graph has: which chat model and verifier, and decoding settings."""

    llm: str = knob("local", "Chat model spec: local, local-small, llamacpp:<path.gguf>, openai:<model>.")
    verifier: str = knob("default", "Entailment verifier spec: default, hf-classifier:<id>, hf-seq2seq:<id>, llm-judge[:<llm spec>][:table16] (table16: RAAC's Table 16 evaluator prompt).")
    temperature: float = knob(0.0, "Sampling temperature for generation (0 = greedy).", ge=0.0)
    max_new_tokens: int = knob(300, "Maximum tokens the LLM may generate per call.", ge=1)
    # open-domain mode (citegraph.corpus): with no documents in the input, the graph's first node
    # retrieves them from this corpus
    corpus: str = knob("", "Open-domain mode: an index folder, chroma+http://HOST:PORT/COLLECTION, or retriever:<name> "
                           "(citegraph.corpus.register_retriever). When set and the input has no documents, the top_k "
                           "chunks retrieved for the question become the documents. Empty = documents are given.")
    top_k: int = knob(5, "Open-domain mode: chunks retrieved as the documents.", ge=1)
    retrieval_mode: str = knob("hybrid", "Open-domain mode: bm25, dense, hybrid (min-max fused scores) or rrf (reciprocal-rank fusion).",
                               choices=RETRIEVAL_MODES)
    retrieval_alpha: float = knob(0.5, "Open-domain hybrid mode: weight of the dense score (0 = pure BM25, 1 = pure dense). "
                                       "0.5 by default: the best alpha measured differs by corpus (benchmarks/bench_retrieval.py).",
                                  ge=0.0, le=1.0)

    def __post_init__(self) -> None:
        # types and ranges are checked here, so the CLI's --set, a Python caller and a Studio run
        # all get one clear line instead of a TypeError deep inside a node
        # (None, as a client may send for a cleared field, means the default)
        cls = type(self)
        hints = _knob_types(cls)
        for f in fields(self):
            value = _from_text(hints.get(f.name), getattr(self, f.name))
            if value is None and f.default is not MISSING:
                value = f.default
            value = _checked(cls.__name__, f.name, hints.get(f.name), value, _knob_meta(cls, f.name))
            object.__setattr__(self, f.name, value)

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        """(name, default, description with its valid values) of every knob."""
        hints = _knob_types(cls)
        out = []
        for f in fields(cls):
            m, typ = _knob_meta(cls, f.name), hints.get(f.name)
            desc = m.get("description", "")
            lo, hi = _bounds(typ, m)
            if m.get("choices"):
                desc += f" [one of: {', '.join(m['choices'])}]"
            elif lo is not None and hi is not None:
                desc += f" [{lo} to {hi}]"
            elif lo is not None:
                desc += f" [>= {lo}]"
            out.append((f.name, f.default, desc))
        return out


CITE_FORMATS = ("free", "constrained")
CITE_FORMAT_HELP = (
    "How the final composition call writes its citations: free = the model writes [n] markers or not, as it "
    "will; constrained = every sentence ends with 1-2 citation markers [n] (n among the numbered documents) "
    "by construction: a llama.cpp grammar on local/llamacpp: models (a sentence ends only with its markers "
    "and a period), a JSON-schema response format ({sentence, citations} list) on openai: models, falling "
    "back to free text, recorded in the answer's warnings, where the server refuses it.")


@dataclass(kw_only=True)
class CiteFormatKnobs:
    """The two knobs of a graph whose final call can cite by construction (``tools.models.cited_sentences``)."""

    cite_format: str = knob("free", CITE_FORMAT_HELP, choices=CITE_FORMATS)
    cite_max_sentences: int = knob(5, "cite_format=constrained: the answer has 1 to this many sentences (the grammar "
                                      "or schema bounds it; max_new_tokens still applies).", ge=1, le=30)


class InputState(BaseModel):
    """What a caller passes in: a question and the documents to answer from."""

    question: str = Field(description="The question (or query) to answer.")
    documents: list[Document] = Field(default_factory=list, description="Candidate documents, cited by 1-based position.")


class OutputState(BaseModel):
    """What every graph returns."""

    answer: AttributedAnswer | None = Field(default=None, description="The attributed answer.")


def latest_record(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any] | None:
    """Reducer of ``run_context``: the newest write wins. A reducer rather than a plain last-value
    channel, because parallel nodes of one step (a ``Send`` fan-out) may write it together, which a
    plain channel refuses; they write the same record, so the order does not matter."""
    return old if new is None else new


class RunContextState(BaseModel):
    """Part of every method's full state (never of its input or output schema): the Context the run
    started with, so that a run resumed without one (``Command(resume=...)`` in process, or over the
    LangGraph SDK/Studio, which send none unless asked) goes on with the run's own knobs instead of
    the defaults. Written by the first node that runs with a Context of the graph's class
    (``graphs/base.py: guard_node``), read by the compiled graph when a continuation comes without
    one; a Context sent with the continuation wins and is recorded in its place."""

    run_context: Annotated[dict[str, Any] | None, latest_record] = Field(
        default=None, description="The run's Context (class name and knob values), kept for resumption.")
