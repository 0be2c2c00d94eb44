"""ALCE's prompt format (princeton-nlp/ALCE, ``prompts/*_default.json``).

The instruction and formats below are ALCE's own; demonstrations can be loaded from ALCE's prompt
files (``Context.demos_file`` / ``ndemo``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from citegraph.state import Document

INSTRUCTION = (
    "Instruction: Write an accurate, engaging, and concise answer for the given question using only "
    "the provided search results (some of which might be irrelevant) and cite them properly. Use an "
    "unbiased and journalistic tone. Always cite for any factual claim. When citing several search "
    "results, use [1][2][3]. Cite at least one document and at most three documents in each sentence. "
    "If multiple documents support the sentence, only cite a minimum sufficient subset of the documents."
)
DEMO_PROMPT = "{INST}\n\nQuestion: {Q}\n\n{D}\nAnswer: {A}"
DOC_PROMPT = "Document [{ID}](Title: {T}): {P}\n"
DEMO_SEP = "\n\n\n"


def format_docs(documents: list[Document], doc_prompt: str = DOC_PROMPT, max_words: int | None = None) -> str:
    out = []
    for i, d in enumerate(documents, 1):
        text = d.text
        if max_words:
            words = text.split()
            text = " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")
        out.append(doc_prompt.replace("{ID}", str(i)).replace("{T}", d.title).replace("{P}", text))
    return "".join(out)


@lru_cache(maxsize=8)
def load_prompt_file(path: str) -> dict:
    return json.loads(Path(path).read_text())


def build_prompt(
    question: str,
    documents: list[Document],
    *,
    instruction: str = INSTRUCTION,
    demos_file: str | None = None,
    ndemo: int = 0,
    max_doc_words: int | None = None,
) -> str:
    """ALCE's VANILLA prompt: optional demonstrations, then the question and numbered documents."""
    demo_prompt, doc_prompt, sep = DEMO_PROMPT, DOC_PROMPT, DEMO_SEP
    parts: list[str] = []
    if demos_file and ndemo > 0:
        spec = load_prompt_file(demos_file)
        instruction = spec.get("instruction", instruction)
        demo_prompt = spec.get("demo_prompt", demo_prompt)
        doc_prompt = spec.get("doc_prompt", doc_prompt)
        sep = spec.get("demo_sep", sep)
        for demo in spec.get("demos", [])[:ndemo]:
            docs = [Document(title=d.get("title", ""), text=d.get("text", "")) for d in demo.get("docs", [])]
            parts.append(
                demo_prompt.replace("{INST}", instruction).replace("{Q}", demo["question"])
                .replace("{D}", format_docs(docs, doc_prompt, max_doc_words)).replace("{A}", demo["answer"])
            )
    parts.append(
        demo_prompt.replace("{INST}", instruction).replace("{Q}", question)
        .replace("{D}", format_docs(documents, doc_prompt, max_doc_words)).replace("{A}", "").rstrip()
    )
    return sep.join(parts)
