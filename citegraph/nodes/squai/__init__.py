"""SQuAI nodes (four agents, hybrid retrieval, adaptive filter) and the standard RAG baseline."""

from citegraph.nodes.squai.nodes import (
    answer_doc, attach_evidence, collect, compose, decompose, fan_out_documents, fan_out_retrieval, filter_documents,
    judge_doc, merge, retrieve,
)

__all__ = ["answer_doc", "attach_evidence", "collect", "compose", "decompose", "fan_out_documents", "fan_out_retrieval",
           "filter_documents", "judge_doc", "merge", "retrieve"]
