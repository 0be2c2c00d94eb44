"""Source preparation: global sentence ids, 'Passage i:' blocks, and the optional pre-steps
(relevance filter, query-focused summarization) of GenerationPrograms."""

from __future__ import annotations

import re

from citegraph.prompts import genprog as P
from citegraph.state import Document
from citegraph.state.genprog import SourceSentence
from citegraph.tools.models import chat_text
from citegraph.tools.sentences import split_sentences

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("the a an of and or to in on for is are was were be by with as at that this it its from which who what when where how why".split())


def split_documents(documents: list[Document]) -> list[SourceSentence]:
    """Every document split into sentences with global ids S1..Sn (document order, then sentence order)."""
    out: list[SourceSentence] = []
    for d, doc in enumerate(documents, 1):
        for sent in split_sentences(doc.text):
            sent = sent.replace("\n", " ").strip()
            if sent.startswith("- "):
                sent = sent[2:].strip()
            if sent:
                sid = f"S{len(out) + 1}"
                out.append(SourceSentence(sid=sid, doc=d, text=sent, verbatim=True, origins=[sid]))
    return out


def sentence_offsets(documents: list[Document]) -> dict[str, tuple[int, int, int]]:
    """``sid -> (doc, start, end)`` character span of each source sentence in its document's text
    (same ids as :func:`split_documents`; used to score against gold sentence annotations)."""
    spans: dict[str, tuple[int, int, int]] = {}
    n = 0
    for d, doc in enumerate(documents, 1):
        cursor = 0
        for sent in split_sentences(doc.text):
            norm = sent.replace("\n", " ").strip()
            if norm.startswith("- "):
                norm = norm[2:].strip()
            if not norm:
                continue
            n += 1
            probe = sent.strip()
            pos = doc.text.find(probe, cursor)
            if pos < 0:
                pos = cursor
            spans[f"S{n}"] = (d, pos, pos + len(probe))
            cursor = pos + len(probe)
    return spans


def render_passages(sources: list[SourceSentence]) -> str:
    """``Passage <doc>:\\nS1: ...`` blocks; passage numbers are the caller's 1-based document indices."""
    blocks: dict[int, list[str]] = {}
    for s in sources:
        blocks.setdefault(s.doc, []).append(f"{s.sid}: {s.text}")
    return "\n\n".join(f"Passage {d}:\n" + "\n".join(lines) for d, lines in blocks.items())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def rank_sources(sources: list[SourceSentence], query: str, limit: int) -> list[SourceSentence]:
    """Keep the ``limit`` sentences with the most word overlap with ``query`` (original order, ids kept)."""
    if not limit or len(sources) <= limit:
        return sources
    q = _words(query)
    scored = sorted(range(len(sources)), key=lambda i: (-len(q & _words(sources[i].text)), i))
    keep = set(scored[:limit])
    return [s for i, s in enumerate(sources) if i in keep]


def _norm(text: str) -> str:
    text = re.sub(r"^\s*(?:[-*•]+|\d{1,3}[.)]|[Ss]\d+\s*:)\s*", "", text)
    text = text.strip().strip("\"'“”").strip()
    return re.sub(r"\s+", " ", text).casefold()


def is_yes(text: str) -> bool | None:
    m = re.search(r"\b(yes|no|irrelevant|not\s+relevant|relevant)\b", text.lower())
    if not m:
        return None
    return m.group(1) in ("yes", "relevant")


def _doc_sentences(doc: Document) -> list[str]:
    """The document's sentences as the pre-step prompts show them (the same split as the S-ids)."""
    return [s.text for s in split_documents([doc])]


def bullets(text: str) -> list[str]:
    """The sentences of a bullet-list reply ("- ..." per line, as Figure 8 asks); a reply without
    bullets is split into sentences."""
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    marked = [re.sub(r"^(?:[-*•]+|\d{1,3}[.)])\s*", "", l).strip() for l in lines if re.match(r"^(?:[-*•]+|\d{1,3}[.)])\s", l)]
    if marked:
        return [m for m in marked if m]
    return [t.replace("\n", " ").strip() for t in split_sentences(text or "") if t.strip()]


