"""Issue #24: RAAC and GenerationPrograms as the papers print them -- the prompts' content (RAAC
Tables 12-15, GenerationPrograms Figures 6-8), the per-dataset presets (RAAC Table 7), the Table 16
LLM evaluator, and GenerationPrograms' fusion-arity cap. Scripted models and stub verifiers only."""

from __future__ import annotations

import json
import uuid

import pytest

from citegraph.cli import main
from citegraph.graphs.registry import build_graph
from citegraph.state import Document
from citegraph.state.genprog import GenProgContext
from citegraph.prompts.raac import ASPECTS
from citegraph.state.raac import RaacContext
from citegraph.tools.verifier import FunctionVerifier, register_verifier

DOCS = [
    Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann. It is based in Paris."),
    Document(id="b", title="Beta", text="Beta is a river in Chile."),
    Document(id="c", title="Gamma", text="Gamma won the 1990 prize. Gamma has red leaves."),
]
PAPER_KEYS = {"completeness": "Completeness", "objectivity": "Objectivity", "specificity": "Specificity",
              "length": "Length", "citation_recall": "Citation Recall", "citation_precision": "Citation Precision"}


def paper_feedback(score: int = 3, **scores) -> str:
    """A feedback reply exactly in the JSON layout of RAAC's Table 13."""
    body = {PAPER_KEYS[a]: {"Score": scores.get(a, score), "Suggestions": f"fix {a}"} for a in ASPECTS}
    body["Total Score"] = sum(v["Score"] for v in body.values())
    return json.dumps(body)


def stub_verifier(fn=lambda p, h: 1.0) -> str:
    spec = f"stub:{uuid.uuid4().hex[:8]}"
    register_verifier(spec, FunctionVerifier(fn, spec=spec))
    return spec


# --------------------------------------------------------------------------- RAAC prompts (Tables 12-15)
def test_raac_prompts_carry_the_papers_rules_criteria_and_keys():
    from citegraph.prompts import raac as P

    gen = P.generate_prompt("Who founded Alpha?", DOCS)
    fb = P.feedback_prompt("Who founded Alpha?", DOCS, "Alpha was founded by Ann [1].")
    ref = P.refine_prompt("Who founded Alpha?", DOCS, "Alpha was founded by Ann [1].",
                          {a: 2 for a in ASPECTS}, {a: f"tip {a}" for a in ASPECTS})
    add = P.add_citation_prompt("Beta is a river.", [(2, DOCS[1]), (3, DOCS[2])])
    # ALCE's reference format (difference 5: the paper's "[id]: Title<|>Text" is copied by the 1.5B model)
    assert "Document [1](Title: Alpha): Alpha was founded in 1901 by Ann. It is based in Paris." in gen
    assert "Document [2](Title: Beta): Beta is a river in Chile." in add and "Document [1]" not in add
    assert "<|>" not in gen + add
    # Table 12: at most three citations, original wording, neutral tone, the citation example
    assert "at least one reference and at most three" in gen and "cite no more than three" in gen
    assert "news report or an encyclopedia" in gen and "original wording" in gen
    assert "He scored 805 goals in official matches[5]." in gen
    # Table 13: the six criteria with the paper's definitions, the 1-3 scale and the JSON keys
    assert "original sentences from the documents" in fb and "without paraphrasing" in fb
    assert '"Many studies have shown"' in fb and '"According to xxx"' in fb
    assert "no fewer than 50 words" in fb and "score of 1, 2 or 3 points" in fb
    for key in (*PAPER_KEYS.values(), "Total Score", "Score", "Suggestions"):
        assert f'"{key}"' in fb, key
    # Table 14: scores and suggestions listed as the paper prints them, the five notes, {"revised": ...}
    assert "Completeness: score: 2, suggestion: tip completeness" in ref
    assert "Citation Precision: score: 2, suggestion: tip citation_precision" in ref
    assert "where the feedback shows weaknesses" in ref and '{"revised":' in ref
    # Table 15: smallest sufficient subset, no reasoning, unchanged sentence
    assert "smallest sufficient set (1 to 3 documents)" in add and "Do not explain your reasoning" in add
    assert "without changing the sentence" in add
    # nothing of the old reconstruction notes
    assert "could not be found" not in (P.__doc__ or "") and "reconstruction" not in (P.__doc__ or "")


