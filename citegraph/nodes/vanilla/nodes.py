from __future__ import annotations

from langgraph.runtime import Runtime

from citegraph.nodes.common import answer_from_text, constrained_reply
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
    if ctx.cite_format == "constrained" and state.documents:
        reply, mode, notes = constrained_reply(ctx.llm, prompt, len(state.documents), ctx)
        return {"prompt": prompt, "generation": reply.text, "cite_mode": mode, "cite_notes": notes}
    text = chat_text(ctx.llm, prompt, temperature=ctx.temperature, max_tokens=ctx.max_new_tokens)
    return {"prompt": prompt, "generation": text, "cite_mode": "", "cite_notes": []}


def attribute(state: VanillaState, runtime: Runtime[VanillaContext]) -> dict:
    """Parse the cited text into the AttributedAnswer contract."""
    ans = answer_from_text(
        state.generation, state.question, state.documents, method="vanilla",
        attach_trailing=runtime.context.attach_trailing_citations,
        **({"cite_format": state.cite_mode} if state.cite_mode else {}),
    )
    ans.warnings += state.cite_notes
    return {"answer": ans}