def relevance_filter(spec: str, question: str, documents: list[Document], max_tokens: int) -> tuple[list[int], list[str]]:
    """1-based indices of the documents the LLM judges relevant, and notes (Appendix B)."""
    keep, notes = [], []
    for d, doc in enumerate(documents, 1):
        reply = chat_text(spec, P.relevance_prompt(question, doc.title, _doc_sentences(doc)), temperature=0.0, max_tokens=min(8, max_tokens))
        verdict = is_yes(reply)
        if verdict is None:
            notes.append(f"relevance: document {d}: unparseable reply {reply[:40]!r}, kept")
            keep.append(d)
        elif verdict:
            keep.append(d)
        else:
            notes.append(f"relevance: document {d} judged irrelevant, dropped")
    if not keep:
        notes.append("relevance: no document judged relevant; all kept")
        keep = list(range(1, len(documents) + 1))
    return keep, notes


def extractive(spec: str, question: str, doc: Document, sents: list[SourceSentence], n: int, max_tokens: int) -> tuple[list[SourceSentence], list[str]]:
    """Figure 8, extractive: the LLM copies ``n`` sentences as bullets; only verbatim source sentences
    are kept, with their original ids."""
    reply = chat_text(spec, P.extractive_prompt(question, doc.title, _doc_sentences(doc), n), temperature=0.0, max_tokens=max_tokens)
    by_norm = {}
    for s in sents:
        by_norm.setdefault(_norm(s.text), s)
    chosen: list[str] = []
    rejected = 0
    for line in reply.splitlines():
        if not line.strip():
            continue
        s = by_norm.get(_norm(line))
        if s is None:
            rejected += 1
        elif s.sid not in chosen:
            chosen.append(s.sid)
    chosen = chosen[: max(1, n)]
    notes = [f"extractive: document {sents[0].doc if sents else '?'}: kept {len(chosen)}, rejected {rejected} non-verbatim line(s)"]
    keep = [s for s in sents if s.sid in chosen]
    return keep, notes


def abstractive(spec: str, question: str, doc: Document, n: int, max_tokens: int, extracted: list[str] | None = None) -> list[str]:
    """Figure 8, abstractive (or, given the ``extracted`` sentences, extract-then-generate): the
    summary's sentences, read from the bullet list."""
    sents = _doc_sentences(doc)
    p = (P.extract_then_generate_prompt(question, doc.title, sents, extracted, n) if extracted
         else P.abstractive_prompt(question, doc.title, sents, n))
    return bullets(chat_text(spec, p, temperature=0.0, max_tokens=max_tokens))


def prepare(ctx, question: str, documents: list[Document], extra_query: str = "") -> dict:
    """All of source preparation for a Context with the pre-step knobs (missing knobs = off)."""
    sources = split_documents(documents)
    notes: list[str] = []
    dropped: list[int] = []
    if getattr(ctx, "relevance_filter", False) and documents:
        keep, n = relevance_filter(ctx.llm, question, documents, ctx.max_new_tokens)
        notes += n
        dropped = [d for d in range(1, len(documents) + 1) if d not in keep]
        sources = [s for s in sources if s.doc in keep]
    mode = getattr(ctx, "qfs_mode", "none") or "none"  # the Context checked it against QFS_MODES
    if mode != "none" and sources:
        next_id = max(int(s.sid[1:]) for s in split_documents(documents)) + 1 if documents else 1
        new: list[SourceSentence] = []
        for d in sorted({s.doc for s in sources}):
            doc = documents[d - 1]
            sents = [s for s in sources if s.doc == d]
            if mode in ("extractive", "extract_then_generate"):
                picked, n = extractive(ctx.llm, question, doc, sents, ctx.qfs_sentences, ctx.max_new_tokens)
                notes += n
                if mode == "extractive" or not picked:
                    new += picked
                    continue
                summary = abstractive(ctx.llm, question, doc, ctx.qfs_sentences, ctx.max_new_tokens,
                                      extracted=[s.text for s in picked])
                origins = [s.sid for s in picked]
            else:
                summary = abstractive(ctx.llm, question, doc, ctx.qfs_sentences, ctx.max_new_tokens)
                origins = []
            summary = [t for t in summary if not (is_yes(t) is False and len(t.split()) < 4)]
            if not summary:
                notes.append(f"{mode}: document {d}: nothing relevant")
                continue
            for sent in summary:
                new.append(SourceSentence(sid=f"S{next_id}", doc=d, text=sent, verbatim=False, origins=origins))
                next_id += 1
        if new:
            sources = new
        else:
            notes.append(f"{mode}: no document yielded sentences; using the full documents")
    limit = getattr(ctx, "max_source_sentences", 0) or 0
    if limit and len(sources) > limit:
        notes.append(f"kept {limit} of {len(sources)} source sentences by overlap with the question")
        sources = rank_sources(sources, f"{question} {extra_query}", limit)
    return {"sources": sources, "passages": render_passages(sources), "prestep_notes": notes, "dropped_documents": dropped}
