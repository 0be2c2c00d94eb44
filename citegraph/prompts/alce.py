"""ALCE's prompt format (princeton-nlp/ALCE, ``prompts/*_default.json``).

The instruction and formats below are ALCE's own; demonstrations come from ALCE's prompt files
(``Context.demos_file`` / ``ndemo``) or from our built-in one-shot demo.
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


# Our own one-shot demonstration (short, so it costs ~170 prompt tokens): small local models
# follow the [n] citation format only when they have seen it once. ALCE's demos (``demos_file``)
# replace it when given.
BUILTIN_DEMO = {
    "question": "How high is Mount Everest, and who first climbed it?",
    "docs": [
        {"title": "Mount Everest", "text": "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas. Its elevation of 8,849 metres was established in 2020."},
        {"title": "Tenzing Norgay", "text": "Tenzing Norgay and Edmund Hillary made the first confirmed ascent of Mount Everest on 29 May 1953."},
        {"title": "K2", "text": "K2 is the second-highest mountain on Earth, at 8,611 metres."},
    ],
    "answer": "Mount Everest is Earth's highest mountain, with an elevation of 8,849 metres [1]. "
              "It was first climbed by Tenzing Norgay and Edmund Hillary on 29 May 1953 [2].",
}


def build_prompt(
    question: str,
    documents: list[Document],
    *,
    instruction: str = INSTRUCTION,
    demos_file: str | None = None,
    ndemo: int = 0,
    max_doc_words: int | None = None,
    demo_doc_field: str = "text",
) -> str:
    """ALCE's prompt: ``ndemo`` demonstrations, then the question and numbered documents.

    Demonstrations come from ALCE's prompt file ``demos_file`` (its instruction and formats win),
    or, without one, from :data:`BUILTIN_DEMO`. ``demo_doc_field`` shows the demo documents'
    ``summary`` / ``extraction`` instead of their text (ALCE's SUMM / SNIPPET prompts).
    """
    demo_prompt, doc_prompt, sep = DEMO_PROMPT, DOC_PROMPT, DEMO_SEP
    demos: list[dict] = []
    if ndemo > 0 and demos_file:
        spec = load_prompt_file(demos_file)
        instruction = spec.get("instruction", instruction)
        demo_prompt = spec.get("demo_prompt", demo_prompt)
        doc_prompt = spec.get("doc_prompt", doc_prompt)
        sep = spec.get("demo_sep", sep)
        demos = spec.get("demos", [])[:ndemo]
    elif ndemo > 0:
        demos = [BUILTIN_DEMO]
    parts: list[str] = []
    for demo in demos:
        # all demo documents are kept: the demo answers cite them by position
        docs = [Document(title=d.get("title", ""), text=d.get(demo_doc_field) or d.get("text", "")) for d in demo.get("docs", [])]
        parts.append(
            demo_prompt.replace("{INST}", instruction).replace("{Q}", demo["question"])
            .replace("{D}", format_docs(docs, doc_prompt, max_doc_words)).replace("{A}", demo["answer"])
        )
    parts.append(
        demo_prompt.replace("{INST}", instruction).replace("{Q}", question)
        .replace("{D}", format_docs(documents, doc_prompt, max_doc_words)).replace("{A}", "").rstrip()
    )
    return sep.join(parts)
