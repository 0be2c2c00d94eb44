"""Registry of method graphs: name → :class:`GraphEntry` (its graph's ``build``, its Context class, and
the module that says how it reads outside a run), each imported here, so a reader or an IDE follows a
run into the method. A command resolves the entry once
(:func:`entry`) and asks it for what it needs: ``build()``, ``context_class()``, ``make_context()``,
``describe_event(ev)``, ``trace_view(metadata)``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import citegraph.state as pkg
from citegraph.errors import InputError
from citegraph.graphs import cite, genprog, genprog_posthoc, ginger, odmds, raac, rag, rerank, snippet, squai, summ, vanilla
from citegraph.graphs.presets import preset_overrides
from citegraph.nodes.genprog import display as genprog_display
from citegraph.nodes.raac import display as raac_display
from citegraph.nodes.squai import display as squai_display
from citegraph.state.alce_baselines import RerankContext, SnippetContext, SummContext
from citegraph.state.base import knob_names, unknown_settings
from citegraph.state.cite import CiteContext
from citegraph.state.genprog import GenProgContext, GenProgPosthocContext
from citegraph.state.ginger import GingerContext
from citegraph.state.odmds import OdmdsContext
from citegraph.state.raac import RaacContext
from citegraph.state.squai import RagContext, SquaiContext
from citegraph.state.vanilla import VanillaContext


@dataclass(frozen=True)
class GraphEntry:
    name: str
    build_fn: Callable[..., Any]  # the method's graphs/<method>.py build(checkpointer=None)
    context: type  # its Context class
    summary: str
    answer_input: str | None = None  # an input the method needs beside question/documents (an answer to attribute)
    # the method's describe_event(ev) / trace_view(metadata) (citegraph/nodes/display.py says what they return)
    display: ModuleType | None = None

    def build(self, checkpointer=None):
        """Compile the method's graph (see :func:`build_graph`)."""
        if checkpointer is not None and hasattr(checkpointer, "with_allowlist"):
            checkpointer = checkpointer.with_allowlist(state_types())
        return self.build_fn(checkpointer=checkpointer)

    def context_class(self) -> type:
        return self.context

    def knob_names(self) -> set[str]:
        return knob_names(self.context)

    def make_context(self, **overrides: Any) -> Any:
        """The method's Context with overrides; unknown keys are rejected with a clear error."""
        known = self.knob_names()
        bad = sorted(set(overrides) - known)
        if bad:
            raise InputError(unknown_settings(self.name, bad, known))
        return self.context(**overrides)

    def _display(self, name: str, arg: Any) -> Any:
        fn = getattr(self.display, name, None) if self.display is not None else None
        return fn(arg) if fn else None

    def describe_event(self, ev: dict) -> str | None:
        """One line for a progress event of this method's nodes; None when it has no words for it."""
        return self._display("describe_event", ev)

    def trace_view(self, metadata: dict) -> dict | None:
        """What ``citegraph show`` renders of this method's trace; None: a key/value table of it."""
        return self._display("trace_view", metadata)


