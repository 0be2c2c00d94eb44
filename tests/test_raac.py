"""RAAC graph with a scripted LLM, a stub verifier and stub embeddings.

Covers the TextAgent loop (stop at the maximum score, stop at k, best-of-k, malformed feedback),
the CitationAgent (subset enumeration, the Simplifier's tie-break, one scoring per pair, Discovery
with out-of-range ids and verification), Summary Calibration (gate accept / revert / tau / the M
bound, D_adp citations mapped back to the caller's documents), the ablations and the Context
reaching the subgraphs.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from types import SimpleNamespace

import numpy as np
import pytest

from citegraph.graphs.registry import build_graph, make_context
from citegraph.prompts.raac import ADD_CITATION_HEADER, ASPECTS, FEEDBACK_HEADER, GENERATE_HEADER, REFINE_HEADER
from citegraph.state import Document
from citegraph.state.raac import RaacContext
from citegraph.tools.verifier import FunctionVerifier, register_verifier

import citegraph.nodes.raac.calibration as calibration_mod
import citegraph.nodes.raac.citation_agent as citation_mod


# --------------------------------------------------------------------------- helpers
def fb(score=2, total=None, **overrides) -> str:
    """A feedback reply: every aspect ``score`` unless overridden."""
    body = {a: {"score": overrides.get(a, score), "suggestion": f"improve {a}"} for a in ASPECTS}
    body["total"] = total if total is not None else sum(v["score"] for v in body.values())
    return json.dumps(body)


def refined(text: str) -> str:
    return json.dumps({"revised": text})


class Router:
    """A scripted LLM that answers by prompt kind; each kind's replies are consumed in order
    (the last one repeats). Records every prompt per kind."""

    def __init__(self, gen=(), feedback=(), refine=(), add=(), vanilla=()):
        self.replies = {"gen": list(gen), "feedback": list(feedback), "refine": list(refine), "add": list(add),
                        "vanilla": list(vanilla)}
        self.prompts: dict[str, list[str]] = {k: [] for k in self.replies}

    def kind(self, text: str) -> str:
        for header, kind in ((GENERATE_HEADER, "gen"), (FEEDBACK_HEADER, "feedback"), (REFINE_HEADER, "refine"),
                             (ADD_CITATION_HEADER, "add")):
            if header in text:
                return kind
        return "vanilla"

    def __call__(self, messages, kwargs) -> str:
        kind = self.kind(str(messages[0].content))
        self.prompts[kind].append(str(messages[-1].content))
        seq = self.replies[kind]
        i = len(self.prompts[kind]) - 1
        if not seq:  # nothing scripted: a valid "nothing to add" (an empty reply is a model failure)
            return '{"citations": []}' if kind == "add" else "No reply was scripted for this prompt."
        return seq[min(i, len(seq) - 1)]

    def n(self, kind: str) -> int:
        return len(self.prompts[kind])


def hash_embed(texts, spec="minilm"):
    """Bag-of-words embeddings (L2-normalised) so ranking follows word overlap."""
    out = np.zeros((len(texts), 256))
    for i, t in enumerate(texts):
        for w in re.findall(r"[a-z0-9]+", t.lower()):
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 256] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


@pytest.fixture(autouse=True)
def _stub_embeddings(monkeypatch):
    monkeypatch.setattr(citation_mod, "_embed", hash_embed)


def make_verifier(fn) -> tuple[str, FunctionVerifier]:
    """Register ``fn(premise, hypothesis) -> float`` as a stub verifier; returns (spec, verifier)."""
    spec = f"stub:{uuid.uuid4().hex[:8]}"
    v = FunctionVerifier(fn, spec=spec)
    register_verifier(spec, v)
    return spec, v


def keyword_verifier(support: dict[str, list[str]]):
    """Entailed when the premise contains any of the titles listed for a keyword in the hypothesis."""
    seen: list[tuple[str, str]] = []

    def fn(premise: str, hypothesis: str) -> float:
        seen.append((premise, hypothesis))
        for key, titles in support.items():
            if key.lower() in hypothesis.lower():
                return 1.0 if any(f"Title: {t}\n" in premise for t in titles) else 0.0
        return 0.0

    spec, v = make_verifier(fn)
    return spec, v, seen


def fixed_f1(values: list[float], calls: list | None = None):
    """A stand-in for the evaluator's F1: returns the values in order (the last repeats)."""
    it = {"i": 0}

    def f(answer, verifier):
        if calls is not None:
            calls.append(answer)
        v = values[min(it["i"], len(values) - 1)]
        it["i"] += 1
        return SimpleNamespace(recall=v, precision=v, f1=v, per_sentence=[])

    return f


@pytest.fixture
def five_docs():
    return [
        Document(id="d1", title="Alpha", text="Alpha was founded in 1901 by Ann."),
        Document(id="d2", title="Beta", text="Beta is a river in Chile."),
        Document(id="d3", title="Gamma", text="Gamma won the 1990 prize."),
        Document(id="d4", title="Delta", text="Delta is a city in Egypt."),
        Document(id="d5", title="Epsilon", text="Epsilon is a letter used in mathematics."),
        Document(id="d6", title="Zeta", text="Zeta is the sixth document and beyond the top five."),
    ]


def run(router: Router, docs, scripted, **ctx):
    spec, model = scripted(router)
    ctx.setdefault("verifier", make_verifier(lambda p, h: 1.0)[0])
    ctx.setdefault("objective_checks", False)  # scripted summaries are short; the checks have their own tests
    context = RaacContext(llm=spec, **ctx)
    out = build_graph("raac").invoke({"question": "What are they?", "documents": docs}, context=context)
    return out["answer"], model