def test_raac_textagent_prompts_share_one_prefix():
    """generate, feedback and refine open with the same documents + question block (llama.cpp's cache)."""
    from citegraph.prompts import raac as P

    q = "Who founded Alpha?"
    prompts = [P.generate_prompt(q, DOCS), P.feedback_prompt(q, DOCS, "S [1]."),
               P.refine_prompt(q, DOCS, "S [1].", {}, {})]
    prefix = P.context_block(q, DOCS)
    assert all(p.startswith(prefix) for p in prompts)
    assert prefix.index("Documents:") < prefix.index("Question:")  # documents first
    assert all(h not in prefix for h in (P.GENERATE_HEADER, P.FEEDBACK_HEADER, P.REFINE_HEADER))


def test_feedback_grammar_asks_for_the_papers_keys():
    from citegraph.prompts.raac import FeedbackModel

    schema = FeedbackModel.model_json_schema()  # what structured() hands llama.cpp as the grammar
    assert set(schema["properties"]) == {*PAPER_KEYS.values(), "Total Score"}
    aspect = schema["$defs"]["AspectFeedback"]
    assert set(aspect["properties"]) == {"Score", "Suggestions"} and aspect["required"] == ["Score"]


def test_raac_reads_a_feedback_reply_in_the_papers_json(scripted):
    from citegraph.prompts.raac import FEEDBACK_HEADER, GENERATE_HEADER, REFINE_HEADER

    replies = {GENERATE_HEADER: "Alpha was founded in 1901 by Ann in Paris, the city where it is still based today [1].",
               FEEDBACK_HEADER: paper_feedback(2, completeness=1),
               REFINE_HEADER: json.dumps({"revised": "Alpha was founded in 1901 by Ann [1]."})}

    def reply(messages, kwargs):
        text = str(messages[-1].content)
        return next((v for k, v in replies.items() if k in text), '{"citations": []}')

    spec, _ = scripted(reply)
    g = build_graph("raac")
    out = g.invoke({"question": "Who founded Alpha?", "documents": DOCS},
                   context=RaacContext(llm=spec, verifier=stub_verifier(), k=1, use_calibration=False,
                                       objective_checks=False))
    first = out["answer"].metadata["trace"]["rounds"][0]
    assert first["scores"] == {**{a: 2 for a in ASPECTS}, "completeness": 1} and first["total"] == 11


# --------------------------------------------------------------------------- Table 16 judge
def test_table16_judge_spec_and_prompt(scripted):
    from citegraph.tools import verifier as V

    assert V.parse_judge_spec("openai:gpt-4o:table16") == ("openai:gpt-4o", "table16")
    assert V.parse_judge_spec("table16") == ("local", "table16")
    assert V.parse_judge_spec("") == ("local", "ours")
    assert V.parse_judge_spec("llamacpp:/m/model.gguf") == ("llamacpp:/m/model.gguf", "ours")
    assert V.get_verifier("llm-judge:table16").chat_spec == "local"

    seen: list[str] = []

    def judge(text: str) -> float:
        seen.append(text)
        return 0.9 if "Passage: Paris is the capital of France." in text else 0.2

    spec, _ = scripted(judge=judge)
    v = V.get_verifier(f"llm-judge:{spec}:table16")
    assert v.chat_spec == spec and v.prompt == V.TABLE16_PROMPT
    assert v.score([("Paris is the capital of France.", "Paris is France's capital."),
                    ("Berlin is in Germany.", "Paris is France's capital.")]) == [pytest.approx(0.9), pytest.approx(0.2)]
    p = seen[0]
    # the paper's role, materials, task, two choices, output and note
    assert p.startswith("Role: data annotator.") and "- Sentence: Paris is France's capital." in p
    assert "fully supports the sentence" in p and "Fully supports:" in p and "Does not fully support:" in p
    assert "discrepancy, omission or inaccuracy" in p and '"Yes."' in p and '"No."' in p
    # the default judge keeps our own prompt
    V.get_verifier(f"llm-judge:{spec}").score([("Rome is in Italy.", "Rome is Italian.")])
    assert seen[-1].startswith("You check whether a claim") and "data annotator" not in seen[-1]


