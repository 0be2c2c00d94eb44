"""The one rule that keeps a prompt's documents inside the model's context window.

Every graph's first node (``nodes/retrieve.py``) applies it to the documents it will put in prompts,
before any model call, so an input that outgrows the model is cut by this rule with a warning instead
of failing at the provider ("exceeds context window") after minutes of work:

- the budget for the documents is the model's context window minus the reply (``max_new_tokens``),
  minus the prompt skeleton: :data:`SKELETON_TOKENS` for the instructions, plus the demonstrations a
  Context asks for (ALCE's ``ndemo``/``demos_file``: their prompt, counted), plus the question's own
  tokens, and :data:`PER_DOCUMENT_TOKENS` of formatting per document (``Document [n](Title: ...): ``);
- documents are kept whole, in the given order, while they fit; the first one that does not fit and
  every one after it are dropped (their positions, so citations into the kept ones keep their numbers);
- when not even the first document fits, its text is cut to the budget (by words, so it stays text);
- tokens are counted by the model's own tokenizer where one is at hand (llama.cpp models), and
  estimated as characters / :data:`CHARS_PER_TOKEN` otherwise (OpenAI-compatible servers and other
  remote models, whose tokenizer is not local); the dropped documents' tokens are always estimated
  (the warning says "about").

The result names what was cut in one warning line that the answer carries (``answer.warnings``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from citegraph.state import Document

CHARS_PER_TOKEN = 4
SKELETON_TOKENS = 1024
PER_DOCUMENT_TOKENS = 12

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` estimated as characters / 4 (rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_text(doc: Document, max_words: int = 0) -> str:
    """What of a document a prompt shows: its title and text, the text cut to ``max_words`` words when
    the method's ``max_doc_words`` knob says so."""
    text = doc.text
    if max_words:
        text = " ".join(text.split()[:max_words])
    return f"{doc.title}\n{text}" if doc.title else text


@dataclass
class Bounded:
    """The documents that fit and what was cut."""

    documents: list[Document]
    window: int
    budget: int
    used: int = 0
    dropped: list[int] = field(default_factory=list)  # 1-based positions dropped
    dropped_tokens: int = 0
    cut_tokens: int = 0  # tokens cut from the first document's text when it alone did not fit

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.cut_tokens)

    def warning(self) -> str:
        if not self.changed:
            return ""
        what = []
        if self.dropped:
            first, last = self.dropped[0], self.dropped[-1]
            where = f"document {first}" if first == last else f"documents {first}-{last}"
            what.append(f"dropped {len(self.dropped)} of {len(self.documents) + len(self.dropped)} documents "
                        f"({where}, about {self.dropped_tokens} tokens)")
        if self.cut_tokens:
            what.append(f"cut about {self.cut_tokens} tokens from the end of document 1")
        return (f"input bounded to the model's context window of {self.window} tokens "
                f"({self.budget} for the documents after the reply and the prompt): " + "; ".join(what))


def bound_documents(documents: Sequence[Document], *, window: int, reply_tokens: int, question: str = "",
                    count: TokenCounter = estimate_tokens, max_doc_words: int = 0, extra_skeleton: str = "") -> Bounded:
    """``documents`` kept by the module's rule for a model of ``window`` tokens that may write
    ``reply_tokens``. ``count``: the model's token counter (default: the characters / 4 estimate);
    ``extra_skeleton``: prompt text beside the documents beyond the instructions (demonstrations)."""
    fixed = SKELETON_TOKENS + (count(question) if question else 0) + (count(extra_skeleton) if extra_skeleton else 0)
    budget = max(0, window - reply_tokens - fixed)
    docs = list(documents)
    total_estimate = sum(estimate_tokens(prompt_text(d, max_doc_words)) + PER_DOCUMENT_TOKENS for d in docs)
    if count is not estimate_tokens and total_estimate * 2 <= budget:
        # far inside the budget even if the estimate were half the true count: no need to tokenize
        return Bounded(docs, window, budget, used=total_estimate)
    out = Bounded([], window, budget)
    for i, d in enumerate(docs, 1):
        if out.dropped:  # past the budget: the rest is dropped, its size estimated (no need to tokenize it)
            out.dropped.append(i)
            out.dropped_tokens += estimate_tokens(prompt_text(d, max_doc_words)) + PER_DOCUMENT_TOKENS
            continue
        n = count(prompt_text(d, max_doc_words)) + PER_DOCUMENT_TOKENS
        if out.used + n <= budget:
            out.documents.append(d)
            out.used += n
            continue
        if i == 1:  # not even the first document fits: keep its beginning
            words = d.text.split()
            keep = max(1, int(len(words) * max(0, budget - PER_DOCUMENT_TOKENS) / max(1, n - PER_DOCUMENT_TOKENS)))
            while keep > 1 and count(" ".join(words[:keep])) + PER_DOCUMENT_TOKENS > budget:
                keep = int(keep * 0.9)
            text = " ".join(words[:keep])
            kept = count(text) + PER_DOCUMENT_TOKENS
            out.documents.append(d.model_copy(update={"text": text}))
            out.cut_tokens, out.used = n - kept, kept
            continue
        out.dropped.append(i)
        out.dropped_tokens += n
    return out
