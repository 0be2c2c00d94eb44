from citegraph.nodes.alce_baselines.nodes import (
    attribute_snippet, attribute_summ, extract, fan_out_extract, fan_out_summarize, generate_from_snippets,
    generate_from_summaries, prepare_notes, rerank, sample, summarize,
)

__all__ = [
    "attribute_snippet", "attribute_summ", "extract", "fan_out_extract", "fan_out_summarize",
    "generate_from_snippets", "generate_from_summaries", "prepare_notes", "rerank", "sample", "summarize",
]
