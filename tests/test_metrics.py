"""Metrics on hand-built outputs whose scores are known by construction.

The stub verifier says "entailed" iff every content word of the hypothesis occurs in the premise,
so each expected score below can be worked out by hand.
"""

from __future__ import annotations


import pytest

from citegraph.metrics import (
    alce_citation_scores, claims_recall, qampari_scores, raac_citation_f1, rouge_lsum, str_em,
)
from citegraph.state import AttributedAnswer, CitedSentence, Document
from citegraph.tools.citations import parse_answer

from stubs import KeywordVerifier  # noqa: E402


@pytest.fixture
def kv():
    return KeywordVerifier()


@pytest.fixture
def D():
    return [
        Document(id="d1", title="D1", text="Paris is the capital of France."),
        Document(id="d2", title="D2", text="Berlin is the capital of Germany."),
        Document(id="d3", title="D3", text="Cats purr loudly."),
        Document(id="d4", title="D4", text="France borders Germany."),
        Document(id="d5", title="D5", text="Paris is the capital of France."),  # a duplicate of d1
    ]


# ----------------------------------------------------------------------------- ALCE citation scores
def test_alce_recall_and_precision_irrelevant_citation(D, kv):
    text = "Paris is the capital of France [1][3]. Berlin is the capital of Germany [2]. Cats purr loudly."
    r = alce_citation_scores(text, D, kv)
    # s1 supported by [1][3]; [3] alone fails while [1] still entails -> irrelevant
    # s2 supported; s3 has no citation -> recall 0 for it
    assert r["recall"] == pytest.approx(2 / 3)
    assert r["n_citations"] == 3 and r["correct_citations"] == 2
    assert r["precision"] == pytest.approx(2 / 3)
    assert r["sentences"][0]["irrelevant"] == [3]
    assert [s["supported"] for s in r["sentences"]] == [True, True, False]


def test_alce_joint_support_keeps_both_citations(D, kv):
    r = alce_citation_scores("Paris is the capital of France and Berlin is the capital of Germany [1][2].", D, kv)
    assert (r["recall"], r["precision"]) == (1.0, 1.0)


def test_alce_redundant_citations_both_count_as_correct(D, kv):
    # each alone entails -> ALCE counts both as correct (RAAC counts neither as essential, below)
    r = alce_citation_scores("Paris is the capital of France [1][5].", D, kv)
    assert (r["recall"], r["precision"]) == (1.0, 1.0)


def test_alce_at_most_three_citations(D, kv):
    text = "Paris is the capital of France and cats purr loudly [2][4][1][3]."
    capped = alce_citation_scores(text, D, kv)  # [2][4][1] lack "cats purr loudly"
    assert capped["recall"] == 0.0 and capped["n_citations"] == 3 and capped["precision"] == 0.0
    full = alce_citation_scores(text, D, kv, at_most_citations=None)
    assert full["recall"] == 1.0 and full["n_citations"] == 4
    # [2] and [4]: not alone, the rest still entails -> irrelevant; [1] and [3] are needed
    assert full["precision"] == pytest.approx(0.5)
    assert sorted(full["sentences"][0]["irrelevant"]) == [2, 4]


def test_alce_out_of_range_citation_rejects_the_sentence(D, kv):
    r = alce_citation_scores("Paris is the capital of France [1][9]. Berlin is the capital of Germany [2].", D, kv)
    assert r["recall"] == 0.5
    assert r["n_citations"] == 1 and r["precision"] == 1.0  # the rejected sentence's citations are not counted
    assert r["sentences"][0]["out_of_range"] is True


def test_alce_empty_output(D, kv):
    r = alce_citation_scores("   ", D, kv)
    assert r["empty"] and r["recall"] == 0.0 and r["precision"] == 0.0
    assert kv.calls == []


def test_newline_cut_flag(D, kv):
    text = "Paris is the capital of France [1].\nBerlin is the capital of Germany [3]."
    ours = alce_citation_scores(text, D, kv)
    assert ours["n_sentences"] == 2 and ours["recall"] == 0.5 and ours["precision"] == 0.5
    alce = alce_citation_scores(text, D, kv, cut_newline=True)
    assert alce["n_sentences"] == 1 and alce["recall"] == 1.0 and alce["precision"] == 1.0


def test_citation_after_period_flag(D, kv):
    text = "Paris is the capital of France. [1] Berlin is the capital of Germany. [2]"
    ours = alce_citation_scores(text, D, kv)
    assert [s["citations"] for s in ours["sentences"]] == [[1], [2]]
    assert (ours["recall"], ours["precision"]) == (1.0, 1.0)
    alce = alce_citation_scores(text, D, kv, attach_trailing=False)
    # ALCE: [1] belongs to the second sentence, the first has none
    assert [s["citations"] for s in alce["sentences"]] == [[], [1, 2]]
    assert alce["recall"] == 0.5
    assert alce["precision"] == 0.5  # [1] is irrelevant for "Berlin ..."


def test_both_flags_flipped_is_alce(D, kv):
    text = "Paris is the capital of France. [1] Berlin is the capital of Germany [2].\nCats purr loudly."
    ours = alce_citation_scores(text, D, kv)
    assert ours["n_sentences"] == 3 and ours["recall"] == pytest.approx(2 / 3)
    alce = alce_citation_scores(text, D, kv, cut_newline=True, attach_trailing=False)
    assert alce["n_sentences"] == 2 and alce["recall"] == 0.5 and alce["precision"] == 0.5


