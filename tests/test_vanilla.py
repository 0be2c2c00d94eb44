"""VANILLA graph with a scripted model: prompt format, parsing, Context, and usage accounting."""

from __future__ import annotations

from citegraph import VanillaContext, build_graph
from citegraph.run.datasets import Item
from citegraph.run.runner import answer_item


def test_vanilla_graph_end_to_end_scripted(docs, scripted):
    spec, model = scripted(["Alpha was founded in 1901 [1]. Beta is a river [2][7]. Unsupported claim."])
    g = build_graph("vanilla")
    out = g.invoke({"question": "What are Alpha and Beta?", "documents": [d.model_dump() for d in docs]},
                   context=VanillaContext(llm=spec))
    ans = out["answer"]
    assert [s.citations for s in ans.sentences] == [[1], [2], []]
    assert any("[7]" in w for w in ans.warnings)
    assert ans.metadata["method"] == "vanilla"
    prompt = model.calls[0]["messages"][-1].content
    assert "Document [1](Title: Alpha): Alpha was founded in 1901 by Ann." in prompt
    assert prompt.rstrip().endswith("Answer:")
    assert "Question: What are Alpha and Beta?" in prompt


def test_vanilla_demos_from_alce_prompt_file(docs, scripted, tmp_path):
    import json

    f = tmp_path / "p.json"
    f.write_text(json.dumps({
        "instruction": "INSTR", "demo_sep": "\n\n\n", "demo_prompt": "{INST}\n\nQuestion: {Q}\n\n{D}\nAnswer: {A}",
        "doc_prompt": "Document [{ID}](Title: {T}): {P}\n",
        "demos": [{"question": "DQ1", "answer": "DA1 [1].", "docs": [{"title": "T", "text": "X"}]},
                  {"question": "DQ2", "answer": "DA2 [1].", "docs": [{"title": "T", "text": "Y"}]}],
    }))
    spec, model = scripted(["Alpha [1]."])
    build_graph("vanilla").invoke({"question": "Q", "documents": docs},
                                  context=VanillaContext(llm=spec, demos_file=str(f), ndemo=1))
    prompt = model.calls[0]["messages"][-1].content
    assert prompt.count("INSTR") == 2 and "DQ1" in prompt and "DQ2" not in prompt


def test_answer_item_counts_usage_per_node(docs, scripted):
    spec, _ = scripted(["Alpha [1]."])
    ans, usage = answer_item(build_graph("vanilla"), Item(id="x", question="Q", documents=docs), VanillaContext(llm=spec))
    assert usage["llm_calls"] == 1
    assert usage["completion_tokens"] == 2
    assert usage["nodes"]["generate"]["calls"] == 1
    assert "attribute" in usage["nodes"] and usage["nodes"]["attribute"]["runs"] == 1
    assert ans.metadata["usage"]["llm_calls"] == 1


def test_builtin_one_shot_demo_by_default_and_off_with_ndemo_0(docs, scripted):
    from citegraph.prompts.alce import BUILTIN_DEMO, DEMO_SEP

    spec, model = scripted(["Alpha [1]."])
    g = build_graph("vanilla")
    g.invoke({"question": "Q", "documents": docs}, context=VanillaContext(llm=spec))
    g.invoke({"question": "Q", "documents": docs}, context=VanillaContext(llm=spec, ndemo=0))
    with_demo, without = (c["messages"][-1].content for c in model.calls)
    assert with_demo.count(DEMO_SEP) == 1 and BUILTIN_DEMO["answer"] in with_demo
    assert BUILTIN_DEMO["question"] not in without and with_demo.endswith(without)
