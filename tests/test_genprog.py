"""GenerationPrograms graphs with a scripted LLM: planning, nesting, trace attribution, refinement
(stub verifier), review interrupt/resume (MemorySaver), pre-steps and post-hoc attribution."""

from __future__ import annotations

import uuid

import pytest
from langgraph.checkpoint.memory import MemorySaver
from langgraph.types import Command

from citegraph.graphs.registry import build_graph, make_context
from citegraph.state import Document
from citegraph.state.genprog import GenProgContext, GenProgPosthocContext
from citegraph.testing import stub_verifier

DOCS = [
    Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann. It is based in Paris."),
    Document(id="b", title="Beta", text="Beta is a river in Chile."),
    Document(id="c", title="Gamma", text="Gamma won the 1990 prize. Gamma has red leaves."),
]
# S1 Alpha founded / S2 Paris (doc 1); S3 Beta river (doc 2); S4 Gamma prize / S5 red leaves (doc 3)


def router(program: str, modules: dict[str, str] | None = None, **other):
    """A scripted LLM that answers by prompt type; module replies keyed by the module's first word."""
    modules = modules or {}

    def reply(messages, kwargs):
        text = messages[-1].content
        if "**YOUR TASK**" in text:
            return program if isinstance(program, str) else program(text, kwargs)
        for key, val in other.items():
            if key in text:
                return val(text, kwargs) if callable(val) else val
        first = text.split()[0]
        val = modules.get(first, "")
        return val(text, kwargs) if callable(val) else val

    return reply


def run(scripted, script, **ctx):
    spec, model = scripted(script)
    out = build_graph("genprog").invoke({"question": "What are Alpha and Beta?", "documents": DOCS},
                                        context=GenProgContext(llm=spec, **ctx))
    return out["answer"], model


def test_planning_nesting_and_trace_attribution(scripted):
    program = ('```python\n'
               '- fusion(compression(S1, instruction="Keep the year."), S3, instruction="Join.")\n'
               '- paraphrase(extract(S4))\n```')
    ans, model = run(scripted, router(program, {
        "Compress": "Output: Alpha was founded in 1901.",
        "Fuse": "Alpha dates from 1901 and Beta is a Chilean river.",
        "Paraphrase": '"Gamma received the 1990 prize."',
    }))
    assert [s.text for s in ans.sentences] == ["Alpha dates from 1901 and Beta is a Chilean river.",
                                               "Gamma received the 1990 prize."]
    assert [s.citations for s in ans.sentences] == [[1, 2], [3]]
    ev = ans.sentences[0].evidence
    assert [(e.doc, e.sentence_id, e.text) for e in ev] == [
        (1, "S1", "Alpha was founded in 1901 by Ann."), (2, "S3", "Beta is a river in Chile.")]
    assert ans.sentences[1].evidence[0].sentence_id == "S4"
    assert ans.metadata["method"] == "genprog" and ans.warnings == []
    assert ans.metadata["modules"] == 4 and ans.metadata["llm_modules"] == 3
    # the planner saw the passages with global ids, the modules saw the right inputs and instruction
    prompts = [c["messages"][-1].content for c in model.calls]
    plan_prompt = next(p for p in prompts if "**YOUR TASK**" in p)
    assert "Passage 1:\nS1: Alpha was founded in 1901 by Ann.\nS2: It is based in Paris." in plan_prompt
    assert "Passage 3:\nS4: Gamma won the 1990 prize." in plan_prompt
    fuse = next(p for p in prompts if p.startswith("Fuse"))
    assert "Alpha was founded in 1901.\nBeta is a river in Chile." in fuse and "Join." in fuse
    para = next(p for p in prompts if p.startswith("Paraphrase"))
    assert "Gamma won the 1990 prize." in para and "**Instruction**" not in para


