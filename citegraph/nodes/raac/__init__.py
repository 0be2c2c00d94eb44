"""RAAC nodes: TextAgent (generate / feedback / refine / select_best), CitationAgent (validate /
simplify / discover) and Summary Calibration (prepare / assess / restrict / finalize)."""

from citegraph.nodes.raac.calibration import (
    assess, finalize, prepare, restrict, route_after_assess, route_citation_agent, route_text_agent,
)
from citegraph.nodes.raac.citation_agent import discover, simplify, skip_citation_agent, validate
from citegraph.nodes.raac.text_agent import (
    feedback, generate, refine, route_after_feedback, route_after_refine, select_best, vanilla_generate,
)

__all__ = [
    "assess", "discover", "feedback", "finalize", "generate", "prepare", "refine", "restrict", "route_after_assess",
    "route_after_feedback", "route_after_refine", "route_citation_agent", "route_text_agent", "select_best", "simplify",
    "skip_citation_agent", "validate", "vanilla_generate",
]
