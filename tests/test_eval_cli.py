"""`citegraph eval` and `citegraph bench` end to end with a scripted model and a stub verifier."""

from __future__ import annotations

import json
import re

import pytest

from citegraph.cli import main
from citegraph.tools.verifier import register_verifier

from stubs import KeywordVerifier  # noqa: E402


DOCS = [
    {"title": "D1", "text": "Paris is the capital of France."},
    {"title": "D2", "text": "Berlin is the capital of Germany."},
    {"title": "D3", "text": "Cats purr loudly."},
]


@pytest.fixture(autouse=True)
def stub_verifier():
    register_verifier("stub:cli-kw", KeywordVerifier(spec="stub:cli-kw"))


def alce_file(tmp_path):
    data = {"data": [
        {"question": "Capitals?", "docs": DOCS, "output": "Paris is the capital of France [1]. Berlin is the capital of Germany [2].",
         "qa_pairs": [{"short_answers": ["Paris"]}, {"short_answers": ["Rome"]}],
         "annotations": [{"long_answer": "Paris is the capital of France."}, {"long_answer": "Rome is in Italy."}]},
        {"question": "Capitals and cats?", "docs": DOCS,
         "output": "Paris is the capital of France. [1] Berlin is the capital of Germany [2].\nCats purr [3].",
         "qa_pairs": [{"short_answers": ["cats"]}],
         "annotations": [{"long_answer": "Cats purr."}]},
    ]}
    f = tmp_path / "alce_out.json"
    f.write_text(json.dumps(data))
    return f


def test_eval_alce_format_default_and_alce_flags(tmp_path, capsys):
    f = alce_file(tmp_path)
    assert main(["eval", "--input", str(f), "--verifier", "stub:cli-kw"]) == 0
    res = json.loads((tmp_path / "alce_out.score.json").read_text())
    assert res["dataset"] == "asqa"
    s = res["summary"]
    assert s["citation_rec"] == 100.0 and s["citation_prec"] == 100.0 and s["citation_f1"] == 100.0
    assert s["str_em"] == pytest.approx(75.0)  # (1/2 + 1/1) / 2
    from citegraph.metrics import rouge_lsum

    best = 100 * rouge_lsum("Paris is the capital of France. Berlin is the capital of Germany.", ["Paris is the capital of France."])
    assert res["items"][0]["rougeLsum"] == pytest.approx(best) and best > 50  # the better of the two references
    assert s["n_items"] == 2 and "ALCE citation recall" in capsys.readouterr().out

    out2 = tmp_path / "alce_mode.json"
    assert main(["eval", "--input", str(f), "--verifier", "stub:cli-kw", "--alce", "--output", str(out2)]) == 0
    res2 = json.loads(out2.read_text())
    # item 2 under ALCE: first line only; "[1]" belongs to the Berlin sentence, the Paris one has none
    assert res2["items"][1]["citation_rec"] == 50.0 and res2["items"][1]["citation_prec"] == 50.0
    assert res2["summary"]["citation_rec"] == 75.0
    assert res2["items"][1]["str_em"] == 0.0  # "cats" was on the cut line
    assert res2["settings"] == {"cut_newline": True, "attach_trailing": False, "at_most_citations": 3, "alce": True}


def test_eval_our_format_reports_cost(tmp_path, scripted):
    from citegraph.graphs.registry import make_context
    from citegraph.run.datasets import load_items
    from citegraph.run.runner import run_dataset

    data = tmp_path / "data.json"
    data.write_text(json.dumps([{"question": "Capitals?", "docs": DOCS, "answer": "Paris is the capital of France.",
                                 "claims": ["Paris is the capital of France.", "Dogs bark."]}]))
    spec, _ = scripted(["Paris is the capital of France [1]. Cats purr loudly [2]."])
    out = tmp_path / "ours.json"
    run_dataset("vanilla", load_items(data), out, make_context("vanilla", llm=spec))
    assert main(["eval", "--input", str(out), "--verifier", "stub:cli-kw"]) == 0
    res = json.loads((tmp_path / "ours.score.json").read_text())
    assert res["dataset"] == "eli5" and res["method"] == "vanilla"
    item = res["items"][0]
    assert item["claims_nli"] == 50.0
    assert item["citation_rec"] == 50.0 and item["raac_rec"] == 50.0
    assert item["llm_calls"] == 1 and item["tokens"] > 0