def test_answer_length_cap_in_prompt_and_program(scripted):
    program = "\n".join(f"- extract(S{i})" for i in (1, 2, 3, 4, 5))
    ans, model = run(scripted, router(program), max_answer_sentences=3)
    assert [s.text for s in ans.sentences] == ["Alpha was founded in 1901 by Ann.", "It is based in Paris.",
                                               "Beta is a river in Chile."]
    assert any("program kept the first 3" in w or "truncated" in w for w in ans.warnings), ans.warnings
    assert ans.metadata["program_errors"][-1]["kind"] == "truncated"
    assert "Write at most 3 bullets" in model.calls[0]["messages"][-1].content
    ans, model = run(scripted, router(program), max_answer_sentences=0)  # the paper's prompt: no cap
    assert len(ans.sentences) == 5 and not ans.warnings
    assert "[Length]" not in model.calls[0]["messages"][-1].content


def test_module_trace_in_state(scripted):
    spec, _ = scripted(router("- fusion(paraphrase(S2), S5)", {"Paraphrase": "Alpha is in Paris.", "Fuse": "F."}))
    g = build_graph("genprog", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    g.invoke({"question": "Q", "documents": DOCS}, cfg, context=GenProgContext(llm=spec))
    st = g.get_state(cfg).values
    ex = sorted(st["executions"], key=lambda e: e.path)
    assert [(e.path, e.fn, e.inputs, e.output) for e in ex] == [
        ("0", "fusion", ["Alpha is in Paris.", "Gamma has red leaves."], "F."),
        ("0.0", "paraphrase", ["It is based in Paris."], "Alpha is in Paris."),
    ]
    assert ex[0].leaves == ["S2", "S5"] and st["trees"][0].leaves() == ["S2", "S5"]
    assert st["program_text"] == "- fusion(paraphrase(S2), S5)"


def test_invalid_trees_are_dropped_with_typed_errors_every_sentence_cited(scripted):
    program = ("Here you go:\n- __import__('os').system('touch /tmp/genprog_pwned')\n- paraphrase(S42)\n"
               "- compression(S2\n- fusion(S3)")
    ans, _ = run(scripted, router(program, {"Compress": "Alpha is in Paris."}))
    assert [s.text for s in ans.sentences] == ["Alpha is in Paris."]
    assert all(s.citations for s in ans.sentences)
    kinds = [e["kind"] for e in ans.metadata["program_errors"]]
    assert kinds == ["not_a_call", "unknown_function", "unknown_id", "arity"]
    assert len(ans.warnings) == 4 and "unknown_id" in ans.warnings[2]


def test_planner_retry_then_empty_answer_with_errors(scripted):
    calls = []

    def prog(text, kwargs):
        calls.append(kwargs.get("temperature"))
        return "I cannot write a program."

    ans, _ = run(scripted, router(prog), plan_attempts=2)
    assert ans.sentences == [] and len(calls) == 2 and calls[1] == 0.7
    assert [e["kind"] for e in ans.metadata["program_errors"]] == ["not_a_call", "not_a_call"]


def test_empty_module_output_falls_back_to_input(scripted):
    # a reply with nothing left once its "Output:" label is cleaned off: the input is kept
    ans, _ = run(scripted, router("- compression(S3)", {"Compress": "Output:"}))
    assert ans.sentences[0].text == "Beta is a river in Chile." and ans.sentences[0].citations == [2]


def test_an_empty_module_reply_is_a_model_failure(scripted):
    # an empty reply is the model failing, not a module output: the item fails, visibly
    from citegraph.errors import ModelReplyError

    with pytest.raises(ModelReplyError, match="empty reply"):
        run(scripted, router("- compression(S3)", {"Compress": ""}))


def test_refinement_resamples_until_entailed(scripted):
    from citegraph.tools.verifier import FunctionVerifier, register_verifier

    vspec = f"stub:{uuid.uuid4().hex[:6]}"
    register_verifier(vspec, FunctionVerifier(lambda p, h: 0.0 if "WRONG" in h else 1.0, spec=vspec))
    temps = []

    def compress(text, kwargs):
        temps.append(kwargs.get("temperature"))
        return ["WRONG one.", "WRONG two.", "Beta is a river."][min(len(temps) - 1, 2)]

    ans, _ = run(scripted, router("- compression(S3)\n- extract(S1)\n- paraphrase(S4)", {
        "Compress": compress, "Paraphrase": "Gamma won a prize in 1990."}), refine=True, verifier=vspec)
    assert ans.sentences[0].text == "Beta is a river."
    assert temps == [0.0, 1.0, 1.0]
    assert ans.metadata["entailment_rate_before"] == 0.5  # compression failed, paraphrase passed
    assert ans.metadata["entailment_rate_after"] == 1.0


def test_refinement_keeps_first_candidate_when_none_entailed(scripted):
    from citegraph.tools.verifier import FunctionVerifier, register_verifier

    vspec = f"stub:{uuid.uuid4().hex[:6]}"
    register_verifier(vspec, FunctionVerifier(lambda p, h: 0.1, spec=vspec))
    n = []

    def para(text, kwargs):
        n.append(1)
        return f"Candidate {len(n)}."

    spec, _ = scripted(router("- paraphrase(S3)", {"Paraphrase": para}))
    g = build_graph("genprog", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": "r"}}
    out = g.invoke({"question": "Q", "documents": DOCS}, cfg,
                   context=GenProgContext(llm=spec, refine=True, verifier=vspec, max_candidates=5))
    assert out["answer"].sentences[0].text == "Candidate 1."
    ex = g.get_state(cfg).values["executions"][0]
    assert len(ex.candidates) == 5 and ex.entailed_before is False and ex.entailed_after is False
    assert out["answer"].metadata["entailment_rate_after"] == 0.0


def test_review_interrupt_and_resume_with_edited_program(scripted):
    spec, model = scripted(router("- paraphrase(S1)", {"Paraphrase": "P.", "Compress": "Gamma won in 1990."}))
    g = build_graph("genprog", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = GenProgContext(llm=spec, review_program=True)
    out = g.invoke({"question": "Q", "documents": DOCS}, cfg, context=ctx)
    intr = out["__interrupt__"][0].value
    assert intr["program"] == "- paraphrase(S1)" and intr["parsed"] == "- paraphrase(S1)"
    assert intr["sources"]["S4"] == "Gamma won the 1990 prize."
    assert not any(c["messages"][-1].content.startswith("Paraphrase") for c in model.calls)  # nothing executed yet
    out = g.invoke(Command(resume="- compression(S4)\n- bogus(S1)"), cfg, context=ctx)
    ans = out["answer"]
    assert [(s.text, s.citations) for s in ans.sentences] == [("Gamma won in 1990.", [3])]
    assert ans.metadata["reviewed"] and ans.metadata["program"].startswith("- compression(S4)")
    assert [e["kind"] for e in ans.metadata["program_errors"]] == ["unknown_function"]


def test_review_resume_accepts_program(scripted):
    spec, _ = scripted(router("- paraphrase(S1)", {"Paraphrase": "Alpha began in 1901."}))
    g = build_graph("genprog", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = GenProgContext(llm=spec, review_program=True)
    g.invoke({"question": "Q", "documents": DOCS}, cfg, context=ctx)
    out = g.invoke(Command(resume="accept"), cfg, context=ctx)  # (resume=None trips a langgraph bug)
    assert [(s.text, s.citations) for s in out["answer"].sentences] == [("Alpha began in 1901.", [1])]


def test_relevance_filter_and_extractive_qfs_keep_only_verbatim_sentences(scripted):
    def relevance(text, kwargs):
        return "No" if "(Title: Gamma)" in text else "Yes"

    def pick(text, kwargs):
        if "Title: Alpha" in text:  # one verbatim, one hallucinated, one verbatim with a bullet
            return "It is based in Paris.\nAlpha is very old.\n- Alpha was founded in 1901 by Ann."
        return "Beta is a long river."  # not verbatim: rejected

    seen = {}

    def prog(text, kwargs):
        seen["prompt"] = text
        return "- extract(S1)\n- extract(S5)"

    ans, _ = run(scripted, router(prog, {}, **{'Answer "Yes" or "No"': relevance, "Do not change the sentences": pick}),
                 relevance_filter=True, qfs_mode="extractive", qfs_sentences=2)
    p = seen["prompt"].split("**YOUR TASK**")[1]
    assert "S1: Alpha was founded" in p and "S2: It is based in Paris." in p
    assert "S3:" not in p and "Gamma" not in p
    assert [(s.text, s.citations) for s in ans.sentences] == [("Alpha was founded in 1901 by Ann.", [1])]
    assert [e["kind"] for e in ans.metadata["program_errors"]] == ["unknown_id"]  # S5 was filtered out
    assert ans.metadata["dropped_documents"] == [3]
    assert any("rejected 1" in n for n in ans.metadata["prestep_notes"])


def test_extract_then_generate_cites_through_origins(scripted):
    def pick(text, kwargs):
        return "Beta is a river in Chile." if "Title: Beta" in text else "nothing verbatim"

    def prog(text, kwargs):
        return "- extract(S6)"  # the first generated summary sentence (ids continue after S5)

    ans, _ = run(scripted, router(prog, {}, **{"Do not change the sentences": pick,
                                               "revise the summary into": "- Beta flows through Chile."}),
                 qfs_mode="extract_then_generate", qfs_sentences=1)
    s = ans.sentences[0]
    assert s.text == "Beta flows through Chile." and s.citations == [2]
    assert [(e.sentence_id, e.text) for e in s.evidence] == [("S3", "Beta is a river in Chile.")]


def test_bad_qfs_mode_is_input_error(scripted):
    from citegraph.errors import InputError

    with pytest.raises(InputError, match="qfs_mode must be one of none, extractive, abstractive, extract_then_generate"):
        run(scripted, router("- extract(S1)"), qfs_mode="bogus")


# ----------------------------------------------------------------------------- post-hoc
def test_posthoc_per_sentence(scripted):
    def prog(text, kwargs):
        if "1. Alpha is in Paris" in text:
            return "- compression(S2)"
        if "1. Unsupported" in text:
            return "No sentence supports this."
        return "- fusion(S4, S5)\n- extract(S3)"  # two bullets for one sentence: merged

    spec, _ = scripted(router(prog))
    out = build_graph("genprog-posthoc").invoke(
        {"question": "Q", "documents": DOCS, "answer_text": "Alpha is in Paris. Gamma won and Beta flows. Unsupported."},
        context=GenProgPosthocContext(llm=spec, plan_attempts=1, attribution="off"))
    ans = out["answer"]
    assert [s.text for s in ans.sentences] == ["Alpha is in Paris.", "Gamma won and Beta flows.", "Unsupported."]
    assert [s.citations for s in ans.sentences] == [[1], [3, 2], []]
    assert [e.sentence_id for e in ans.sentences[1].evidence] == ["S4", "S5", "S3"]
    assert ans.metadata["method"] == "genprog-posthoc"
    assert any("sentence 3: no valid program" in w for w in ans.warnings)
    assert [(e["kind"], e["line"]) for e in ans.metadata["program_errors"]] == [("not_a_call", 3)]


def test_posthoc_joint_program_maps_bullets_in_order(scripted):
    spec, model = scripted(router("Program:\n- paraphrase(S3)\n- extract(S1)"))
    out = build_graph("genprog-posthoc").invoke(
        {"question": "Q", "documents": DOCS, "answer_text": "Beta flows in Chile. Alpha is old."},
        context=make_context("genprog-posthoc", llm=spec, per_sentence=False, attribution="off"))
    assert [s.citations for s in out["answer"].sentences] == [[2], [1]]
    assert len(model.calls) == 1
    assert "1. Beta flows in Chile.\n2. Alpha is old." in model.calls[0]["messages"][-1].content


def test_posthoc_review_resume(scripted):
    spec, _ = scripted(router("- extract(S1)"))
    g = build_graph("genprog-posthoc", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = GenProgPosthocContext(llm=spec, review_program=True)
    out = g.invoke({"question": "Q", "documents": DOCS, "answer_text": "Beta is in Chile."}, cfg, context=ctx)
    assert out["__interrupt__"][0].value["answer_sentences"] == ["Beta is in Chile."]
    out = g.invoke(Command(resume={"program": "- extract(S3)"}), cfg, context=ctx)
    assert out["answer"].sentences[0].citations == [2]


def test_second_run_on_same_thread_does_not_mix_in_the_first(scripted):
    """Send results accumulate through a reducer; a new run on a checkpointed thread starts clean."""
    spec, _ = scripted(router(lambda text, kw: "- compression(S1)" if "Q2" in text else "- paraphrase(S1)\n- extract(S3)",
                              {"Paraphrase": "Alpha began in 1901.", "Compress": "Gamma won."}))
    g = build_graph("genprog", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    first = g.invoke({"question": "Q", "documents": DOCS}, cfg, context=GenProgContext(llm=spec))["answer"]
    assert [s.text for s in first.sentences] == ["Alpha began in 1901.", "Beta is a river in Chile."]
    second = g.invoke({"question": "Q2", "documents": DOCS[2:]}, cfg, context=GenProgContext(llm=spec))["answer"]
    assert [(s.text, s.citations) for s in second.sentences] == [("Gamma won.", [1])]
    st = g.get_state(cfg).values
    assert [e.fn for e in st["executions"]] == ["compression"] and len(st["results"]) == 1
    assert st["reviewed"] is False


def test_review_edited_program_multiline_and_capped(scripted):
    spec, _ = scripted(router("- paraphrase(S1)", {"Fuse": "Gamma won; Beta flows.", "Compress": "Gamma won.",
                                                    "Paraphrase": "P."}))
    g = build_graph("genprog", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = GenProgContext(llm=spec, review_program=True, max_answer_sentences=1)
    out = g.invoke({"question": "Q", "documents": DOCS}, cfg, context=ctx)
    assert '"accept"' in out["__interrupt__"][0].value["hint"]
    edited = '```python\n- fusion(\n    compression(S4),\n    S3,\n    instruction="Join."\n  )\n- extract(S1)\n```'
    ans = g.invoke(Command(resume=edited), cfg, context=ctx)["answer"]
    # the pretty-printed call is one sentence citing S4 and S3; the second bullet is cut by the cap
    assert [(s.text, s.citations) for s in ans.sentences] == [("Gamma won; Beta flows.", [3, 2])]
    assert [e["kind"] for e in ans.metadata["program_errors"]] == ["truncated"]


def test_posthoc_review_maps_edited_bullets_in_order(scripted):
    spec, _ = scripted(router("- extract(S1)"))
    g = build_graph("genprog-posthoc", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = GenProgPosthocContext(llm=spec, review_program=True)
    g.invoke({"question": "Q", "documents": DOCS, "answer_text": "Beta is in Chile. Alpha is old. Gamma won."}, cfg, context=ctx)
    # a fence, a comment line and a blank line do not shift the sentences; a bare '-' leaves one uncited
    edited = "Here is the program:\n```\n- extract(S3)\n\n-\n- compression(S4)\n```"
    ans = g.invoke(Command(resume=edited), cfg, context=ctx)["answer"]
    assert [s.citations for s in ans.sentences] == [[2], [], [3]]


def test_relevance_verdicts_and_module_prompt_placeholders():
    from citegraph.nodes.genprog.sources import is_yes
    from citegraph.prompts.genprog import module_prompt

    assert [is_yes(x) for x in ("Not relevant.", "Irrelevant", "No", "Yes.", "Relevant", "unsure")] == [
        False, False, False, True, True, None]
    p = module_prompt("fusion", ["One [[QUESTION_BLOCK]].", "Two."], instruction="Keep [[SENTENCE]].", question="Q?")
    assert "Keep [[SENTENCE]]." in p and "One [[QUESTION_BLOCK]]." in p and p.count("Q?") == 1


def test_registry_and_langgraph_json():
    import json
    from pathlib import Path

    from citegraph.graphs.registry import GRAPHS

    assert {"genprog", "genprog-posthoc"} <= set(GRAPHS)
    cfg = json.loads((Path(__file__).resolve().parents[1] / "langgraph.json").read_text())
    assert cfg["graphs"]["genprog"]["path"].endswith("genprog.py:graph")
    assert cfg["graphs"]["genprog-posthoc"]["path"].endswith("genprog_posthoc.py:graph")


def test_lfqa_posthoc_benchmark_scoring(scripted, tmp_path):
    """The benchmark maps predicted S-ids (and cite's evidence sentences) exactly onto the gold LFQA sentences
    and runs the three methods."""
    import importlib.util
    import json
    from pathlib import Path

    from conftest import shared_path
    from citegraph.nodes.genprog.sources import sentence_offsets

    data = shared_path("lfqa", "dev.jsonl")
    spec_ = importlib.util.spec_from_file_location("bench_gp", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_genprog_posthoc.py")
    B = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(B)
    items = B.load(data, 3)
    for it in items:  # oracle: every gold sentence is recovered exactly from the S-ids covering it
        off = sentence_offsets(it["documents"])
        for g in it["gold"]:
            for d, j in g:
                a, b = it["spans"][d - 1][j]
                sids = [sid for sid, (dd, s, e) in off.items() if dd == d and s < b and a < e]
                assert B.to_gold_units(sids, off, it["spans"]) == {(d, j)}
    assert B.score([({(1, 1), (1, 2)}, {(1, 1)})])["f1"] == 66.7
    hit, miss = [({(1, 1)}, {(1, 1)})], [({(1, 2)}, {(1, 1)})]
    assert B.f1_interval([hit] * 4) == [100.0, 100.0]
    lo, hi = B.f1_interval([hit, hit, miss, miss])
    assert lo < 50.0 < hi  # the resampled items' micro F1 spans the point estimate
    # cite's verifier: an oracle that entails an answer sentence exactly when the premise holds (a line of)
    # one of its gold document sentences; with every document sentence checked alone, each source sentence
    # cite predicts must then be a gold one
    gold_text: dict[str, list[str]] = {}
    for it in items:
        for sent, g in zip(it["answer"], it["gold"]):
            gold_text[sent] = [ln.strip() for d, j in g
                               for ln in it["documents"][d - 1].text[slice(*it["spans"][d - 1][j])].split("\n")
                               if len(ln.strip()) > 20]
    oracle = stub_verifier(lambda premise, hyp: float(any(x in premise for x in gold_text.get(hyp, []))))
    # without --cite-sentences cite runs (and journals) the stage's own default
    from citegraph.nodes.attribution import SENTENCE_CANDIDATES

    default_out = tmp_path / "default.json"
    assert B.main(["--data", str(data), "--methods", "cite", "--verifier", oracle, "--limit", "1",
                   "--output", str(default_out)]) == 0
    first = json.loads((tmp_path / "default.json.items.jsonl").read_text().splitlines()[0])
    assert first["settings"]["cite_sentences"] == SENTENCE_CANDIDATES
    spec, model = scripted(lambda m, k: "1: S1" if "Supporting sentences:" in m[-1].content else "- extract(S1)")
    out = tmp_path / "r.json"
    common = ["--data", str(data), "--llm", spec, "--verifier", oracle, "--cite-sentences", "0"]
    assert B.main([*common, "--limit", "2", "--output", str(out)]) == 0
    res = json.loads(out.read_text())["results"]
    assert set(res) == {"genprog", "llm-prompt", "cite"} and res["genprog"]["predicted"] >= 1
    assert res["cite"]["predicted"] >= 2 and res["cite"]["precision"] == 100.0 and res["cite"]["recall"] > 0
    # resumable: a longer run re-uses the journaled items and only asks the model about the new one
    calls_for_two = len(model.calls)
    assert B.main([*common, "--limit", "3", "--output", str(out)]) == 0
    res3 = json.loads(out.read_text())
    new_calls = [c["messages"][-1].content for c in model.calls[calls_for_two:]]
    assert new_calls and all(items[2]["question"] in c for c in new_calls)  # only item 3 was asked about
    assert [r["id"] for r in res3["items"][:2]] == [r["id"] for r in items[:2]] and len(res3["items"]) == 3
    assert res3["results"]["genprog"]["sentences"] > res["genprog"]["sentences"]
    # other settings than the journal's: a one-line refusal, nothing overwritten
    before = (tmp_path / "r.json.items.jsonl").read_text()
    assert B.main([*common, "--limit", "3", "--output", str(out), "--max-source-sentences", "20"]) == 2
    assert (tmp_path / "r.json.items.jsonl").read_text() == before
    assert B.main(["--data", str(tmp_path / "missing.jsonl")]) == 2
    # the recall ceiling: every gold pair is reachable with all sources shown, fewer with a tight cut
    all_out, cut_out = tmp_path / "all.json", tmp_path / "cut.json"
    assert B.main([*common, "--limit", "3", "--output", str(all_out), "--max-source-sentences", "0"]) == 0
    assert B.main([*common, "--limit", "3", "--output", str(cut_out), "--max-source-sentences", "5"]) == 0
    assert json.loads(all_out.read_text())["recall_ceiling"] == 100.0
    assert json.loads(cut_out.read_text())["recall_ceiling"] < 100.0
    # --leaf-check: program predictions that hold every gold sentence plus one wrong sentence each, pruned by
    # the oracle, keep exactly the gold sentences the oracle can recognise (a line over 20 characters)
    from citegraph.tools.verifier import get_verifier

    recs = []
    for it in items:
        pred = []
        for g in it["gold"]:
            wrong = next((1, j) for j in range(len(it["spans"][0])) if (1, j) not in g)
            pred.append(sorted(g | {wrong}))
        recs.append({"id": it["id"], "genprog": {"predicted": pred}})
    rows = dict(B.leaf_check(items, recs, get_verifier(oracle)))
    recognised = sum(1 for it in items for sent, g in zip(it["answer"], it["gold"]) for d, j in g
                     if any(len(ln.strip()) > 20 for ln in it["documents"][d - 1].text[slice(*it["spans"][d - 1][j])].split("\n")))
    assert rows["as run"]["recall"] == 100.0 and rows["as run"]["precision"] < 100.0
    assert rows["score >= 0.5"]["precision"] == 100.0 and rows["score >= 0.5"]["predicted"] == recognised > 0
    assert B.main([*common, "--methods", "genprog", "--limit", "3", "--output", str(out), "--leaf-check"]) == 0
    assert "score >= 0.5" in json.loads(out.read_text())["results"]["genprog_leaf_check"]


def test_answer_carries_a_compact_trace_summary(scripted):
    # each bullet's parsed call, S-ids and the answer sentence it became (None: empty output dropped)
    program = "- fusion(S1, S3)\n- paraphrase(S4)\n- compression(S2)"
    ans, _ = run(scripted, router(program, {"Fuse": "Alpha is old and Beta is a river.", "Paraphrase": "Output:",
                                            "Compress": "Alpha is in Paris."}))
    tr = ans.metadata["trace"]
    assert tr["method"] == "genprog" and tr["program"] == program
    assert [(b["program"], b["sids"]) for b in tr["bullets"]] == [
        ("fusion(S1, S3)", ["S1", "S3"]), ("paraphrase(S4)", ["S4"]), ("compression(S2)", ["S2"])]
    # the empty paraphrase falls back to its input, so all three bullets are sentences 1..3
    assert [b["sentence"] for b in tr["bullets"]] == [1, 2, 3]
    assert [s.text for s in ans.sentences][2] == "Alpha is in Paris."
