"""GenerationPrograms nodes (generation and post-hoc attribution)."""

from citegraph.nodes.genprog.nodes import attribute, execute_tree, fan_out, plan, prepare_sources, review
from citegraph.nodes.genprog.posthoc import attribute_posthoc, plan_posthoc, prepare_posthoc, review_posthoc

__all__ = ["attribute", "attribute_posthoc", "execute_tree", "fan_out", "plan", "plan_posthoc", "prepare_posthoc",
           "prepare_sources", "review", "review_posthoc"]
