"""RAAC prompts (Chen et al., Findings of ACL 2026, appendix Tables 12-15).

NOTE: the paper's appendix prompt text could not be found in the searchable corpora (only the
abstract is indexed, and no code is public), so these prompts are *faithful reconstructions* from
the method description, not verbatim copies:

* Table 12 -- initial generation: summarise the documents for the question; cite as ``[id]``;
  1-3 citations per sentence; keep the documents' original wording; objective tone.
* Table 13 -- feedback: score the summary 1-3 with a suggestion on Completeness, Objectivity,
  Specificity, Length (>= 50 words), Citation Recall, Citation Precision, plus a total; JSON.
* Table 14 -- refine: rewrite the summary from the aspect suggestions; JSON ``{"revised": ...}``.
* Table 15 -- AddCitation: pick the smallest sufficient subset (1-3) of candidate documents for an
  uncited sentence; JSON ``{"citations": [...]}``.

Generate, feedback and refine all open with the same block -- the documents, then the question --
and only then name their task (a distinctive ``### Task: ...`` line, so logs and scripted test
models can tell the steps apart). A local llama.cpp model keeps the evaluated prompt in its KV
cache and re-uses the longest common prefix, so within one question the ~700-token document block
is read once instead of once per call (about 20 s per call at 40 prompt tokens/s on 2 cores).
"""

from __future__ import annotations

from citegraph.prompts.alce import format_docs
from citegraph.state import Document
from citegraph.state.raac import ASPECTS

GENERATE_HEADER = "### Task: attributed summary"
FEEDBACK_HEADER = "### Task: summary feedback"
REFINE_HEADER = "### Task: revise the summary"
ADD_CITATION_HEADER = "### Task: add citations"

ASPECT_NAMES = {
    "completeness": "Completeness",
    "objectivity": "Objectivity",
    "specificity": "Specificity",
    "length": "Length",
    "citation_recall": "Citation Recall",
    "citation_precision": "Citation Precision",
}
ASPECT_RUBRIC = {
    "completeness": "the summary covers all the key information in the documents that answers the question.",
    "objectivity": "the summary states only what the documents say, in a neutral tone, without opinions or speculation.",
    "specificity": "the summary gives concrete facts (names, dates, numbers) rather than vague statements.",
    "length": "the summary has at least 50 words and no redundant sentences.",
    "citation_recall": "every sentence is fully supported by the documents it cites.",
    "citation_precision": "every citation is necessary: no cited document is irrelevant to its sentence.",
}


def format_documents(documents: list[Document], max_words: int | None = None) -> str:
    """Documents in ALCE's ``Document [i](Title: t): text`` format (shared with the baselines)."""
    return format_docs(documents, max_words=max_words).rstrip("\n")


def context_block(question: str, documents: list[Document], max_words: int | None = None) -> str:
    """The shared prefix of the TextAgent prompts: documents, then the question."""
    return f"{format_documents(documents, max_words)}\n\nQuestion: {question}\n\n"


def generate_prompt(question: str, documents: list[Document], max_words: int | None = None) -> str:
    """Table 12: initial attributed summary."""
    return (
        context_block(question, documents, max_words)
        + f"{GENERATE_HEADER}\n"
        "Write an accurate, objective summary that answers the question, using only the documents above.\n"
        "Rules:\n"
        "1. Cite the supporting documents of every sentence by their ids in square brackets, e.g. [1] or [1][3], "
        "placed at the end of the sentence before the period.\n"
        "2. Each sentence cites at least 1 and at most 3 documents; cite only documents that support it.\n"
        "3. Keep the original wording of the documents as much as possible; do not add facts that are not in the documents.\n"
        "4. Use an objective, neutral tone. Write at least 50 words.\n"
        "Format example (ids refer to the documents above): \"X was founded in 1901 by Y [1]. "
        "It moved to Z in 1950 [2][3].\"\n\n"
        f"Question: {question}\n"
        "Summary:"
    )


def feedback_prompt(question: str, documents: list[Document], summary: str, max_words: int | None = None) -> str:
    """Table 13: score each aspect 1-3 with a suggestion, plus a total."""
    rubric = "\n".join(f"- {ASPECT_NAMES[a]} ({a}): {ASPECT_RUBRIC[a]}" for a in ASPECTS)
    example = ", ".join(f'"{a}": {{"score": 2, "suggestion": "..."}}' for a in ASPECTS)
    return (
        context_block(question, documents, max_words)
        + f"{FEEDBACK_HEADER}\n"
        "You are a strict reviewer of an attributed summary. The summary answers the question from the documents "
        "and cites them as [id].\n"
        "Score the summary on each aspect with 1 (poor), 2 (fair) or 3 (excellent) and give one short, concrete "
        "suggestion (one sentence) for improving that aspect (an empty suggestion only when the score is 3):\n"
        f"{rubric}\n"
        "Then give the total (the sum of the six scores, at most 18).\n\n"
        f"Summary: {summary}\n\n"
        "Reply with only a JSON object of this form:\n"
        f"{{{example}, \"total\": 12}}"
    )


def refine_prompt(
    question: str, documents: list[Document], summary: str, scores: dict[str, int], suggestions: dict[str, str],
    max_words: int | None = None,
) -> str:
    """Table 14: rewrite the summary following the aspect suggestions."""
    lines = []
    for a in ASPECTS:
        s = scores.get(a)
        tip = (suggestions.get(a) or "").strip() or ("keep as is" if s == 3 else "(no concrete suggestion: improve this aspect)")
        lines.append(f"- {ASPECT_NAMES[a]} (score {s}/3): {tip}")
    return (
        context_block(question, documents, max_words)
        + f"{REFINE_HEADER}\n"
        "Revise the summary below following the reviewer's suggestions. Keep the same rules: use only the documents "
        "above, keep their original wording, objective tone, at least 50 words, and cite 1 to 3 supporting "
        "documents as [id] at the end of every sentence.\n\n"
        f"Summary: {summary}\n\n"
        "Feedback:\n" + "\n".join(lines) + "\n\n"
        'Reply with only a JSON object: {"revised": "<the revised summary with [id] citations>"}'
    )


def add_citation_prompt(sentence: str, candidates: list[tuple[int, Document]], max_words: int | None = None) -> str:
    """Table 15: choose the smallest sufficient subset (1-3) of the candidate documents."""
    docs = []
    for i, d in candidates:
        text = d.text
        if max_words:
            words = text.split()
            text = " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")
        title = f"(Title: {d.title})" if d.title else ""
        docs.append(f"Document [{i}]{title}: {text}")
    ids = ", ".join(str(i) for i, _ in candidates)
    return (
        f"{ADD_CITATION_HEADER}\n"
        "The sentence below has no citation. Choose the smallest set of documents (1 to 3) among the candidates "
        "that together fully support the sentence. If none of them supports it, choose none.\n\n"
        f"Sentence: {sentence}\n\n"
        + "\n".join(docs) + "\n\n"
        f"Candidate ids: {ids}\n"
        'Reply with only a JSON object: {"citations": [<ids>]} (an empty list if no document supports the sentence).'
    )
