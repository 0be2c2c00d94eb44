"""The verifier's measuring tools: LLM-AggreFact's file format, the figures (balanced accuracy with
bootstrap intervals, TPR/TNR, ECE), the minimal-pair suite and its floors, and the training
script's data recipe, checkpoints and resume (a few steps, in the fast suite)."""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from citegraph.errors import InputError
from citegraph.eval import verifier_sets as VS

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "benchmarks" / "data" / "minimal_pairs.jsonl"


def _load_script(name: str):
    sys.path.insert(0, str(REPO / "scripts"))
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------------------
# LLM-AggreFact's format
# ------------------------------------------------------------------------------------------------
ROWS = [
    {"dataset": "AggreFact-CNN", "doc": "The mayor opened the bridge on Monday.", "claim": "The bridge opened on Monday.", "label": 1},
    {"dataset": "AggreFact-CNN", "doc": "The mayor opened the bridge on Monday.", "claim": "The bridge opened on Friday.", "label": 0},
    {"dataset": "LFQA", "doc": "Owls hunt at night.", "claim": "Owls are nocturnal hunters.", "label": 1},
    {"dataset": "LFQA", "doc": "Owls hunt at night.", "claim": "Owls hunt in daylight.", "label": 0},
]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".json"])
def test_aggrefact_reader_reads_the_published_columns(tmp_path, suffix):
    path = tmp_path / f"aggrefact{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    elif suffix == ".json":
        path.write_text(json.dumps(ROWS))
    else:
        import csv

        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["dataset", "doc", "claim", "label"])
            w.writeheader()
            w.writerows(ROWS)
    pairs = VS.read_aggrefact(path)
    assert [(p.group, p.label) for p in pairs] == [("AggreFact-CNN", 1), ("AggreFact-CNN", 0), ("LFQA", 1), ("LFQA", 0)]
    assert pairs[2].premise == "Owls hunt at night." and pairs[2].claim == "Owls are nocturnal hunters."
    only = VS.read_aggrefact(path, ["lfqa"])
    assert {p.group for p in only} == {"LFQA"} and len(only) == 2


def test_aggrefact_reader_parquet(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "test-00000-of-00001.parquet"
    pd.DataFrame(ROWS).to_parquet(path)
    assert len(VS.read_aggrefact(path)) == 4


def test_aggrefact_reader_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text(json.dumps({"premise": "a", "hypothesis": "b", "label": 1}) + "\n")
    with pytest.raises(InputError, match="missing column.*claim.*doc"):
        VS.read_aggrefact(bad)
    bad.write_text(json.dumps({"doc": "a", "claim": "b", "label": "maybe"}) + "\n")
    with pytest.raises(InputError, match="label 'maybe'"):
        VS.read_aggrefact(bad)
    with pytest.raises(InputError, match="no such file"):
        VS.read_aggrefact(tmp_path / "absent.jsonl")
    (tmp_path / "x.txt").write_text("doc\tclaim\n")
    with pytest.raises(InputError, match="expected .parquet"):
        VS.read_aggrefact(tmp_path / "x.txt")
    good = tmp_path / "g.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    with pytest.raises(InputError, match="none of the datasets"):
        VS.read_aggrefact(good, ["wice"])


def test_leaderboard_average_is_the_mean_of_per_dataset_balanced_accuracy(tmp_path):
    pairs = [VS.CheckPair(r["doc"], r["claim"], r["label"], r["dataset"]) for r in ROWS]
    # CNN: both right (1.0); LFQA: accepts both (TPR 1, TNR 0 -> 0.5)
    lb = VS.leaderboard_average(pairs, [0.9, 0.1, 0.9, 0.8])
    assert lb["per_dataset"] == {"AggreFact-CNN": 1.0, "LFQA": 0.5}
    assert lb["average"] == 0.75


# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------
def test_binary_report_figures_and_intervals():
    y = [1, 1, 1, 1, 0, 0, 0, 0]
    s = [0.9, 0.8, 0.7, 0.2, 0.6, 0.1, 0.1, 0.3]
    r = VS.binary_report(y, s, 0.5, boot=500, seed=1)
    assert (r.tpr, r.tnr, r.balanced_accuracy) == (0.75, 0.75, 0.75)
    assert r.roc_auc == pytest.approx(0.875)
    assert r.bacc_ci[0] <= 0.75 <= r.bacc_ci[1] and r.bacc_ci[0] < r.bacc_ci[1]
    assert r.auc_ci[0] <= r.roc_auc <= r.auc_ci[1]
    assert VS.binary_report(y, s, 0.5, boot=500, seed=1) == r  # seeded
    assert VS.binary_report(y, s, 0.65).tnr == 1.0  # the threshold decides


def test_ece_is_zero_when_calibrated_and_large_when_overconfident():
    y = [1] * 8 + [0] * 2
    assert VS.ece(y, [0.8] * 10) == pytest.approx(0.0)
    assert VS.ece([0] * 10, [0.99] * 10) == pytest.approx(0.99)


def test_fitted_temperature_recovers_an_overconfident_scale():
    import math

    rng = random.Random(0)
    y, s = [], []
    for _ in range(3000):
        z = rng.gauss(0, 3)
        y.append(int(rng.random() < 1 / (1 + math.exp(-z / 2))))  # the truth: logits twice too large
        s.append(1 / (1 + math.exp(-z)))
    t = VS.fit_temperature(y, s)
    assert 1.8 < t < 2.3
    warm = VS.apply_temperature(s, t)
    assert VS.ece(y, warm) < VS.ece(y, s) / 2
    assert [v >= 0.5 for v in warm] == [v >= 0.5 for v in s]


def test_stratified_sample_keeps_label_shares_and_is_seeded():
    pairs = [VS.CheckPair("p", str(i), int(i % 4 == 0)) for i in range(400)]
    s = VS.stratified_sample(pairs, 100, seed=3)
    assert len(s) == 100 and sum(p.label for p in s) == 25
    assert s == VS.stratified_sample(pairs, 100, seed=3) != VS.stratified_sample(pairs, 100, seed=4)


# ------------------------------------------------------------------------------------------------
# the minimal-pair suite
# ------------------------------------------------------------------------------------------------
CATEGORIES = {"negation": 0, "role_swap": 0, "entity_swap": 0, "number_date": 0, "added_detail": 0,
              "paraphrase": 1, "two_sentence": 1}


def test_minimal_pair_suite_covers_every_category_with_controls():
    pairs = VS.read_minimal_pairs(SUITE)
    rows = [json.loads(line) for line in SUITE.read_text().splitlines()]
    assert len(pairs) >= 150 and len({p.id for p in pairs}) == len(pairs)
    by = collections.Counter(p.group for p in pairs)
    for cat, label in CATEGORIES.items():
        assert by[cat] >= 20, cat
        assert {p.label for p in pairs if p.group == cat} == {label}, cat
    long = [p for p in pairs if p.group == "long_premise"]
    assert len(long) >= 20 and {p.label for p in long} == {0, 1}
    assert min(len(p.premise.split()) for p in long) >= 250
    # every group of a perturbed category has its control: the same premise, a supported claim
    groups = collections.defaultdict(list)
    for r in rows:
        groups[r["group"]].append(r)
    for g, rs in groups.items():
        if rs[0]["category"] in ("negation", "role_swap", "entity_swap", "number_date", "added_detail", "control"):
            ctl = [r for r in rs if r["category"] == "control"]
            assert len(ctl) == 1 and ctl[0]["label"] == 1, g
            assert len({r["premise"] for r in rs}) == 1, g


@pytest.mark.parametrize("name, others", [("minimal_pairs_blind.jsonl", ["minimal_pairs.jsonl"]),
                                           ("minimal_pairs_third.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl"]),
                                           ("minimal_pairs_fourth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                           "minimal_pairs_third.jsonl"]),
                                           ("minimal_pairs_fifth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                          "minimal_pairs_third.jsonl",
                                                                          "minimal_pairs_fourth.jsonl"]),
                                           ("minimal_pairs_sixth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                          "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                          "minimal_pairs_fifth.jsonl"]),
                                           ("minimal_pairs_seventh.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                            "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                            "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl"]),
                                           ("minimal_pairs_eighth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                           "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                           "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl",
                                                                           "minimal_pairs_seventh.jsonl"]),
                                           ("minimal_pairs_ninth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                          "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                          "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl",
                                                                          "minimal_pairs_seventh.jsonl", "minimal_pairs_eighth.jsonl"]),
                                           ("minimal_pairs_tenth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                          "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                          "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl",
                                                                          "minimal_pairs_seventh.jsonl", "minimal_pairs_eighth.jsonl",
                                                                          "minimal_pairs_ninth.jsonl"]),
                                           ("minimal_pairs_eleventh.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                             "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                             "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl",
                                                                             "minimal_pairs_seventh.jsonl", "minimal_pairs_eighth.jsonl",
                                                                             "minimal_pairs_ninth.jsonl", "minimal_pairs_tenth.jsonl"]),
                                           ("minimal_pairs_twelfth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                            "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                            "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl",
                                                                            "minimal_pairs_seventh.jsonl", "minimal_pairs_eighth.jsonl",
                                                                            "minimal_pairs_ninth.jsonl", "minimal_pairs_tenth.jsonl",
                                                                            "minimal_pairs_eleventh.jsonl"]),
                                           ("minimal_pairs_thirteenth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                               "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                               "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl",
                                                                               "minimal_pairs_seventh.jsonl", "minimal_pairs_eighth.jsonl",
                                                                               "minimal_pairs_ninth.jsonl", "minimal_pairs_tenth.jsonl",
                                                                               "minimal_pairs_eleventh.jsonl",
                                                                               "minimal_pairs_twelfth.jsonl"]),
                                           ("minimal_pairs_fourteenth.jsonl", ["minimal_pairs.jsonl", "minimal_pairs_blind.jsonl",
                                                                               "minimal_pairs_third.jsonl", "minimal_pairs_fourth.jsonl",
                                                                               "minimal_pairs_fifth.jsonl", "minimal_pairs_sixth.jsonl",
                                                                               "minimal_pairs_seventh.jsonl", "minimal_pairs_eighth.jsonl",
                                                                               "minimal_pairs_ninth.jsonl", "minimal_pairs_tenth.jsonl",
                                                                               "minimal_pairs_eleventh.jsonl", "minimal_pairs_twelfth.jsonl",
                                                                               "minimal_pairs_thirteenth.jsonl"])])
