"""The first node of every graph: open-domain retrieval when no documents are given, then the
documents bounded to the model's context window (``citegraph.prompts.budget``)."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from citegraph.corpus import open_corpus
from citegraph.prompts.alce import build_prompt
from citegraph.prompts.budget import PER_DOCUMENT_TOKENS, SKELETON_TOKENS, bound_documents, estimate_tokens
from citegraph.state.base import BaseContext
from citegraph.tools.models import context_window, token_counter

log = logging.getLogger("citegraph")


def hit_document(hit: Any, corpus: str) -> Any:
    """A search hit as a Document, with its provenance and retrieval score and rank in its metadata."""
    d = hit.chunk.to_document()
    d.metadata.update({"retrieval_score": hit.score, "retrieval_rank": hit.rank, "corpus": corpus})
    return d


def retrieve(state: Any, runtime: Runtime[BaseContext]) -> dict:
    """With a ``corpus`` knob and no input documents: the ``top_k`` chunks retrieved for the question
    (``retrieval_mode``, ``retrieval_alpha``) become the documents, each with its provenance (document id,
    chunk id, order, character offsets) in ``Document.metadata``. Then the documents that do not fit the
    model's context window are cut by :func:`citegraph.prompts.budget.bound_documents`, with a warning the
    answer carries (``input_warnings``). A method whose documents are a corpus to retrieve from
    (``documents_are_a_corpus``) keeps them all."""
    ctx = runtime.context
    out: dict = {}
    docs = state.documents
    if not docs and getattr(ctx, "corpus", ""):
        hits = open_corpus(ctx.corpus).search(state.question, k=ctx.top_k, mode=ctx.retrieval_mode,
                                              alpha=ctx.retrieval_alpha)
        docs = [hit_document(h, ctx.corpus) for h in hits]
        out["documents"] = docs
    if docs and not getattr(type(ctx), "documents_are_a_corpus", True) and hasattr(ctx, "llm"):
        bounded = bound_to_model(ctx, state.question, docs)
        if bounded.changed:
            warning = bounded.warning()
            log.warning("%s", warning)
            out["documents"] = bounded.documents
            if hasattr(state, "input_warnings"):
                out["input_warnings"] = [warning]
    return out


def bound_to_model(ctx: Any, question: str, documents: list):
    """``documents`` bounded to the Context's model (its ``context_window`` knob, else the model's own),
    counted by the model's tokenizer when it is local."""
    window = getattr(ctx, "context_window", 0) or context_window(ctx.llm)
    reply = getattr(ctx, "max_new_tokens", 0) or 0
    max_words = getattr(ctx, "max_doc_words", 0) or 0

    demos = _demonstrations(ctx)
    rough = sum(estimate_tokens(d.title) + estimate_tokens(d.text) + PER_DOCUMENT_TOKENS for d in documents)
    if (rough + estimate_tokens(question) + estimate_tokens(demos)) * 2 <= window - reply - SKELETON_TOKENS:
        count = estimate_tokens  # far inside: no need to load a tokenizer
    else:
        count = token_counter(ctx.llm) or estimate_tokens
    return bound_documents(documents, window=window, reply_tokens=reply, question=question, count=count,
                           max_doc_words=max_words, extra_skeleton=demos)


def _demonstrations(ctx: Any) -> str:
    """The demonstrations part of the prompt of a Context with ALCE's ``ndemo``/``demos_file`` knobs
    (an ALCE prompt file's demos are about 1,000 tokens each), "" otherwise or when it cannot be read
    (the generating node reports that itself)."""
    if not getattr(ctx, "ndemo", 0):
        return ""

    try:
        return build_prompt("", [], demos_file=getattr(ctx, "demos_file", "") or None, ndemo=ctx.ndemo)
    except Exception:  # noqa: BLE001 - a missing or broken demos file fails in the method's own node
        return ""