def test_runner_starts_every_item_from_an_empty_model_cache(tmp_path, scripted, monkeypatch):
    # llama.cpp's prefix cache makes an answer depend on the prompt before it; at concurrency 1
    # the runner empties it before each item, so an item's answer does not depend on its neighbours
    import citegraph.run.runner as runner
    from citegraph.graphs.registry import make_context
    from citegraph.run.datasets import load_items

    events = []
    monkeypatch.setattr(runner, "reset_local_models", lambda: events.append("reset"))
    spec, _ = scripted(lambda messages, kwargs: events.append("llm") or "Paris is the capital of France [1].")
    data = tmp_path / "data.json"
    data.write_text(json.dumps([{"question": f"Capitals {i}?", "docs": DOCS, "answer": "Paris."} for i in range(3)]))
    runner.run_dataset("vanilla", load_items(data), tmp_path / "one.json", make_context("vanilla", llm=spec))
    assert events == ["reset", "llm"] * 3
    events.clear()
    runner.run_dataset("vanilla", load_items(data), tmp_path / "two.json", make_context("vanilla", llm=spec), concurrency=2)
    assert events == ["llm"] * 3  # interleaved items share the cache: resetting would only cost time


def bench_script(messages, kwargs):
    text = messages[-1].content
    m = re.search(r"Title: (.*)\nText: (.*)\n(?:Summary|Extracted span):", text)
    if m:
        return "irrelevant" if m.group(1) == "D3" else m.group(2)
    if "Document [2]" in text:
        return "Paris is the capital of France [1]. Berlin is the capital of Germany [2]."
    return "Paris is the capital of France [1]."