def test_citation_metrics_under_the_table16_judge(scripted):
    """ALCE citation recall/precision scored by the Table 16 evaluator (as RAAC's Table 4 reports)."""
    from citegraph.metrics import alce_citation_scores
    from citegraph.run.provenance import verifier_identity

    spec, _ = scripted(judge=lambda text: 0.95 if (text.startswith("Role: data annotator.")
                                                   and "Ann" in text.split("- Sentence:")[0]
                                                   and "Ann" in text.split("- Sentence:")[1]) else 0.05)
    res = alce_citation_scores("Alpha was founded by Ann [1]. Beta is in Chile [1].", DOCS,
                               verifier=f"llm-judge:{spec}:table16")
    assert res["recall"] == pytest.approx(0.5) and res["precision"] == pytest.approx(0.5)
    assert verifier_identity(f"llm-judge:{spec}:table16") == f"llm-judge:{spec} prompt table16"


# --------------------------------------------------------------------------- presets (Table 7)
def test_presets_are_per_method_overrides_that_set_wins():
    from types import SimpleNamespace

    from citegraph.cli.common import context_from_args
    from citegraph.graphs.presets import preset_overrides

    assert preset_overrides("eli5", "raac") == {"top_docs": 5, "k": 5, "tau": 0.8, "max_calibration_rounds": 2}
    assert preset_overrides("asqa", "raac")["max_calibration_rounds"] == 1
    assert preset_overrides("ELI5", "vanilla") == {} and preset_overrides(None, "raac") == {}
    args = SimpleNamespace(preset="eli5", set=None, llm=None, verifier=None)
    assert context_from_args("raac", args).max_calibration_rounds == 2
    assert context_from_args("raac", SimpleNamespace(preset=None, set=None)).max_calibration_rounds == 1  # no silent switch
    args = SimpleNamespace(preset="eli5", set=["max_calibration_rounds=3"], llm=None, verifier=None)
    assert context_from_args("raac", args).max_calibration_rounds == 3  # --set wins
    args = SimpleNamespace(preset="asqa", set=None, llm=None, verifier=None)
    assert context_from_args("genprog", args).relevance_filter is True


