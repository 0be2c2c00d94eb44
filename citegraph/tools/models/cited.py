"""Generation that cites by construction: :func:`cited_sentences` (a GBNF grammar for in-process
models, a JSON-schema response format for servers, free text where refused), the grammar and schema
it uses, and the readers of its replies (:func:`sentences_from_json`, :func:`sentences_from_text`)."""

from __future__ import annotations

import logging
import re
import threading
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage

from citegraph.errors import ModelReplyError
from citegraph.prompts import cited as note
from citegraph.state.answer import CitedSentence
from citegraph.tools.citations import parse_cited_text
from citegraph.tools.models.base import LocalChatModel, Messages, as_messages
from citegraph.tools.models.calls import chat_reply
from citegraph.tools.models.registry import get_chat_model
from citegraph.tools.models.structured import extract_json

_log = logging.getLogger("citegraph")
_lock = threading.Lock()  # guards _no_json_schema
_ANSWER_CUE = re.compile(r"\n([A-Z][^\n]{0,60}:)[ \t]*$")
_no_json_schema: set[str] = set()


class CitedReply(NamedTuple):
    """A reply whose sentences cite the numbered documents.

    ``sentences``: each with its citations (1-based, always within 1..n_docs); ``text``: the same as
    ``[n]``-cited text (what a node stores as its generation and parses like any reply); ``mode``:
    ``grammar`` (llama.cpp GBNF, or a scripted model given the grammar), ``json_schema`` (the server
    took the response format) or ``free`` (it refused it, or there was nothing to cite);
    ``notes``: what happened on the way (a refused schema, dropped citations, a sentence cut at
    max_tokens) for the answer's warnings."""

    sentences: list
    text: str
    mode: str
    notes: list[str]
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


