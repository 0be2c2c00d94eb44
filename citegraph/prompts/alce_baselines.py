"""Prompts of the ALCE baselines SUMM, SNIPPET and RERANK.

Source: the brief asks for the prompts of the RAAC paper's appendix (Tables 9-11). The text of
that appendix could not be retrieved here, so these are ALCE's own prompts, which the RAAC paper's
baselines come from: ALCE paper (Gao et al., 2023) Table 25 (SUMM: per-document query-focused
summary) and Table 26 (SNIPPET: per-document extracted span), each returning "irrelevant" for an
unhelpful document; the answer step is ALCE's standard instruction (``prompts/alce.py``, the
``instruction`` of ALCE's ``prompts/asqa_sum_or_ext.json``) over the summaries / snippets. RERANK
samples ALCE's VANILLA prompt several times (temperature > 0). Replace the strings below with
the RAAC appendix text if it differs.
"""

from __future__ import annotations

from citegraph.prompts.alce import build_prompt
from citegraph.state import Document

SUMMARY_PROMPT = (
    'Summarize the following document within 50 words with the question of interest "{QUESTION}" '
    'Return "irrelevant" if the document is irrelevant to the question. Try to keep all the important '
    "dates, numbers, and names.\n\nTitle: {TITLE}\nText: {TEXT}\nSummary:"
)
SNIPPET_PROMPT = (
    'Given the follow passage and the question "{QUESTION}", extract a useful span from the passage '
    "that can answer the question. Resolve all the coreference issues to make the extracted span "
    'understandable standalone. If the passage is not helpful for answering the question, return "irrelevant".'
    "\n\nTitle: {TITLE}\nText: {TEXT}\nExtracted span:"
)
# the system messages ALCE used when it generated summaries / extractions with ChatGPT
SUMMARY_SYSTEM = "You are a helpful assistant that summarizes the following documents with respect to questions of interest."
SNIPPET_SYSTEM = "You are a helpful assistant that extracts answers to questions from given documents."

PER_DOC = {"summary": (SUMMARY_PROMPT, SUMMARY_SYSTEM), "extraction": (SNIPPET_PROMPT, SNIPPET_SYSTEM)}


def per_document_prompt(kind: str, question: str, doc: Document, max_words: int | None = None) -> tuple[str, str]:
    """``(prompt, system)`` asking for a summary (``kind="summary"``) or snippet (``"extraction"``)."""
    template, system = PER_DOC[kind]
    text = doc.text
    if max_words:
        words = text.split()
        text = " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")
    prompt = template.replace("{QUESTION}", question).replace("{TITLE}", doc.title).replace("{TEXT}", text)
    return prompt, system


def is_irrelevant(text: str) -> bool:
    """ALCE's rule (``run.py: get_shorter_text``): a summary/snippet mentioning "irrelevant" is
    dropped; an empty one is dropped as well."""
    return not text.strip() or "irrelevant" in text.lower()


def build_shorter_prompt(
    question: str,
    short_docs: list[Document],
    *,
    kind: str,
    demos_file: str | None = None,
    ndemo: int = 0,
) -> str:
    """ALCE's answer prompt over shortened documents (``use_shorter``): demonstrations (when
    ``demos_file`` has them, e.g. ALCE's ``asqa_sum_or_ext.json``) show their documents'
    ``summary`` / ``extraction`` field instead of the text."""
    return build_prompt(question, short_docs, demos_file=demos_file, ndemo=ndemo, demo_doc_field=kind)