@pytest.mark.parametrize("argv", [
    ["ask", "raac", "--example", "--preset", "eli6"],
    ["run", "raac", "-i", "x.json", "-o", "o.json", "--preset", "wiki"],
    ["bench", "--methods", "raac", "--data", "x.json", "--preset", "nope"],
])
def test_unknown_preset_is_one_line_exit_2(argv, capsys, tmp_path):
    data = tmp_path / "x.json"
    data.write_text(json.dumps([{"id": "1", "question": "Q?", "docs": [{"title": "T", "text": "Fact."}]}]))
    argv = [str(data) if a == "x.json" else str(tmp_path / a) if a == "o.json" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown preset" in err[0] and "asqa, eli5" in err[0]


def test_run_and_bench_record_the_preset_in_args(tmp_path, scripted, monkeypatch):
    spec, _ = scripted(["Fact 0 is true [1]."])
    data = tmp_path / "d.json"
    data.write_text(json.dumps([{"id": "x", "question": "Q?", "docs": [{"title": "T", "text": "Fact 0 is true."}]}]))
    out = tmp_path / "o.json"
    assert main(["run", "vanilla", "-i", str(data), "-o", str(out), "--llm", spec, "--preset", "eli5"]) == 0
    args = json.loads(out.read_text())["args"]
    assert args["preset"] == "eli5" and args["preset_settings"] == {}

    from citegraph.eval.bench import run_bench

    captured = {}
    import citegraph.eval.bench as bench_mod

    real = bench_mod.method_context

    def spy(method, **kw):
        ctx = real(method, **kw)
        captured[len(captured)] = ctx
        return ctx

    monkeypatch.setattr(bench_mod, "method_context", spy)
    with pytest.raises(Exception, match="unknown verifier spec"):  # stops before any generation
        run_bench(["raac:k=2", "raac:max_calibration_rounds=3"], data, tmp_path / "b", llm=spec, preset="eli5",
                  verifier="bogus-verifier")
    monkeypatch.setattr(bench_mod, "method_context", real)
    # both variants got the preset; a variant's own setting wins over it
    assert [(c.k, c.max_calibration_rounds) for c in captured.values()] == [(2, 2), (5, 3)]
    res = run_bench(["vanilla"], data, tmp_path / "b2", llm=spec, preset="asqa", verifier=stub_verifier())
    raw = json.loads((tmp_path / "b2" / "raw" / "vanilla.json").read_text())
    assert raw["args"]["preset"] == "asqa" and raw["args"]["preset_settings"] == {}
    assert "- preset: `asqa`" in (tmp_path / "b2" / "report.md").read_text()
    assert res["scores"]


def test_graphs_lists_the_presets(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["graphs", "--knobs"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "presets (--preset NAME" in out
    assert "max_calibration_rounds=2" in out and "RAAC Table 7 (D=5, k=5, tau=0.8, M=2)" in out


# --------------------------------------------------------------------------- GenerationPrograms
def test_planner_prompt_follows_figure_6_with_our_rules_only_when_on():
    from citegraph.prompts import genprog as P

    paper = P.planner_prompt("Q?", "Passage 1:\nS1: A.", max_sentences=0, max_fusion_inputs=0)
    for rule in ("**[Format]**", "**[Function Nesting]**", "each bullet is one sentence of the answer",
                 'instruction="YOUR INSTRUCTION"', "**EXAMPLES**", "**YOUR TASK**"):
        assert rule in paper, rule
    assert "[Length]" not in paper and "[Sentences]" not in paper
    ours = P.planner_prompt("Q?", "Passage 1:\nS1: A.", max_sentences=4, max_fusion_inputs=2)
    assert "Write at most 4 bullets" in ours and "a fusion merges at most 2 sentences" in ours
    assert "separate bullet for each separate fact" in ours
    assert ours.index("[Sentences]") < ours.index("**EXAMPLES**")


def test_module_prompts_follow_figure_7():
    from citegraph.prompts.genprog import module_prompt

    c = module_prompt("compression", ["Alpha was founded in 1901 by Ann."], instruction="Keep the year.")
    assert "sentence compression assistant" in c and "keeps its original meaning" in c
    assert "**Instruction**: Keep the year.\n**Sentence**: Alpha was founded in 1901 by Ann." in c
    p = module_prompt("paraphrase", ["A."])
    assert "strictly preserves its original meaning" in p and "no additional information" in p
    assert "**Instruction**" not in p
    f = module_prompt("fusion", ["A.", "B."])
    assert "keep every difference" in f and "**Sentence(s)**:\nA.\nB." in f


def test_prestep_prompts_follow_figure_8_and_share_the_document_prefix():
    from citegraph.prompts import genprog as P

    sents = ["Alpha was founded in 1901 by Ann.", "It is based in Paris."]
    ps = [P.relevance_prompt("Q?", "Alpha", sents), P.extractive_prompt("Q?", "Alpha", sents, 2),
          P.abstractive_prompt("Q?", "Alpha", sents, 2), P.extract_then_generate_prompt("Q?", "Alpha", sents, sents[:1], 2)]
    block = P.document_block("Alpha", sents)
    assert all(p.startswith(block) for p in ps)
    assert "extract 2 sentences" in ps[1] and "copy each one exactly" in ps[1] and 'starts with "-"' in ps[1]
    assert "summarize the document in at most 2 sentences" in ps[2]
    assert "revise the summary into 2 sentences" in ps[3] and "all the key information" in ps[3]
    assert "- Alpha was founded in 1901 by Ann." in ps[3].split("Extractive summary:")[1]


def test_abstractive_prestep_reads_bullets(scripted):
    def reply(messages, kwargs):
        text = str(messages[-1].content)
        if "**YOUR TASK**" in text:
            return "- extract(S6)\n- extract(S7)"
        if "summarize the document" in text:
            return "- Alpha dates from 1901.\n- Alpha sits in Paris." if "(Title: Alpha)" in text else "- Other."
        return ""

    spec, _ = scripted(reply)
    ans = build_graph("genprog").invoke({"question": "Q?", "documents": DOCS},
                                        context=GenProgContext(llm=spec, qfs_mode="abstractive"))["answer"]
    assert [(s.text, s.citations) for s in ans.sentences] == [("Alpha dates from 1901.", [1]),
                                                               ("Alpha sits in Paris.", [1])]


def _genprog(scripted, program: str, **ctx):
    def reply(messages, kwargs):
        text = str(messages[-1].content)
        if "**YOUR TASK**" in text:
            return program
        if text.startswith("Fuse"):
            body = text.split("**Sentence(s)**:\n")[1]
            return " + ".join(line.split()[0] for line in body.splitlines())  # first word of each input
        return ""

    spec, model = scripted(reply)
    out = build_graph("genprog").invoke({"question": "Q?", "documents": DOCS}, context=GenProgContext(llm=spec, **ctx))
    return out["answer"], model


def test_fusion_cap_splits_a_wide_fusion_into_bullets_and_records_it(scripted):
    ans, model = _genprog(scripted, '- fusion(S1, S2, S3, S4, S5, instruction="All.")')
    # 5 inputs, cap 3 -> two bullets (3 + 2), in order, nothing lost, each citing only its documents
    assert [(s.text, s.citations) for s in ans.sentences] == [("Alpha + It + Beta", [1, 2]), ("Gamma + Gamma", [3])]
    err = ans.metadata["program_errors"]
    assert [e["kind"] for e in err] == ["fusion_split"] and "fusion of 5 inputs split into 2 bullets" in err[0]["message"]
    assert any("fusion_split" in w for w in ans.warnings)
    bullets = ans.metadata["trace"]["bullets"]
    assert [b["sids"] for b in bullets] == [["S1", "S2", "S3"], ["S4", "S5"]]
    assert "a fusion merges at most 3 sentences" in model.calls[0]["messages"][-1].content


def test_fusion_split_pieces_do_not_inherit_the_planners_instruction(scripted):
    # #34 item 5: the planner's instruction= speaks for all five inputs; copied into each piece, a
    # model that follows it writes the whole claim in every sentence, under the citations of a part
    def reply(messages, kwargs):
        text = str(messages[-1].content)
        if "**YOUR TASK**" in text:
            return '- fusion(S1, S2, S3, S4, S5, instruction="Say that Alpha was founded in 1901 and won the 1990 prize.")'
        if text.startswith("Fuse"):
            if "**Instruction**:" in text:  # a model that obeys the instruction
                return text.split("**Instruction**: ")[1].split("\n")[0].replace("Say that ", "")
            body = text.split("**Sentence(s)**:\n")[1]
            return " + ".join(line.split()[0] for line in body.splitlines())
        return ""

    spec, model = scripted(reply)
    ans = build_graph("genprog").invoke({"question": "Q?", "documents": DOCS}, context=GenProgContext(llm=spec))["answer"]
    fuse_prompts = [str(c["messages"][-1].content) for c in model.calls if str(c["messages"][-1].content).startswith("Fuse")]
    assert len(fuse_prompts) == 2 and not any("**Instruction**" in p for p in fuse_prompts)
    # each sentence is made of its own inputs only: the trace (S1-S3 -> docs 1, 2; S4-S5 -> doc 3) stays the attribution
    assert [(s.text, s.citations) for s in ans.sentences] == [("Alpha + It + Beta", [1, 2]), ("Gamma + Gamma", [3])]
    err = ans.metadata["program_errors"][0]
    assert err["kind"] == "fusion_split" and "won the 1990 prize" in err["message"] and "left out" in err["message"]


def test_fusion_split_drops_a_wrapping_calls_instruction_too():
    from citegraph.nodes.genprog.program import cap_fusion, parse_program

    ids = {f"S{i}" for i in range(1, 10)}
    parsed = parse_program('- compression(fusion(S1, S2, S3, S4, instruction="All four."), instruction="Keep 1889.")\n'
                           '- fusion(S1, S2, instruction="Two.")', ids)
    trees, errors = cap_fusion(parsed.trees, 3, "split")
    assert [t.render() for t in trees] == ["compression(fusion(S1, S2))", "compression(fusion(S3, S4))",
                                           "fusion(S1, S2, instruction='Two.')"]  # an unsplit fusion keeps its own
    assert "'All four.'" in errors[0].message and "'Keep 1889.'" in errors[0].message


def test_fusion_cap_cut_mode_and_off(scripted):
    ans, _ = _genprog(scripted, "- fusion(S1, S2, S3, S4, S5)", fusion_cap="cut")
    assert [(s.text, s.citations) for s in ans.sentences] == [("Alpha + It + Beta", [1, 2])]
    err = ans.metadata["program_errors"][0]
    assert err["kind"] == "fusion_cut" and "dropped S4, S5" in err["message"]
    ans, model = _genprog(scripted, "- fusion(S1, S2, S3, S4, S5)", max_fusion_inputs=0)  # the paper's programs
    assert [s.citations for s in ans.sentences] == [[1, 2, 3]] and ans.warnings == []
    assert "[Sentences]" not in model.calls[0]["messages"][-1].content


def test_fusion_cap_on_nested_and_small_fusions(scripted):
    from citegraph.nodes.genprog.program import cap_fusion, parse_program

    ids = {f"S{i}" for i in range(1, 10)}
    parsed = parse_program("- fusion(S1, S2)\n- compression(fusion(S1, S2, S3, S4))\n"
                           "- paraphrase(fusion(S1, fusion(S2, S3, S4, S5)))\n- fusion(S1, S2, S3)", ids)
    trees, errors = cap_fusion(parsed.trees, 3, "split")
    assert [t.render() for t in trees] == [
        "fusion(S1, S2)", "compression(fusion(S1, S2))", "compression(fusion(S3, S4))",
        "paraphrase(fusion(S1, fusion(S2, S3, S4)))", "fusion(S1, S2, S3)"]
    assert [(e.kind, e.line) for e in errors] == [("fusion_split", 2), ("fusion_cut", 3)]
    trees, errors = cap_fusion(parsed.trees, 1, "split")  # no fusion at all: one bullet per input
    assert [t.render() for t in trees][:2] == ["extract(S1)", "extract(S2)"]
    assert "compression(S1)" in [t.render() for t in trees]
    with pytest.raises(ValueError):
        cap_fusion(parsed.trees, 3, "bogus")


def test_fusion_cap_is_a_checked_knob():
    from citegraph.errors import InputError
    from citegraph.graphs.registry import make_context

    with pytest.raises(InputError, match="fusion_cap must be one of split, cut"):
        make_context("genprog", fusion_cap="drop")
    assert GenProgContext().max_fusion_inputs == 3 and GenProgContext().fusion_cap == "split"


def test_scores_report_sentences_words_and_citations_per_sentence():
    """What issue #24 measures GenerationPrograms by: sentences per answer, words and citations per
    sentence (all citations of the answer, not ALCE's first three)."""
    from citegraph.eval.scoring import score_records

    verifier = stub_verifier(lambda p, h: 0.0)
    docs = [{"title": t, "text": f"{t} text."} for t in ("A", "B", "C", "D")]
    recs = [{"question": "Q?", "docs": docs, "output": "One two three four [1][2][3][4]. Five six [2]."},
            {"question": "Q?", "docs": docs, "output": ""}]
    _, items = score_records(recs, verifier=verifier, dataset="eli5")
    first, empty = items
    assert first["sentences"] == 2 and first["words_per_sentence"] == 3.0
    assert first["citations_per_sentence"] == 2.5
    assert empty["sentences"] == 0 and empty["words_per_sentence"] is None and empty["citations_per_sentence"] is None