def _gbnf_literal(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _repeat(item: str, lo: int, hi: int) -> str:
    if hi <= 0:
        return ""
    return f" ({item}){{{lo}}}" if lo == hi else f" ({item}){{{lo},{hi}}}"


def citation_grammar(n_docs: int, *, min_sentences: int = 1, max_sentences: int = 5, max_citations: int = 2,
                     min_chars: int = 15, max_chars: int = 300) -> str:
    """A GBNF grammar for ``min_sentences``..``max_sentences`` sentences, each ending with 1 to
    ``max_citations`` markers ``[k]`` (k exactly one of 1..n_docs, multi-digit numbers included) and
    a period, "?" or "!", or with the period and then the markers ("... in Virginia. [1] [2]": where
    the model wants to put it). Inside a sentence a period is followed by a digit ("3.5") or is an
    abbreviation's ("U.S.", "A.M.", "e.g.": a letter and a period), and no bracket, line break, "?"
    or "!" is allowed, so the constraint follows sentence boundaries: the model cannot run several
    sentences into one and then cut a word to fit the marker.

    Why: allowing only a digit after an inner period, with no abbreviations, made the embedded model
    turn "3 A.M." into "3 A.1.0"; allowing any character but a space after it, or any letter or
    digit, with only "text [n]." as a sentence's end, let the model end a sentence with a period
    where it wanted and then fill the sentence on to reach its marker: "Virginia.document [1] [2].",
    "Phelps.James and Oliver ...", "Garfunkel._document", "final.илась Jamaican": 9 of 19 SQuAI
    sentences on ASQA-like data. A body that allowed "?" let it write "But where does all that trash
    come from? Most of it ... [2]." as one grammar sentence, which the sentence splitter cut in two,
    the question left uncited: a question now ends its own sentence and cites ("... from? [2]")."""
    if n_docs < 1:
        raise ValueError("a citation grammar needs at least one document")
    lo, hi = max(1, min_sentences), max(1, max_sentences, min_sentences)
    k = max(1, max_citations)
    nums = " | ".join(_gbnf_literal(str(i)) for i in range(1, n_docs + 1))
    body_lo, body_hi = max(0, min_chars - 1), max(min_chars, max_chars) - 1
    return "\n".join([
        "root ::= sent" + _repeat('" " sent', lo - 1, hi - 1),
        'sent ::= [A-Z0-9"] body (cite end | end cite)',
        f"body ::= ([^.?!\\[\\]\\n] | \".\" [0-9] | \".\" [A-Za-z] \".\"){{{body_lo},{body_hi}}}",
        'end ::= "." | "?" | "!"',
        'cite ::= " [" num "]"' + _repeat('" [" num "]"', 0, k - 1),
        f"num ::= {nums}",
    ]) + "\n"


def citation_schema(n_docs: int, *, min_sentences: int = 1, max_sentences: int = 5, max_citations: int = 2) -> dict:
    """The JSON schema of a list of ``{sentence, citations}``, citations from 1..n_docs."""
    return {
        "type": "object",
        "properties": {"sentences": {
            "type": "array", "minItems": max(1, min_sentences), "maxItems": max(1, max_sentences, min_sentences),
            "items": {
                "type": "object",
                "properties": {
                    "sentence": {"type": "string"},
                    "citations": {"type": "array", "minItems": 1, "maxItems": max(1, max_citations),
                                  "items": {"type": "integer", "enum": list(range(1, n_docs + 1))}},
                },
                "required": ["sentence", "citations"],
                "additionalProperties": False,
            },
        }},
        "required": ["sentences"],
        "additionalProperties": False,
    }


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        m = re.fullmatch(r"\s*\[?\s*(?:doc(?:ument)?\s*)?(\d{1,4})\s*\]?\s*", v, re.I)
        return int(m.group(1)) if m else None
    return None


def _checked_citations(raw: list[int], n_docs: int, max_citations: int | None, where: str, notes: list[str]) -> list[int]:
    """``raw`` within 1..n_docs, de-duplicated, at most ``max_citations`` (each drop noted)."""
    out: list[int] = []
    bad = [c for c in raw if not 1 <= c <= n_docs]
    for c in raw:
        if 1 <= c <= n_docs and c not in out:
            out.append(c)
    if bad:
        notes.append(f"{where}: dropped out-of-range citation(s) {bad} (documents: {n_docs})")
    if max_citations and len(out) > max_citations:
        notes.append(f"{where}: kept the first {max_citations} of {len(out)} citations")
        out = out[:max_citations]
    return out


def sentences_from_json(data: Any, n_docs: int, max_citations: int | None = None) -> tuple[list, list[str]]:
    """``[CitedSentence]`` from a ``{"sentences": [{"sentence", "citations"}]}`` reply (or a bare
    list; ``text``/``cites`` spellings, citations as numbers or ``"[2]"`` strings). Raises
    ValueError when the shape holds no sentence at all."""
    items = data.get("sentences", data.get("answer")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("no list of sentences in the JSON reply")
    out, notes = [], []
    for i, item in enumerate(items, 1):
        if isinstance(item, str):
            text, raw = item, []
        elif isinstance(item, dict):
            text = item.get("sentence", item.get("text", ""))
            raw = item.get("citations", item.get("cites", []))
        else:
            continue
        text = " ".join(str(text or "").split())
        if not text:
            continue
        raw = raw if isinstance(raw, list) else [raw]
        nums = [n for n in (_as_int(r) for r in raw) if n is not None]
        s = CitedSentence(text=text, citations=_checked_citations(nums, n_docs, max_citations, f"sentence {i}", notes))
        if s.text.strip():
            out.append(s)
    if not out:
        raise ValueError("the JSON reply holds no sentence")
    return out, notes


def sentences_from_text(text: str, n_docs: int, *, truncated: bool = False, require_citation: bool = False) -> tuple[list, list[str]]:
    """``[CitedSentence]`` from ``[n]``-cited text (the project's citation parser: out-of-range ids
    dropped, with a note). With ``require_citation`` (a grammar reply) a last sentence left without
    its marker because the reply was cut at max_tokens is dropped, noted."""
    parsed = parse_cited_text(text, n_docs=n_docs)
    notes = list(parsed.warnings)
    out = [CitedSentence(text=s.text, citations=s.citations) for s in parsed.sentences if s.text.strip()]
    out = [s for s in out if s.text.strip()]
    if require_citation and truncated and out and not out[-1].citations:
        notes.append(f"dropped the last sentence, cut at max_tokens before its citation: {out[-1].text[:80]!r}")
        out = out[:-1]
    return out, notes


def _render(sentences: list) -> str:
    return " ".join(s.render() for s in sentences)


def cited_sentences(
    spec: str,
    prompt: Messages,
    n_docs: int,
    *,
    min_sentences: int = 1,
    max_sentences: int = 5,
    max_citations: int = 2,
    format_note: bool = True,
    **kwargs: Any,
) -> CitedReply:
    """One reply whose every sentence cites 1 to ``max_citations`` of the ``n_docs`` numbered
    documents, by construction where the model allows it:

    - llama.cpp models (``local``, ``llamacpp:``) and scripted fakes: decoding under
      :func:`citation_grammar` (``min_sentences``..``max_sentences`` sentences);
    - other chat models (``openai:``): the ``json_schema`` response format of
      :func:`citation_schema`; a server that refuses it (an HTTP 4xx) gets the same prompt as free
      text once per process, recorded in ``notes`` (a reply that is not the JSON asked for is read
      as ``[n]``-cited text, noted too).

    ``format_note`` appends the format to the prompt (the last user turn). kwargs: temperature,
    max_tokens, system. Never a citation outside 1..n_docs; with no document it is a plain reply.
    """
    system = kwargs.pop("system", None)
    msgs = as_messages(prompt, system)
    if n_docs < 1:
        reply = chat_reply(spec, msgs, **kwargs)
        sents, notes = sentences_from_text(reply.text, 0)
        return CitedReply(sents, _render(sents), "free", ["no documents to cite: free text"] + notes, reply.finish_reason)
    model = get_chat_model(spec)
    rng = dict(min_sentences=min_sentences, max_sentences=max_sentences, max_citations=max_citations)

    def with_note(text: str) -> list[BaseMessage]:
        if not format_note:
            return list(msgs)
        last = msgs[-1]
        content = str(last.content)
        cue = _ANSWER_CUE.search(content)  # "...\nAnswer:" stays the last line, after the note
        content = content[: cue.start()] + text + "\n" + cue.group(1) if cue else content + text
        return list(msgs[:-1]) + [type(last)(content)]

    if isinstance(model, LocalChatModel):  # it takes a grammar
        reply = chat_reply(spec, with_note(note.text_note(n_docs, **rng)), grammar=citation_grammar(n_docs, **rng), **kwargs)
        sents, notes = sentences_from_text(reply.text, n_docs, truncated=reply.truncated, require_citation=True)
        for s in sents:  # the grammar caps them; a scripted reply is held to the same bound
            s.citations = _checked_citations(s.citations, n_docs, max_citations, "reply", notes)
        return CitedReply(sents, _render(sents), "grammar", notes, reply.finish_reason)

    notes: list[str] = []
    with _lock:
        refused = spec in _no_json_schema
    if not refused:
        fmt = {"type": "json_schema", "json_schema": {"name": "cited_sentences", "schema": citation_schema(n_docs, **rng)}}
        try:
            reply = chat_reply(spec, with_note(note.json_note(n_docs, **rng)), response_format=fmt, **kwargs)
        except ModelReplyError as e:
            if re.search(r"response.?format|json.?schema|schema|grammar|guided", str(e), re.I):
                with _lock:  # the server has no such format: not asked again in this process
                    _no_json_schema.add(spec)
                _log.warning("%s refused the JSON-schema response format: citations fall back to free text", spec)
            notes.append(f"constrained citations: the server refused the JSON-schema response format ({e}); free text")
        else:
            try:
                sents, more = sentences_from_json(extract_json(reply.text), n_docs, max_citations)
                return CitedReply(sents, _render(sents), "json_schema", more, reply.finish_reason)
            except ValueError as e:
                sents, more = sentences_from_text(reply.text, n_docs, truncated=reply.truncated)
                notes.append(f"constrained citations: the reply was not the JSON asked for ({e}); read as cited text")
                return CitedReply(sents, _render(sents), "json_schema", notes + more, reply.finish_reason)
    else:
        notes.append("constrained citations: this server refuses the JSON-schema response format; free text")
    reply = chat_reply(spec, with_note(note.text_note(n_docs, **rng)), **kwargs)
    sents, more = sentences_from_text(reply.text, n_docs, truncated=reply.truncated)
    return CitedReply(sents, _render(sents), "free", notes + more, reply.finish_reason)

