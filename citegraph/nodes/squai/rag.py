"""Standard RAG baseline nodes: retrieve top-k → one prompt → parse the [n]-cited answer."""

from __future__ import annotations

from langgraph.runtime import Runtime

from citegraph.nodes.common import answer_from_text
from citegraph.nodes.squai.retrieval import candidates_for, open_corpus
from citegraph.prompts import squai as P
from citegraph.state.squai import RagContext, RagState
from citegraph.tools.models import chat_text


def retrieve(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Hybrid top-k for the question through the corpus layer."""
    ctx = runtime.context
    corpus = open_corpus(ctx.corpus, state.documents)
    return {"retrieved": candidates_for(corpus, 0, state.question, k=ctx.top_k, mode=ctx.retrieval_mode,
                                        alpha=ctx.retrieval_alpha, candidate_factor=ctx.candidate_factor)}


def generate(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """All retrieved documents in one prompt, with our [n] citation instruction."""
    ctx = runtime.context
    docs = [c.document for c in state.retrieved]
    if not docs:
        return {"prompt": "", "generation": ""}
    prompt = P.rag_prompt(state.question, docs, ctx.max_doc_words)
    return {"prompt": prompt, "generation": chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)}


def attribute(state: RagState, runtime: Runtime[RagContext]) -> dict:
    docs = [c.document for c in state.retrieved]
    ans = answer_from_text(state.generation, state.question, docs, method="rag")
    if not docs:
        ans.warnings.append("nothing retrieved")
    return {"answer": ans}
