"""SQuAI and the standard RAG baseline with a scripted LLM, a stub verifier and a test-double corpus."""

from __future__ import annotations

import json
import math
import sys
import uuid
from types import SimpleNamespace

import pytest
import squai_corpus_double
from stubs import KeywordVerifier

import citegraph.corpus.registry as DOOR

from citegraph.graphs.registry import build_graph
from citegraph.nodes.squai import nodes as N
from citegraph.corpus import forget_opened
from citegraph.prompts.squai import DecompositionReply
from citegraph.state import AttributedAnswer, CitedSentence, Document, Evidence
from citegraph.state.squai import Candidate, RagContext, SquaiContext
from citegraph.tools.models import NoLogprobsError
from citegraph.tools.verifier import register_verifier

DOCS = [
    Document(id="q1", title="Qubits", text="Quantum computing uses qubits. Qubits can be in superposition."),
    Document(id="q2", title="Shor", text="Shor's algorithm factors integers quickly. It breaks RSA cryptography."),
    Document(id="q3", title="Lattices", text="Lattice cryptography resists quantum attacks. It is post-quantum."),
    Document(id="x1", title="Rivers", text="The Beta river flows through Chile. It is long."),
    Document(id="x2", title="Bread", text="Bread is baked from flour and water."),
]
QUESTION = "What is quantum computing and how is it used in cryptography?"
SUBS = ["What is quantum computing?", "How is quantum computing used in cryptography?"]


@pytest.fixture(autouse=True)
def fake_corpus(monkeypatch):
    """The corpus-layer TEST DOUBLE (tests/squai_corpus_double.py) behind the real door (open_corpus and its cache)."""
    mod = squai_corpus_double
    mod.Corpus.searches, mod.Corpus.built, mod.Corpus.opened = [], [], {}
    monkeypatch.setattr(DOOR, "Corpus", mod.Corpus)
    forget_opened()
    yield mod
    forget_opened()


@pytest.fixture
def verifier():
    spec = f"stub:{uuid.uuid4().hex[:6]}"
    v = KeywordVerifier(spec=spec)
    register_verifier(spec, v)
    return spec, v


def relevant(text: str) -> float:
    """Judge: P(Yes) high for the quantum documents, low for the others."""
    doc = text.split("Question:")[0]
    return 0.9 if "quantum" in doc.lower() or "qubits" in doc.lower() or "rsa" in doc.lower() else 0.1


def script(decomposition: str, final: str):
    def reply(messages, kwargs):
        p = messages[-1].content
        if "You decompose research questions" in p:
            return decomposition
        if "Using only this document" in p:
            return "The document says something about it."
        if "Write a concise answer" in p or "Answer the question in three to six sentences" in p:
            return final
        return "No"
    return reply


def run(graph_name, spec, vspec, ctx_cls=SquaiContext, checkpointer=None, config=None, **knobs):
    g = build_graph(graph_name, checkpointer=checkpointer)
    ctx = ctx_cls(llm=spec, verifier=vspec, **knobs)
    out = g.invoke({"question": QUESTION, "documents": DOCS}, config=config, context=ctx)
    return g, out