def trace(router: Router, docs, scripted, **ctx):
    """Run the graph and return the full final state (trace included)."""
    spec, model = scripted(router)
    ctx.setdefault("verifier", make_verifier(lambda p, h: 1.0)[0])
    ctx.setdefault("objective_checks", False)  # scripted summaries are short; the checks have their own tests
    from langgraph.checkpoint.memory import InMemorySaver

    g = build_graph("raac", checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    g.invoke({"question": "What are they?", "documents": docs}, config=cfg, context=RaacContext(llm=spec, **ctx))
    return g.get_state(cfg).values


# --------------------------------------------------------------------------- TextAgent
def test_stop_at_max_score(five_docs, scripted):
    r = Router(gen=["Alpha was founded in 1901 [1]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, use_calibration=False, k=5)
    assert r.n("gen") == 1 and r.n("feedback") == 1 and r.n("refine") == 0
    assert st["text_stop"] == "max score"
    assert [x.total for x in st["rounds"]] == [18]
    assert st["answer"].render() == "Alpha was founded in 1901 [1]."


def test_every_node_runs_calls_are_in_the_state_once(five_docs, scripted):
    """RAAC's agents are subgraphs: each node run inside them is recorded once in node_calls (what
    `citegraph trace show` prints per step), and the records add up to the model's calls."""
    r = Router(gen=["Alpha was founded in 1901 [1]. Beta is a river in Chile."], feedback=[fb(2), fb(3)],
               refine=[refined("Alpha was founded in 1901 [1]. Beta is a river [2].")])
    st = trace(r, five_docs, scripted, use_calibration=False, k=3)
    calls = st["node_calls"]
    assert sum(c["llm_calls"] for c in calls) == sum(r.n(k) for k in r.replies) > 0
    assert [c["node"] for c in calls if c["llm_calls"]][:4] == ["generate", "feedback", "refine", "feedback"]
    assert any(c["verifier_pairs"] for c in calls)  # the CitationAgent's Validator


def test_stop_after_k_rounds_and_context_reaches_subgraph(five_docs, scripted):
    r = Router(gen=["S1 Alpha [1]."], feedback=[fb(2)], refine=[refined("S2 Alpha [1]."), refined("S3 Alpha [1].")])
    st = trace(r, five_docs, scripted, use_calibration=False, k=3)
    # k and llm come from the parent's Context: the subgraph used both
    assert r.n("feedback") == 3 and r.n("refine") == 2
    assert st["text_stop"] == "k=3 rounds"
    assert [x.round for x in st["rounds"]] == [1, 2, 3]
    assert [x.kind for x in st["rounds"]] == ["initial", "refine", "refine"]
    # the refine prompt carries the previous summary and the suggestions
    assert "S1 Alpha [1]." in r.prompts["refine"][0] and "improve citation_recall" in r.prompts["refine"][0]


def test_placeholder_suggestions_copied_from_the_prompt_are_dropped(five_docs, scripted):
    body = {a: {"score": 2, "suggestion": "..."} for a in ASPECTS}
    body["completeness"] = {"score": 2, "suggestion": "Name the founder."}
    body["objectivity"] = {"score": 3, "suggestion": "…"}
    body["total"] = 12
    r = Router(gen=["S1 Alpha was founded in 1901 by Ann, and it is old, and it is known [1]."],
               feedback=[json.dumps(body), fb(3)], refine=[refined("S2 Alpha [1].")])
    st = trace(r, five_docs, scripted, use_calibration=False, k=2, objective_checks=False)
    first = st["rounds"][0]
    assert first.suggestions["completeness"] == "Name the founder."
    assert first.suggestions["specificity"] == "" and first.suggestions["objectivity"] == ""
    assert any("placeholder suggestion(s) dropped" in p and "specificity" in p for p in first.problems)
    prompt = r.prompts["refine"][0]
    assert "Name the founder." in prompt and ": ...\n" not in prompt
    assert "Specificity: score: 2, suggestion: (no concrete suggestion: improve this aspect)" in prompt
    assert "Objectivity: score: 3, suggestion: keep as is" in prompt


def test_best_of_k_not_the_last(five_docs, scripted):
    r = Router(
        gen=["First Alpha [1]."],
        feedback=[fb(2), fb(3, citation_precision=2), fb(1)],  # totals 12, 17, 6
        refine=[refined("Second Alpha was founded in 1901 [1]."), refined("Third Beta [2].")],
    )
    st = trace(r, five_docs, scripted, use_calibration=False, k=3)
    assert [x.total for x in st["rounds"]] == [12, 17, 6]
    assert st["draft"].render() == "Second Alpha was founded in 1901 [1]."
    assert st["answer"].sentences[0].text.startswith("Second")
    assert st["draft"].metadata["text_agent"]["best_round"] == 2


LONG = ("Alpha was founded in 1901 by Ann, who led it for many years and shaped its early history in the region [1]. "
        "Beta is a river in Chile that flows from the mountains to the coast through several valleys and towns [2]. "
        "Gamma won the 1990 prize, an award given each year to one outstanding entrant among many [3].")


def test_objective_checks_overrule_a_lenient_judge(five_docs, scripted):
    # the judge rates a short, partly uncited summary 3 everywhere; the checks lower Length and
    # Citation Recall, so the loop refines instead of stopping, and the round with the long, fully
    # cited summary wins (and stops the loop: nothing left to overrule)
    r = Router(gen=["Alpha was founded in 1901 [1]. Beta is a river."], feedback=[fb(3)], refine=[refined(LONG)])
    st = trace(r, five_docs, scripted, use_calibration=False, use_citation_agent=False, k=5, objective_checks=True)
    first, second = st["rounds"]
    assert first.scores["length"] == 1 and first.scores["citation_recall"] == 2 and first.total == 15
    assert set(first.overruled) == {"length", "citation_recall"}
    assert "has 9 words" in first.suggestions["length"] and '"Beta is a river."' in first.suggestions["citation_recall"]
    # the refine prompt carries the measured problems, not the judge's empty praise
    assert "has 9 words" in r.prompts["refine"][0] and "1 of 2 sentence(s) cite no document" in r.prompts["refine"][0]
    assert second.total == 18 and not second.overruled and st["text_stop"] == "max score"
    assert st["answer"].sentences[0].text.startswith("Alpha was founded in 1901 by Ann")


def test_objective_checks_precision_and_the_flag(five_docs, scripted):
    from citegraph.nodes.raac.text_agent import objective_checks

    checks = objective_checks(LONG.replace("[3]", "[1][2][3][4]").replace("[2].", "[2][7]."), n_docs=5, min_words=50)
    assert set(checks) == {"citation_precision"}
    assert "more than 3" in checks["citation_precision"][1] and "not 7" in checks["citation_precision"][1]
    assert objective_checks(LONG, n_docs=5, min_words=50) == {}
    assert objective_checks(LONG, n_docs=5, min_words=200)["length"][0] == 1  # under half the target
    # citations written after the period: read as the Context says (the same reading as the answer's)
    after = LONG.replace(" [1].", ". [1]").replace(" [2].", ". [2]").replace(" [3].", ". [3]")
    assert objective_checks(after, n_docs=5) == {}
    assert "citation_recall" in objective_checks(after, n_docs=5, attach_trailing=False)
    # off: the judge's 3s stand and the loop stops at once
    r = Router(gen=["Alpha [1]. Beta."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, use_calibration=False, k=5, objective_checks=False)
    assert st["text_stop"] == "max score" and r.n("refine") == 0 and not st["rounds"][0].overruled


def test_looping_reply_is_cut_to_its_first_copy(five_docs, scripted):
    from citegraph.nodes.raac.text_agent import clean_summary

    loop = "Alpha was founded in 1901 [1]. Ann led it [1]. " + "Ann led it [1]. " * 6 + "Ann led"
    notes: list[str] = []
    assert clean_summary(loop, truncated=True, notes=notes) == "Alpha was founded in 1901 [1]. Ann led it [1]."
    assert notes[0] == "dropped 6 repeated sentence(s)" and "unfinished last sentence" in notes[1]
    assert clean_summary("One sentence without an end [1]", truncated=True) == "One sentence without an end [1]"
    # a reply that ended by itself keeps its last sentence, punctuated or not
    assert clean_summary("Alpha was founded in 1901 [1]. Ann led it [1]") == "Alpha was founded in 1901 [1]. Ann led it [1]"
    # a loop that starts the summary over in the middle of a sentence (seen on ASQA)
    restart = ("The last season of Jersey Shore aired on August 4, 2011 [3]. Season 3 was released in 2014 [4]. "
               "It is the second of The last season of Jersey Shore aired on August 4, 2011 [3]. Season 3 was rel")
    notes = []
    assert clean_summary(restart, truncated=True, notes=notes) == (
        "The last season of Jersey Shore aired on August 4, 2011 [3]. Season 3 was released in 2014 [4].")
    assert notes[0].startswith("cut a looping restart") and "unfinished last sentence" in notes[1]
    assert "It is the second of" in clean_summary(restart)  # a reply that ended by itself is left alone
    reuse = ("The highest official tally claimed by a national football association is 85 goals [1]. "
             "It could constitute the highest official tally claimed by a national football association [2]. Cut")
    assert clean_summary(reuse, truncated=True) == reuse.removesuffix(" Cut")  # a reused phrase is no restart
    # a citation after the period does not make the sentence unfinished
    trailing = "Alpha was founded in 1901 [1]. Beta is a river. [2][3]"
    assert clean_summary(trailing, truncated=True) == trailing
    # a phrase loop inside a sentence (seen on ASQA with the paper's reference format) keeps one copy
    notes = []
    assert clean_summary("Bican scored 805 goals [2]. Josef Bican " + "Josef Bican " * 40 + "Jos", truncated=True,
                         notes=notes) == "Bican scored 805 goals [2]."
    assert notes[0].startswith("cut a loop repeating 'Josef Bican'")
    assert clean_summary("He was very very good [1].") == "He was very very good [1]."  # twice is no loop
    # a reference header copied from the prompt is stripped, in either format
    for echo in ("[1]: Argentina football<|>", "Document [1](Title: Argentina football): "):
        notes = []
        assert clean_summary(echo + "Bican scored 805 goals [2].", notes=notes) == "Bican scored 805 goals [2]."
        assert notes[0].startswith("stripped a reference header")

    # in the graph: the refine reply is cut at max_new_tokens (its JSON repaired), so its
    # unfinished tail goes, and the trace says why
    long = ("Alpha was founded in 1901 [1]. Ann led it for many years [1]. "
            "Beta is a long river in Chile that flows from the Andes to the Pacific Ocean through many towns [2].")
    r = Router(gen=["Alpha [1]."], feedback=[fb(2), fb(3)], refine=[refined(long)])
    spec, model = scripted(r)
    model.emulate_max_tokens = True
    from langgraph.checkpoint.memory import InMemorySaver

    g = build_graph("raac", checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = RaacContext(llm=spec, verifier=make_verifier(lambda p, h: 1.0)[0], objective_checks=False,
                      use_calibration=False, use_citation_agent=False, k=3, max_new_tokens=20)
    g.invoke({"question": "What are they?", "documents": five_docs}, config=cfg, context=ctx)
    rnd = g.get_state(cfg).values["rounds"][1]
    assert rnd.summary == "Alpha was founded in 1901 [1]. Ann led it for many years [1]."
    assert rnd.problems[0] == "RefineModel: reply cut at max_tokens"
    assert "dropped the unfinished last sentence" in rnd.problems[1] and "Beta is a long river" in rnd.problems[1]


def test_generation_not_cut_keeps_its_last_sentence(five_docs, scripted):
    # the 1.5B model often writes the citation after the period; nothing was cut, nothing is lost
    text = "Alpha was founded in 1901 by Ann [1]. Beta is a river in Chile. [2]"
    st = trace(Router(gen=[text], feedback=[fb(3)]), five_docs, scripted, use_calibration=False, use_citation_agent=False)
    assert st["rounds"][0].summary == text and st["rounds"][0].problems == []
    assert [s.citations for s in st["answer"].sentences] == [[1], [2]]


def test_refine_that_repeats_an_earlier_summary_ends_the_loop(five_docs, scripted):
    r = Router(gen=["First Alpha [1]."], feedback=[fb(2)], refine=[refined("Second [1]."), refined("First  Alpha [1].")])
    st = trace(r, five_docs, scripted, use_calibration=False, use_citation_agent=False, k=5)
    assert r.n("refine") == 2 and r.n("feedback") == 2
    assert st["text_stop"] == "refine repeated an earlier summary"
    assert [x.summary for x in st["rounds"]] == ["First Alpha [1].", "Second [1]."]


def test_best_of_k_tie_goes_to_earliest(five_docs, scripted):
    r = Router(gen=["First [1]."], feedback=[fb(2)], refine=[refined("Second [1].")])
    st = trace(r, five_docs, scripted, use_calibration=False, use_citation_agent=False, k=2)
    assert st["draft"].render() == "First [1]."


def test_malformed_feedback_is_repaired(five_docs, scripted):
    messy = ("Here is my review:\n```json\n{'Completeness': '3/3', 'Objectivity': 3, 'Specificity': [3, 'ok'], "
             "'Length': {'rating': 3}, 'Citation Recall': {'score': 5, 'feedback': 'fine'}, "
             "'Citation Precision': {'score': '3'}, 'Total': '18/18',}\n```")
    r = Router(gen=["Alpha [1]."], feedback=[messy])
    st = trace(r, five_docs, scripted, use_calibration=False, k=4)
    rnd = st["rounds"][0]
    assert rnd.scores == {a: 3 for a in ASPECTS}  # 5 clamped to 3
    assert rnd.reported_total == 18 and rnd.total == 18
    assert st["text_stop"] == "max score" and r.n("feedback") == 1


def test_garbage_feedback_retries_then_falls_back_and_stops(five_docs, scripted):
    r = Router(gen=["Alpha [1]."], feedback=["no idea", "still no json", "nope", fb(3)], refine=[refined("Beta [2].")])
    st = trace(r, five_docs, scripted, use_calibration=False, k=3)
    first = st["rounds"][0]
    assert first.total is None and first.scores == {} and any("fallback" in p for p in first.problems)
    assert r.n("feedback") == 3  # 3 attempts, then the fallback
    # suggestions that say nothing give a refine nothing to work from: the loop ends
    assert st["text_stop"] == "feedback failed" and r.n("refine") == 0
    assert st["answer"].render() == "Alpha [1]."


def test_null_aspect_in_feedback_is_retried_not_a_crash(five_docs, scripted):
    # "length": null used to raise AttributeError inside coerce_feedback (not retried, graph crashed)
    body = json.loads(fb(3))
    body["length"] = None
    r = Router(gen=["Alpha [1]."], feedback=[json.dumps(body), fb(3)])
    st = trace(r, five_docs, scripted, use_calibration=False, k=2)
    assert r.n("feedback") == 2 and st["rounds"][0].total == 18
    assert st["text_stop"] == "max score" and any("FeedbackModel" in p for p in st["rounds"][0].problems)


def test_overflowing_numbers_in_feedback_are_not_a_crash(five_docs, scripted):
    # JSON allows Infinity and 1e999 (both parse to inf; int(inf) raises OverflowError)
    reply = fb(3).replace('"total": 18', '"total": 1e999').replace('"length": {"score": 3', '"length": {"score": Infinity')
    assert "Infinity" in reply and "1e999" in reply
    r = Router(gen=["Alpha [1]."], feedback=[reply])
    st = trace(r, five_docs, scripted, use_calibration=False, k=1)
    rnd = st["rounds"][0]
    assert rnd.scores["length"] == 1 and rnd.reported_total is None and rnd.total == 16


def test_discovery_odd_numbers_are_no_ids(five_docs, scripted):
    vspec, _, _ = keyword_verifier({"Chile": ["Beta"]})
    r = Router(gen=["Beta is a river in Chile."], feedback=[fb(3)],
               add=['{"citations": [Infinity, 2.7, "-1", NaN, 2.0]}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec)
    d = st["discoveries"][0]
    assert d.proposed == [-1, 2]  # 2.7, NaN and Infinity are not ids; "-1" is not read as 1
    assert "outside the document set" in d.rejected["-1"]
    assert d.kept == [2] and st["answer"].sentences[0].citations == [2]


@pytest.mark.parametrize("reply", [
    "Here is the revised summary:\nBeta is a long river in southern Chile [2]. Alpha is a city [1].",
    '{"summary": "Beta is a long river in southern Chile [2]. Alpha is a city [1]."}',
    '{"revised_summary": "Beta is a long river in southern Chile [2]. Alpha is a city [1]."}',
])
def test_refine_reply_without_the_revised_key_is_salvaged(five_docs, scripted, reply):
    r = Router(gen=["Alpha [1]."], feedback=[fb(2), fb(3)], refine=[reply])
    st = trace(r, five_docs, scripted, use_calibration=False, k=3)
    assert r.n("refine") == 1 and len(st["rounds"]) == 2
    assert st["rounds"][1].summary.startswith("Beta is a long river") and st["text_stop"] == "max score"


def test_large_k_is_not_cut_by_langgraphs_recursion_limit(five_docs, scripted):
    k = 15  # 31 TextAgent steps: more than the recursion limit of 25 older LangGraph releases defaulted to
    r = Router(gen=["Alpha [1]."], feedback=[fb(2)], refine=[refined(f"Alpha is city {i} [1].") for i in range(k)])
    st = trace(r, five_docs, scripted, use_calibration=False, k=k)
    assert r.n("feedback") == k and len(st["rounds"]) == k and st["text_stop"] == f"k={k} rounds"


def test_refine_failure_ends_loop(five_docs, scripted):
    r = Router(gen=["Alpha [1]."], feedback=[fb(2)], refine=["garbage"])
    st = trace(r, five_docs, scripted, use_calibration=False, k=5)
    assert st["text_stop"] == "refine failed" and r.n("feedback") == 1 and len(st["rounds"]) == 1


# --------------------------------------------------------------------------- CitationAgent
def test_subsets_enumeration_and_order():
    subs = citation_mod.subsets([3, 1, 2])
    assert len(subs) == 7
    assert subs == [(1,), (2,), (3,), (1, 2), (1, 3), (2, 3), (1, 2, 3)]
    assert len(citation_mod.subsets([5, 4, 3, 2, 1])) == 7  # at most the first 3 citations
    assert citation_mod.subsets([5, 4, 3, 2, 1])[-1] == (3, 4, 5)


def test_validator_simplifier_tie_break_and_single_scoring(five_docs, scripted):
    # sentence A cites [3][1][2]: {1,2} and {3} entail -> minimum cardinality {3}
    # sentence B cites [4][2]: {2} and {4} entail alone -> tie on size, smallest sum -> {2}
    # sentence C cites [5]: nothing entails -> loses its citation (then Discovery)
    def fn(p, h):
        titles = set(re.findall(r"Title: (\w+)\n", p))
        if h.startswith("Sentence A"):
            return 1.0 if "Gamma" in titles or {"Alpha", "Beta"} <= titles else 0.0
        if h.startswith("Sentence B"):
            return 1.0 if titles & {"Beta", "Delta"} else 0.0
        return 0.0

    vspec, v = make_verifier(fn)
    r = Router(gen=["Sentence A one [3][1][2]. Sentence B two [4][2]. Sentence C three [5]."], feedback=[fb(3)],
               add=['{"citations": []}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec)
    assert [s.citations for s in st["answer"].sentences] == [[3], [2], []]
    recs = {x.sentence: x for x in st["validations"]}
    assert len(recs[0].checks) == 7 and len(recs[1].checks) == 3 and len(recs[2].checks) == 1
    assert recs[0].kept == [3] and recs[1].kept == [2] and recs[2].kept == []
    assert recs[2].note == "no subset entails"
    # one batched call for the Validator; each distinct pair scored exactly once
    assert v.stats.batches == 1 and v.stats.pairs_scored == 11 and v.stats.cache_hits == 0
    assert st["discoveries"][0].sentence == 2 and st["discoveries"][0].kept == []


def test_more_than_three_citations_checks_first_three(five_docs, scripted):
    vspec, v = make_verifier(lambda p, h: 1.0 if "Title: Beta\n" in p else 0.0)
    r = Router(gen=["Many citations here [1][2][3][4]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec)
    rec = st["validations"][0]
    assert len(rec.checks) == 7 and all(4 not in c.subset for c in rec.checks)
    assert rec.kept == [2] and "first 3" in rec.note


def test_discovery_rejects_out_of_range_and_non_candidate_ids(five_docs, scripted):
    vspec, v, seen = keyword_verifier({"Chile": ["Beta"]})
    r = Router(gen=["Beta is a river in Chile."], feedback=[fb(3)], add=['{"citations": [9, 0, "[2]", 5, 2]}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec, discovery_top_n=2)
    d = st["discoveries"][0]
    assert d.candidates[0] == 2 and len(d.candidates) == 2  # Beta ranks first by similarity
    assert d.proposed == [9, 0, 2, 5, 2]
    assert "outside the document set" in d.rejected["9"] and "outside the document set" in d.rejected["0"]
    assert d.rejected["5"] == "not among the candidates shown"
    assert d.verified is True and d.kept == [2]
    assert st["answer"].sentences[0].citations == [2]
    # the AddCitation prompt shows only the candidates
    assert "Document [2](Title: Beta)" in r.prompts["add"][0] and "Document [6]" not in r.prompts["add"][0]


def test_discovery_verification_flag(five_docs, scripted):
    vspec, v = make_verifier(lambda p, h: 0.0)  # nothing entails
    r = Router(gen=["Beta is a river in Chile."], feedback=[fb(3)], add=['{"citations": [2]}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec)
    assert st["discoveries"][0].verified is False and st["answer"].sentences[0].citations == []
    r = Router(gen=["Beta is a river in Chile."], feedback=[fb(3)], add=['{"citations": [2]}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec, verify_discovered=False)
    assert st["discoveries"][0].verified is None and st["answer"].sentences[0].citations == [2]


def test_discovery_keeps_the_minimum_entailing_subset(five_docs, scripted):
    # the LLM proposes 1, 2 and 3; only Beta's document supports the sentence: [2] is kept, from
    # one batch of the 7 subsets
    spec, v, seen = keyword_verifier({"river": ["Beta"]})
    r = Router(gen=["Beta is a river in Chile."], feedback=[fb(3)], add=['{"citations": [3, 2, 1]}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=spec, discovery_top_n=5)
    rec = st["discoveries"][0]
    assert [c.subset for c in rec.checks] == [[1], [2], [3], [1, 2], [1, 3], [2, 3], [1, 2, 3]]
    assert rec.kept == [2] and rec.verified is True and rec.verifier_score == 1.0
    assert st["answer"].sentences[0].citations == [2] and len(seen) == 7


def test_discovery_checks_joint_support_when_the_proposal_alone_does_not_entail(five_docs, scripted):
    # a sentence joining two documents' facts; the LLM proposes only one of them
    text = "Alpha was founded in 1901 by Ann, and Beta is a river in Chile."
    vspec, v = make_verifier(lambda p, h: 1.0 if "Title: Alpha\n" in p and "Title: Beta\n" in p else 0.0)
    r = Router(gen=[text], feedback=[fb(3)], add=['{"citations": [2]}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec, discovery_top_n=3)
    d = st["discoveries"][0]
    assert set(d.candidates[:2]) == {1, 2} and [c.subset for c in d.checks] == [[2]]
    assert [c.subset for c in d.joint_checks] == sorted([sorted([2, c]) for c in d.candidates if c != 2])
    assert d.verified is True and d.kept == [1, 2] and st["answer"].sentences[0].citations == [1, 2]
    # off: the paper's Discovery keeps the sentence uncited
    r = Router(gen=[text], feedback=[fb(3)], add=['{"citations": [2]}'])
    st = trace(r, five_docs, scripted, use_calibration=False, verifier=vspec, discovery_top_n=3,
               discovery_joint=False)
    d = st["discoveries"][0]
    assert d.joint_checks == [] and d.verified is False and st["answer"].sentences[0].citations == []


def test_discovery_falls_back_to_word_overlap_without_embeddings(five_docs, scripted, monkeypatch):
    from citegraph.errors import ModelError

    def no_model(texts, spec="minilm"):
        raise ModelError("the packaged MiniLM is not installed")

    monkeypatch.setattr(citation_mod, "_embed", no_model)
    r = Router(gen=["Beta is a river in Chile."], feedback=[fb(3)], add=['{"citations": [2]}'])
    st = trace(r, five_docs, scripted, use_calibration=False)
    d = st["discoveries"][0]
    assert d.candidates[0] == 2 and "word overlap" in d.problems[0]
    assert st["answer"].sentences[0].citations == [2]


def test_discovery_garbage_reply_keeps_sentence_uncited(five_docs, scripted):
    r = Router(gen=["Beta is a river in Chile."], feedback=[fb(3)], add=["I think document two"])
    st = trace(r, five_docs, scripted, use_calibration=False)
    # "I think document two" has no JSON: retried, then the empty fallback
    assert st["answer"].sentences[0].citations == []
    assert any("fallback" in p for p in st["discoveries"][0].problems)


# --------------------------------------------------------------------------- Summary Calibration
def test_gate_pass_when_f1_reaches_tau(five_docs, scripted, monkeypatch):
    calls = []
    monkeypatch.setattr(calibration_mod, "citation_f1", fixed_f1([0.9], calls))
    r = Router(gen=["Alpha [1]. Beta [2]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, tau=0.8)
    assert len(calls) == 1 and r.n("gen") == 1
    c = st["calibrations"][0]
    assert c.decision == "initial" and c.next == "finalize" and "tau" in c.reason


def test_gate_decides_at_the_validators_threshold(five_docs, scripted):
    vspec, _ = make_verifier(lambda p, h: 0.6)  # entailed at the default 0.5, not at 0.7
    for thr, f1 in ((0.0, 1.0), (0.7, 0.0)):
        r = Router(gen=["Alpha is a city [1]. Beta is a river [2]."], feedback=[fb(3)])
        st = trace(r, five_docs, scripted, verifier=vspec, use_citation_agent=False, verifier_threshold=thr,
                   max_calibration_rounds=0)
        assert st["calibrations"][0].f1 == f1, thr


def test_gate_accept_maps_dadp_citations_to_original_ids(five_docs, scripted, monkeypatch):
    monkeypatch.setattr(calibration_mod, "citation_f1", fixed_f1([0.5, 0.7]))
    r = Router(
        # pass 0 on the top-5 docs cites 2, 4, 5 -> D_adp = [2, 4, 5] renumbered 1..3
        gen=["Beta is a river [2]. Delta is a city [4]. Epsilon is a letter [5].",
             "Beta is a river in Chile [1]. Epsilon is used in mathematics [3][4]."],  # [4]: not in D_adp
        feedback=[fb(3)],
    )
    st = trace(r, five_docs, scripted, tau=0.8, max_calibration_rounds=1)
    assert r.n("gen") == 2
    p1 = r.prompts["gen"][1]
    assert "Document [1](Title: Beta)" in p1 and "Document [2](Title: Delta)" in p1 and "Document [3](Title: Epsilon)" in p1
    assert "Alpha" not in p1 and "Gamma" not in p1
    assert [c.decision for c in st["calibrations"]] == ["initial", "accept"]
    assert st["calibrations"][1].documents == [2, 4, 5]
    ans = st["answer"]
    assert [s.citations for s in ans.sentences] == [[2], [5]]  # D_adp [1],[3] -> original 2, 5
    assert [d.id for d in ans.documents] == [d.id for d in five_docs]  # the caller's full list
    assert ans.metadata["raac"]["citation_f1"] == 0.7 and ans.metadata["raac"]["accepted_calibration_round"] == 1
    # the dropped [4] was D_adp's numbering (3 documents), and the warning says so
    assert len(ans.warnings) == 1 and "[4]" in ans.warnings[0]
    assert ans.warnings[0].endswith("(calibration round 1, numbering of D_adp=[2, 4, 5])")
    # the raw text that ALCE-mode scoring reads is the final answer in the caller's numbering
    assert ans.metadata["raw_output"] == "Beta is a river in Chile [2]. Epsilon is used in mathematics [5]."


def test_gate_revert_keeps_previous(five_docs, scripted, monkeypatch):
    monkeypatch.setattr(calibration_mod, "citation_f1", fixed_f1([0.5, 0.4]))
    r = Router(gen=["Beta is a river [2]. Delta is a city [4].", "Delta only [2]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, max_calibration_rounds=3)
    assert [c.decision for c in st["calibrations"]] == ["initial", "revert"]
    assert st["calibrations"][1].next == "finalize"
    assert st["answer"].render() == "Beta is a river [2]. Delta is a city [4]."
    meta = st["answer"].metadata["raac"]
    assert meta["accepted_calibration_round"] == 0
    assert r.n("gen") == 2  # M=3 but the revert stops
    # the counts of the kept pass are told apart from those of every pass (the reverted one too)
    assert meta["text_rounds"] == 2 and meta["accepted_pass"]["text_rounds"] == 1
    assert meta["validated_sentences"] == 3 and meta["accepted_pass"]["validated_sentences"] == 2


@pytest.mark.parametrize("m, passes", [(0, 1), (1, 2), (2, 3)])
def test_calibration_rounds_bounded_by_m(five_docs, scripted, monkeypatch, m, passes):
    f1 = fixed_f1([0.1, 0.2, 0.3, 0.4, 0.5])
    monkeypatch.setattr(calibration_mod, "citation_f1", f1)
    r = Router(gen=["A [1]. B [2]. C [3]. D [4].",     # pass 0: D_adp = [1, 2, 3, 4]
                    "A [1]. B [2]. C [3].",           # pass 1: D_adp = [1, 2, 3]
                    "A [1]. B [2].",                  # pass 2: D_adp = [1, 2]
                    "A [1]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, max_calibration_rounds=m)
    assert r.n("gen") == passes and len(st["calibrations"]) == passes
    assert st["calibration_round"] == passes - 1
    if m:
        assert f"M={m}" in st["calibrations"][-1].reason


def test_calibration_stops_when_dadp_unchanged(five_docs, scripted, monkeypatch):
    monkeypatch.setattr(calibration_mod, "citation_f1", fixed_f1([0.1]))
    r = Router(gen=["A [1]. B [2]. C [3]. D [4]. E [5]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, max_calibration_rounds=2)
    assert r.n("gen") == 1 and "equals the current documents" in st["calibrations"][0].reason
    # sampling: a re-run on the same documents can differ, so it is made
    r = Router(gen=["A [1]. B [2]. C [3]. D [4]. E [5]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, max_calibration_rounds=1, temperature=0.7)
    assert r.n("gen") == 2 and [c.documents for c in st["calibrations"]] == [[1, 2, 3, 4, 5]] * 2


def test_top_docs_limits_the_prompt(five_docs, scripted):
    r = Router(gen=["Zeta [6]. Alpha [1]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, use_calibration=False, use_citation_agent=False)
    assert "Zeta" not in r.prompts["gen"][0] and len(st["working_documents"]) == 5
    assert [s.citations for s in st["answer"].sentences] == [[], [1]]


def test_real_metric_with_stub_verifier(five_docs, scripted):
    vspec, v, _ = keyword_verifier({"river": ["Beta"], "city": ["Delta"]})
    r = Router(gen=["Beta is a river [2]. Delta is a city [4]."], feedback=[fb(3)])
    st = trace(r, five_docs, scripted, verifier=vspec)
    c = st["calibrations"][0]
    assert c.recall == 1.0 and c.precision == 1.0 and c.f1 == 1.0 and c.next == "finalize"
    # the metric's premises equal the Validator's: nothing new was scored for recall
    assert v.stats.pairs_scored == 2


# --------------------------------------------------------------------------- ablations and registry
def test_ablation_without_text_agent_uses_vanilla(five_docs, scripted):
    r = Router(vanilla=["Alpha was founded in 1901 [1]."])
    ans, _ = run(r, five_docs, scripted, use_text_agent=False, use_calibration=False)
    assert r.n("vanilla") == 1 and r.n("gen") == 0 and r.n("feedback") == 0
    assert "Instruction: Write an accurate" in r.prompts["vanilla"][0]
    assert ans.render() == "Alpha was founded in 1901 [1]."


def test_ablation_without_citation_agent_and_without_sc(five_docs, scripted, monkeypatch):
    calls = []
    monkeypatch.setattr(calibration_mod, "citation_f1", fixed_f1([0.0], calls))
    vspec, v = make_verifier(lambda p, h: 0.0)
    r = Router(gen=["Alpha [1][2]. Unsupported."], feedback=[fb(3)])
    ans, _ = run(r, five_docs, scripted, use_citation_agent=False, use_calibration=False, verifier=vspec)
    assert [s.citations for s in ans.sentences] == [[1, 2], []]
    assert v.stats.pairs_scored == 0 and calls == [] and r.n("add") == 0
    assert ans.metadata["raac"]["ablation"] == {"text_agent": True, "citation_agent": False, "calibration": False}


def test_registry_context_and_langgraph_json():
    from pathlib import Path

    ctx = make_context("raac", k=1, tau=0.5)
    assert isinstance(ctx, RaacContext) and ctx.k == 1 and ctx.max_calibration_rounds == 1 and ctx.top_docs == 5
    assert all(desc for _, _, desc in RaacContext.describe())
    cfg = json.loads((Path(__file__).resolve().parents[1] / "langgraph.json").read_text())
    assert cfg["graphs"]["raac"]["path"] == "./citegraph/graphs/raac.py:graph"
    from citegraph.graphs.raac import graph

    nodes = set(graph.get_graph(xray=1).nodes)
    assert {"text_agent:feedback", "text_agent:refine", "citation_agent:validate", "assess"} <= nodes


def test_answer_item_usage(five_docs, scripted, monkeypatch):
    from citegraph.run.datasets import Item
    from citegraph.run.runner import answer_item

    monkeypatch.setattr(calibration_mod, "citation_f1", fixed_f1([1.0]))
    spec, _ = scripted(Router(gen=["Alpha [1]."], feedback=[fb(3)]))
    vspec, _ = make_verifier(lambda p, h: 1.0)
    ans, usage = answer_item(build_graph("raac"), Item(id="x", question="Q", documents=five_docs),
                             RaacContext(llm=spec, verifier=vspec, objective_checks=False))
    assert usage["llm_calls"] == 2 and ans.render() == "Alpha [1]."


def test_trace_stats_script_reads_a_finished_file_and_its_journal(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    spec_ = importlib.util.spec_from_file_location(
        "raac_stats", Path(__file__).resolve().parents[1] / "benchmarks" / "raac_trace_stats.py")
    mod = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(mod)

    def item(i, rounds, stop, cal, uncited):
        sents = [{"text": "a", "citations": [1]}] + [{"text": "b", "citations": []}] * uncited
        return {"citegraph": {"item_id": str(i), "answer": {"sentences": sents, "metadata": {
            "text_agent": {"rounds": rounds, "stop": stop},
            "raac": {"calibration": [{"decision": d} for d in cal], "discoveries": uncited, "citation_f1": 0.5},
            "usage": {"llm_calls": 3, "seconds": 10.0}}}}}

    out = tmp_path / "raac.json"
    out.write_text(json.dumps({"data": [item(1, 1, "max score", ["initial"], 0)]}))
    (tmp_path / "raac.json.partial.jsonl").write_text(
        json.dumps(item(1, 1, "max score", ["initial"], 0)) + "\n"
        + json.dumps(item(2, 3, "k=3 rounds", ["initial", "revert"], 1)) + "\n")
    s = mod.stats(mod.load(out))
    assert s["items"] == 2 and s["TextAgent rounds, distribution"] == {1: 1, 3: 1}
    assert s["TextAgent stop reasons"] == {"max score": 1, "k=3 rounds": 1}
    assert s["Summary Calibration"] == {"gate passed or nothing to restrict": 1, "revert": 1}
    assert s["uncited sentences in the final answer"] == "1/3"
    assert mod.main([str(tmp_path / "missing.json")]) == 2
    assert "no RAAC items" in capsys.readouterr().err


def test_second_run_on_the_same_thread_starts_a_fresh_trace(five_docs, scripted):
    # Studio re-uses a thread: the second run's trace and answer must be its own
    from langgraph.checkpoint.memory import InMemorySaver

    r = Router(gen=["Alpha was founded in 1901 [1].", "Zeta is a letter [1]."], feedback=[fb(3)])
    spec, _ = scripted(r)
    g = build_graph("raac", checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = RaacContext(llm=spec, verifier=make_verifier(lambda p, h: 1.0)[0], objective_checks=False, use_calibration=False)
    g.invoke({"question": "What are they?", "documents": five_docs}, config=cfg, context=ctx)
    other = [Document(id="z", title="Zeta", text="Zeta is a letter.")]
    out = g.invoke({"question": "What is Zeta?", "documents": other}, config=cfg, context=ctx)
    st = g.get_state(cfg).values
    assert [x.round for x in st["rounds"]] == [1] and len(st["calibrations"]) == 1
    assert st["working_documents"] == other and st["doc_map"] == {1: 1}
    assert out["answer"].documents == other and out["answer"].render() == "Zeta is a letter [1]."


def test_answer_carries_a_compact_trace_summary(five_docs, scripted):
    # what `citegraph show` renders without re-running: rounds, Validator kept/dropped, Discovery,
    # calibration decisions -- JSON-able and in the answer's metadata
    vspec, _ = make_verifier(lambda p, h: 1.0 if "Title: Gamma\n" in p else 0.0)
    r = Router(gen=["Gamma won the prize [3][1]. Nothing supports this [5]."], feedback=[fb(2), fb(3)],
               refine=[refined("Gamma won the 1990 prize [3][1]. Nothing supports this [5].")], add=['{"citations": []}'])
    ans, _ = run(r, five_docs, scripted, verifier=vspec, k=2, use_calibration=False)
    tr = json.loads(json.dumps(ans.metadata["trace"]))
    assert tr["method"] == "raac"
    assert [(x["round"], x["kind"], x["total"]) for x in tr["rounds"]] == [(1, "initial", 12), (2, "refine", 18)]
    assert tr["rounds"][0]["scores"] == {a: 2 for a in ASPECTS}
    assert [(v["sentence"], v["cited"], v["kept"], v["dropped"]) for v in tr["validations"]] == [
        (0, [3, 1], [3], [1]), (1, [5], [], [5])]
    assert [(d["sentence"], d["kept"]) for d in tr["discoveries"]] == [(1, [])]
    assert [c["decision"] for c in tr["calibrations"]] == ["disabled"]
