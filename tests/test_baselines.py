"""ALCE baselines SUMM / SNIPPET / RERANK with scripted models and a stub verifier."""

from __future__ import annotations

import json
import re

import pytest

from citegraph.graphs.registry import GRAPHS, build_graph, make_context
from citegraph.run.datasets import Item
from citegraph.run.runner import answer_item
from citegraph.state import Document
from citegraph.tools.verifier import register_verifier

from stubs import KeywordVerifier  # noqa: E402


@pytest.fixture
def docs4():
    return [
        Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann."),
        Document(id="b", title="Beta", text="Beta is a river in Chile."),
        Document(id="c", title="Gamma", text="Gamma won the 1990 prize."),
        Document(id="d", title="Delta", text="Delta is a bakery."),
    ]


def per_doc_script(answer: str, irrelevant=("Beta", "Delta")):
    """Per-document prompts: 'irrelevant' for the named titles, else the document's sentence;
    the answer prompt gets ``answer``."""

    def script(messages, kwargs):
        text = messages[-1].content
        m = re.search(r"Title: (.*)\nText: (.*)\n(?:Summary|Extracted span):", text)
        if m:
            title, body = m.group(1), m.group(2)
            return "irrelevant" if title in irrelevant else body
        return answer

    return script


def answer_prompt(model):
    """The answer prompt's own block (after any demonstrations)."""
    from citegraph.prompts.alce import DEMO_SEP

    full = [c for c in model.calls if "Answer:" in c["messages"][-1].content][-1]["messages"][-1].content
    return full.split(DEMO_SEP)[-1]


@pytest.mark.parametrize("method", ["summ", "snippet"])
def test_irrelevant_documents_dropped_and_citations_mapped_to_original_positions(method, docs4, scripted):
    spec, model = scripted(per_doc_script("Alpha was founded in 1901 [1]. Gamma won the 1990 prize [2]."))
    ans, usage = answer_item(build_graph(method), Item(id="x", question="Q?", documents=docs4), make_context(method, llm=spec))
    # the model saw Alpha as [1] and Gamma as [2]; the answer cites the caller's positions 1 and 3
    assert [s.citations for s in ans.sentences] == [[1], [3]]
    assert ans.documents == docs4 and ans.metadata["shown_documents"] == [1, 3]
    prompt = answer_prompt(model)
    assert "Document [1](Title: Alpha): Alpha was founded in 1901 by Ann." in prompt
    assert "Document [2](Title: Gamma): Gamma won the 1990 prize." in prompt
    assert "Beta" not in prompt and "Delta" not in prompt and "Document [3]" not in prompt
    per_doc = [c for c in model.calls if "Answer:" not in c["messages"][-1].content]
    assert len(per_doc) == 4 and usage["llm_calls"] == 5
    worker = "summarize" if method == "summ" else "extract"
    assert usage["nodes"][worker]["calls"] == 4 and usage["nodes"]["generate"]["calls"] == 1
    kinds = {"summ": "Summarize the following document within 50 words", "snippet": "extract a useful span"}
    assert all(kinds[method] in c["messages"][-1].content for c in per_doc)
    assert ans.metadata["method"] == method


def test_snippet_records_verbatim_spans_as_evidence(docs4, scripted):
    spec, _ = scripted(per_doc_script("Gamma won the 1990 prize [2]."))
    ans, _ = answer_item(build_graph("snippet"), Item(id="x", question="Q?", documents=docs4), make_context("snippet", llm=spec))
    assert ans.sentences[0].citations == [3]
    assert [(e.doc, e.text) for e in ans.sentences[0].evidence] == [(3, "Gamma won the 1990 prize.")]


def test_citation_beyond_the_shown_documents_is_dropped_not_mapped(docs4, scripted):
    # only 2 documents were shown; "[3]" must not become the caller's document 3 (or any other)
    spec, _ = scripted(per_doc_script("Alpha was founded in 1901 [1][3]."))
    ans, _ = answer_item(build_graph("summ"), Item(id="x", question="Q?", documents=docs4), make_context("summ", llm=spec))
    assert ans.sentences[0].citations == [1]
    assert any("[3]" in w for w in ans.warnings)


