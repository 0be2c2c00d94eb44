"""State and Context pieces shared by every graph.

Every graph's input is :class:`InputState` (a question and its documents) and its output is
:class:`OutputState` (one :class:`~citegraph.state.answer.AttributedAnswer`). Knobs live in a
Context per graph: a pydantic dataclass (:func:`context_dataclass`) derived from :class:`BaseContext`,
each field a :func:`knob` with the description LangGraph Studio shows.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import fields
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args, get_origin

import annotated_types
from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.fields import FieldInfo
from pydantic_core import ArgsKwargs

from citegraph.errors import InputError
from citegraph.settings import PREFIX, setting
from citegraph.state.answer import AttributedAnswer, Document
from citegraph.state.models import hold

T = TypeVar("T")


#: environment variables that set the default model specs of every Context (read when a Context is
#: built, so an app or a test can set them at any time before): the chat model, the verifier, and the
#: chat model of the evaluation judges (``citegraph eval --judge``, ``llm-judge`` without a chat spec)
ENV_LLM, ENV_VERIFIER, ENV_JUDGE = "CITEGRAPH_LLM", "CITEGRAPH_VERIFIER", "CITEGRAPH_JUDGE"


def env_default(env: str, default: str) -> str:
    """``$env`` (a :mod:`citegraph.settings` variable) when it is set and not blank, else ``default``."""
    return setting(env.removeprefix(PREFIX).lower()) or default


def default_llm() -> str:
    """The default chat model spec: ``$CITEGRAPH_LLM`` or ``local``."""
    return env_default(ENV_LLM, "local")


def default_verifier() -> str:
    """The default verifier spec: ``$CITEGRAPH_VERIFIER`` or ``default``."""
    return env_default(ENV_VERIFIER, "default")


def default_judge() -> str:
    """The default chat model spec of a judge: ``$CITEGRAPH_JUDGE``, else ``$CITEGRAPH_LLM``, else ``local``."""
    return env_default(ENV_JUDGE, default_llm())


class EnvDefault:
    """The default of a knob read from an environment variable when a Context is built (so an app or a
    test can set it at any time before): ``$env`` when set and not blank, else ``default``."""

    def __init__(self, env: str, default: Any) -> None:
        self.env, self.default = env, default

    def __call__(self) -> Any:
        return env_default(self.env, self.default)


def knob(default: Any, description: str, *, ge: float | None = None, le: float | None = None,
         env: str | None = None) -> Any:
    """A Context field (a pydantic ``Field``) with a description (shown in Studio and in ``citegraph
    graphs``) and its bounds ``ge``/``le``; an integer knob is a count or a limit, so at least 0 unless
    said otherwise. A string knob with choices says so in its annotation (``Literal[...]``). With
    ``env``, the default is that environment variable's value when set, else ``default``."""
    if ge is None and type(default) is int:
        ge = 0
    if env is not None:  # the JSON schema Studio shows keeps the plain default
        return Field(default_factory=EnvDefault(env, default), description=description, ge=ge, le=le,
                     json_schema_extra={"default": default})
    return Field(default=default, description=description, ge=ge, le=le)


RetrievalMode = Literal["bm25", "dense", "hybrid", "rrf"]  # citegraph.corpus.MODES
AttributionMode = Literal["off", "repair", "strict"]  # citegraph.nodes.attribution
RETRIEVAL_MODES, ATTRIBUTION_MODES = get_args(RetrievalMode), get_args(AttributionMode)
ATTRIBUTION_HELP = (
    "Attribution stage after the method: off (the method's answer as it is), repair (check each sentence's citations "
    "with the verifier, keep the set that entails it, re-point or add a citation to a document that does, attach the "
    "supporting sentence as evidence, and mark every sentence supported / partial / unsupported), strict (repair, then "
    "drop the sentences left unsupported; the answer's trace records them).")


def attribution_knob(default: str) -> Any:
    """The ``attribution`` knob with a method's default (off, repair or strict)."""
    return knob(default, ATTRIBUTION_HELP)


def simplify_knob(default: bool) -> Any:
    """The ``attribution_simplify`` knob with a method's default."""
    return knob(default, "Attribution stage: when a sentence's own citations together support it, keep only the "
                         "smallest subset of them that does (true: RAAC's Simplifier; ALCE's precision counts a "
                         "citation the others make unnecessary as irrelevant); false keeps them all, so a sentence "
                         "the verifier finds supported as written keeps its citations.")