def test_bench_writes_report_and_resumes(tmp_path, scripted, capsys):
    data = tmp_path / "asqa.json"
    items = [{"sample_id": f"q{i}", "question": f"Capitals {i}?", "docs": DOCS,
              "qa_pairs": [{"short_answers": ["Paris"]}, {"short_answers": ["Berlin"]}],
              "annotations": [{"long_answer": "Paris and Berlin are capitals."}]} for i in range(3)]
    data.write_text(json.dumps(items))
    spec, model = scripted(bench_script)
    out = tmp_path / "bench"
    argv = ["bench", "--methods", "vanilla,summ,snippet,rerank", "--data", str(data), "--limit", "2",
            "--out", str(out), "--llm", spec, "--verifier", "stub:cli-kw", "--set", "n_samples=2"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "| Method |" in table and "| rerank | 2 |" in table
    for m in ("vanilla", "summ", "snippet", "rerank"):
        raw = json.loads((out / "raw" / f"{m}.json").read_text())
        assert len(raw["data"]) == 2 and raw["args"]["context"]["llm"] == spec
        assert (out / "raw" / f"{m}.score.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {"vanilla", "summ", "snippet", "rerank"}
    assert summary["vanilla"]["citation_rec"] == 100.0 and summary["vanilla"]["str_em"] == 100.0
    assert summary["vanilla"]["llm_calls"] == 1.0 and summary["summ"]["llm_calls"] == 4.0
    assert summary["rerank"]["llm_calls"] == 2.0  # --set n_samples=2 reached only the method that has it
    report = (out / "report.md").read_text()
    assert "| summ | 2 |" in report and "citation_f1_vs_tokens.png" in report and "[" in report
    assert (out / "citation_f1_vs_tokens.png").read_bytes()[:4] == b"\x89PNG"

    n_calls = len(model.calls)
    assert main(argv) == 0  # resumed: nothing left to generate
    assert len(model.calls) == n_calls

    # a shorter selection re-uses the raw files and scores every method on exactly its items
    assert main([a if a != "2" else "1" for a in argv]) == 0
    assert len(model.calls) == n_calls
    assert len(json.loads((out / "raw" / "vanilla.json").read_text())["data"]) == 2  # nothing thrown away
    assert json.loads((out / "summary.json").read_text())["summ"]["n_items"] == 1.0


def test_bench_report_names_the_code_and_warns_when_a_resume_mixed_versions(tmp_path, scripted):
    from citegraph import __version__
    from citegraph.run.provenance import code_label, git_revision

    data = tmp_path / "asqa.json"
    data.write_text(json.dumps([{"sample_id": f"q{i}", "question": f"Capitals {i}?", "docs": DOCS,
                                 "qa_pairs": [{"short_answers": ["Paris"]}]} for i in range(3)]))
    spec, _ = scripted(bench_script)
    out = tmp_path / "bench"
    argv = ["bench", "--methods", "vanilla,summ", "--data", str(data), "--limit", "2", "--out", str(out),
            "--llm", spec, "--verifier", "stub:cli-kw"]
    assert main(argv) == 0
    raw = json.loads((out / "raw" / "vanilla.json").read_text())
    prov = raw["data"][0]["citegraph"]["provenance"]
    assert prov["citegraph"] == __version__ and prov["llm"] == spec and prov["verifier"] == "stub:cli-kw"
    assert prov["git"] == git_revision() and prov["python"]
    label = code_label(prov)
    assert label.startswith(f"citegraph {__version__}" + (f" (git {prov['git']})" if prov["git"] else ""))
    assert label.endswith(f"chat model {spec}, verifier stub:cli-kw")
    report = (out / "report.md").read_text()
    assert f"- code: {label} for every item" in report and "warning" not in report
    assert "- software (this process): Python " in report

    # an older version wrote vanilla's first item (simulated: no provenance); the resumed run
    # adds item 3 with this version, and the report says the rows mix versions
    del raw["data"][0]["citegraph"]["provenance"]
    (out / "raw" / "vanilla.json").write_text(json.dumps(raw))
    assert main([a if a != "2" else "3" for a in argv]) == 0
    report = (out / "report.md").read_text()
    assert f"vanilla: {label} ×2, unknown (no provenance recorded) ×1" in report
    assert f"summ: {label} ×3" in report
    assert "**warning**: the items of vanilla were produced by more than one version" in report


def test_provenance_pins_the_shipped_verifier_and_the_judge_model():
    import hashlib

    from citegraph.run.provenance import verifier_identity
    from citegraph.tools.local_model import EMBEDDED
    from citegraph.tools.verifier import ASSET_DIR

    sha = hashlib.sha256((ASSET_DIR / "model.safetensors").read_bytes()).hexdigest()
    assert verifier_identity("default") == f"default (sha256 {sha[:12]})"
    assert verifier_identity("llm-judge") == f"llm-judge:local (sha256 {EMBEDDED['local'].sha256[:12]})"
    assert verifier_identity("hf-classifier:/m") == "hf-classifier:/m" and verifier_identity(None) is None


def test_bench_method_variants_get_their_own_settings_and_files(tmp_path, scripted, capsys):
    data = tmp_path / "asqa.json"
    data.write_text(json.dumps([{"sample_id": "q0", "question": "Capitals?", "docs": DOCS,
                                 "qa_pairs": [{"short_answers": ["Paris"]}],
                                 "annotations": [{"long_answer": "Paris."}]}]))
    spec, model = scripted(bench_script)
    out = tmp_path / "bench"
    argv = ["bench", "--methods", "rerank,rerank:n_samples=3", "--data", str(data), "--out", str(out),
            "--llm", spec, "--verifier", "stub:cli-kw", "--set", "n_samples=2"]
    assert main(argv) == 0
    plain = json.loads((out / "raw" / "rerank.json").read_text())
    variant = json.loads((out / "raw" / "rerank:n_samples=3.json").read_text())
    assert plain["args"]["context"]["n_samples"] == 2  # --set
    assert variant["args"]["context"]["n_samples"] == 3  # the variant's own setting wins
    assert variant["args"]["method"] == "rerank" and variant["args"]["variant"] == "rerank:n_samples=3"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rerank"]["llm_calls"] == 2.0 and summary["rerank:n_samples=3"]["llm_calls"] == 3.0
    assert "| rerank:n_samples=3 | 1 |" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["eval", "--input", "/nonexistent/out.json"], "not found"),
    (["bench", "--methods", "vanilla:ndemo", "--data", "DATA"], "expected method:key=value"),
    (["bench", "--methods", "vanilla:nosuch=1", "--data", "DATA"], "vanilla has no setting nosuch"),
    (["bench", "--methods", "nosuch:k=1", "--data", "DATA"], "unknown method"),
    (["bench", "--methods", "vanilla,nosuch", "--data", "x.json"], "unknown method"),
    (["bench", "--methods", "vanilla", "--data", "DATA", "--limit", "0"], "--limit"),
    (["eval", "--input", "DATA", "--verifier", "stub:cli-kw"], "no 'output'"),
    (["eval", "--input", "OUT", "--verifier", "nonsense-spec"], "unknown verifier spec"),
    (["bench", "--methods", "vanilla", "--data", "DATA", "--set", "nosuch=1", "--verifier", "stub:cli-kw"], "nosuch"),
    # a bad value fails before any generation, not as a TypeError inside every item
    (["bench", "--methods", "vanilla,raac:k=abc", "--data", "DATA", "--verifier", "stub:cli-kw"], "RaacContext.k must be an integer"),
    (["bench", "--methods", "raac:use_calibration=1", "--data", "DATA"], "use_calibration must be true or false, got 1"),
])
def test_bad_input_exits_2_with_one_line(argv, message, tmp_path, capsys):
    data = tmp_path / "data.json"
    data.write_text(json.dumps([{"question": "Q?", "docs": DOCS}]))
    out = alce_file(tmp_path)
    argv = [str(data) if a == "DATA" else str(out) if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_summary_and_bootstrap_interval():
    from citegraph.eval.scoring import bootstrap, summarize

    items = [{"id": str(i), "citation_rec": 100.0 * (i % 2), "citation_prec": 50.0, "citation_f1": None, "tokens": 10.0}
             for i in range(40)]
    items.append({"id": "empty", "citation_rec": None, "citation_prec": None, "citation_f1": None, "tokens": 10.0})
    s = summarize(items)
    assert s["citation_rec"] == 50.0 and s["n_items"] == 41  # the empty output is left out, as in ALCE
    assert s["citation_f1"] == 50.0  # harmonic mean of the corpus recall and precision
    ci = bootstrap(items)
    assert ci["tokens"] == (10.0, 10.0) and ci["citation_prec"] == (50.0, 50.0)
    lo, hi = ci["citation_rec"]
    assert 25 < lo < 50 < hi < 75
    assert bootstrap(items) == ci  # seeded


def test_scores_report_uncited_sentences_and_module_entailment():
    from citegraph.eval.scoring import score_records
    from citegraph.run.datasets import Item
    from citegraph.run.runner import make_record
    from citegraph.state import AttributedAnswer, CitedSentence, Document

    docs = [Document(id=str(i), title=d["title"], text=d["text"]) for i, d in enumerate(DOCS, 1)]
    ans = AttributedAnswer(question="Capitals?", documents=docs, sentences=[
        CitedSentence(text="Paris is the capital of France.", citations=[1]),
        CitedSentence(text="Berlin is the capital of Germany.", citations=[]),
        CitedSentence(text="Cats purr loudly.", citations=[3]),
        CitedSentence(text="Dogs bark.", citations=[])],
        metadata={"entailment_rate_before": 0.5, "entailment_rate_after": 0.75})
    item = Item(id="q1", question="Capitals?", documents=docs,
                raw={"question": "Capitals?", "docs": DOCS, "answer": "Paris."})
    _, items = score_records([make_record(item, ans, {})], verifier="stub:cli-kw", dataset="eli5")
    assert items[0]["uncited_pct"] == 50.0
    assert items[0]["module_entail_before"] == 50.0 and items[0]["module_entail_after"] == 75.0


def test_citations_are_scored_against_the_answers_own_documents():
    """A method that answers from the item's documents in another order (a retriever's ranking) or from
    chunks of them cites into its own list: the record keeps that list and the evaluator reads it."""
    from citegraph.eval.scoring import score_records
    from citegraph.run.datasets import Item
    from citegraph.run.runner import make_record
    from citegraph.state import AttributedAnswer, CitedSentence, Document

    docs = [Document(id=str(i), title=d["title"], text=d["text"]) for i, d in enumerate(DOCS, 1)]
    item = Item(id="q1", question="Capitals?", documents=docs, raw={"question": "Capitals?", "docs": DOCS, "answer": "x"})
    sents = [CitedSentence(text="Paris is the capital of France.", citations=[1]),
             CitedSentence(text="Cats purr loudly.", citations=[2])]
    same = make_record(item, AttributedAnswer(question="Capitals?", documents=docs, sentences=[
        CitedSentence(text="Paris is the capital of France.", citations=[1]),
        CitedSentence(text="Cats purr loudly.", citations=[3])]), {})
    assert "documents" not in same["citegraph"]  # the item's own list: nothing more to write
    ranked = [docs[0], docs[2], docs[1]]  # [2] is "Cats purr loudly." in the answer's list
    rec = make_record(item, AttributedAnswer(question="Capitals?", documents=ranked, sentences=sents), {})
    assert [d["title"] for d in rec["citegraph"]["documents"]] == ["D1", "D3", "D2"] and rec["docs"] == DOCS
    for r in (same, rec):
        _, items = score_records([r], verifier="stub:cli-kw", dataset="eli5")
        assert items[0]["citation_rec"] == 100.0 and items[0]["citation_prec"] == 100.0
        _, items = score_records([r], verifier="stub:cli-kw", dataset="eli5", alce=True)
        assert items[0]["citation_rec"] == 100.0
    del rec["citegraph"]["documents"]  # what the evaluator read before: [2] taken as the item's D2
    _, items = score_records([rec], verifier="stub:cli-kw", dataset="eli5")
    assert items[0]["citation_rec"] == 50.0


def test_eval_warns_when_evidence_says_the_citations_point_into_another_order(tmp_path, capsys):
    """A record without the answer's own documents whose evidence lies in another of the item's
    documents than the one cited (an output written before records kept them, by a method that ranks
    the given documents): eval still scores it, and says those scores are wrong."""
    from citegraph.run.datasets import Item
    from citegraph.run.runner import make_record
    from citegraph.state import AttributedAnswer, CitedSentence, Document, Evidence

    docs = [Document(id=str(i), title=d["title"], text=d["text"]) for i, d in enumerate(DOCS, 1)]
    item = Item(id="q1", question="Cats?", documents=docs, raw={"question": "Cats?", "docs": DOCS, "answer": "x"})
    ranked = [docs[2], docs[0], docs[1]]
    ans = AttributedAnswer(question="Cats?", documents=ranked, sentences=[CitedSentence(
        text="Cats purr loudly.", citations=[1], evidence=[Evidence(doc=1, text="Cats purr loudly.")])])
    good = make_record(item, ans, {})
    old = json.loads(json.dumps(good))
    del old["citegraph"]["documents"]  # as written before 40e4f64
    for name, rec, warned in (("good", good, False), ("old", old, True)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"args": {"method": "rag"}, "data": [rec]}))
        assert main(["eval", "--input", str(path), "--verifier", "stub:cli-kw", "--dataset", "eli5"]) == 0
        err = " ".join(capsys.readouterr().err.split())
        assert ("1 of 1 record(s) (q1): its evidence lies in another of its documents than the one cited" in err) is warned, err
