"""GINGER: detection keeps only spans of the passage, clustering (offline BERTopic, LSA, <4 nuggets),
the ranking is applied, the budget stops, citations come from the nuggets' passages, rewrite rejection."""

from __future__ import annotations

import json
import re

import pytest
from stubs import KeywordVerifier

from citegraph.graphs.registry import build_graph, make_context
from citegraph.state import Document
from citegraph.tools.verifier import register_verifier

DOCS = [
    Document(id="a", title="Cats", text="Cats purr when they are content. A purr comes from the larynx muscles. Cats also purr when hurt."),
    Document(id="b", title="Dogs", text="Dogs bark to warn their owners. Barking is loud and sharp."),
    Document(id="c", title="Birds", text="Birds sing at dawn to claim territory. Songs attract mates in spring."),
]


@pytest.fixture
def kw_verifier():
    v = KeywordVerifier(spec="stub:ginger")
    register_verifier("stub:ginger", v)
    return v


def prompt_of(messages) -> str:
    return str(messages[-1].content)


def passage_of(prompt: str) -> str:
    return prompt.split("Passage:\n", 1)[1].split("\n\n", 1)[0]


def make_script(spans_by_title: dict[str, list[str]], summary=None, rewrite="", tagged=False):
    """Detection replies by passage title; summaries echo the cluster's first nugget; rewrite as given."""

    def reply(messages, kwargs):
        p = prompt_of(messages)
        if "information nuggets" in p or "<IN>" in p:
            for title, spans in spans_by_title.items():
                if (f"Title: {title}" in p) or (tagged and title in p):
                    if tagged:
                        text = passage_of(p)
                        for s in spans:
                            text = text.replace(s, f"<IN>{s}</IN>")
                        return text
                    return json.dumps({"nuggets": spans})
            return json.dumps({"nuggets": []})
        if p.startswith("Question:") and "Information:\n" in p:
            first = p.split("Information:\n- ", 1)[1].split("\n", 1)[0]
            return summary(first) if summary else f"Summary: {first}."
        if "Rewrite the response" in p:
            return rewrite
        return ""

    return reply


def run(scripted, spans, *, judge=0.5, summary=None, rewrite="", tagged=False, docs=DOCS, **knobs):
    spec, model = scripted(make_script(spans, summary, rewrite, tagged), judge=judge)
    graph = build_graph("ginger")
    ctx = make_context("ginger", llm=spec, verifier="stub:ginger", **{"attribution": "off", **knobs})
    from langgraph.checkpoint.memory import MemorySaver

    graph = build_graph("ginger", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"question": "Why do animals make sounds?", "documents": docs}, cfg, context=ctx)
    return out["answer"], graph.get_state(cfg).values, model


# --------------------------------------------------------------------------- detection
def test_detection_keeps_only_spans_of_their_passage_with_offsets(scripted, kw_verifier):
    spans = {"Cats": ["Cats purr when they are content", "Dogs bark to warn their owners", "cats fly to the moon"],
             "Dogs": ["Dogs bark to warn their owners"]}
    ans, st, _ = run(scripted, spans)
    nuggets = st["nuggets"]
    assert [(n.passage, n.text) for n in nuggets] == [(1, "Cats purr when they are content"), (2, "Dogs bark to warn their owners")]
    for n in nuggets:  # the offsets point at the passage's own text
        assert DOCS[n.passage - 1].text[n.start:n.end] == n.text
    det = {d.passage: d for d in st["detections"]}
    # a span of another passage and an invented one are rejected, and recorded
    assert set(det[1].rejected) == {"Dogs bark to warn their owners", "cats fly to the moon"}
    assert det[1].proposed == 3 and det[1].kept == 1


def test_a_span_inside_another_is_one_nugget(scripted, kw_verifier):
    # seen with the embedded model: the same fact as a sentence and as its tail
    spans = {"Cats": ["purr comes from the larynx muscles", "A purr comes from the larynx muscles", "the larynx muscles"]}
    _, st, _ = run(scripted, spans)
    assert [n.text for n in st["nuggets"]] == ["A purr comes from the larynx muscles"]
    assert len(st["detections"][0].rejected) == 2


def test_fuzzy_match_keeps_the_passages_text(scripted, kw_verifier):
    spans = {"Cats": ["A purr comes from larynx muscles"]}  # the model dropped a word
    _, st, _ = run(scripted, spans)
    (n,) = st["nuggets"]
    assert n.match == "fuzzy" and n.text == "A purr comes from the larynx muscles"
    assert DOCS[0].text[n.start:n.end] == n.text