class CliText(str):
    """A knob value as typed on a command line (``--set k=v``, a bench variant ``method:k=v``). The
    Context reads it by the knob's type: verbatim for a string knob (``--set embedding=1e5`` stays
    "1e5"), as JSON otherwise (``true``, ``3``, ``0.5``, ``null`` = the default)."""


def knob_info(cls: type) -> dict[str, FieldInfo]:
    """The knobs of a Context class, in order: name -> pydantic ``FieldInfo`` (its resolved annotation,
    description, bounds and default)."""
    return {f.name: cls.__pydantic_fields__[f.name] for f in fields(cls) if f.init}


def knob_names(cls: type) -> set[str]:
    """The knobs a Context class takes (its dataclass fields set by ``__init__``)."""
    return {f.name for f in fields(cls) if f.init}


def knob_choices(info: FieldInfo) -> tuple[str, ...]:
    """The values a string knob may take (its ``Literal[...]``), or () when it takes any string."""
    return get_args(info.annotation) if get_origin(info.annotation) is Literal else ()


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    """(lowest, highest) valid value of a numeric knob."""
    lo = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    return lo, next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)


def _prepared(name: str, info: FieldInfo, value: Any) -> Any:
    """What a value becomes before pydantic checks it: a command-line text read by the knob's type,
    None (a client's cleared field) the default, a whole float (5.0 from a JSON client) an integer,
    a number given to a string knob its text (``--set embedding=123`` parses as JSON), a chat model
    object given to an ``llm`` knob the spec it is held under (:mod:`citegraph.state.models`)."""
    typ = str if knob_choices(info) else info.annotation
    if isinstance(value, CliText):
        try:
            value = str(value) if typ is str else json.loads(value)
        except (ValueError, RecursionError):  # not JSON; also a number over Python's 4,300 digits
            value = str(value)
    if (name == "llm" or name.endswith("_llm")) and isinstance(value, BaseChatModel):
        value = hold(value)  # a chat model object an app already holds: kept under a spec of its own
    if value is None:
        value = info.get_default(call_default_factory=True)
    if typ is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    elif typ is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    elif typ is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return value


_PROBLEMS = {"bool_type": "must be true or false", "int_type": "must be an integer",
             "float_type": "must be a finite number", "finite_number": "must be a finite number",
             "string_type": "must be a string", "greater_than_equal": "must be at least {ge}",
             "less_than_equal": "must be at most {le}"}


def _input_error(cls: type, exc: ValidationError) -> InputError:
    """What pydantic found, as one line: the knobs the Context does not have, else the first bad value
    (``VanillaContext.ndemo must be an integer, got 'x'``)."""
    errors = exc.errors(include_url=False)
    bad = [e["loc"][0] for e in errors if e["type"] == "unexpected_keyword_argument"]
    if bad:
        return InputError(unknown_settings(cls.__name__, sorted(bad), knob_names(cls)))
    err = errors[0]
    name, value = (err["loc"] or ("",))[0], err["input"]
    info = knob_info(cls).get(name)
    if info is None:  # not about one knob
        return InputError(f"{cls.__name__}: {err['msg']}")
    got = repr(value)
    if err["type"] == "literal_error":
        problem = (f"must be one of {', '.join(knob_choices(info))}" if isinstance(value, str)
                   else _PROBLEMS["string_type"])
    elif isinstance(value, str) and len(value) > 80:
        problem = "must be true or false" if info.annotation is bool else "must be a number"
        got = f"{len(value):,} characters ({value[:20]!r}...)"
    else:
        problem = _PROBLEMS.get(err["type"], err["msg"]).format(**err.get("ctx", {}))
    return InputError(f"{cls.__name__}.{name} {problem}, got {got}")


def unknown_settings(owner: str, bad: list[str], known: set[str]) -> str:
    """The one line for knobs a Context does not have: ``unknown setting(s) for vanilla: x; known: ...``."""
    return f"unknown setting(s) for {owner}: {', '.join(map(str, bad))}; known: {', '.join(sorted(known))}"


#: every Context's pydantic configuration: strict types (no "3" for an integer), no NaN or infinity,
#: and no unknown knob (LangGraph builds a Context sent as a dict, from the SDK, Studio or
#: ``invoke(context={...})``, as ``cls(**that dict)``)
CONTEXT_CONFIG = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid", arbitrary_types_allowed=True)