def test_blind_minimal_pair_suites_have_the_first_suites_categories_and_a_control_per_premise(name, others):
    """The suites written blind (docs/verifier.md): every category of the first, a control beside each
    perturbed premise, wrong two-sentence combinations beside the right ones, long premises that are long,
    and no claim or premise shared with an earlier suite."""
    path = REPO / "benchmarks" / "data" / name
    pairs = VS.read_minimal_pairs(path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(pairs) >= 150 and len({p.id for p in pairs}) == len(pairs)
    for other in others:
        earlier = VS.read_minimal_pairs(REPO / "benchmarks" / "data" / other)
        assert not {p.claim for p in pairs} & {p.claim for p in earlier}
        assert not {p.premise for p in pairs} & {p.premise for p in earlier}
    by = collections.Counter(p.group for p in pairs)
    for cat, label in CATEGORIES.items():
        assert by[cat] >= 16, cat
        assert {p.label for p in pairs if p.group == cat} == {label}, cat
    assert by["two_sentence_neg"] >= 10 and {p.label for p in pairs if p.group == "two_sentence_neg"} == {0}
    long = [p for p in pairs if p.group == "long_premise"]
    assert {p.label for p in long} == {0, 1} and min(len(p.premise.split()) for p in long) >= 150  # the brief: 150-350 words
    groups = collections.defaultdict(list)
    for r in rows:
        groups[r["group"]].append(r)
    for g, rs in groups.items():
        assert len({r["premise"] for r in rs}) == 1, g
        if rs[0]["category"] not in ("paraphrase", "long_premise"):
            ctl = [r for r in rs if r["category"] == "control"]
            assert len(ctl) == 1 and ctl[0]["label"] == 1, g


def test_minimal_pair_table_counts_right_decisions():
    pairs = [VS.CheckPair("p", "a", 0, "negation"), VS.CheckPair("p", "b", 0, "negation"),
             VS.CheckPair("p", "c", 1, "control")]
    tab = VS.minimal_pair_table(pairs, [0.2, 0.7, 0.9])
    assert tab == {"control": {"n": 1, "right": 1, "share": 1.0}, "negation": {"n": 2, "right": 1, "share": 0.5}}


# ------------------------------------------------------------------------------------------------
# the training recipe
# ------------------------------------------------------------------------------------------------
def test_llm_written_pairs_are_kept_only_when_the_filters_find_nothing_wrong():
    """The LLM's paraphrases and two-sentence claims become supported training pairs only when they say
    the same in other words: a reply that is the claim again, brings a number, a name or a negation the
    premise lacks, or that the checks find in conflict with the premise is written but not kept."""
    ld = _load_script("verifier_llm_data")
    premise = "Albert Einstein was born in Ulm in 1879. He studied physics in Zurich and later moved to Berlin."
    claim = "Albert Einstein was born in Ulm in 1879."
    assert ld.judge_paraphrase(premise, claim, "Albert Einstein is a native of Ulm, born there in 1879.") is None
    assert ld.judge_paraphrase(premise, claim, "Albert Einstein was born in Ulm in 1879.") == "too close to the claim"
    assert ld.judge_paraphrase(premise, claim, "Albert Einstein was born in Ulm in 1880, a native.") == "a number the premise lacks"
    assert ld.judge_paraphrase(premise, claim, "Einstein, a native of Munich, was born in 1879 as a baby.") == "a name the premise lacks"
    assert ld.judge_paraphrase(premise, claim, "Albert Einstein was not a native of Ulm by birth in 1879.") == "negation changed"
    assert ld.judge_paraphrase(premise, claim, "born in Ulm") == "not a sentence"
    a, b = ld.two_sentence_item(premise)
    assert a.startswith("Albert") and b.startswith("He studied")
    assert ld.judge_two(premise, a, b, "Albert Einstein, born in Ulm, studied physics in Zurich.") is None
    assert ld.judge_two(premise, a, b, "Albert Einstein was born in Ulm.") == "not from both sentences"
    assert ld.judge_two(premise, a, b, "Albert Einstein, born in Ulm, studied physics in Zurich and earlier moved to Berlin.") == "checks: antonym"
    assert ld.two_sentence_item("One short line. Another.") is None
    assert ld.clean_reply('Rewritten sentence: "Einstein came from Ulm."\nNote: I kept the facts.') == "Einstein came from Ulm."
    rows_file = Path(__file__).parent / "_llm_rows.jsonl"
    try:
        rows_file.write_text("".join(json.dumps({"from": f"x:{i}", "kind": k, "premise": premise, "hypothesis": h,
                                                 "claim": [a, b] if k == "two" else claim, "why": w, "model": "local"}) + "\n"
                                     for i, (k, h, w) in enumerate([("paraphrase", "Einstein came from Ulm.", None),
                                                                    ("two", "Einstein, born in Ulm, studied in Zurich.", None),
                                                                    ("paraphrase", "Einstein was born in Ulm.", None)])))  # judged again: too close
        kept = ld.read_kept([rows_file])
    finally:
        rows_file.unlink()
    assert [(r["source"], r["y"]) for r in kept] == [("synthetic/llm_paraphrase", 1), ("synthetic/llm_two", 1)]


def test_minimal_pair_negatives_change_one_thing_and_keep_their_pair():
    vd = _load_script("verifier_data")
    premise = ("In 2019 the city of Oslo hosted 1200 runners from Kenya and Norway. "
               "Bergen was considered and rejected. Google acquired YouTube in 2006.")
    rows = [{"premise": premise, "hypothesis": "In 2019 the city of Oslo hosted 1200 runners.", "y": 1},
            {"premise": premise, "hypothesis": "The company Google acquired YouTube in 2006.", "y": 1},
            {"premise": premise, "hypothesis": "The race in Oslo was not cancelled.", "y": 1},
            {"premise": premise, "hypothesis": "Runners came from Kenya and Norway.", "y": 1},
            {"premise": premise, "hypothesis": "Bergen was considered and rejected.", "y": 1},
            {"premise": premise, "hypothesis": "Oslo hosted runners.", "y": 1},
            {"premise": premise, "hypothesis": "Bergen hosted 30 runners.", "y": 0}]
    seen = collections.Counter()
    for seed in range(60):
        out, by_rule = vd.minimal_pair_negatives(rows, 5, random.Random(seed))
        assert 3 <= len(out) <= 5 and sum(by_rule.values()) == len(out)
        per = collections.Counter(r["pair_of"] for r in out)
        assert max(per.values()) <= 2  # at most two negatives from one supported pair ...
        for k in per:  # ... each by another rule
            rules = [r["source"] for r in out if r["pair_of"] == k]
            assert len(set(rules)) == len(rules)
        for r in out:
            src = rows[r["pair_of"]]
            assert src["y"] == 1 and r["y"] == 0 and r["premise"] == src["premise"]
            assert r["hypothesis"] != src["hypothesis"]
            seen[r["source"]] += 1
            if r["source"] == "synthetic/role_swap":
                assert r["hypothesis"] in {"The company YouTube acquired Google in 2006.",  # the names
                                           "YouTube acquired the company Google in 2006.",  # subject and object
                                           "Runners hosted Oslo."}
    assert set(seen) == {f"synthetic/{k}" for k in vd.RULES}
    assert vd.minimal_pair_negatives(rows, 5, random.Random(7)) == vd.minimal_pair_negatives(rows, 5, random.Random(7))
    only, by = vd.minimal_pair_negatives(rows, 6, random.Random(3), rules=("role_swap", "negation"))
    assert only and set(by) <= {"role_swap", "negation"} and {r["source"] for r in only} <= {
        "synthetic/role_swap", "synthetic/negation"}
    # the flips and the "not" of a negation
    rng = random.Random(0)
    negs = {vd.negation("The river rose.", "The river rose.", random.Random(s)) for s in range(10)}
    assert negs <= {"The river fell."}
    assert vd.negation("x", "The race was not cancelled.", rng) == "The race was cancelled."
    assert {vd.negation("x", "Google acquired YouTube.", random.Random(k)) for k in range(5)} == {"Google never acquired YouTube."}
    assert vd.negation("x", "The vote was approved.", random.Random(2)) in {"The vote was not approved.", "The vote was rejected."}
    assert vd.np_swap("The veterinarian examined the farmer's dog after it was bitten.") == \
        "The farmer's dog examined the veterinarian after it was bitten."
    assert vd.np_swap("It reduced costs.") is None  # a pronoun is no swappable subject
    # no word salad: an auxiliary or an adverb before the verb is no subject to move
    assert vd.np_swap("Research has found a human influence on the climate.") is None
    assert vd.np_swap("Additionally, air filled tires provide better grip.") is None
    assert vd.np_swap("Rebecca Smith played Rosie in the series.") == "Rosie played Rebecca Smith in the series."
    assert vd.number("Born 1950.", "He was born in 1950.", random.Random(1)) != "He was born in 1950."
    assert vd.number("x", "COVID-19 spread.", random.Random(1)) is None  # a name's digits are not a number


def test_sub_claims_say_less_than_their_sentence_and_never_drop_a_hedge():
    vd = _load_script("verifier_data")
    kept = {vd.shorten("Paris is the capital and most populous city of France.", random.Random(s)) for s in range(8)}
    assert kept == {"Paris is the capital of France.", "Paris is the most populous city of France."}
    assert vd.shorten("The bridge, a steel arch, was opened to traffic by the mayor.", random.Random(0)) == \
        "The bridge was opened to traffic by the mayor."
    assert vd.shorten("In 1998, Arsenal moved its stadium to the northern edge of town.", random.Random(0)) == \
        "Arsenal moved its stadium to the northern edge of town."
    assert vd.shorten("The river flooded the lower town in spring, which forced the council to rebuild.",
                      random.Random(0)) == "The river flooded the lower town in spring."
    # a cut that could change what the sentence asserts is not made
    assert vd.shorten("The drug, unless taken with food, causes nausea in most adult patients.", random.Random(0)) is None
    assert vd.shorten("The vaccine did not protect infants, which surprised the team of doctors.", random.Random(0)) is None
    assert vd.shorten("If it rains, the match in the old stadium will be moved to Sunday.", random.Random(0)) is None
    assert vd.shorten("In countries where people drive on the left, the driver sits on the right.", random.Random(0)) is None
    assert vd.shorten("Earth Day is Saturday, April 22, but the university celebrates all month.", random.Random(0)) is None
    rows = [{"premise": "The bridge, a steel arch, was opened to traffic by the mayor. It cost 3 million.", "y": 0},
            {"premise": "The bridge, a steel arch, was opened to traffic by the mayor. It cost 3 million.", "y": 1},
            {"premise": "Short.", "y": 1}]
    out = vd.sub_claims(rows, 10, random.Random(0))
    assert [(r["hypothesis"], r["y"], r["source"]) for r in out] == [
        ("The bridge was opened to traffic by the mayor.", 1, "synthetic/sub_claim")]  # one per premise


def test_fever_test_split_is_refused_for_training(tmp_path):
    vd = _load_script("verifier_data")
    f = tmp_path / "test.txt"
    f.write_text("entailment\tA.\tA.\n")
    with pytest.raises(ValueError, match="kept for measurement"):
        vd.read_fever_nli(f, -1, random.Random(0))


def _tiny_data(root: Path) -> Path:
    data = root / "nli_train"
    (data / "extra" / "fever_nli").mkdir(parents=True)
    (data / "extra" / "factcg").mkdir(parents=True)
    rng = random.Random(0)
    attr, nli = [], []
    for i in range(60):
        city = rng.choice(["Oslo", "Lyon", "Turin", "Porto"])
        p = f"In {2000 + i} the town of {city} opened {i + 3} new schools for local children, which pleased the mayor."
        attr.append({"premise": p, "hypothesis": f"{city} opened {i + 3} new schools.", "label": "supported",
                     "source": "toy/a", "split": "x"})
        attr.append({"premise": p, "hypothesis": f"{city} closed its hospital.", "label": "unsupported",
                     "source": "toy/a", "split": "x"})
        nli.append({"premise": p, "hypothesis": "A town opened schools.", "label": "entailment", "source": "toy/n", "split": "x"})
    (data / "attribution_pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in attr))
    (data / "nli_pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nli))
    (data / "extra" / "fever_nli" / "dev.txt").write_text(
        "".join(f"{'entailment' if i % 2 else 'not_entailment'}\tPremise {i} about Lyon .\tClaim {i}.\n" for i in range(20)))
    (data / "extra" / "factcg" / "CG2C_doc.json").write_text(
        "".join(json.dumps({"text_a": f"Doc {i} on Turin.", "text_b": str([f"Claim {i}."]), "orig_label": str(i % 2)}) + "\n"
                for i in range(10)))
    return data


@pytest.mark.skipif(not (REPO / "citegraph" / "assets" / "verifier" / "config.json").exists(),
                    reason="the shipped weights are the base of the smoke run")
def test_training_script_smoke_run_checkpoints_and_resumes(tmp_path):
    pytest.importorskip("torch")
    data = _tiny_data(tmp_path)
    out = tmp_path / "run"
    cmd = [sys.executable, str(REPO / "scripts" / "train_verifier.py"), "--data", str(data), "--out", str(out),
           "--base", str(REPO / "citegraph" / "assets" / "verifier"), "--nli", "20", "--fever", "-1", "--factcg", "-1",
           "--minimal-pairs", "20", "--long-premise", "5", "--sub-claims", "5", "--max-len", "64", "--batch", "8", "--max-steps", "3",
           "--checkpoint-every", "2", "--threads", "1", "--pair-margin", "1.0"]
    llm = tmp_path / "llm.jsonl"  # as scripts/verifier_llm_data.py writes it: one kept reply, one rejected
    llm.write_text("".join(json.dumps({"from": f"pool:{i}", "kind": "paraphrase", "premise": "Lyon opened schools.",
                                       "hypothesis": h, "claim": "Lyon opened schools.", "why": None, "model": "local"}) + "\n"
                           for i, h in enumerate(["Lyon founded schools.", "Lyon did not open schools."])))
    cmd += ["--llm-pairs", str(llm), "--llm-repeat", "3"]
    tv = _load_script("train_verifier")
    attr = tv.read_jsonl(data / "attribution_pairs.jsonl")
    held = tv.heldout_split(attr, 0.10, 13)
    free = next(i for i, r in enumerate(attr) if r["label"] == "supported" and i not in held)
    written = tmp_path / "written.jsonl"  # as scripts/written_pairs.py merges it: line numbers into the pool
    written.write_text(json.dumps({"src": free, "category": "negation", "claim": "The town closed no schools.", "label": 0})
                       + "\n" + json.dumps({"src": free, "category": "paraphrase", "claim": "Schools were opened.",
                                            "label": 1}) + "\n")
    cmd += ["--written", str(written), "--written-repeat", "2"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    info = json.loads((out / "training_info.json").read_text())
    counts = info["data_counts"]
    assert counts["fever_nli_dev"]["total"] == 20 and counts["factcg"]["total"] == 10
    assert counts["minimal_pair_negatives"]["total"] > 0 and info["steps"] == 3
    assert counts["sub_claims"]["total"] == 5 and counts["sub_claims"]["entailed"] == 5
    assert counts["llm_pairs"]["total"] == 3 and counts["llm_pairs"]["entailed"] == 3  # the kept one, thrice
    assert counts["llm_pairs"]["by_kind"] == {"synthetic/llm_paraphrase": 3}
    assert counts["written_pairs"]["total"] == 4 and counts["written_pairs"]["entailed"] == 2  # two rows, twice
    assert counts["written_pairs"]["by_category"] == {"negation": 1, "paraphrase": 1}
    assert (out / "checkpoint" / "trainer_state.pt").exists() and (out / "model.safetensors").exists()
    again = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resumed from" in again.stdout and "at step 2" in again.stdout
    other = list(cmd)
    other[other.index("--out") + 1] = str(tmp_path / "other")
    missing = subprocess.run(other + ["--resume"], capture_output=True, text=True, env=env, timeout=600)
    assert missing.returncode == 2 and "no checkpoint" in missing.stderr
    nofile = list(other)
    nofile[nofile.index("--llm-pairs") + 1] = str(tmp_path / "absent.jsonl")
    gone = subprocess.run(nofile, capture_output=True, text=True, env=env, timeout=600)
    assert gone.returncode == 2 and "--llm-pairs: no such file" in gone.stderr
    leak = tmp_path / "leak.jsonl"  # a claim written from a held-out pair must never be trained on
    leak.write_text(json.dumps({"src": min(held), "category": "control", "claim": "A claim.", "label": 1}) + "\n")
    bad = list(other)
    bad[bad.index("--written") + 1] = str(leak)
    refused = subprocess.run(bad, capture_output=True, text=True, env=env, timeout=600)
    assert refused.returncode == 2 and "held-out pair" in refused.stderr



def test_sweep_export_and_import_rebuild_the_trained_model(tmp_path):
    """A GPU run returns only the tensors a variant changed, in files under the device's 16 MiB limit (a
    tensor bigger than that in row blocks); import puts them over the base and gets the variant back."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    vs = _load_script("verifier_sweep")
    base, run, back = tmp_path / "base", tmp_path / "run", tmp_path / "back"
    for d in (base, run, back):
        d.mkdir()
    big = torch.zeros(vs.CHUNK_BYTES // 2 // 64 * 3 + 5, 64, dtype=torch.float16)  # 3 files' worth of rows
    small = torch.arange(6, dtype=torch.float16)
    same = torch.ones(4, dtype=torch.float16)
    save_file({"emb": big, "head": small, "frozen": same}, str(base / "model.safetensors"))
    trained = {"emb": big + torch.randn_like(big.float()).half(), "head": small * 2, "frozen": same}
    save_file(trained, str(run / "model.safetensors"))
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "heldout_split.json"):
        (base / name).write_text("{}")
    written = vs.export([{"name": "v1", "dir": str(run)}], base, back, budget_mb=60)
    assert all((back / f).stat().st_size < 16 * 2**20 for f in written) and len(written) >= 3
    assert "frozen" not in {k for f in written for k in load_file(str(back / f))}  # unchanged: left home
    (back / "summary.json").write_text(json.dumps({"results": [{"name": "v1", "training_info": {"steps": 1},
                                                                "inference": {"max_length": 160}, "eval": {}}]}))
    assert vs.main(["import", "--chunks", str(back), "--name", "v1", "--base", str(base), "--out", str(tmp_path / "m")]) == 0
    got = load_file(str(tmp_path / "m" / "model.safetensors"))
    assert all(torch.equal(got[k], trained[k]) for k in trained)
    assert vs.export([{"name": "v2", "dir": str(run)}], base, tmp_path, budget_mb=1) == []  # over budget: left behind
    assert vs.main(["import", "--chunks", str(back), "--name", "nope", "--base", str(base), "--out", str(tmp_path / "x")]) == 2


def test_factcg_reader_one_pair_per_claim(tmp_path):
    f = tmp_path / "CG2C_doc.json"
    f.write_text(json.dumps({"text_a": "Doc one.", "text_b": ["Claim a.", "Claim b."], "orig_label": 1}) + "\n"
                 + json.dumps({"text_a": "Doc two.", "text_b": ["Claim c."], "orig_label": 0}) + "\n")
    got = VS.read_factcg(f)
    assert [(q.premise, q.claim, q.label) for q in got] == [
        ("Doc one.", "Claim a.", 1), ("Doc one.", "Claim b.", 1), ("Doc two.", "Claim c.", 0)]
    f.write_text(json.dumps({"text_a": "D.", "text_b": ["C."], "orig_label": "maybe"}) + "\n")
    with pytest.raises(InputError, match="neither supported"):
        VS.read_factcg(f)


def test_stage_verdict_scores_what_the_stage_calls_supported(capsys):
    """bench_verifier --stage: a lenient verifier's stage calls a negated claim supported; with +checks it
    does not, and the balanced accuracy says so."""
    import argparse

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_verifier as bv

    from citegraph.tools.verifier import FunctionVerifier, get_verifier, register_verifier

    register_verifier("stub:lenient-bench", FunctionVerifier(lambda p, h: 0.9, spec="stub:lenient-bench"))
    premise = "The Orvik vaccine protected adults against the virus. It was tested in March 2021."
    items = [VS.CheckPair(premise, "The Orvik vaccine protected adults.", 1),
             VS.CheckPair(premise, "The Orvik vaccine did not protect adults against the virus.", 0),
             VS.CheckPair(premise, "The Orvik vaccine was tested in May 2021.", 0),
             VS.CheckPair("", "An empty premise is left out.", 0)]
    args = argparse.Namespace(stage=10, seed=0, bootstrap=0, verifier="stub:lenient-bench", partial=None)
    plain = bv.stage_verdicts(args, [("toy", items)], get_verifier("stub:lenient-bench"))["toy"]
    checked = bv.stage_verdicts(args, [("toy", items)], get_verifier("stub:lenient-bench+checks"))["toy"]
    assert plain["n"] == checked["n"] == 3
    assert (plain["tpr"], plain["tnr"]) == (1.0, 0.0) and (checked["tpr"], checked["tnr"]) == (1.0, 1.0)
    # the statuses it reports, and how far the scores it reports are from the labels
    assert plain["statuses"]["supported"] == {"n": 3, "precision": 1 / 3}
    assert checked["statuses"]["unsupported"] == {"n": 2, "precision": 0.0}  # capped at 0.1: below partial
    assert checked["ece_shown"] == pytest.approx((0.1 * 2 + 0.1) / 3)  # 0.9 for a true claim, 0.1 for two false
    out = capsys.readouterr().out
    assert "attribution stage's verdict" in out and "The stage's statuses" in out


def test_best_sentences_keep_the_claims_sentences_in_order_within_the_budget():
    premise = ("The Orvik plant opened in 1962. It served 8,000 people. Today 21,000 people live in the town. "
               "The new plant disinfects the water with ultraviolet light. It cost 14 million pounds.")
    cut = VS.best_sentences(premise, "The new plant uses ultraviolet light on the water, at a cost of 14 million pounds.",
                            words=16)
    assert cut == "The new plant disinfects the water with ultraviolet light. It cost 14 million pounds."
    assert VS.best_sentences("One sentence only, however long.", "anything") == "One sentence only, however long."


def test_bench_reads_premises_as_best_sentences_and_reports_by_their_own_length(tmp_path):
    """--premise best-sentences cuts each premise before scoring; the table by length bins the premise's own
    length, not the cut one."""
    import argparse

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_verifier as bv

    filler = [f"Report {i} of the survey covered the {w} district in spring." for i, w in
              enumerate("north south east west upper lower central coastal inland valley hill forest "
                        "marsh harbour market".split())]
    long_premise = " ".join(filler[:9] + ["The river Orla is 7 metres deep at the old mill."] + filler[9:])
    suite = tmp_path / "mini.jsonl"
    suite.write_text("\n".join(json.dumps(r) for r in [
        {"id": "long-a", "category": "long_premise", "premise": long_premise,
         "claim": "The river Orla is 7 metres deep at the old mill.", "label": 1},
        {"id": "long-b", "category": "long_premise", "premise": long_premise,
         "claim": "The river Orla is 9 metres deep at the old mill.", "label": 0}]) + "\n")
    args = argparse.Namespace(sets="minimal", minimal_pairs=str(suite), premise="best-sentences")
    [(name, items)] = bv.load_sets(args, tmp_path)
    assert all(len(q.premise.split()) <= 95 < len(long_premise.split()) for q in items)
    assert items[0].premise.startswith("Report 0 ") and "Orla is 7 metres deep" in items[0].premise
    assert items[0].premise.index("Report 7 ") < items[0].premise.index("Orla")  # in the premise's own order
    table = bv.by_length(items, [0.9, 0.1], 0.5, args.premise_words)
    assert table[1] == ("111-200", 2, "100.0") and table[0][1] == 0  # binned by the premise's own 160 words


# ------------------------------------------------------------------------------------------------
# the shipped weights on the minimal-pair suite: a floor per category
# ------------------------------------------------------------------------------------------------
# Shares decided right by the shipped `default` (docs/verifier.md has the table), each floor half an item to
# one item under it: weights that lose a category fail here. The goals (every category 85%, controls 90%) are
# far above them; role swaps are 0 of 21, so they have no floor yet. The v2 weights (a run and its parent
# averaged) decide two number/date pairs fewer than v1 did (12 of 21): `+checks` decides 19.
FLOORS: dict[str, float] = {"negation": 0.225, "entity_swap": 0.45, "number_date": 0.55, "added_detail": 0.775,
                            "paraphrase": 0.50, "two_sentence": 0.85, "long_premise": 0.475, "control": 0.84}


def _below_floors(v) -> dict[str, float]:
    pairs = VS.read_minimal_pairs(SUITE)
    tab = VS.minimal_pair_table(pairs, v.score([(p.premise, p.claim) for p in pairs]), v.threshold)
    return {c: round(tab[c]["share"], 3) for c, floor in FLOORS.items() if tab[c]["share"] < floor}


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / "citegraph" / "assets" / "verifier" / "config.json").exists(),
                    reason="trained model missing in citegraph/assets/verifier")
def test_shipped_verifier_minimal_pair_floors():
    from citegraph.tools.verifier import FunctionVerifier, get_verifier

    low = _below_floors(get_verifier("default"))
    assert not low, f"below the floor: {low} (floors {FLOORS})"
    # the floors tell verifiers apart: one that accepts every pair, or rejects every pair, fails them
    assert set(_below_floors(FunctionVerifier(lambda p, h: 0.9))) == {
        "negation", "entity_swap", "number_date", "added_detail"}
    assert set(_below_floors(FunctionVerifier(lambda p, h: 0.1))) == {
        "paraphrase", "two_sentence", "long_premise", "control"}


# the structural checks over the shipped weights (`default+checks`, docs/verifier.md): floors half an item to
# one item under what it decides right; the weights alone fall below five of them
CHECKS_FLOORS: dict[str, float] = {**FLOORS, "negation": 0.925, "entity_swap": 0.881, "number_date": 0.881,
                                   "role_swap": 0.738, "long_premise": 0.56}


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / "citegraph" / "assets" / "verifier" / "config.json").exists(),
                    reason="trained model missing in citegraph/assets/verifier")
def test_checked_verifier_minimal_pair_floors():
    from citegraph.tools.verifier import get_verifier

    pairs = VS.read_minimal_pairs(SUITE)

    def below(v) -> dict[str, float]:
        tab = VS.minimal_pair_table(pairs, v.score([(p.premise, p.claim) for p in pairs]), v.threshold)
        return {c: round(tab[c]["share"], 3) for c, floor in CHECKS_FLOORS.items() if tab[c]["share"] < floor}

    low = below(get_verifier("default+checks"))
    assert not low, f"below the floor: {low} (floors {CHECKS_FLOORS})"
    assert set(below(get_verifier("default"))) == {"negation", "entity_swap", "number_date", "role_swap", "long_premise"}


def test_compare_lm_checkers_combines_as_plus_lm_and_refuses_foreign_scores(tmp_path, capsys):
    """scripts/compare_lm_checkers.py: the band rule of <first>+lm, a paired difference that is zero for
    the same scores and positive for a better candidate, and one-line refusals of a missing payload and
    of a run whose scores belong to other pairs."""
    import lzma

    import numpy as np

    cl = _load_script("compare_lm_checkers")
    got = cl.second_opinion([0.05, 0.5, 0.95, 0.3], [1.0, 0.1, 0.0, 0.9])
    assert np.allclose(got, [0.05, 0.3, 0.95, 0.6])  # only the unsure pairs are averaged
    y = np.array([1, 1, 0, 0] * 10)
    ref = np.array([0.9, 0.2, 0.1, 0.1] * 10)  # misses one supported pair in four
    d, (lo, hi) = cl.paired_difference(y, ref, ref, boot=200)
    assert d == 0 and lo == hi == 0
    d, (lo, hi) = cl.paired_difference(y, np.array([0.9, 0.8, 0.1, 0.1] * 10), ref, boot=200)
    assert d == pytest.approx(0.25) and 0 < lo <= d <= hi
    assert cl.main([str(tmp_path / "run"), "--payload", str(tmp_path / "none")]) == 2
    assert "no pairs.jsonl.xz" in capsys.readouterr().err
    pay = tmp_path / "pay"
    pay.mkdir()
    with lzma.open(pay / "pairs.jsonl.xz", "wt") as f:
        for k in range(3):
            f.write(json.dumps({"split": "eval", "set": "minimal", "group": "control", "premise": "p", "claim": "c", "y": 1}) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "eval_scores.jsonl").write_text(json.dumps({"y": 1, "p": 0.9}) + "\n")  # one score for three pairs
    assert cl.main([str(run), "--payload", str(pay)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not 3 scores of this payload's evaluation pairs" in err and len(err.splitlines()) == 1


def test_compare_verifiers_prints_paired_differences_and_refuses_bad_input(tmp_path, capsys, monkeypatch):
    """scripts/compare_verifiers.py: per set, each spec's balanced accuracy and each candidate minus the
    reference on the same pairs; a cached score file of other pairs, one spec alone, or no data is refused
    in one line."""
    import types

    cv = _load_script("compare_verifiers")
    data = tmp_path / "data"
    assert cv.main(["default", "other", "--data", str(data)]) == 2
    assert "no nli_train/attribution_pairs.jsonl" in capsys.readouterr().err
    (data / "nli_train").mkdir(parents=True)
    (data / "nli_train" / "attribution_pairs.jsonl").write_text("")
    assert cv.main(["default", "--data", str(data)]) == 2
    assert "at least one candidate" in capsys.readouterr().err
    rows = [{"set": s, "group": g, "premise": "p", "claim": "c", "y": y}
            for s in ("heldout", "expertqa", "fever", "minimal") for g, y in (("control", 1), ("control", 1), ("negation", 0), ("negation", 0))] * 5
    monkeypatch.setitem(sys.modules, "train_lm_checker", types.SimpleNamespace(evaluation_rows=lambda d, n, suites=(): rows))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "ref.json").write_text(json.dumps([0.9, 0.2, 0.1, 0.1] * (len(rows) // 4)))  # one supported pair in two missed
    (cache / "better.json").write_text(json.dumps([0.9, 0.8, 0.1, 0.1] * (len(rows) // 4)))
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "heldout (20): ref 75.0" in out and "better 100.0" in out and "+25.0 [" in out
    assert "minimal pairs, share right, ref: control 50, negation 100" in out
    # another band of +lm's rule from two specs' scores: "better" averaged in where "ref" is inside (0.15, 1.0)
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--boot", "50",
                    "--band", "ref,better,0.15,1.0"]) == 0
    out = capsys.readouterr().out
    assert "ref+[better](0.15,1.0) 100.0" in out  # 0.2 -> (0.2 + 0.8) / 2 = 0.5: accepted
    # a band as the reference: the other rows are taken from it, and the band itself carries no difference
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--boot", "50",
                    "--band", "ref,better,0.15,1.0", "--ref", "ref,better,0.15,1.0"]) == 0
    out = capsys.readouterr().out
    assert "candidates minus ref+[better](0.15,1.0), paired" in out
    line = next(l for l in out.splitlines() if l.startswith("heldout (20): "))
    ref_cell, better_cell, band_cell = line.removeprefix("heldout (20): ").split(" | ")
    assert ref_cell.startswith("ref 75.0 [") and "], -25.0 [" in ref_cell  # ref minus the band
    assert better_cell.startswith("better 100.0 [") and "], +0.0 [" in better_cell
    assert band_cell.startswith("ref+[better](0.15,1.0) 100.0 [") and band_cell.endswith("]")  # no difference after it
    assert band_cell.count("[") == 2  # the label's and the interval's
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--ref", "nope"]) == 2
    assert "--ref nope: neither a listed spec nor a --band" in capsys.readouterr().err
    # the ceiling of a rule picking between two verdicts: "better" is right wherever "ref" is, so better's own figure
    (cache / "worse.json").write_text(json.dumps([0.1, 0.1, 0.9, 0.1] * (len(rows) // 4)))  # right on 1 pair in 4
    assert cv.main(["ref", "better", "worse", "--data", str(data), "--cache", str(cache), "--boot", "50",
                    "--bound", "ref,better", "--bound", "ref,worse"]) == 0
    out = capsys.readouterr().out
    assert "heldout (20): either of ref and better right 100.0; both wrong 0%" in out
    assert "heldout (20): either of ref and worse right 75.0; both wrong 25%" in out  # the second supported pair
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--bound", "ref,nope"]) == 2
    assert "--bound ref,nope: 'ref' and 'nope' must both be among the specs" in capsys.readouterr().err
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--band", "ref,nope,0.1,0.9"]) == 2
    assert "must both be among the specs" in capsys.readouterr().err
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--sets", "heldout,nope"]) == 2
    assert "--sets: unknown nope" in capsys.readouterr().err
    (cache / "ref_heldout_4.json").write_text(json.dumps([0.9, 0.2, 0.1, 0.1]))  # 4 stratified held-out pairs
    (cache / "better_heldout_4.json").write_text(json.dumps([0.9, 0.8, 0.1, 0.1]))
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache), "--sets", "heldout",
                    "--sample", "4", "--boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "heldout (4):" in out and "expertqa" not in out
    (cache / "better.json").write_text(json.dumps([0.9]))
    assert cv.main(["ref", "better", "--data", str(data), "--cache", str(cache)]) == 2
    assert "not 80 scores" in capsys.readouterr().err


def test_judge_veto_bench_asks_the_judge_only_where_the_first_says_supported(capsys):
    """benchmarks/bench_judge_veto.py: the judge is asked about the pairs the first calls supported, and a
    pair stays supported only if it agrees; the table says so per suite."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_judge_veto", REPO / "benchmarks" / "bench_judge_veto.py")
    veto = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(veto)

    from citegraph.tools.verifier import FunctionVerifier, register_verifier

    asked: list[str] = []

    def judge(p, h):
        asked.append(h)
        return 0.1 if "not" in h.split() or "never" in h.split() else 0.9

    register_verifier("stub:veto-first", FunctionVerifier(lambda p, h: 0.9 if len(h) % 2 else 0.2, spec="stub:veto-first"))
    register_verifier("stub:veto-judge", FunctionVerifier(judge, spec="stub:veto-judge"))
    assert veto.main(["--first", "stub:veto-first", "--judge", "stub:veto-judge", "--heldout", "0", "--expertqa", "0",
                      "--suites", "minimal-third"]) == 0
    pairs = VS.read_minimal_pairs(REPO / "benchmarks" / "data" / "minimal_pairs_third.jsonl")
    first = [len(p.claim) % 2 == 1 for p in pairs]
    assert sorted(asked) == sorted(p.claim for p, f in zip(pairs, first) if f)  # only the first's "supported"
    kept = [f and not ({"not", "never"} & set(p.claim.split())) for p, f in zip(pairs, first)]
    want = veto.balanced([p.label for p in pairs], kept)
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| minimal-third"))
    assert f"| {want[0]:.1f} / {want[1]:.1f} / {want[2]:.1f} |" in row
    assert f"| {100 * sum(first) / len(pairs):.0f}% |" in row
    assert veto.balanced([1, 1, 0, 0], [True, False, False, True]) == (50.0, 50.0, 50.0)


def test_written_pairs_sample_check_merge_and_join(tmp_path, capsys):
    """scripts/written_pairs.py: the writers get supported training pairs only (never a held-out line); their
    files are validated row by row (a line not sampled from, an unknown category, a label that does not fit
    the category); the committed file keeps no premise, and joining it to the pool gives the pairs back."""
    wp = _load_script("written_pairs")
    pool = tmp_path / "data" / "nli_train"
    pool.mkdir(parents=True)
    words = " ".join(f"word{k}" for k in range(40))
    lines = [{"premise": f"Doc {k}. {words}", "hypothesis": f"claim {k}", "label": "supported",
              "source": "climate_fever", "split": "dev"} for k in range(12)]
    lines += [{"premise": f"Doc x. {words}", "hypothesis": "other", "label": "unsupported", "source": "climate_fever",
               "split": "dev"}, {"premise": "Too short.", "hypothesis": "c", "label": "supported", "source": "healthver",
                                 "split": "dev"}]
    (pool / "attribution_pairs.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    data = tmp_path / "data"
    ok = wp.candidates(wp.pool_rows(data))
    held = set(range(12)) - set(ok)
    assert len(held) == 1 and set(ok) <= set(range(12))  # 10% of the stratum held out (at least 1); 12 and 13 never
    assert wp.main(["--data", str(data), "sample", "--out", str(tmp_path / "in"), "--parts", "2", "--per", "4"]) == 0
    given = [json.loads(x) for k in (1, 2) for x in (tmp_path / "in" / f"in_{k}.jsonl").read_text().splitlines()]
    assert len(given) == 8 and {g["src"] for g in given} <= set(ok)
    src = given[0]["src"]
    out = tmp_path / "out.jsonl"
    out.write_text("\n".join(json.dumps(r) for r in [
        {"src": src, "category": "negation", "claim": "The doc does not say that.", "label": 0},
        {"src": src, "category": "paraphrase", "claim": "A rewording.", "label": 1},
        {"src": src, "category": "paraphrase", "claim": "A rewording.", "label": 1},  # a repeat: merged once
        {"src": min(held), "category": "control", "claim": "x", "label": 1},
        {"src": src, "category": "sarcasm", "claim": "x", "label": 0},
        {"src": src, "category": "role_swap", "claim": "x", "label": 1}]) + "\n{broken\n")
    assert wp.main(["--data", str(data), "check", str(out), "--strict"]) == 1
    printed = capsys.readouterr().out
    assert "is not a supported training pair" in printed and "category 'sarcasm'" in printed
    assert "does not fit category role_swap" in printed and "not JSON" in printed and "3 rows, 4 problems" in printed
    merged = tmp_path / "written.jsonl"
    assert wp.main(["--data", str(data), "merge", str(out), "--out", str(merged)]) == 0
    kept = [json.loads(x) for x in merged.read_text().splitlines()]
    assert len(kept) == 2 and all("premise" not in r for r in kept)
    joined = wp.rows(merged, data)
    assert {(r["category"], r["y"]) for r in joined} == {("negation", 0), ("paraphrase", 1)}
    assert all(r["premise"] == lines[src]["premise"] for r in joined)


def test_throughput_skips_a_spec_without_a_cross_encoder(tmp_path, capsys):
    """The throughput table compares a cross-encoder's batched scoring with its own one-pair loop: a
    combination such as ``default+checks+lm`` (no tokenizer or model of its own) gets a one-line skip, not a
    traceback after every accuracy row was printed."""
    import argparse

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_verifier as bv

    from citegraph.tools.verifier import FunctionVerifier, register_verifier

    register_verifier("stub:no-encoder", FunctionVerifier(lambda p, h: 0.5, spec="stub:no-encoder"))
    (tmp_path / "alce").mkdir()
    (tmp_path / "alce" / "asqa_dev60.json").write_text(json.dumps([{
        "answer": "The tower was built in Paris in 1889.", "annotations": [],
        "docs": [{"title": "Tower", "text": "The tower was built in Paris in 1889 for a fair."}]}]))
    args = argparse.Namespace(throughput_pairs=4, repeat_share=0.25, seed=0, verifier="stub:no-encoder",
                              quantize="shipped", max_windows=None, device=None, batch_sizes="")
    bv.throughput(args, tmp_path)
    out = capsys.readouterr().out
    assert "Throughput: skipped for stub:no-encoder" in out and "one pair per call" not in out