GRAPHS: dict[str, GraphEntry] = {
    "vanilla": GraphEntry("vanilla", vanilla.build, VanillaContext,
                          "ALCE VANILLA: one prompt with all documents; the LLM cites as [n]."),
    "summ": GraphEntry("summ", summ.build, SummContext,
                       "ALCE SUMM: per-document query-focused summaries (irrelevant ones dropped), then answer."),
    "snippet": GraphEntry("snippet", snippet.build, SnippetContext,
                          "ALCE SNIPPET: per-document extracted spans (irrelevant ones dropped), then answer."),
    "rerank": GraphEntry("rerank", rerank.build, RerankContext,
                         "ALCE RERANK: sample n answers, keep the highest ALCE citation recall (verifier)."),
    "raac": GraphEntry("raac", raac.build, RaacContext,
                       "RAAC: TextAgent feedback/refine loop, CitationAgent validate/simplify/discover, Summary Calibration.",
                       display=raac_display),
    "genprog": GraphEntry("genprog", genprog.build, GenProgContext,
                          "GenerationPrograms: plan a program of text modules over S-ids, parse safely, execute, cite the leaves.",
                          display=genprog_display),
    "genprog-posthoc": GraphEntry("genprog-posthoc", genprog_posthoc.build, GenProgPosthocContext,
                                  "GenerationPrograms post-hoc: a program reconstructs each given answer sentence; its leaves are the attributions.",
                                  answer_input="answer_text", display=genprog_display),
    "ginger": GraphEntry("ginger", ginger.build, GingerContext,
                         "GINGER: verbatim nuggets per passage, facet clusters, pairwise-ranked, one cited sentence per cluster to a budget."),
    "odmds": GraphEntry("odmds", odmds.build, OdmdsContext,
                        "Graph-augmented ODMDS: hybrid retrieval from a corpus, chunk-graph (GAE) cluster re-rank, cluster topics, tiered refinement, cited summary."),
    "squai": GraphEntry("squai", squai.build, SquaiContext,
                        "SQuAI: decompose, hybrid retrieval per sub-question, per-document answer + Yes/No log-odds judge, adaptive filter, cited answer with supporting sentences.",
                        display=squai_display),
    "cite": GraphEntry("cite", cite.build, CiteContext,
                       "cite: attribute a given text; each sentence's citations checked, re-pointed or added by the verifier (no LLM), unsupported ones flagged.",
                       answer_input="answer_text"),
    "rag": GraphEntry("rag", rag.build, RagContext,
                      "Standard RAG (SQuAI's baseline): hybrid top-10 in one prompt, with an [n] citation instruction."),
}


def names() -> list[str]:
    return list(GRAPHS)


def answer_methods() -> list[str]:
    """The methods that attribute a given answer (their entry's ``answer_input``)."""
    return [n for n, e in GRAPHS.items() if e.answer_input]


def entry(name: str) -> GraphEntry:
    if name not in GRAPHS:
        raise InputError(f"unknown method {name!r}; available: {', '.join(GRAPHS)}")
    return GRAPHS[name]


def build_graph(name: str, checkpointer=None):
    """Compile the graph of a method. ``build_graph("vanilla").invoke({...}, context=VanillaContext())``.

    A checkpointer whose serializer is strict (``citegraph.tools.checkpoints.open_checkpointer``'s)
    gets the types of ``citegraph.state`` added to its allowlist; a permissive one is used as given."""
    return entry(name).build(checkpointer)


def state_types() -> set[tuple[str, str]]:
    """(module, name) of every class defined in the ``citegraph.state`` modules and of every citegraph
    class their annotations reach (e.g. ``state.program.ProgramTree``, a parsed program a method's state holds):
    what a checkpoint of any method may hold beside LangGraph's own safe types."""
    import inspect
    import pkgutil
    import typing

    out: set[tuple[str, str]] = set()
    todo: list = []
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        todo += [c for _, c in inspect.getmembers(mod, inspect.isclass) if c.__module__ == mod.__name__]
    seen: set[int] = set()
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        todo += list(typing.get_args(t))
        if not inspect.isclass(t) or not t.__module__.startswith("citegraph."):
            continue
        out.add((t.__module__, t.__name__))
        try:
            todo += list(typing.get_type_hints(t).values())
        except Exception:  # noqa: BLE001 - an unresolvable annotation: the class itself is still listed
            pass
    return out


def context_class(name: str):
    return entry(name).context_class()


def make_context(name: str, **overrides):
    """The method's Context with overrides; unknown keys are rejected with a clear error."""
    return entry(name).make_context(**overrides)


def method_context(method: str | GraphEntry, overrides: dict[str, Any] | None = None, *, preset: str | None = None,
                   llm: str | None = None, verifier: str | None = None, only_known: bool = False) -> Any:
    """The method's Context as every command builds it: the ``preset``'s settings for this method, then
    ``overrides`` (``--set``, a subcommand's flags, a bench variant's own settings), then ``llm`` /
    ``verifier`` where the method has them. ``only_known``: overrides the method has no knob for are
    left out (settings given to several methods at once); else they are an InputError."""
    e = method if isinstance(method, GraphEntry) else entry(method)
    known = e.knob_names()
    kw = {**preset_overrides(preset, e.name), **(overrides or {})}
    if only_known:
        kw = {k: v for k, v in kw.items() if k in known}
    for key, val in (("llm", llm), ("verifier", verifier)):
        if val and key in known:
            kw[key] = val
    return e.make_context(**kw)
