"""Format notes for generation that cites by construction (``tools.models.cited_sentences``).

The note goes after the caller's prompt (documents first, instructions last, so a llama.cpp model
re-uses the documents' KV cache). The grammar or JSON schema enforces the format; the note tells the
model what the constraint is, so it writes sentences that fit it instead of being cut to fit.
"""

from __future__ import annotations


def _range(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def text_note(n_docs: int, min_sentences: int, max_sentences: int, max_citations: int) -> str:
    """For text replies (a llama.cpp grammar, or free text after a server refused the schema)."""
    many = "one or two documents" if max_citations >= 2 else "one document"
    return (f"\n\nFormat: write {_range(min_sentences, max_sentences)} complete sentences. End EVERY sentence with "
            f"the number of the document that supports it in square brackets, then the period, like this: "
            f"\"... [2].\" Cite {many} per sentence, numbers 1 to {n_docs} only.")


def json_note(n_docs: int, min_sentences: int, max_sentences: int, max_citations: int) -> str:
    """For a JSON-schema reply (an OpenAI-compatible server)."""
    return (f"\n\nFormat: reply with JSON only: {{\"sentences\": [{{\"sentence\": \"...\", \"citations\": [2]}}, ...]}} "
            f"with {_range(min_sentences, max_sentences)} complete sentences; each sentence lists the numbers (1 to "
            f"{n_docs}) of 1 to {max_citations} documents that support it.")