def test_tagged_format_parses_in_tags(scripted, kw_verifier):
    spans = {"Birds": ["Birds sing at dawn to claim territory"]}
    _, st, _ = run(scripted, spans, tagged=True, detect_format="tagged")
    assert [n.text for n in st["nuggets"]] == ["Birds sing at dawn to claim territory"]


def test_parse_tagged_unclosed():
    from citegraph.nodes.ginger.nodes import parse_tagged

    assert parse_tagged("x <IN>one two</IN> y <in>three four") == ["one two", "three four"]


# --------------------------------------------------------------------------- clustering
def test_fewer_than_four_nuggets_are_one_cluster_each(scripted, kw_verifier):
    spans = {"Cats": ["Cats purr when they are content"], "Dogs": ["Dogs bark to warn their owners"],
             "Birds": ["Birds sing at dawn to claim territory"]}
    ans, st, _ = run(scripted, spans)
    assert [c.nuggets for c in st["clusters"]] == [[0], [1], [2]]
    assert "one cluster each" in st["clustering_note"]
    assert len(ans.sentences) == 3


@pytest.mark.slow
def test_bertopic_runs_offline_on_given_embeddings(monkeypatch):
    # BERTopic must use our embeddings: loading any sentence-transformers model would fail here.
    # slow: UMAP's numba functions compile on a process's first call (~30 s idle, 2 min on a busy 2-core box)
    import numpy as np
    import sentence_transformers

    def refuse(*a, **k):
        raise AssertionError("BERTopic tried to load a sentence-transformers model")

    monkeypatch.setattr(sentence_transformers.SentenceTransformer, "__init__", refuse)
    from citegraph.nodes.ginger.clustering import cluster_texts

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=8), rng.normal(size=8)
    emb = np.stack([a + 0.01 * rng.normal(size=8) for _ in range(6)] + [b + 0.01 * rng.normal(size=8) for _ in range(6)])
    texts = [f"alpha fact {i}" for i in range(6)] + [f"beta fact {i}" for i in range(6)]
    res = cluster_texts(texts, method="bertopic", embeddings=emb)
    assert sorted(sorted(c) for c in res.clusters) == [list(range(6)), list(range(6, 12))]


def test_lsa_clusters_by_words():
    from citegraph.nodes.ginger.clustering import cluster_texts

    texts = ["cats purr softly", "cats purr loudly", "cats purr often", "dogs bark loudly", "dogs bark often", "dogs bark softly"]
    res = cluster_texts(texts, method="lsa")
    assert sorted(sorted(c) for c in res.clusters) == [[0, 1, 2], [3, 4, 5]]


def test_noise_is_kept_as_one_cluster():
    from citegraph.nodes.ginger.clustering import _group

    clusters, outliers = _group([0, -1, 1, 0, -1])
    assert clusters == [[0, 3], [1, 4], [2]] and outliers == [1, 4]


# --------------------------------------------------------------------------- ranking
def pref_birds(text: str) -> float:
    # the judge prefers the passage A that mentions birds; everything else is a coin flip
    a = text.split("Passage A:\n", 1)[1].split("\n\nPassage B:", 1)[0]
    b = text.split("Passage B:\n", 1)[1].split("\n\n", 1)[0]
    return 0.9 if "Birds" in a and "Birds" not in b else (0.1 if "Birds" in b and "Birds" not in a else 0.5)


def test_pairwise_ranking_orders_the_summaries(scripted, kw_verifier):
    spans = {"Cats": ["Cats purr when they are content"], "Dogs": ["Dogs bark to warn their owners"],
             "Birds": ["Birds sing at dawn to claim territory"]}
    ans, st, model = run(scripted, spans, judge=pref_birds)
    # the birds cluster (detected last) is ranked first, and its summary comes first in the response
    assert st["order"][0] == 2
    assert ans.sentences[0].text.startswith("Birds sing at dawn")
    assert len(st["pair_scores"]) == 6  # every ordered pair of 3 clusters


