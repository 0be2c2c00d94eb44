"""Standard RAG baseline nodes: retrieve top-k → one prompt → parse the [n]-cited answer."""

from __future__ import annotations

from langgraph.runtime import Runtime

from citegraph.corpus import open_corpus
from citegraph.nodes.common import answer_from_text, composed
from citegraph.nodes.squai.retrieval import candidates_for
from citegraph.prompts import squai as P
from citegraph.state.squai import RagContext, RagState
from citegraph.tools.loops import clean_loops


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
        return {"prompt": "", "generation": "", "truncated": False, "citation_retry": [], "cite_mode": "", "cite_notes": []}
    prompt = P.rag_prompt(state.question, docs, ctx.max_doc_words)
    return composed(ctx, prompt, len(docs), P.CITE_REMINDER)


def attribute(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Parse the [n]-cited reply (decoding loops cut first, as for SQuAI's Agent 4, and named in the warnings)."""
    docs = [c.document for c in state.retrieved]
    loops: list[str] = []
    text = clean_loops(state.generation, state.truncated, loops)
    ans = answer_from_text(text, state.question, docs, method="rag", raw_output=state.generation)
    ans.warnings += [f"the reply looped: {n}" for n in loops]
    ans.warnings += [f"citation retry: {n}" for n in state.citation_retry]
    ans.warnings += state.cite_notes
    if state.cite_mode:
        ans.metadata["cite_format"] = state.cite_mode
    if not docs:
        ans.warnings.append("nothing retrieved")
    return {"answer": ans}
