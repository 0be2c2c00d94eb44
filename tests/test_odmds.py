"""Graph-augmented ODMDS: chunk graph, features, GAE, clustering, cache, Eq. 8-10, tier routing, and
the graph end to end on a corpus test double with a scripted model."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from citegraph.errors import InputError
from citegraph.state import Document
from citegraph.nodes.odmds.graph_cluster import (
    ChunkRecord, GraphSettings, build_edges, cluster_chunks, cluster_embeddings, cluster_rerank, feature_dim,
    make_encoder, node_features, train_gae,
)
from corpus_double import CorpusDouble, DoubleChunk


def _edges(e: np.ndarray) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in e.T if a < b}


# --------------------------------------------------------------------------- edges
def test_edges_neighbours_citations_and_none_across_unrelated_documents():
    # every chunk carries its document's metadata (as the corpus layer's chunks do)
    links = {"links": ["C", "missing"]}
    chunks = [
        ChunkRecord("a2", "A", "a two", order=2, metadata=links), ChunkRecord("a0", "A", "a zero", order=0, metadata=links),
        ChunkRecord("a1", "A", "a one", order=1, metadata=links),
        ChunkRecord("b0", "B", "b zero", order=0), ChunkRecord("b1", "B", "b one", order=1),
        ChunkRecord("c0", "C", "c zero", order=0),
    ]
    e, counts = build_edges(chunks)
    # a0-a1, a1-a2 (by order, not by list position), b0-b1; citation A→C first chunk to first chunk
    assert _edges(e) == {(1, 2), (0, 2), (3, 4), (1, 5)}
    assert counts == {"neighbour": 3, "citation": 1, "consecutive_doc": 0, "dangling_links": 1}
    # both directions, each once; nothing joins B to A or C
    assert e.shape == (2, 8)
    assert not any({a, b} & {3, 4} and {a, b} - {3, 4} for a, b in _edges(e))
    # without the link field: no citation edge
    assert _edges(build_edges(chunks, link_field="")[0]) == {(1, 2), (0, 2), (3, 4)}


def test_consecutive_document_edges_follow_the_position_field():
    chunks = [ChunkRecord("s1c2", "ch2", "x", metadata={"story": "s1", "chapter": 2}),
              ChunkRecord("s1c1a", "ch1", "x", order=0, metadata={"story": "s1", "chapter": 1}),
              ChunkRecord("s1c1b", "ch1", "x", order=1, metadata={"story": "s1", "chapter": 1}),
              ChunkRecord("s2c1", "other", "x", metadata={"story": "s2", "chapter": 1})]
    e, counts = build_edges(chunks, collection_field="story", position_field="chapter")
    # last chunk of chapter 1 → first chunk of chapter 2; the other story stays apart
    assert _edges(e) == {(1, 2), (0, 2)}
    assert counts["consecutive_doc"] == 1
    assert _edges(build_edges(chunks)[0]) == {(1, 2)}


# --------------------------------------------------------------------------- features
def test_pca_dimension_is_capped_by_the_data():
    assert feature_dim(1000, 500, 2000, 384) == 384
    assert feature_dim(6, 500, 2000, 384) == 5
    texts = ["alpha river water", "beta river town", "gamma prize winner", "delta town mayor", "epsilon water"]
    rng = np.random.default_rng(0)
    x, info = node_features(texts, rng.normal(size=(5, 8)), dim=500)
    assert info["d"] == 4 and x.shape == (5, 4)          # n - 1
    x, info = node_features(texts, rng.normal(size=(5, 3)), dim=500)
    assert info["d"] == 3 and x.shape == (5, 3)          # the embedding's own dimension
    x, info = node_features(texts, rng.normal(size=(5, 8)), dim=2)
    assert x.shape == (5, 2)
    with pytest.raises(InputError):
        node_features(texts[:2], rng.normal(size=(2, 8)))


def test_feature_blocks_are_weighted_by_alpha_and_beta():
    texts = ["alpha river water", "beta river town", "gamma prize winner", "delta town mayor", "epsilon water"]
    emb = np.random.default_rng(0).normal(size=(5, 8))
    only_tfidf, _ = node_features(texts, emb, dim=3, alpha=1.0, beta=0.0)
    only_emb, _ = node_features(texts, emb, dim=3, alpha=0.0, beta=1.0)
    mixed, _ = node_features(texts, emb, dim=3, alpha=0.3, beta=0.7)
    np.testing.assert_allclose(mixed, 0.3 * only_tfidf + 0.7 * only_emb, atol=1e-5)
    # each block is standardised: unit mean squared row norm
    assert np.mean((only_tfidf ** 2).sum(1)) == pytest.approx(1.0, rel=1e-4)


# --------------------------------------------------------------------------- GAE + clustering
def _planted(seed=0):
    rng = np.random.default_rng(seed)
    truth = np.array([0] * 20 + [1] * 20)
    pairs = [(i, j) for i in range(40) for j in range(i + 1, 40) if truth[i] == truth[j] and rng.random() < 0.3]
    pairs.append((0, 39))  # one bridge
    e = np.array(pairs).T
    return truth, np.concatenate([e, e[::-1]], axis=1), rng.normal(size=(40, 16)).astype(np.float32)


@pytest.mark.parametrize("loss", ["negative_sampling", "frobenius"])
def test_gae_separates_two_planted_communities(loss):
    from sklearn.metrics import adjusted_rand_score

    truth, e, x = _planted()
    s = GraphSettings(loss=loss, hidden=32, out_dim=16, epochs=200, method="kmeans", n_clusters=2)
    z, info = train_gae(x, e, s)
    assert info["loss_last"] < info["loss_first"]
    assert adjusted_rand_score(truth, cluster_embeddings(z, s)) == 1.0
    # the features alone are noise: the structure came from the graph
    assert adjusted_rand_score(truth, cluster_embeddings(x, s)) < 0.2
    # seeded: the same run gives the same embeddings
    np.testing.assert_allclose(train_gae(x, e, s)[0], z, atol=1e-5)


def test_last_gae_layer_is_linear_and_frobenius_is_guarded():
    import torch

    truth, e, x = _planted()
    enc = make_encoder(16, 8, 4, 3, 0.5).eval()
    z = enc(torch.as_tensor(x), torch.as_tensor(e)).detach().numpy()
    assert (z < 0).any()  # a ReLU last layer could never give negative coordinates
    with pytest.raises(InputError, match="Frobenius"):
        train_gae(x, e, GraphSettings(loss="frobenius", frobenius_max_nodes=10, epochs=1))
    with pytest.raises(InputError, match="at least 3"):
        make_encoder(16, 8, 4, 2, 0.5)


def test_dbscan_marks_noise_without_cluster():
    z = np.array([[1, 0], [0.99, 0.05], [0, 1], [-1, 0.1]], dtype=np.float32)
    labels = cluster_embeddings(z, GraphSettings(eps=0.2, min_samples=2))
    assert labels[0] == labels[1] >= 0 and labels[2] == -1 and labels[3] == -1


# --------------------------------------------------------------------------- cache
def _corpus_chunks():
    topics = {"river": "the river flows through the valley water fish boat bank",
              "prize": "the prize was won by the writer award ceremony jury book",
              "town": "the town has a mayor council market square houses streets"}
    out = []
    for d, (name, words) in enumerate(topics.items()):
        for k in range(3):
            out.append(DoubleChunk(id=f"{name}-{k}", doc_id=name, title=name.title(), order=k,
                                   text=f"{name.title()} part {k}: {words} {name} {k}"))
    return out


def test_cache_is_reused_on_an_unchanged_corpus(tmp_path):
    chunks = _corpus_chunks()
    emb = np.random.default_rng(1).normal(size=(len(chunks), 8))
    calls = []

    def embed_fn(texts):
        calls.append(len(texts))
        return emb[: len(texts)]

    s = GraphSettings(epochs=5, hidden=8, out_dim=4, method="kmeans", n_clusters=3)
    first = cluster_chunks(chunks, s, cache_dir=tmp_path, embed_fn=embed_fn)
    again = cluster_chunks(chunks, s, cache_dir=tmp_path, embed_fn=embed_fn)
    assert not first.from_cache and again.from_cache and calls == [9]
    assert again.key == first.key and list(again.labels) == list(first.labels) and again.ids == first.ids
    # a changed chunk text or a changed setting is a new key, computed afresh
    chunks[0].text += " changed"
    changed = cluster_chunks(chunks, s, cache_dir=tmp_path, embed_fn=embed_fn)
    other = cluster_chunks(_corpus_chunks(), GraphSettings(epochs=6, hidden=8, out_dim=4, method="kmeans", n_clusters=3),
                           cache_dir=tmp_path, embed_fn=embed_fn)
    assert not changed.from_cache and not other.from_cache and calls == [9, 9, 9]
    assert len({first.key, changed.key, other.key}) == 3


def test_corpus_clusters_are_computed_once_per_corpus_content(tmp_path):
    from citegraph.nodes.odmds import corpus_clusters

    chunks = _corpus_chunks()
    s = GraphSettings(epochs=5, hidden=8, out_dim=4, method="kmeans", n_clusters=3, seed=123)
    fn = lambda texts: np.random.default_rng(len(texts)).normal(size=(len(texts), 8))  # noqa: E731
    labels, stats = corpus_clusters(CorpusDouble(chunks), s, str(tmp_path), embed_fn=fn)
    assert stats["from_cache"] == "computed" and set(labels) == {c.id for c in chunks}
    assert corpus_clusters(CorpusDouble(chunks), s, str(tmp_path), embed_fn=fn)[1]["from_cache"] == "memory"
    chunks[4].text += " and a new sentence"
    assert corpus_clusters(CorpusDouble(chunks), s, str(tmp_path), embed_fn=fn)[1]["from_cache"] == "computed"


def test_tiny_corpus_has_no_clusters_instead_of_failing():
    res = cluster_chunks(_corpus_chunks()[:2], GraphSettings(), embed_fn=lambda t: np.ones((len(t), 4)))
    assert list(res.labels) == [-1, -1] and res.stats["clusters"] == 0


# --------------------------------------------------------------------------- Eq. 8-10
def test_graph_settings_read_every_setting_from_its_knob():
    """Each GraphSettings field comes from one OdmdsContext knob: the defaults agree, and changing a knob
    changes exactly its field (so the cluster cache key follows every knob that changes the clusters)."""
    from dataclasses import fields

    from citegraph.nodes.odmds.nodes import KNOB_OF_SETTING, graph_settings
    from citegraph.state.odmds import OdmdsContext

    assert graph_settings(OdmdsContext()) == GraphSettings()
    other = {bool: lambda v: not v, int: lambda v: v + 1, float: lambda v: v / 2 + 0.125}
    choices = {"loss": "frobenius", "method": "kmeans"}
    base = GraphSettings()
    for f in fields(GraphSettings):
        old = getattr(base, f.name)
        new = choices.get(f.name) or (other[type(old)](old) if type(old) in other else f"{old}-x")
        got = graph_settings(OdmdsContext(**{KNOB_OF_SETTING.get(f.name, f.name): new}))
        assert got == GraphSettings(**{f.name: new}), f.name


def test_cluster_rerank_on_hand_computed_numbers_both_readings_of_w():
    # candidates in first-retrieval order: A (cluster 0), B and C (cluster 1), D (noise)
    scores, labels = [0.9, 0.8, 0.7, 0.3], [0, 1, 1, -1]
    # P_j = 1/ln(1 + rank_j): A 1/ln 2, B 1/ln 3, C 1/ln 4
    # i in W_i: cluster 1 sum = 1.5; B adds 0.8*P(2)*0.8/1.5, C adds 0.7*P(3)*0.7/1.5 to both
    inc = cluster_rerank(scores, labels, include_self=True)
    bonus1 = 0.8 * (1 / math.log(3)) * (0.8 / 1.5) + 0.7 * (1 / math.log(4)) * (0.7 / 1.5)
    assert inc == pytest.approx([0.9 + 0.9 * (1 / math.log(2)) * 1.0, 0.8 + bonus1, 0.7 + bonus1, 0.3])
    assert inc == pytest.approx([2.198426, 1.424009, 1.324009, 0.3], abs=1e-6)
    # i not in W_i: A alone → W empty → R = S; B gets C's term, C gets B's term (F = 1)
    exc = cluster_rerank(scores, labels, include_self=False)
    assert exc == pytest.approx([0.9, 0.8 + 0.7 * (1 / math.log(4)), 0.7 + 0.8 * (1 / math.log(3)), 0.3])
    assert exc == pytest.approx([0.9, 1.304943, 1.428191, 0.3], abs=1e-6)
    # including i keeps the order inside cluster 1 (B before C); excluding it flips it
    assert inc[1] > inc[2] and exc[2] > exc[1]


def test_rerank_with_zero_scores_and_all_noise():
    assert cluster_rerank([0.0, 0.0], [1, 1]) == [0.0, 0.0]
    assert cluster_rerank([0.5, 0.4], [-1, -1]) == [0.5, 0.4]


# --------------------------------------------------------------------------- routing
def test_tier_routing_and_combined_score():
    from citegraph.nodes.odmds import combine, tier

    assert [tier(s, 7, 4) for s in (10, 7, 6.9, 4, 3.99, 1)] == ["high", "high", "medium", "medium", "low", "low"]
    assert combine(8, 2, 0.5, 0.5) == 5.0
    assert combine(8, 2, 3, 1) == 6.5
    assert combine(8, None, 0.5, 0.5) == 8          # a noise chunk: its own score
    assert combine(8, 2, 1, 0) == 8


# --------------------------------------------------------------------------- graph end to end
def _script(messages, kwargs):
    text = messages[-1].content
    if "Cluster" in text and '"topic"' in text:
        m = re.search(r"Cluster (\d+) holds", text)
        return f'{{"cluster": {m.group(1)}, "topic": "a topic", "relevance": 9}}'
    if '"relevance"' in text:
        return '{"relevance": 2}' if "Prize" in text else '{"relevance": 8}'
    if "Reply with the rewritten document only" in text:
        tier = "MINOR" if "minor edits" in text else "REFOCUS" if "Restructure" in text else "CUT"
        return f"REFINED-{tier}: " + text.split("Document:\n", 1)[1].split("\n", 1)[0][:40]
    return "The river flows through the valley [1]. The town has a mayor [2][9]."


@pytest.fixture
def odmds_run(scripted, tmp_path):
    from citegraph.corpus import register_corpus
    from citegraph.graphs.registry import build_graph, make_context

    spec, model = scripted(_script)
    corpus = CorpusDouble(_corpus_chunks())
    register_corpus("double:odmds", corpus)

    def run(**knobs):
        ctx = make_context("odmds", llm=spec, top_k=3, candidate_factor=3, gae_epochs=20, gae_hidden=16, gae_out=8,
                           cluster_method="kmeans", n_clusters=3, cache_dir=str(tmp_path), **{"attribution": "off", **knobs})
        graph = build_graph("odmds")
        from citegraph.graphs.odmds import build
        from langgraph.checkpoint.memory import InMemorySaver
        g = build(checkpointer=InMemorySaver())
        cfg = {"configurable": {"thread_id": "t"}}
        out = g.invoke({"question": "Which river flows through the valley and which town has a mayor?",
                        "corpus": "double:odmds"}, cfg, context=ctx)
        assert graph is not None
        return out["answer"], g.get_state(cfg).values, model

    return run


def test_graph_cites_the_original_chunks_and_refines_by_tier(odmds_run):
    ans, st, model = odmds_run()
    sel = st["selected"]
    assert len(sel) == 3 and len(st["candidates"]) == 9
    # the answer's documents are the ORIGINAL chunks, in the selected order
    assert [d.text for d in ans.documents] == [c.document.text for c in sel]
    assert ans.sentences[0].citations == [1] and ans.sentences[1].citations == [2]   # [9] is not a document
    # the final prompt showed the refined texts, not the originals
    assert "REFINED-" in st["prompt"] and sel[0].document.text not in st["prompt"]
    # every selected cluster got one topic call; every chunk one reflection and one refinement
    clusters = {c.cluster for c in sel if c.cluster >= 0}
    assert {t.cluster for t in st["topics"]} == clusters
    assert sorted(n.index for n in st["reflections"]) == [1, 2, 3]
    assert sorted(n.index for n in st["refinements"]) == [1, 2, 3]
    # routing: chunk relevance 8, cluster 9 → 8.5 → minor edits
    for r in st["routing"]:
        assert r.combined == pytest.approx((r.chunk_relevance + r.cluster_relevance) / 2)
        assert r.tier == "high"
    assert all(n.text.startswith("REFINED-MINOR") for n in st["refinements"])
    assert st["graph_stats"]["nodes"] == 9


def test_no_reflection_ablation_summarises_the_original_chunks(odmds_run):
    ans, st, model = odmds_run(reflection=False, rerank=False)
    assert st["topics"] == [] and st["refinements"] == []
    assert st["selected"][0].document.text in st["prompt"]
    assert len(model.calls) == 1
    assert all(c.rerank_score is None for c in st["selected"])
    assert [c.rank for c in st["selected"]] == [1, 2, 3]


def test_low_relevance_chunks_are_cut(odmds_run):
    ans, st, model = odmds_run(cluster_weight=0.0, high_tier=9.0, medium_tier=5.0)
    # chunk relevance alone: 8 → medium (< 9), prize chunks 2 → low
    tiers = {r.index: r.tier for r in st["routing"]}
    for i, c in enumerate(st["selected"], 1):
        assert tiers[i] == ("low" if "Prize" in c.document.text else "medium")
    refined = {n.index: n.text for n in st["refinements"]}
    assert all(refined[i].startswith("REFINED-" + ("CUT" if tiers[i] == "low" else "REFOCUS")) for i in refined)


def test_missing_corpus_is_an_input_error(scripted):
    from citegraph.graphs.registry import build_graph, make_context

    spec, _ = scripted(["x"])
    with pytest.raises(InputError, match="corpus"):
        build_graph("odmds").invoke({"question": "q"}, context=make_context("odmds", llm=spec))


# --------------------------------------------------------------------------- benchmark data
def test_odsum_story_corpus_and_gold_chapters():
    import sys

    from conftest import REPO, shared_path

    root = shared_path("odsum_story")
    sys.path.insert(0, str(REPO / "benchmarks"))
    from odsum_story import distinct_documents, load

    docs, queries = load(root)
    assert len(docs) == 1138 and len(queries) == 125          # 1,190 chapters less the 52 empty ones
    ids = {d.id for d in docs}
    assert all(q.gold <= ids and len(q.references) == 4 for q in queries)
    q = queries[0]
    assert {d.metadata["story"] for d in docs if d.id in q.gold} == {q.story}
    assert len(q.gold) == sum(1 for d in docs if d.metadata["story"] == q.story)
    assert distinct_documents(["a", "a", "b", "a", "c"], 2) == ["a", "b"]


def test_a_rewrite_not_grounded_in_its_chunk_falls_back_to_the_chunk(scripted):
    from langgraph.runtime import Runtime

    from citegraph.graphs.registry import make_context
    from citegraph.nodes.odmds import refine
    from citegraph.prompts.odmds import grounding
    from citegraph.state.odmds import ChunkTask

    chunk = "Strike commands the Aphrodite, a mail ship between Venus and Mars, with Ivy Hendricks as engineer."
    assert grounding("Strike commands the Aphrodite between Venus and Mars.", chunk) == 1.0
    assert grounding("The plot summary is not provided in the given text.", chunk) == 0.0
    spec, _ = scripted(["The plot summary is not provided in the given text.",
                        "Strike commands the mail ship Aphrodite; Ivy Hendricks is its engineer."])
    ctx = make_context("odmds", llm=spec)
    task = ChunkTask(question="What is the plot?", index=2, text=chunk, tier="medium")
    bad = refine(task, Runtime(context=ctx))["refinements"][0]
    assert bad.text == chunk and "not grounded" in bad.problems[0]
    good = refine(task, Runtime(context=ctx))["refinements"][0]
    assert good.text.startswith("Strike commands the mail ship") and good.problems == []


def test_clusters_of_an_index_reuse_its_stamp_and_stored_embeddings(tmp_path, monkeypatch):
    """A repeated query on an unchanged index skips the pass over every chunk (keyed by the index's
    change stamp), and the node features use the index's stored embeddings: nothing is embedded twice."""
    import citegraph.nodes.odmds.nodes as N
    from citegraph.corpus import Corpus
    from citegraph.state.odmds import OdmdsContext
    from citegraph.tools import embeddings as E

    words = ["river boats carry grain", "mountain goats climb cliffs", "winter storms close roads",
             "market traders sell spices", "desert caravans cross dunes", "harbour cranes lift steel"]
    docs = [Document(id=f"d{i}", title=f"Story {i % 2}", text=f"In chapter {i}, {w}. Then {words[i - 1]} again.")
            for i, w in enumerate(words)]
    corpus = Corpus.from_documents(docs)
    settings = N.graph_settings(OdmdsContext(gae_epochs=5))
    calls = []
    real_embed = E.embed
    monkeypatch.setattr(E, "embed", lambda texts, *a, **k: calls.append(len(texts)) or real_embed(texts, *a, **k))
    labels, stats = N.corpus_clusters(corpus, settings, "")
    assert stats["from_cache"] == "computed" and calls == []  # features from the stored vectors
    assert set(labels) == {c.id for c in corpus.chunks()}
    monkeypatch.setattr(corpus, "chunks", lambda *a, **k: pytest.fail("listed every chunk again"))
    again, stats2 = N.corpus_clusters(corpus, settings, "")
    assert again == labels and stats2["from_cache"] == "memory"