def rank_state(sizes_texts):
    from citegraph.state.ginger import Cluster, GingerState, Nugget

    nuggets, clusters = [], []
    for cid, texts in enumerate(sizes_texts):
        idx = []
        for t in texts:
            idx.append(len(nuggets))
            nuggets.append(Nugget(passage=1, text=t, start=0, end=len(t)))
        clusters.append(Cluster(id=cid, nuggets=idx))
    return GingerState(question="Why do birds sing?", documents=DOCS, nuggets=nuggets, clusters=clusters)


def test_size_and_bm25_rankers_order_the_clusters():
    from langgraph.runtime import Runtime

    from citegraph.nodes.ginger.nodes import rank

    st = rank_state([["cats purr a lot"], ["dogs bark loudly", "dogs bark at night", "dogs bark often"],
                     ["birds sing at dawn", "birds sing in spring"]])
    out = rank(st, Runtime(context=make_context("ginger", ranker="size")))
    assert out["order"] == [1, 2, 0]  # the released code's effective order: largest first
    out = rank(st, Runtime(context=make_context("ginger", ranker="bm25")))
    assert out["order"][0] == 2  # the question is about birds
    from citegraph.nodes.ginger.ranking import sym_sum

    assert sym_sum(2, {(0, 1): 0.8, (1, 0): 0.3}) == pytest.approx([1.5, 0.5])


def test_pairwise_cap_compares_the_largest_and_appends_the_rest(scripted):
    from langgraph.runtime import Runtime

    from citegraph.nodes.ginger.nodes import rank

    spec, model = scripted([], judge=pref_birds)
    st = rank_state([["cats purr a lot"], ["dogs bark loudly", "dogs bark at night", "dogs bark often"],
                     ["Birds sing at dawn", "Birds sing in spring"]])
    out = rank(st, Runtime(context=make_context("ginger", llm=spec, max_pairwise_clusters=2)))
    assert len(out["pair_scores"]) == 2 and out["order"] == [2, 1, 0]
    assert "compared the 2 largest of 3" in out["ranking_note"]


def test_bm25_ranker_uses_the_question():
    from citegraph.nodes.ginger.ranking import bm25_scores

    s = bm25_scores("why do birds sing", ["cats purr", "birds sing at dawn", "dogs bark"])
    assert max(range(3), key=lambda i: s[i]) == 1


# --------------------------------------------------------------------------- budget + citations
def test_budget_stops_at_max_sentences_and_max_words(scripted, kw_verifier):
    spans = {"Cats": ["Cats purr when they are content"], "Dogs": ["Dogs bark to warn their owners"],
             "Birds": ["Birds sing at dawn to claim territory"]}
    ans, st, model = run(scripted, spans, max_sentences=2)
    assert len(ans.sentences) == 2
    assert [b.action for b in st["budget"]] == ["kept", "kept", "stop_sentences"]
    n_summary_calls = sum("Information:\n" in prompt_of(c["messages"]) for c in model.calls)
    assert n_summary_calls == 2  # no summary written past the budget
    ans, st, _ = run(scripted, spans, max_words=14)  # each summary is 7 words
    assert [b.action for b in st["budget"]] == ["kept", "kept", "stop_words"]
    assert sum(len(s.text.split()) for s in ans.sentences) <= 14


def test_citations_come_from_the_nuggets_passages_and_are_verified(scripted, kw_verifier):
    spans = {"Cats": ["Cats purr when they are content"], "Dogs": ["Dogs bark to warn their owners"],
             "Birds": ["Birds sing at dawn to claim territory"]}
    ans, st, _ = run(scripted, spans)
    for s, summ in zip(ans.sentences, st["summaries"]):
        assert s.citations == summ.citations
        assert set(s.citations) <= set(summ.candidates)
        assert all(e.doc in s.citations for e in s.evidence) and s.evidence
    assert [s.citations for s in ans.sentences] == [[1], [2], [3]]
    # a summary its passage does not support keeps the best passage and is flagged
    ans, st, _ = run(scripted, spans, summary=lambda first: "Volcanoes erupt under the sea.")
    assert all(not s.supported for s in st["summaries"])
    assert [s.citations for s in ans.sentences] == [[1], [2], [3]]
    assert any("no single passage supports" in w for w in ans.warnings)


def test_citations_never_leave_the_clusters_passages(scripted, kw_verifier):
    # a summary that Dogs' passage would support is not cited to it: Dogs has no nugget in the cluster
    spans = {"Cats": ["Cats purr when they are content"]}
    ans, st, _ = run(scripted, spans, summary=lambda first: "Dogs bark to warn their owners.")
    assert [s.citations for s in ans.sentences] == [[1]]