def test_all_documents_irrelevant_falls_back_to_first_document_full_text(docs4, scripted):
    spec, model = scripted(per_doc_script("Alpha was founded in 1901 [1].", irrelevant=("Alpha", "Beta", "Gamma", "Delta")))
    ans, _ = answer_item(build_graph("summ"), Item(id="x", question="Q?", documents=docs4), make_context("summ", llm=spec))
    assert ans.sentences[0].citations == [1]
    assert "Document [1](Title: Alpha): Alpha was founded in 1901 by Ann." in answer_prompt(model)
    assert ans.metadata["shown_documents"] == [1]


def test_summ_without_documents_still_answers(scripted):
    spec, model = scripted(["No documents."])
    out = build_graph("summ").invoke({"question": "Q?", "documents": []}, context=make_context("summ", llm=spec))
    assert out["answer"].sentences[0].text == "No documents." and len(model.calls) == 1


def test_rerank_keeps_the_highest_recall_candidate(docs4, scripted):
    register_verifier("stub:baselines-kw", KeywordVerifier(spec="stub:baselines-kw"))
    candidates = [
        "Alpha was founded in 1901 [2].",  # recall 0
        "Alpha was founded in 1901 [1]. Beta is a river [3].",  # recall 1/2
        "Alpha was founded in 1901 [1]. Gamma won the 1990 prize [3].",  # recall 1
        "Unsupported.",  # recall 0
    ]
    spec, model = scripted(candidates)
    ctx = make_context("rerank", llm=spec, verifier="stub:baselines-kw")
    assert ctx.n_samples == 4 and ctx.temperature > 0
    ans, usage = answer_item(build_graph("rerank"), Item(id="x", question="Q?", documents=docs4), ctx)
    assert ans.render() == candidates[2]
    assert ans.metadata["chosen"] == 2
    assert [c["recall"] for c in ans.metadata["candidates"]] == [0.0, 0.5, 1.0, 0.0]
    assert len(model.calls) == 4 and all(c["kwargs"]["temperature"] == ctx.temperature for c in model.calls)
    # 5 checks, one repeated (the same sentence cites [1] in two candidates): 4 scored + 1 cache hit
    assert (usage["verifier_pairs"], usage["verifier_cache_hits"]) == (4, 1)
    assert ans.metadata["method"] == "rerank"


def test_rerank_tie_goes_to_the_earlier_sample(docs4, scripted):
    register_verifier("stub:baselines-kw2", KeywordVerifier(spec="stub:baselines-kw2"))
    spec, _ = scripted(["Beta is a river in Chile [2].", "Gamma won the 1990 prize [3]."])
    ctx = make_context("rerank", llm=spec, verifier="stub:baselines-kw2", n_samples=2)
    ans, _ = answer_item(build_graph("rerank"), Item(id="x", question="Q?", documents=docs4), ctx)
    assert ans.metadata["chosen"] == 0 and ans.sentences[0].citations == [2]


def test_baselines_are_registered_for_cli_and_studio():
    from pathlib import Path

    cfg = json.loads((Path(__file__).resolve().parents[1] / "langgraph.json").read_text())
    for name in ("summ", "snippet", "rerank"):
        assert name in GRAPHS
        assert cfg["graphs"][name]["path"] == f"./citegraph/graphs/{name}.py:graph"
        assert build_graph(name).name == name


@pytest.mark.parametrize("method", ["summ", "snippet"])
def test_second_run_on_the_same_thread_uses_only_its_own_documents(method, docs4, scripted):
    # Studio and any checkpointer re-use a thread: the per-document notes (a concatenation
    # reducer) of the first run must not leak into the second run's answer prompt
    from langgraph.checkpoint.memory import MemorySaver

    spec, model = scripted(per_doc_script("Alpha was founded in 1901 [1].", irrelevant=()))
    graph = build_graph(method, checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": "one"}}
    ctx = make_context(method, llm=spec)
    graph.invoke({"question": "Q1?", "documents": docs4}, cfg, context=ctx)
    other = [Document(id="z", title="Zeta", text="Zeta is a letter.")]
    out = graph.invoke({"question": "Q2?", "documents": other}, cfg, context=ctx)
    state = graph.get_state(cfg).values
    assert [n.index for n in state["notes"]] == [1]
    assert state["kept"] == [1]
    prompt = answer_prompt(model)
    assert "Zeta is a letter." in prompt and "Alpha" not in prompt
    assert out["answer"].documents == other
    assert all(c == 1 for s in out["answer"].sentences for c in s.citations)
