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
    answer_input: str | None = None  # an input the method needs beside question/documents (an answer to attribute)


GRAPHS: dict[str, GraphEntry] = {
    "vanilla": GraphEntry("vanilla", "citegraph.graphs.vanilla", "citegraph.state.vanilla:VanillaContext",
                          "ALCE VANILLA: one prompt with all documents; the LLM cites as [n]."),
    "summ": GraphEntry("summ", "citegraph.graphs.summ", "citegraph.state.alce_baselines:SummContext",
                       "ALCE SUMM: per-document query-focused summaries (irrelevant ones dropped), then answer."),
    "snippet": GraphEntry("snippet", "citegraph.graphs.snippet", "citegraph.state.alce_baselines:SnippetContext",
                          "ALCE SNIPPET: per-document extracted spans (irrelevant ones dropped), then answer."),
    "rerank": GraphEntry("rerank", "citegraph.graphs.rerank", "citegraph.state.alce_baselines:RerankContext",
                         "ALCE RERANK: sample n answers, keep the highest ALCE citation recall (verifier)."),
    "raac": GraphEntry("raac", "citegraph.graphs.raac", "citegraph.state.raac:RaacContext",
                       "RAAC: TextAgent feedback/refine loop, CitationAgent validate/simplify/discover, Summary Calibration."),
    "genprog": GraphEntry("genprog", "citegraph.graphs.genprog", "citegraph.state.genprog:GenProgContext",
                          "GenerationPrograms: plan a program of text modules over S-ids, parse safely, execute, cite the leaves."),
    "genprog-posthoc": GraphEntry("genprog-posthoc", "citegraph.graphs.genprog_posthoc", "citegraph.state.genprog:GenProgPosthocContext",
                                  "GenerationPrograms post-hoc: a program reconstructs each given answer sentence; its leaves are the attributions.",
                                  answer_input="answer_text"),
    "ginger": GraphEntry("ginger", "citegraph.graphs.ginger", "citegraph.state.ginger:GingerContext",
                         "GINGER: verbatim nuggets per passage, facet clusters, pairwise-ranked, one cited sentence per cluster to a budget."),
    "odmds": GraphEntry("odmds", "citegraph.graphs.odmds", "citegraph.state.odmds:OdmdsContext",
                        "Graph-augmented ODMDS: hybrid retrieval from a corpus, chunk-graph (GAE) cluster re-rank, cluster topics, tiered refinement, cited summary."),
    "squai": GraphEntry("squai", "citegraph.graphs.squai", "citegraph.state.squai:SquaiContext",
                        "SQuAI: decompose, hybrid retrieval per sub-question, per-document answer + Yes/No log-odds judge, adaptive filter, cited answer with supporting sentences."),
    "cite": GraphEntry("cite", "citegraph.graphs.cite", "citegraph.state.cite:CiteContext",
                       "cite: attribute a given text; each sentence's citations checked, re-pointed or added by the verifier (no LLM), unsupported ones flagged.",
                       answer_input="answer_text"),
    "rag": GraphEntry("rag", "citegraph.graphs.rag", "citegraph.state.squai:RagContext",
                      "Standard RAG (SQuAI's baseline): hybrid top-10 in one prompt, with an [n] citation instruction."),
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
    """Compile the graph of a method. ``build_graph("vanilla").invoke({...}, context=VanillaContext())``.

    A checkpointer whose serializer is strict (``citegraph.tools.checkpoints.open_checkpointer``'s)
    gets the types of ``citegraph.state`` added to its allowlist; a permissive one is used as given."""
    if checkpointer is not None and hasattr(checkpointer, "with_allowlist"):
        checkpointer = checkpointer.with_allowlist(state_types())
    return importlib.import_module(entry(name).module).build(checkpointer=checkpointer)


def state_types() -> set[tuple[str, str]]:
    """(module, name) of every class defined in the ``citegraph.state`` modules and of every citegraph
    class their annotations reach (e.g. ``tools.program.ProgramTree`` in GenerationPrograms' state):
    what a checkpoint of any method may hold beside LangGraph's own safe types."""
    import inspect
    import pkgutil
    import typing

    import citegraph.state as pkg

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