# --------------------------------------------------------------------------- fluency rewrite
SPANS3 = {"Cats": ["Cats purr when they are content"], "Dogs": ["Dogs bark to warn their owners"]}


def test_rewrite_that_drops_a_fact_is_rejected(scripted, kw_verifier):
    ans, st, _ = run(scripted, SPANS3, fluency_rewrite=True, rewrite="Cats purr when they are content.")
    rw = st["rewrite"]
    assert not rw.accepted and rw.dropped == ["Dogs bark to warn their owners."]
    assert [s.text for s in ans.sentences] == [s.text for s in st["summaries"]]  # the original answer stays
    assert any("rewrite rejected" in w for w in ans.warnings)


def test_rewrite_that_adds_unsupported_text_is_rejected(scripted, kw_verifier):
    text = "Cats purr when they are content. Dogs bark to warn their owners. Volcanoes erupt under the sea."
    _, st, _ = run(scripted, SPANS3, fluency_rewrite=True, rewrite=text, summary=lambda f: f + ".")
    assert not st["rewrite"].accepted and st["rewrite"].unsupported == ["Volcanoes erupt under the sea."]


def test_accepted_rewrite_is_recited(scripted, kw_verifier):
    text = "Dogs bark to warn their owners. Cats purr when they are content."
    ans, st, _ = run(scripted, SPANS3, fluency_rewrite=True, rewrite=text, summary=lambda f: f + ".")
    assert st["rewrite"].accepted
    assert [(s.text, s.citations) for s in ans.sentences] == [
        ("Dogs bark to warn their owners.", [2]), ("Cats purr when they are content.", [1])]
    # a fused sentence that no single passage entails is not accepted
    fused = "Dogs bark to warn their owners, and cats purr when they are content."
    _, st, _ = run(scripted, SPANS3, fluency_rewrite=True, rewrite=fused, summary=lambda f: f + ".")
    assert not st["rewrite"].accepted and st["rewrite"].unsupported == [fused]


def test_second_run_on_the_same_thread_has_only_its_own_nuggets(scripted, kw_verifier):
    from langgraph.checkpoint.memory import MemorySaver

    spec, _ = scripted(make_script({"Cats": ["Cats purr when they are content"], "Zeta": ["Zeta is a Greek letter"]}))
    graph = build_graph("ginger", checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": "same"}}
    ctx = make_context("ginger", llm=spec, verifier="stub:ginger")
    graph.invoke({"question": "Q1?", "documents": DOCS}, cfg, context=ctx)
    other = [Document(id="z", title="Zeta", text="Zeta is a Greek letter.")]
    out = graph.invoke({"question": "Q2?", "documents": other}, cfg, context=ctx)
    st = graph.get_state(cfg).values
    assert [(n.passage, n.text) for n in st["nuggets"]] == [(1, "Zeta is a Greek letter")]
    assert [d.passage for d in st["detections"]] == [1]
    assert out["answer"].documents == other


def test_top_n_limits_the_passages(scripted, kw_verifier):
    spans = {"Cats": ["Cats purr when they are content"], "Birds": ["Birds sing at dawn to claim territory"]}
    ans, st, model = run(scripted, spans, top_n=2)
    assert st["passages"] == [1, 2]
    assert all(n.passage in (1, 2) for n in st["nuggets"])
    assert not any("Title: Birds" in prompt_of(c["messages"]) for c in model.calls)


def test_no_nuggets_gives_an_empty_answer(scripted, kw_verifier):
    ans, st, _ = run(scripted, {})
    assert ans.sentences == [] and st["clusters"] == []


@pytest.mark.slow
def test_ginger_end_to_end_with_the_embedded_model():
    from conftest import shared_path

    items = json.loads(shared_path("alce", "eli5_dev60.json").read_text())
    it = items[0]
    docs = [Document(title=d.get("title", ""), text=d["text"]) for d in it["docs"][:5]]
    ctx = make_context("ginger", top_n=5, max_sentences=3)
    out = build_graph("ginger").invoke({"question": it["question"], "documents": docs}, context=ctx)
    ans = out["answer"]
    assert ans.sentences and all(1 <= c <= 5 for s in ans.sentences for c in s.citations)
    assert re.sub(r"\s+", " ", ans.render())
