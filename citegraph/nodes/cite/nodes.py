"""``cite`` nodes: split the given text (retrieving candidate evidence per sentence from the corpus
when no documents are given); the shared attribution stage runs next; ``rewrite`` (optional) revises
each sentence left unsupported from its best evidence and checks it again."""

from __future__ import annotations

from langgraph.runtime import Runtime

from citegraph.corpus import open_corpus
from citegraph.errors import InputError
from citegraph.nodes.attribution import attribute_answer, stage_options
from citegraph.nodes.retrieve import hit_document
from citegraph.prompts.cite import rewrite_prompt
from citegraph.state import AttributedAnswer, CitedSentence, Document
from citegraph.state.cite import CiteContext, CiteState
from citegraph.tools.citations import parse_answer
from citegraph.tools.loops import clean_loops
from citegraph.tools.models import chat_reply
from citegraph.tools.sentences import is_question, split_sentences
from citegraph.tools.verifier import get_verifier


def _retrieve_per_sentence(texts: list[str], ctx: CiteContext) -> tuple[list[Document], list[list[int]]]:
    """The top_k chunks of each sentence; the union (first seen first) is the document list."""
    corpus = open_corpus(ctx.corpus)
    docs: list[Document] = []
    where: dict[str, int] = {}
    cands: list[list[int]] = []
    for t in texts:
        mine = []
        for h in corpus.search(t, k=ctx.top_k, mode=ctx.retrieval_mode, alpha=ctx.retrieval_alpha):
            key = h.chunk.id
            if key not in where:
                docs.append(hit_document(h, ctx.corpus))
                where[key] = len(docs)
            mine.append(where[key])
        cands.append(mine)
    return docs, cands


def split(state: CiteState, runtime: Runtime[CiteContext]) -> dict:
    """The text as sentences (its own [n] marks kept as citations); candidate evidence per sentence."""
    ctx = runtime.context
    text = (state.answer_text or "").strip()
    if not text:
        raise InputError("cite: no text to attribute (answer_text is empty)")
    docs = list(state.documents)
    if docs:
        ans = parse_answer(text, question=state.question, documents=docs, metadata={"method": "cite"})
        return {"answer": ans}
    if not ctx.corpus:
        raise InputError("cite: give documents or a corpus (--docs FILE or --index IDX) to attribute the text to")
    sentences = [s for s in split_sentences(text) if s.strip()]
    plain = parse_answer(" ".join(sentences), question=state.question, documents=[])
    docs, cands = _retrieve_per_sentence([s.text for s in plain.sentences], ctx)
    ans = AttributedAnswer(question=state.question, documents=docs, metadata={"method": "cite"},
                           sentences=[CitedSentence(text=s.text) for s in plain.sentences])
    return {"answer": ans, "documents": docs, "attribution_candidates": cands}


def rewrite(state: CiteState, runtime: Runtime[CiteContext]) -> dict:
    """``rewrite`` knob: each unsupported sentence is rewritten by the LLM from the best-scoring
    document sentences of its candidates, then the whole answer is checked again (unchanged
    sentences come from the verifier's cache). A rewrite that is still unsupported is kept flagged."""
    ctx = runtime.context
    ans = state.answer
    if not ctx.rewrite or ans is None or ctx.attribution == "off":
        return {}
    att = ans.metadata.get("attribution") or {}
    records = {r["sentence"]: r for r in att.get("sentences", [])}
    # a question is flagged because it claims nothing: no rewrite can give it support
    todo = [i for i, s in enumerate(ans.sentences) if s.support in ("unsupported", "partial") and not is_question(s.text)]
    if not todo:
        return {}
    verifier = get_verifier(ctx.verifier)
    n = len(ans.documents)
    sents = [s.model_copy(deep=True) for s in ans.sentences]
    rewritten: dict[int, str] = {}
    for i in todo:
        pool = (state.attribution_candidates[i] if i < len(state.attribution_candidates) and state.attribution_candidates[i] else list(range(1, n + 1)))
        doc_sents = [(c, x) for c in pool for x in split_sentences(ans.documents[c - 1].text) if x.strip()]
        if not doc_sents:
            continue
        scores = verifier.score([(x, sents[i].text) for _, x in doc_sents])
        best = [x for _, (_, x) in sorted(zip(scores, doc_sents), key=lambda t: -t[0])[:2]]
        reply = chat_reply(ctx.llm, rewrite_prompt(sents[i].text, best), temperature=ctx.temperature,
                           max_tokens=ctx.max_new_tokens)
        new = clean_loops(reply.text, False, []).strip().splitlines()[0].strip() if reply.text.strip() else ""
        if new and new != sents[i].text:
            rewritten[i] = sents[i].text
            sents[i] = CitedSentence(text=new)
    if not rewritten:
        return {}
    draft = ans.model_copy(update={"sentences": sents})
    out = attribute_answer(draft, verifier, mode=ctx.attribution, candidates=state.attribution_candidates or None,
                           verifier_spec=ctx.verifier, **stage_options(ctx))
    for r in out.metadata["attribution"]["sentences"]:
        if r["sentence"] in rewritten:
            r["rewritten_from"] = rewritten[r["sentence"]]
            r["action"] = "rewritten"
    out.metadata["attribution"]["first_pass"] = [records[i] for i in sorted(records)]
    out.warnings.append(f"rewrite: {len(rewritten)} sentence(s) rewritten from their evidence and checked again")
    return {"answer": out}
