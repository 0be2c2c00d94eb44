"""RAAC (Chen et al., Findings of ACL 2026): Reflective Agents with Adaptive Collaboration.

Parent graph::

    START → retrieve → prepare ─┬→ text_agent ───────┬→ citation_agent ──────┬→ assess ─┬→ finalize → END
                                └→ vanilla_generate ─┘→ skip_citation_agent ─┘          └→ restrict → (text_agent | vanilla_generate)

* ``text_agent`` (compiled subgraph): generate → feedback ⇄ refine (conditional edge: stop at the
  maximum score on every aspect or after k rounds) → select_best (argmax over all rounds).
* ``citation_agent`` (compiled subgraph): validate → simplify → discover.
* ``assess`` is Summary Calibration: citation F1 ≥ tau ends the run, else ``restrict`` re-runs both
  agents on D_adp (at most M times); a re-run is kept only if its F1 is higher.
* ``vanilla_generate`` / ``skip_citation_agent`` / ``use_calibration=False`` are the paper's
  Table 5 ablations.

The subgraphs share :class:`RaacState` and receive the parent's Context (LangGraph passes it on).
"""

from __future__ import annotations

from langgraph.graph import END, START

from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.graphs.retrieval import start_with_retrieval
from citegraph.nodes.raac import (
    assess, discover, feedback, finalize, generate, prepare, refine, restrict, route_after_assess,
    route_after_feedback, route_after_refine, route_citation_agent, route_text_agent, select_best, simplify,
    skip_citation_agent, validate, vanilla_generate,
)
from citegraph.state.base import InputState, OutputState
from citegraph.state.raac import RaacContext, RaacState


def build_text_agent(checkpointer=None):
    """TextAgent: initial generation, then feedback/refine rounds; returns the best summary."""
    g = MethodGraph(RaacState, context_schema=RaacContext)
    g.add_node("generate", generate)
    g.add_node("feedback", feedback)
    g.add_node("refine", refine)
    g.add_node("select_best", select_best)
    g.add_edge(START, "generate")
    g.add_edge("generate", "feedback")
    g.add_conditional_edges("feedback", route_after_feedback)
    g.add_conditional_edges("refine", route_after_refine)
    g.add_edge("select_best", END)
    return g.compile(checkpointer=checkpointer, name="text_agent")


def build_citation_agent(checkpointer=None):
    """CitationAgent: Validator → Simplifier → Discovery."""
    g = MethodGraph(RaacState, context_schema=RaacContext)
    g.add_node("validate", validate)
    g.add_node("simplify", simplify)
    g.add_node("discover", discover)
    g.add_edge(START, "validate")
    g.add_edge("validate", "simplify")
    g.add_edge("simplify", "discover")
    g.add_edge("discover", END)
    return g.compile(checkpointer=checkpointer, name="citation_agent")


def build(checkpointer=None):
    g = MethodGraph(RaacState, context_schema=RaacContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("prepare", prepare)
    g.add_node("text_agent", build_text_agent())
    g.add_node("vanilla_generate", vanilla_generate)
    g.add_node("citation_agent", build_citation_agent())
    g.add_node("skip_citation_agent", skip_citation_agent)
    g.add_node("assess", assess)
    g.add_node("restrict", restrict)
    g.add_node("finalize", finalize)
    start_with_retrieval(g, "prepare")
    g.add_conditional_edges("prepare", route_text_agent)
    g.add_conditional_edges("text_agent", route_citation_agent)
    g.add_conditional_edges("vanilla_generate", route_citation_agent)
    g.add_edge("citation_agent", "assess")
    g.add_edge("skip_citation_agent", "assess")
    g.add_conditional_edges("assess", route_after_assess)
    g.add_conditional_edges("restrict", route_text_agent)
    end_with_attribution(g, "finalize")
    return g.compile(checkpointer=checkpointer, name="raac")


graph = build()