def final_state(graph_name, ctx):
    """The whole working state after a run (via a checkpointer; invoke returns only the output)."""
    from langgraph.checkpoint.memory import InMemorySaver

    g = build_graph(graph_name, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    g.invoke({"question": QUESTION, "documents": DOCS}, cfg, context=ctx)
    return g.get_state(cfg).values


# --------------------------------------------------------------------------- decomposition
def test_decomposition_split_no_split_and_repairs():
    d = N.decomposition_from(QUESTION, DecompositionReply(split=True, sub_questions=SUBS), [], cap=3)
    assert d.split and d.sub_questions == SUBS and d.problems == []
    d = N.decomposition_from(QUESTION, DecompositionReply(split=False, sub_questions=[]), [], cap=3)
    assert not d.split and d.sub_questions == [QUESTION]
    # "split" into one distinct sub-question (a duplicate differing in case and '?') stays whole
    d = N.decomposition_from(QUESTION, DecompositionReply(split=True, sub_questions=["What is X?", "what is x"]), [], cap=3)
    assert not d.split and d.sub_questions == [QUESTION] and any("distinct" in p for p in d.problems)
    d = N.decomposition_from(QUESTION, DecompositionReply(split=True, sub_questions=["a?", "b?", "c?", "d?"]), [], cap=2)
    assert d.sub_questions == ["a?", "b?"] and any("max_sub_questions" in p for p in d.problems)


def test_malformed_decomposition_keeps_the_question_and_records_it(scripted, verifier):
    spec, model = scripted(script("I think this is about quantum stuff.", "Qubits are used [1]."), judge=relevant)
    state = final_state("squai", SquaiContext(llm=spec, verifier=verifier[0]))
    assert state["sub_questions"] == [QUESTION] and state["answer"].metadata["sub_questions"] == [QUESTION]
    d = state["decomposition"]
    assert not d.split and any("malformed decomposition" in p for p in d.problems)
    # asked once, then once more with the error (retries=1), then the typed fallback
    assert sum("You decompose" in str(c["messages"][0].content) for c in model.calls) == 2


def test_split_question_retrieves_per_sub_question(scripted, verifier, fake_corpus):
    dec = json.dumps({"split": True, "sub_questions": SUBS})
    spec, model = scripted(script(dec, "Quantum computing uses qubits [1]. Shor's algorithm breaks RSA cryptography [2]."),
                           judge=relevant)
    g, out = run("squai", spec, verifier[0], top_k=3)
    ans = out["answer"]
    assert ans.metadata["sub_questions"] == SUBS
    searched = [s["query"] for s in fake_corpus.Corpus.searches]
    assert sorted(searched) == sorted(SUBS)
    # the parallel sub-questions share one index over the documents, built once
    assert fake_corpus.Corpus.built == [len(DOCS)]
    # the corpus layer's alpha is the DENSE weight: 1 - w_sparse
    assert all(s["alpha"] == pytest.approx(0.65) and s["k"] == 3 for s in fake_corpus.Corpus.searches)
    # 2 sub-questions x top_k=3: one Agent 2 call per candidate, plus decompose and compose
    answer_calls = [c for c in model.calls if "Using only this document" in c["messages"][-1].content]
    assert len(answer_calls) == 6
    # only documents that passed the filter are cited, and the unrelated ones did not pass
    assert {d.id for d in ans.documents} <= {"q1", "q2", "q3"}


def test_a_copied_sub_question_heading_is_removed_and_the_copied_question_flagged(scripted, verifier):
    """The 1.5B composer opened 3 of 20 ASQA answers with its prompt's heading; the heading goes, and the
    sub-question it introduced is a question, which the attribution stage flags instead of checking."""
    from citegraph.prompts.squai import SUB_QUESTIONS_HEADING

    dec = json.dumps({"split": True, "sub_questions": SUBS})
    final = f"{SUB_QUESTIONS_HEADING} What is quantum computing [1]? Quantum computing uses qubits [1]."
    spec, _ = scripted(script(dec, final), judge=relevant)
    _, out = run("squai", spec, verifier[0], top_k=3, attribution="repair")
    ans = out["answer"]
    assert [s.text for s in ans.sentences] == ["What is quantum computing?", "Quantum computing uses qubits."]
    assert [(s.support, s.citations) for s in ans.sentences][0] == ("unsupported", [])
    assert ans.sentences[1].support == "supported"
    assert any("copied its prompt's line" in w for w in ans.warnings) and ans.metadata["raw_output"] == final


# --------------------------------------------------------------------------- adaptive filter
def test_adaptive_filter_on_hand_made_scores():
    tau, sigma, thr, kept = N.adaptive_filter([3.0, 1.0, -1.0, -3.0], 0.5)
    assert tau == 0.0 and sigma == pytest.approx(math.sqrt(5.0)) and thr == pytest.approx(-0.5 * math.sqrt(5.0))
    assert kept == [True, True, True, False]
    assert N.adaptive_filter([3.0, 1.0, -1.0, -3.0], 0.0)[3] == [True, True, False, False]
    assert N.adaptive_filter([3.0, 1.0, -1.0, -3.0], 1.0)[3] == [True, True, True, False]
    # all-equal scores: every candidate is kept whatever n (the mean of equal floats can exceed them by an ulp)
    for n in (0.0, 0.5, 1.0, -1.0):
        tau, sigma, thr, kept = N.adaptive_filter([0.1, 0.1, 0.1], n)
        assert sigma == pytest.approx(0.0, abs=1e-12) and kept == [True, True, True]
    # a single candidate is kept, sigma 0
    assert N.adaptive_filter([-7.5], 0.5) == (-7.5, 0.0, -7.5, [True])
    # a failed score is dropped and does not count
    tau, sigma, thr, kept = N.adaptive_filter([2.0, None, 0.0], 0.0)
    assert tau == 1.0 and kept == [True, False, False]
    assert N.adaptive_filter([None, None], 0.5) == (None, None, None, [False, False])


def test_filter_trace_records_tau_sigma_and_reasons(scripted, verifier):
    spec, _ = scripted(script('{"split": false, "sub_questions": []}', "Qubits [1]."), judge=relevant)
    state = final_state("squai", SquaiContext(llm=spec, verifier=verifier[0], top_k=5))
    f = state["filters"][0]
    lo, hi = math.log(0.1 / 0.9), math.log(0.9 / 0.1)
    scores = sorted(j.rel_score for j in state["judgements"])
    assert scores[0] == pytest.approx(lo) and scores[-1] == pytest.approx(hi)
    mean = sum(scores) / len(scores)
    assert f.tau == pytest.approx(mean) and f.threshold == pytest.approx(mean - 0.5 * f.sigma)
    assert len(f.reasons) == 5 and sum("kept" in r for r in f.reasons) == len(f.kept)
    kept_keys = {m.key for m in state["merged"]}
    assert kept_keys and kept_keys <= {"q1", "q2", "q3"}
    assert all(m.rel_score == pytest.approx(hi) for m in state["merged"])


# --------------------------------------------------------------------------- merge and fallback
def _cand(key, sub_q, rank):
    return Candidate(sub_q=sub_q, sub_question="q", rank=rank, key=key, document=Document(id=key, text=key))


def test_merge_dedupes_first_wins_and_orders_by_relscore():
    kept = [(_cand("a", 0, 0), 1.0, "from sub 0"), (_cand("b", 0, 1), 3.0, ""),
            (_cand("a", 1, 0), 5.0, "from sub 1"), (_cand("c", 1, 1), 2.0, "")]
    merged = N.merge_documents(kept)
    assert [m.key for m in merged] == ["b", "c", "a"]
    a = merged[-1]
    assert a.sub_q == 0 and a.rel_score == 1.0 and a.answer == "from sub 0"
    # by source document: two chunks of one document, the first kept wins
    c1, c2 = _cand("d#0", 0, 0), _cand("d#1", 1, 0)
    c1.doc_id = c2.doc_id = "d"
    assert [m.key for m in N.merge_documents([(c1, 1.0, ""), (c2, 2.0, "")], "document")] == ["d#0"]
    assert [m.key for m in N.merge_documents([(c1, 1.0, ""), (c2, 2.0, "")], "chunk")] == ["d#1", "d#0"]


def test_fallback_when_nothing_passes(scripted, verifier, fake_corpus):
    # n = -3: the bar is mean + 3 sigma, which no score of this sub-question reaches
    spec, _ = scripted(script('{"split": false, "sub_questions": []}', "Qubits are used [1]."), judge=relevant)
    state = final_state("squai", SquaiContext(llm=spec, verifier=verifier[0], filter_n=-3.0))
    assert state["filters"][0].kept == []
    assert "no document passed the filter" in state["fallback"]
    assert [m.sub_q for m in state["merged"]] == [-1, -1, -1]
    # its first 3 for the original question, in retrieval order
    assert [m.rank for m in state["merged"]] == [0, 1, 2]
    assert fake_corpus.Corpus.searches[-1]["query"] == QUESTION
    assert state["answer"].metadata["fallback"] == state["fallback"]


# --------------------------------------------------------------------------- citations and evidence
def test_citations_never_outside_the_merged_list(scripted, verifier):
    spec, _ = scripted(script('{"split": false, "sub_questions": []}',
                              "Quantum computing uses qubits [1][9]. Bread is baked [7]."), judge=relevant)
    g, out = run("squai", spec, verifier[0], top_k=5)
    ans = out["answer"]
    n = len(ans.documents)
    assert 1 <= n <= 3
    assert all(1 <= c <= n for s in ans.sentences for c in s.citations)
    assert any("out-of-range" in w for w in ans.warnings)


@pytest.mark.parametrize("graph_name", ["squai", "rag"])
def test_a_looping_final_reply_is_cut_before_it_is_parsed_and_named(scripted, verifier, graph_name):
    from citegraph.state.squai import RagContext

    loop = "Quantum computing uses qubits [1]. " + "Shor's algorithm breaks RSA [1]. " * 12
    spec, _ = scripted(script('{"split": false, "sub_questions": []}', loop), judge=relevant)
    ctx_cls = SquaiContext if graph_name == "squai" else RagContext
    state = final_state(graph_name, ctx_cls(llm=spec, verifier=verifier[0], cite_format="free", attribution="off"))
    ans = state["answer"]
    assert [s.text for s in ans.sentences] == ["Quantum computing uses qubits.", "Shor's algorithm breaks RSA."]
    assert any("looped: dropped 11 repeated sentence(s)" in w for w in ans.warnings), ans.warnings
    assert state["generation"] == loop and ans.metadata["raw_output"] == loop  # the reply as written stays in the trace


def test_evidence_picked_by_the_verifier_and_unsupported_marked(scripted, verifier):
    vspec, v = verifier
    final = "Quantum computing uses qubits [1]. Lattice bread is quantum flour [1]."
    spec, _ = scripted(script('{"split": false, "sub_questions": []}', final),
                       judge=lambda t: 0.9 if "Qubits" in t.split("Question:")[0] else 0.1)
    state = final_state("squai", SquaiContext(llm=spec, verifier=vspec, attribution="off"))
    ans = state["answer"]
    assert ans.documents[0].id == "q1"
    s0, s1 = ans.sentences
    # the stub verifier entails "Quantum computing uses qubits" only from the first sentence of q1
    assert [e.text for e in s0.evidence] == ["Quantum computing uses qubits."] and s0.evidence[0].doc == 1
    assert s1.evidence == [] and s1.citations == [1]
    checks = {(c.sentence, c.doc): c.supported for c in state["citation_checks"]}
    assert checks == {(0, 1): True, (1, 1): False}
    assert ans.metadata["unsupported_citations"] == [[1, 1]]
    # one batched verifier call for all citations' sentences
    assert len(v.calls) == 1 and len(v.calls[0]) == 4


# --------------------------------------------------------------------------- judge fallback
def test_verbal_judge_when_the_model_has_no_logprobs(scripted, verifier, monkeypatch):
    def no_logprobs(spec, prompt, **kw):
        raise NoLogprobsError(f"{spec} returned no logprobs")

    monkeypatch.setattr(N, "yes_no_log_odds", no_logprobs)
    spec, _ = scripted(script('{"split": false, "sub_questions": []}', "Qubits [1]."))
    state = final_state("squai", SquaiContext(llm=spec, verifier=verifier[0]))
    assert {j.method for j in state["judgements"]} == {"verbal"}
    assert all(j.rel_score == -1.0 for j in state["judgements"])  # the script answers "No"
    assert any("verbal judgement" in n for n in state["notes"])
    with pytest.raises(Exception, match="no logprobs"):
        build_graph("squai").invoke({"question": QUESTION, "documents": DOCS},
                                    context=SquaiContext(llm=spec, verifier=verifier[0], judge="logodds"))


# --------------------------------------------------------------------------- re-runs on one thread
def test_send_fan_out_state_does_not_leak_into_a_second_run(scripted, verifier):
    from langgraph.checkpoint.memory import InMemorySaver

    dec = json.dumps({"split": True, "sub_questions": SUBS})
    spec, _ = scripted(script(dec, "Quantum computing uses qubits [1]."), judge=relevant)
    g = build_graph("squai", checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
    ctx = SquaiContext(llm=spec, verifier=verifier[0], top_k=3)
    g.invoke({"question": QUESTION, "documents": DOCS}, cfg, context=ctx)
    first = g.get_state(cfg).values
    g.invoke({"question": QUESTION, "documents": DOCS}, cfg, context=ctx)
    second = g.get_state(cfg).values
    assert len(first["candidates"]) == len(second["candidates"]) == 6
    assert len(second["doc_answers"]) == len(second["judgements"]) == 6
    assert [m.key for m in first["merged"]] == [m.key for m in second["merged"]]


# --------------------------------------------------------------------------- standard RAG
def test_rag_top_k_in_one_prompt_with_citations(scripted, fake_corpus):
    spec, model = scripted(script("", "Quantum computing uses qubits [1]. Shor breaks RSA [2][12]."))
    g = build_graph("rag")
    state = g.invoke({"question": QUESTION, "documents": DOCS}, context=RagContext(llm=spec, top_k=4, attribution="off"),
                     stream_mode="values")
    ans = state["answer"]
    assert len(ans.documents) == 4 and len(model.calls) == 1
    assert fake_corpus.Corpus.searches == [{"query": QUESTION, "k": 4, "mode": "hybrid", "alpha": pytest.approx(0.65),
                                           "candidates": 8}]  # candidate_factor 2 x top_k 4 per retriever
    assert [s.citations for s in ans.sentences] == [[1], [2]]
    prompt = model.calls[0]["messages"][-1].content
    assert all(f"[{i}]" in prompt for i in range(1, 5)) and "Cite the supporting document" in prompt


def _uncited_then(second: str):
    """Agent 4 / the RAG prompt first writes an uncited answer; asked again (the reminder), ``second``."""
    base = script('{"split": false, "sub_questions": []}', "Quantum computing uses qubits.")

    def reply(messages, kwargs):
        if len(messages) > 1 and "cites no document" in messages[-1].content:
            assert messages[-2].content == "Quantum computing uses qubits."  # the same conversation
            return second
        return base(messages, kwargs)
    return reply


@pytest.mark.parametrize("graph_name,ctx_cls", [("squai", SquaiContext), ("rag", RagContext)])
def test_an_uncited_reply_is_asked_again_once(scripted, verifier, graph_name, ctx_cls):
    # the citation retry belongs to cite_format=free (constrained decoding cites every sentence)
    spec, model = scripted(_uncited_then("Quantum computing uses qubits [1]."), judge=relevant)
    state = final_state(graph_name, ctx_cls(llm=spec, verifier=verifier[0], cite_format="free", attribution="off"))
    ans = state["answer"]
    assert [s.citations for s in ans.sentences] == [[1]] and state["generation"] == "Quantum computing uses qubits [1]."
    assert state["citation_retry"] == ["reply 1 cited no document; asked again: the new reply cites"]
    assert any("asked again" in w for w in ans.warnings)
    reminders = [c for c in model.calls if "cites no document" in c["messages"][-1].content]
    assert len(reminders) == 1
    # asked again and still uncited (or citing only numbers outside the list): the first reply is kept, said so
    spec, model = scripted(_uncited_then("Quantum computing is fast [9]."), judge=relevant)
    state = final_state(graph_name, ctx_cls(llm=spec, verifier=verifier[0], cite_format="free", attribution="off"))
    assert state["generation"] == "Quantum computing uses qubits." and state["answer"].sentences[0].citations == []
    assert state["citation_retry"][-1] == "kept the first reply (uncited)"
    # citation_retries = 0: one call, nothing asked again
    spec, model = scripted(_uncited_then("Quantum computing uses qubits [1]."), judge=relevant)
    state = final_state(graph_name, ctx_cls(llm=spec, verifier=verifier[0], citation_retries=0, cite_format="free", attribution="off"))
    assert state["citation_retry"] == [] and not any("cites no document" in c["messages"][-1].content for c in model.calls)


@pytest.mark.parametrize("graph_name,ctx_cls", [("squai", SquaiContext), ("rag", RagContext)])
def test_constrained_final_call_gets_the_grammar_over_its_documents(scripted, verifier, graph_name, ctx_cls):
    from citegraph.tools.models import citation_grammar

    spec, model = scripted(script('{"split": false, "sub_questions": []}', "Quantum computing uses qubits [1] [12]."),
                           judge=relevant)
    state = final_state(graph_name, ctx_cls(llm=spec, verifier=verifier[0], attribution="off"))  # constrained is the default
    final = [c for c in model.calls if "grammar" in c["kwargs"]]
    n = len(state["merged"]) if graph_name == "squai" else len(state["retrieved"])
    assert len(final) == 1 and final[0]["kwargs"]["grammar"] == citation_grammar(n, min_sentences=2, max_sentences=5)
    ans = state["answer"]
    assert [s.citations for s in ans.sentences] == [[1]] and ans.metadata["cite_format"] == "grammar"
    assert state["citation_retry"] == [] and any("out-of-range citation(s) [12]" in w for w in ans.warnings)


def test_index_when_no_documents_are_given(scripted, fake_corpus):
    from citegraph.errors import InputError

    fake_corpus.Corpus.opened = {"idx/": fake_corpus.Corpus(DOCS[:2])}
    spec, model = scripted(script("", "Quantum computing uses qubits [1]."))
    g = build_graph("rag")
    out = g.invoke({"question": QUESTION, "documents": []}, context=RagContext(llm=spec, corpus="idx/"))
    assert [d.id for d in out["answer"].documents] == ["q1", "q2"]
    with pytest.raises(InputError, match="no documents given and no corpus"):
        g.invoke({"question": QUESTION, "documents": []}, context=RagContext(llm=spec))


def test_squai_on_the_real_corpus_layer(scripted, verifier, monkeypatch):
    """The real citegraph.corpus (in-memory index over the given documents): chunk ids, provenance."""
    from citegraph.corpus.index import Corpus

    monkeypatch.setattr(DOOR, "Corpus", Corpus)
    forget_opened()
    spec, _ = scripted(script('{"split": false, "sub_questions": []}', "Quantum computing uses qubits [1]."),
                       judge=relevant)
    state = final_state("squai", SquaiContext(llm=spec, verifier=verifier[0], top_k=3))
    assert len(state["candidates"]) == 3
    assert all(c.key == f"{c.doc_id}#0" for c in state["candidates"])  # one chunk per short document
    assert {c.doc_id for c in state["candidates"]} <= {d.id for d in DOCS}
    ans = state["answer"]
    assert ans.documents and ans.documents[0].metadata["doc_id"] in {"q1", "q2", "q3"}
    assert ans.sentences[0].citations == [1]


def test_context_knob_ranges():
    from citegraph.errors import InputError

    with pytest.raises(InputError):
        SquaiContext(top_k=2)
    with pytest.raises(InputError):
        SquaiContext(retrieval_alpha=1.5)
    with pytest.raises(InputError):
        SquaiContext(judge="maybe")
    assert SquaiContext().w_sparse == pytest.approx(0.35) and SquaiContext().retrieval_alpha == 0.65 and SquaiContext().filter_n == 0.5 and SquaiContext().top_k == 5


# --------------------------------------------------------------------------- DeepEval-style metrics
def _judge_script(replies: dict[str, str]):
    def reply(messages, kwargs):
        p = messages[-1].content if len(messages) == 1 else messages[0].content
        for key, text in replies.items():
            if key in p:
                return text
        return "nonsense"
    return reply


def test_deepeval_definitions_count_as_deepeval_does(scripted):
    from citegraph.eval.deepeval_metrics import deepeval_scores

    spec, model = scripted(_judge_script({
        "Break the text into its individual statements": '{"statements": ["A.", "B.", "C.", "D."]}',
        "relevant to answering the question": json.dumps({"verdicts": [
            {"verdict": "yes"}, {"verdict": "idk"}, {"verdict": "no"}, {"verdict": "yes"}]}),
        "List every factual claim": '{"claims": ["c1", "c2", "c3"]}',
        "CONTRADICTS": json.dumps({"verdicts": [{"verdict": "yes"}, {"verdict": "idk"}, {"verdict": "no"}]}),
        "Break the context into its statements": json.dumps({"verdicts": [
            {"statement": "s1", "verdict": "yes"}, {"statement": "s2", "verdict": "no"}]}),
    }))
    s = deepeval_scores("Q?", "An answer.", ["ctx one", "ctx two"], spec, context_mode="json")
    assert s.answer_relevancy == pytest.approx(3 / 4)      # "idk" counts as relevant
    assert s.faithfulness == pytest.approx(2 / 3)          # only a contradiction is penalised
    assert s.contextual_relevancy == pytest.approx(2 / 4)  # over both context documents
    assert s.mean == pytest.approx((3 / 4 + 2 / 3 + 2 / 4) / 3) and s.problems == []
    # one contextual-relevancy call per context document
    assert sum("Break the context" in c["messages"][-1].content for c in model.calls) == 2


def test_contextual_relevancy_cache_judges_each_context_once_per_question(scripted):
    from citegraph.eval.deepeval_metrics import contextual_relevancy

    spec, model = scripted(_judge_script({"Break the context into its statements": json.dumps({"verdicts": [
        {"statement": "s1", "verdict": "yes"}, {"statement": "s2", "verdict": "no"}]})}))
    n_ctx = lambda: sum("Break the context" in c["messages"][-1].content for c in model.calls)  # noqa: E731
    cache: dict = {}
    a = contextual_relevancy("Q?", ["ctx one", "ctx two"], spec, cache=cache, mode="json")
    b = contextual_relevancy("Q?", ["ctx two", "ctx three"], spec, cache=cache, mode="json")  # one new context
    assert n_ctx() == 3 and a.score == b.score == pytest.approx(0.5)
    assert [d.get("cached", False) for d in b.details["per_context"]] == [True, False]
    contextual_relevancy("Another question?", ["ctx one"], spec, cache=cache, mode="json")  # same text, other question
    contextual_relevancy("Q?", ["ctx one"], spec, mode="json")  # no cache given: judged again
    assert n_ctx() == 5
    # a log-odds judgement of the same document is not the cached json one: judged anew, without the json prompt
    r = contextual_relevancy("Q?", ["ctx one"], spec, cache=cache)
    assert n_ctx() == 5 and r.details["per_context"][0]["mode"] == "logodds"


def test_contextual_relevancy_logodds_judges_each_sentence(scripted, monkeypatch):
    """Default mode: the document's sentences are its statements; relevant iff log p(Yes) - log p(No) > 0."""
    import citegraph.eval.deepeval_metrics as deepeval_metrics
    import citegraph.tools.models as M
    from citegraph.eval.deepeval_metrics import contextual_relevancy

    spec, model = scripted(judge=lambda t: 0.9 if "qubit" in t.split("Statement:")[1] else 0.2)
    ctx = ["Qubits hold a qubit state. Bread is baked in ovens. A qubit decoheres.", "Rivers flow to the sea."]
    r = contextual_relevancy("What are qubits?", ctx, spec)
    assert r.score == pytest.approx(2 / 4) and r.problems == []
    d = r.details["per_context"]
    assert [(x["relevant"], x["statements"], x["mode"]) for x in d] == [(2, 3, "logodds"), (0, 1, "logodds")]
    assert d[0]["log_odds"][0] > 0 > d[0]["log_odds"][1]
    assert not model.calls  # no generation: the first token's log-odds only
    # a judge without logprobs: json mode for that document, recorded
    calls = []

    def no_logprobs(spec, prompts, **kw):
        calls.append(prompts)
        raise M.NoLogprobsError("no logprobs here")

    monkeypatch.setattr(deepeval_metrics, "judge_many", no_logprobs)  # where the metric looks it up
    spec2, model2 = scripted(_judge_script({"Break the context into its statements": json.dumps({"verdicts": [
        {"statement": "s1", "verdict": "yes"}, {"statement": "s2", "verdict": "no"}, {"statement": "s3", "verdict": "no"}]})}))
    r = contextual_relevancy("What are qubits?", ctx[:1], spec2)
    assert r.score == pytest.approx(1 / 3) and r.details["per_context"][0]["mode"] == "json"
    assert any("no logprobs" in p and "json mode" in p for p in r.problems) and calls
    with pytest.raises(ValueError, match="choose from"):
        contextual_relevancy("Q?", ["x"], spec2, mode="verbal")


def test_deepeval_unparsable_judge_gives_none_not_a_score(scripted):
    from citegraph.eval.deepeval_metrics import answer_relevancy, faithfulness

    spec, _ = scripted(_judge_script({"List every factual claim": '{"claims": []}'}))
    r = answer_relevancy("Q?", "An answer.", spec)
    assert r.score is None and any("did not parse" in p for p in r.problems)
    assert faithfulness("An answer.", ["ctx"], spec).score == 1.0  # no claims: DeepEval's 1.0


# --------------------------------------------------------------------------- benchmark script
def test_bench_squai_answers_scores_resumes_and_filter_table(scripted, tmp_path, capsys, verifier, fake_corpus):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_squai

    data = tmp_path / "d.json"
    data.write_text(json.dumps({"goldens": [
        {"input": "What are qubits used for?", "context": ["Qubits store quantum information.", "Qubits need cooling."]},
        {"input": "How is bread baked?", "context": ["Bread is baked from flour.", "Ovens bake bread."]},
    ]}))

    def reply(messages, kwargs):
        p = messages[-1].content
        if "You decompose" in p:
            return '{"split": false, "sub_questions": []}'
        if "Using only this document" in p:
            return "It says so."
        if "Break the text into its individual statements" in p:
            return '{"statements": ["S."]}'
        if "relevant to answering the question" in p or "CONTRADICTS" in p:
            return '{"verdicts": [{"verdict": "yes"}]}'
        if "List every factual claim" in p:
            return '{"claims": ["C."]}'
        if "Break the context" in p:
            return '{"verdicts": [{"statement": "s", "verdict": "yes"}, {"statement": "t", "verdict": "no"}]}'
        return "Qubits store quantum information [1]."

    def judge(t):  # Agent 3 sees the document before "Question:"; contextual relevancy the statement after it
        return 0.9 if "Qubits" in (t.split("Statement:")[1] if "Statement:" in t else t.split("Question:")[0]) else 0.2

    spec, model = scripted(reply, judge=judge)
    out = tmp_path / "run"
    argv = ["--data", str(data), "--limit", "1", "--llm", spec, "--verifier", verifier[0], "--out", str(out)]
    assert bench_squai.main(argv) == 0
    rows = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in rows) == ["rag/q0", "squai/q0", "vanilla/q0"]
    by = {r["method"]: r for r in rows}
    # SQuAI kept the two Qubits chunks (both relevant); rag and vanilla had all four (two about bread)
    assert by["squai"]["answer_relevancy"] == 1.0 and by["squai"]["contextual_relevancy"] == 1.0
    assert by["rag"]["contextual_relevancy"] == by["vanilla"]["contextual_relevancy"] == 0.5
    assert sorted(by["rag"]["context_ids"]) == ["q0-c0", "q0-c1", "q1-c0", "q1-c1"]
    assert by["rag"]["context_judge"] == "logodds"
    printed = capsys.readouterr().out
    # the judge check: q0's own chunks (qubits) 2/2 relevant, q1's (bread) 0/2, each chunk counted once
    assert "| logodds | 4 | 1.000 (2/2, 2 chunks) | 0.000 (0/2, 2 chunks) |" in printed, printed
    assert by["squai"]["support_precision"] == 1.0 and by["rag"]["support_precision"] is None
    # the judge's log-odds evaluations count as LLM calls: decompose + 4 answers + 4 judges + compose
    assert by["squai"]["llm_calls"] == 10
    # --judge-check: each answer's statements against the next question (here the script says "yes" to all:
    # the check shows such a judge as not telling them apart, 1.000 both ways)
    n_calls = len(model.calls)
    assert bench_squai.main(argv + ["--judge-check"]) == 0
    checks = [json.loads(x) for x in (out / "judge_check.jsonl").read_text().splitlines()]
    assert sorted(c["key"] for c in checks) == ["rag/q0", "squai/q0", "vanilla/q0"]
    assert all(c["other_id"] == "q0" for c in checks)  # the next of 1 is itself
    assert len(model.calls) == n_calls + 3
    assert "| squai | 1 | 1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] |" in capsys.readouterr().out
    # a judge that tells them apart: the qubit statement is irrelevant to the bread question
    spec_j, _ = scripted(lambda messages, kw: '{"verdicts": [{"verdict": "no"}]}' if "bread" in messages[-1].content
                         else '{"verdicts": [{"verdict": "yes"}]}')
    row = {"key": "squai/q0", "method": "squai", "id": "q0", "answer_relevancy": 1.0,
           "details": {"answer_relevancy": {"statements": ["Qubits store quantum information."]}}}
    c = bench_squai.judge_check_row(row, "q1", "How is bread baked?", SimpleNamespace(judge=spec_j, llm=spec_j))
    assert c["own"] == 1.0 and c["other"] == 0.0 and c["verdicts"] == ["no"]
    assert "| squai | 1 | 1.000 [1.000, 1.000] | 0.000 [0.000, 0.000] |" in bench_squai.judge_check_table([c])
    assert "| squai | 1 |" in printed and "SQuAI abstract (paper)" in printed
    # SQuAI's own run journals its filter trace: the filter table's row for q0
    frows = [json.loads(x) for x in (out / "filter.jsonl").read_text().splitlines()]
    assert [r["id"] for r in frows] == ["q0"] and len(frows[0]["candidates"]) == 4
    assert all(c["rel_score"] is not None for c in frows[0]["candidates"]) and frows[0]["commit"]
    # the journals a later session keeps (scores, filter, judge check) hold ids, not the data set's questions
    for name in ("scores.jsonl", "filter.jsonl", "judge_check.jsonl"):
        assert "What are qubits used for?" not in (out / name).read_text(), name
    n_calls = len(model.calls)
    assert bench_squai.main(argv) == 0          # resumed: nothing is answered or scored again
    assert bench_squai.main(argv + ["--support-check", verifier[0]]) == 0   # no LLM call: a verifier's
    sup = [json.loads(x) for x in (out / "support_check.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in sup) == [f"{m}/q0|{verifier[0]}" for m in ("rag", "squai", "vanilla")]
    assert "Attributions checked by a second verifier (0 scored answer(s) not checked" in capsys.readouterr().out
    assert len(model.calls) == n_calls
    (out / "answers.jsonl").unlink()            # a later session keeps only scores.jsonl and filter.jsonl
    assert bench_squai.main(argv) == 0
    assert len(model.calls) == n_calls
    assert bench_squai.main(["--data", str(data), "--filter-table", "2", "--llm", spec, "--verifier", verifier[0],
                             "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # only q1 ran: q0's row came from SQuAI's own run
    later = " ".join(str(c) for c in model.calls[n_calls:])
    assert "How is bread baked?" in later and "What are qubits used for?" not in later
    frows = [json.loads(x) for x in (out / "filter.jsonl").read_text().splitlines()]
    assert [r["id"] for r in frows] == ["q0", "q1"] and all(len(r["candidates"]) == 4 for r in frows)
    assert "Judge filter on 2 question(s), corpus of 4 chunks" in printed
    # q0's own chunks (Qubits) are judged relevant and kept; q1's (bread) are not, q0's are kept there
    assert "| 0.5 | 2 | 2.00 | 1.00 | 0.500 | 0.500 | 2.00 |" in printed, printed
    # --index: squai/rag retrieve from the index (no documents passed), vanilla gets the index's top 10
    idx_docs = [Document(id="q0-c0", text="Qubits store quantum information."), Document(id="x", text="Other.")]
    fake_corpus.Corpus.opened = {"idx/": fake_corpus.Corpus(idx_docs)}
    out3 = tmp_path / "run3"
    assert bench_squai.main(["--data", str(data), "--limit", "1", "--llm", spec, "--verifier", verifier[0],
                             "--out", str(out3), "--index", "idx/", "--no-score"]) == 0
    arows = {json.loads(x)["method"]: json.loads(x) for x in (out3 / "answers.jsonl").read_text().splitlines()}
    assert [d["id"] for d in arows["vanilla"]["answer"]["documents"]] == ["q0-c0", "x"]
    assert arows["squai"]["answer"]["documents"][0]["id"] == "q0-c0"
    # --write-corpus: one line per context chunk
    assert bench_squai.main(["--data", str(data), "--write-corpus", str(tmp_path / "c.jsonl")]) == 0
    lines = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == ["q0-c0", "q0-c1", "q1-c0", "q1-c1"]
    # --full-answers finishes the graph and journals the cited answer; --report-only runs nothing
    out2 = tmp_path / "run2"
    base = ["--data", str(data), "--llm", spec, "--verifier", verifier[0], "--out", str(out2)]
    assert bench_squai.main(base + ["--filter-table", "2", "--skip", "1", "--full-answers"]) == 0
    frows = [json.loads(x) for x in (out2 / "filter.jsonl").read_text().splitlines()]
    assert [r["id"] for r in frows] == ["q1"] and frows[0]["answer"].endswith("[1].")
    assert frows[0]["filters"][0]["threshold"] is not None
    n_calls = len(model.calls)
    assert bench_squai.main(base + ["--filter-table", "2", "--report-only"]) == 0
    assert len(model.calls) == n_calls and "Judge filter on 1 question(s)" in capsys.readouterr().out


def test_sub_question_fan_out_reports_progress(scripted, verifier, fake_corpus):
    """Studio / SDK custom stream: the decomposition, each sub-question's retrieval and each judgement."""
    dec = json.dumps({"split": True, "sub_questions": SUBS})
    spec, _ = scripted(script(dec, "Quantum computing uses qubits [1]."), judge=relevant)
    g = build_graph("squai")
    events = list(g.stream({"question": QUESTION, "documents": DOCS}, stream_mode="custom",
                           context=SquaiContext(llm=spec, verifier=verifier[0], top_k=3)))
    kinds = [e["event"] for e in events]
    assert kinds[0] == "squai_decompose" and events[0]["sub_questions"] == SUBS
    retrieved = [e for e in events if e["event"] == "squai_retrieve"]
    assert sorted(e["sub_q"] for e in retrieved) == [1, 2] and all(e["retrieved"] == 3 for e in retrieved)
    assert kinds.count("squai_judge") == 6
    assert max(i for i, k in enumerate(kinds) if k == "squai_retrieve") < kinds.index("squai_judge")


def test_bench_support_check_asks_a_second_verifier(tmp_path, capsys, verifier):
    """--support-check: the attached supporting sentences and the cited documents, judged by another verifier;
    a citation the graph marked unsupported is counted apart from one with a supporting sentence."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_squai

    docs = [Document(id="a", text="Qubits store quantum information. They need cooling."),
            Document(id="b", text="Bread is baked from flour.")]
    ans = AttributedAnswer(question="q", documents=docs, metadata={"unsupported_citations": [[1, 2]]}, sentences=[
        CitedSentence(text="Qubits store quantum information.", citations=[1],
                      evidence=[Evidence(doc=1, text="Qubits store quantum information.")]),
        CitedSentence(text="Qubits need flour.", citations=[1, 2],
                      evidence=[Evidence(doc=1, text="They need cooling.")])])   # a wrong pick, as a check would find
    row = {"key": "squai/q0", "method": "squai", "id": "q0", "answer": ans.model_dump(mode="json")}
    c = bench_squai.support_check_row(row, verifier[0])
    assert c["evidence_entailed"] == [True, False]
    assert c["citations"] == [{"sentence": 0, "doc": 1, "evidence_found": True, "doc_entails": True},
                              {"sentence": 1, "doc": 1, "evidence_found": True, "doc_entails": False},
                              {"sentence": 1, "doc": 2, "evidence_found": False, "doc_entails": False}]
    table = bench_squai.support_check_table([c])
    assert f"| squai | {verifier[0]} | 1 | 0.500 (1/2) | 0.333 (1/3) | 0.500 (1/2) | 0.000 (0/1) |" in table, table
    # an answer with no supporting-sentence step (rag: no evidence, no unsupported marks): only the documents
    plain = AttributedAnswer(question="q", documents=docs, sentences=[
        CitedSentence(text=s.text, citations=s.citations) for s in ans.sentences])
    rag = {**row, "key": "rag/q0", "method": "rag", "answer": plain.model_dump(mode="json")}
    r = bench_squai.support_check_row(rag, verifier[0])
    assert r["evidence_entailed"] == [] and [c["evidence_found"] for c in r["citations"]] == [None, None, None]
    assert [c["doc_entails"] for c in r["citations"]] == [True, False, False]
    assert f"| rag | {verifier[0]} | 1 | n/a | 0.333 (1/3) | n/a | n/a |" in bench_squai.support_check_table([r])
