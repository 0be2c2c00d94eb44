"""SQuAI (Besrour et al., CIKM 2025): decompose → per sub-question (Send) retrieve → per document (Send)
answer → judge → adaptive filter → merge → compose the cited answer → attach supporting sentences."""

from __future__ import annotations

from langgraph.graph import START

from citegraph.graphs.attribution import end_with_attribution
from citegraph.graphs.base import MethodGraph
from citegraph.nodes.squai import (
    answer_doc, attach_evidence, collect, compose, decompose, fan_out_documents, fan_out_retrieval, filter_documents,
    judge_doc, merge, retrieve,
)
from citegraph.state.base import InputState, OutputState
from citegraph.state.squai import DocTask, SquaiContext, SquaiState, SubQuestionTask


def build(checkpointer=None):
    g = MethodGraph(SquaiState, context_schema=SquaiContext, input_schema=InputState, output_schema=OutputState)
    g.add_node("decompose", decompose)
    g.add_node("retrieve", retrieve, input_schema=SubQuestionTask)
    g.add_node("collect", collect)
    g.add_node("answer_doc", answer_doc, input_schema=DocTask, destinations=("judge_doc",))
    g.add_node("judge_doc", judge_doc, input_schema=DocTask)
    g.add_node("filter", filter_documents)
    g.add_node("merge", merge)
    g.add_node("compose", compose)
    g.add_node("attach_evidence", attach_evidence)
    g.add_edge(START, "decompose")
    g.add_conditional_edges("decompose", fan_out_retrieval, ["retrieve"])
    g.add_edge("retrieve", "collect")
    g.add_conditional_edges("collect", fan_out_documents, ["answer_doc", "filter"])
    g.add_edge("judge_doc", "filter")
    g.add_edge("filter", "merge")
    g.add_edge("merge", "compose")
    g.add_edge("compose", "attach_evidence")
    end_with_attribution(g, "attach_evidence")
    return g.compile(checkpointer=checkpointer, name="squai")


graph = build()
