from __future__ import annotations

from langgraph.runtime import Runtime

from citegraph.nodes.common import answer_from_text
from citegraph.prompts.alce import build_prompt
from citegraph.state.vanilla import VanillaContext, VanillaState
from citegraph.tools.models import chat_text


def generate(state: VanillaState, runtime: Runtime[VanillaContext]) -> dict:
    """Write the answer with ALCE's prompt: all documents at once, cite as [n]."""
    ctx = runtime.context
    prompt = build_prompt(
        state.question, state.documents, demos_file=ctx.demos_file or None, ndemo=ctx.ndemo,
        max_doc_words=ctx.max_doc_words or None,
    )
    text = chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
    return {"prompt": prompt, "generation": text}


def attribute(state: VanillaState, runtime: Runtime[VanillaContext]) -> dict:
    """Parse the cited text into the AttributedAnswer contract."""
    ans = answer_from_text(
        state.generation, state.question, state.documents, method="vanilla",
        attach_trailing=runtime.context.attach_trailing_citations,
    )
    return {"answer": ans}