def test_structured_answer_equals_text_and_uses_its_documents(D, kv):
    text = "Paris is the capital of France [1][3]. Berlin is the capital of Germany [2]."
    ans = parse_answer(text, documents=D)
    assert alce_citation_scores(ans, None, kv)["precision"] == alce_citation_scores(text, D, kv)["precision"] == 0.5 + 1 / 6


def test_structured_answer_with_alce_flags_reads_raw_output_with_index_map(D, kv):
    # a SUMM-style answer: the model saw documents 2 and 1 renumbered as [1] and [2]
    raw = "Berlin is the capital of Germany [1]. Paris is the capital of France [2].\nExtra line [1]."
    ans = AttributedAnswer(documents=D, sentences=[CitedSentence(text="Berlin is the capital of Germany.", citations=[2])],
                           metadata={"raw_output": raw, "shown_documents": [2, 1]})
    r = alce_citation_scores(ans, None, kv, cut_newline=True, attach_trailing=False)
    assert [s["citations"] for s in r["sentences"]] == [[2], [1]]  # mapped back to original positions
    assert r["recall"] == 1.0 and r["precision"] == 1.0
    r2 = alce_citation_scores(ans, None, kv, attach_trailing=False)
    assert r2["n_sentences"] == 3 and r2["recall"] == pytest.approx(2 / 3)
    # default settings score the structured sentences themselves
    assert alce_citation_scores(ans, None, kv)["n_sentences"] == 1


def test_verifier_calls_are_batched_per_round(D, kv):
    text = "Paris is the capital of France [1][3]. Berlin is the capital of Germany [2][4]. Cats purr loudly [3]."
    alce_citation_scores(text, D, kv)
    assert len(kv.calls) == 2  # joint premises, then all precision checks
    assert len(kv.calls[0]) == 3


# ----------------------------------------------------------------------------- RAAC citation F1
def test_raac_f1_essential_citations(D, kv):
    ans = parse_answer(
        "Paris is the capital of France [1][3]. Berlin is the capital of Germany [2]. Cats purr loudly.", documents=D)
    f = raac_citation_f1(ans, kv)
    assert [s.recall for s in f.per_sentence] == [1.0, 1.0, 0.0]
    assert [s.precision for s in f.per_sentence] == [0.5, 1.0, 0.0]
    assert f.per_sentence[0].essential == [1]
    assert f.recall == pytest.approx(2 / 3) and f.precision == pytest.approx(0.5)
    assert f.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


def test_raac_f1_joint_and_redundant(D, kv):
    joint = parse_answer("Paris is the capital of France and Berlin is the capital of Germany [1][2].", documents=D)
    assert raac_citation_f1(joint, kv).precision == 1.0
    redundant = parse_answer("Paris is the capital of France [1][5].", documents=D)
    f = raac_citation_f1(redundant, kv)
    assert f.recall == 1.0 and f.precision == 0.0 and f.per_sentence[0].essential == []
    unsupported = parse_answer("Paris is the capital of Germany [1].", documents=D)
    assert raac_citation_f1(unsupported, kv).f1 == 0.0


def test_raac_f1_accepts_a_spec(D, kv):
    from citegraph.tools.verifier import register_verifier

    register_verifier("stub:metrics-kw", kv)
    ans = parse_answer("Cats purr loudly [3].", documents=D)
    assert raac_citation_f1(ans, "stub:metrics-kw").f1 == 1.0


# ----------------------------------------------------------------------------- correctness
def test_str_em():
    qa = [{"short_answers": ["Ali Daei", "Daei"]}, {"short_answers": ["Cristiano Ronaldo"]}]
    assert str_em("The record is held by ALI DAEI [1].", qa) == {"str_em": 0.5, "str_hit": 0.0}
    assert str_em("Ali Daei [1], then Cristiano Ronaldo [2].", qa) == {"str_em": 1.0, "str_hit": 1.0}
    assert str_em("Nobody.", qa)["str_em"] == 0.0


def test_qampari_scores():
    answers = [["Heat"], ["Mai, the Psychic Girl", "Mai"], ["Sanctuary"]]
    s = qampari_scores("Heat [1], Sanctuary [2], Foo.", answers)
    assert s["qampari_prec"] == pytest.approx(2 / 3) and s["qampari_rec"] == pytest.approx(2 / 3)
    assert s["qampari_rec_top5"] == pytest.approx(2 / 3) and s["num_preds"] == 3
    many = [[f"a{i}"] for i in range(8)]
    s5 = qampari_scores(", ".join(f"a{i}" for i in range(5)), many)
    assert s5["qampari_rec"] == pytest.approx(5 / 8) and s5["qampari_rec_top5"] == 1.0


def test_claims_recall_uses_output_without_citations(kv):
    out = "Paris is the capital of France [1]. Cats purr loudly [2]."
    assert claims_recall(out, ["Paris is the capital of France.", "Dogs bark."], kv) == 0.5
    assert all("[1]" not in p for p, _ in kv.calls[0])


def test_rouge_lsum_sanity():
    ref = "Ali Daei scored 109 goals. He is from Iran."
    assert rouge_lsum("Ali Daei scored 109 goals [1]. He is from Iran [2].", [ref]) == pytest.approx(1.0)
    assert rouge_lsum("Completely unrelated words here.", [ref]) == 0.0
    partial = rouge_lsum("Ali Daei scored goals.", [ref])
    assert 0.0 < partial < 1.0
    assert rouge_lsum("Ali Daei scored goals.", ["nothing alike", ref]) == partial  # best reference