def context_dataclass(cls: type[T]) -> type[T]:
    """The decorator of every Context class (and of a group of knobs a Context derives from): a pydantic
    dataclass (keyword-only, :data:`CONTEXT_CONFIG`) whose construction errors read as one
    :class:`~citegraph.errors.InputError` line, so the CLI's ``--set``, a Python caller and a Studio run
    all get one clear line instead of a TypeError deep inside a node."""
    klass = pydantic_dataclass(kw_only=True, config=CONTEXT_CONFIG)(cls)
    validating_init = klass.__init__

    @functools.wraps(validating_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:  # pydantic would read them as the first fields, in order
            raise TypeError(f"{type(self).__name__} takes its knobs by name (keyword arguments)")
        try:
            validating_init(self, **kwargs)
        except ValidationError as exc:
            raise _input_error(type(self), exc) from None

    klass.__init__ = __init__
    return klass


@context_dataclass
class BaseContext:
    """Knobs every graph has: which chat model and verifier, and decoding settings."""

    llm: str = knob("local", "Chat model spec: local, local-small, llamacpp:<path.gguf>, server:<local|local-small|path.gguf> "
                             "(the model behind a managed llama-server that keeps the prompts it read), openai:<model>. "
                             "Default: $CITEGRAPH_LLM when set.", env=ENV_LLM)
    verifier: str = knob("default", "Entailment verifier spec: default, hf-classifier:<id>, hf-seq2seq:<id>, llm-judge[:<llm spec>][:table16] "
                                    "(table16: RAAC's Table 16 evaluator prompt); any of them + '+checks' adds the structural checks "
                                    "(negation, opposites, numbers, names, swapped roles or words; docs/verifier.md); lm-check is the checker built from "
                                    "the packaged 0.5B model, and '+lm' after any spec asks it where that verifier is unsure (slower). "
                                    "Default: $CITEGRAPH_VERIFIER when set.",
                         env=ENV_VERIFIER)
    temperature: float = knob(0.0, "Sampling temperature for generation (0 = greedy).", ge=0.0)
    max_new_tokens: int = knob(300, "Maximum tokens the LLM may generate per call.", ge=1)
    # open-domain mode (citegraph.corpus): with no documents in the input, the graph's first node
    # retrieves them from this corpus
    corpus: str = knob("", "Open-domain mode: an index folder, chroma+http://HOST:PORT/COLLECTION, or retriever:<name> "
                           "(citegraph.corpus.register_retriever). When set and the input has no documents, the top_k "
                           "chunks retrieved for the question become the documents. Empty = documents are given.")
    top_k: int = knob(5, "Open-domain mode: chunks retrieved as the documents.", ge=1)
    retrieval_mode: RetrievalMode = knob("hybrid", "Open-domain mode: bm25, dense, hybrid (min-max fused scores) or "
                                                   "rrf (reciprocal-rank fusion).")
    context_window: int = knob(0, "Tokens the chat model reads at most; the documents beyond what fits (after max_new_tokens "
                                  "and the prompt) are cut with a warning, by the rule in citegraph/prompts/budget.py. "
                                  "0 = the model's own: n_ctx of a llama.cpp model (8192 for local), 128000 otherwise.")
    #: the input documents are a corpus the method retrieves from (never all in one prompt), so they
    #: are not bounded to the context window (SQuAI, RAG, ODMDS)
    documents_are_a_corpus: ClassVar[bool] = False
    retrieval_alpha: float = knob(0.5, "Open-domain hybrid mode: weight of the dense score (0 = pure BM25, 1 = pure dense). "
                                       "0.5 by default: the best alpha measured differs by corpus (benchmarks/bench_retrieval.py).",
                                  ge=0.0, le=1.0)
    # the shared attribution stage (citegraph/nodes/attribution.py) that ends every graph
    attribution: AttributionMode = attribution_knob("off")
    attribution_partial: float | None = knob(None, "Attribution stage: a sentence whose best document set scores at least "
                                                  "this (but below the verifier's threshold) keeps that citation marked "
                                                  "'partial'; below it the sentence is 'unsupported' and loses its citations. "
                                                  "On the scale of the scores shown (calibrated on held-out pairs); None: "
                                                  "the verifier's own, chosen with its calibration (0.2 without one).",
                                             ge=0.0, le=1.0)
    attribution_max_docs: int = knob(3, "Attribution stage: most documents one sentence may cite (joint support is "
                                        "checked over subsets of at most this many).", ge=1, le=5)
    attribution_sentences: int = knob(4, "Attribution stage: how many of a document's sentences are checked on their "
                                         "own against an answer sentence (the ones sharing the most words with it; "
                                         "0 = every sentence); the whole document is always checked too.", ge=0, le=100)
    attribution_simplify: bool = simplify_knob(True)

    @model_validator(mode="before")
    @classmethod
    def _read_values(cls, data: Any) -> Any:
        # each value read the way it was given (see _prepared) before pydantic checks it
        info = knob_info(cls)
        if isinstance(data, ArgsKwargs):
            kwargs = {k: _prepared(k, info[k], v) if k in info else v for k, v in (data.kwargs or {}).items()}
            return ArgsKwargs(data.args, kwargs)
        if isinstance(data, dict):
            return {k: _prepared(k, info[k], v) if k in info else v for k, v in data.items()}
        return data

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        """(name, default, description with its valid values) of every knob."""
        out = []
        for name, info in knob_info(cls).items():
            desc, default = info.description or "", info.default
            lo, hi = _bounds(info)
            if knob_choices(info):
                desc += f" [one of: {', '.join(knob_choices(info))}]"
            elif lo is not None and hi is not None:
                desc += f" [{lo} to {hi}]"
            elif lo is not None:
                desc += f" [>= {lo}]"
            if isinstance(info.default_factory, EnvDefault):
                env, default = info.default_factory.env, info.default_factory.default
                desc += f" [${env} now: {os.environ[env]!r}]" if os.environ.get(env, "").strip() else ""
            out.append((name, default, desc))
        return out


CiteFormat = Literal["free", "constrained"]
CITE_FORMATS = get_args(CiteFormat)
CITE_FORMAT_HELP = (
    "How the final composition call writes its citations: free = the model writes [n] markers or not, as it "
    "will; constrained = every sentence ends with 1-2 citation markers [n] (n among the numbered documents) "
    "by construction: a llama.cpp grammar on local/llamacpp: models (a sentence ends only with its markers "
    "and a period), a JSON-schema response format ({sentence, citations} list) on openai: models, falling "
    "back to free text, recorded in the answer's warnings, where the server refuses it.")


@context_dataclass
class CiteFormatKnobs:
    """The two knobs of a graph whose final call can cite by construction (``tools.models.cited_sentences``)."""

    cite_format: CiteFormat = knob("free", CITE_FORMAT_HELP)
    cite_max_sentences: int = knob(5, "cite_format=constrained: the answer has at most this many sentences (the grammar "
                                      "or schema bounds it; max_new_tokens still applies).", ge=1, le=30)
    cite_min_sentences: int = knob(1, "cite_format=constrained: the answer has at least this many sentences (the grammar or "
                                      "schema bounds it; capped at cite_max_sentences). With 1 the model may stop "
                                      "after its first cited sentence.", ge=1, le=30)


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


def add_node_calls(old: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Reducer of ``node_calls``: a node run's record (marked ``"new"`` by the node wrapper) is appended; a
    list without the mark is a subgraph handing back the list it was given with its own runs after it
    (a compiled subgraph added as a node returns its whole state), so it takes the old list's place
    instead of being appended a second time."""
    old, new = list(old or []), list(new or [])
    fresh = [{k: v for k, v in e.items() if k != "new"} for e in new if e.get("new")]
    handed_back = [e for e in new if not e.get("new")]
    if handed_back:
        old = handed_back if handed_back[:len(old)] == old else old + handed_back
    return old + fresh


class RunRecord(BaseModel):
    """The Context a run started with (class name and knob values), as a field. Part of every method's
    full state (never of its input or output schema, see :class:`RunContextState`) and the base of
    every ``Send`` payload (a fan-out task's input is its payload, not the state, so the payload carries
    the record: the route that sends it fills it in, ``graphs/base.py``)."""

    run_context: Annotated[dict[str, Any] | None, latest_record] = Field(
        default=None, description="The run's Context (class name and knob values), kept for resumption.")


class RunContextState(RunRecord):
    """Part of every method's full state (never of its input or output schema): the Context the run
    started with, so that a run resumed without one (``Command(resume=...)`` in process, or over the
    LangGraph SDK/Studio, which send none unless asked) goes on with the run's own knobs instead of
    the defaults. Written by the graph's first node (and by any node that runs with another Context),
    read by every later node that runs without one (``graphs/base.py: guard_node``); a Context sent
    with the continuation wins and is recorded in its place."""

    node_calls: Annotated[list[dict[str, Any]], add_node_calls] = Field(
        default_factory=list, description="Each node run that called a model or the verifier: its node, LLM calls, "
                                          "prompt and completion tokens, verifier pairs checked and how many of "
                                          "them came from the score cache (citegraph trace show reads them per "
                                          "step).")
    input_warnings: list[str] = Field(
        default_factory=list, description="What the first node changed in the input (documents cut to the context "
                                          "window); added to the answer's warnings.")
