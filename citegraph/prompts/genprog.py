"""Prompts of GenerationPrograms (Wan et al., 2025, arXiv:2506.14580).

Provenance (checked with the code/pages search of public sources):

* Planner (paper Fig. 6): the authors' repository (``meetdavidwan/generationprograms``,
  ``prompts/ragprogram_program_one_pass_fewshot.txt``) holds the one-pass program prompt. PLANNER
  follows it closely — same task statement, the same function descriptions, the same
  ``[Format]`` / ``[Function Nesting]`` rules and the ``EXAMPLES`` / ``YOUR TASK`` layout — reworded
  lightly and extended with the ``extract(x)`` module that our issue adds. The one-shot example is
  our own (written in the style of the repository's ASQA few-shot file).
* Modules (paper Fig. 7): the repository's code reads ``prompts/{paraphrase,compression,fusion}.txt``
  with ``**Instruction**:`` / ``[[SENTENCE]]`` placeholders, but those files are not published, and
  the figure text was not retrievable verbatim. MODULE_PROMPTS are faithful rewrites of the
  paper's description: one task line per module, the optional instruction block, the input
  sentence(s), and "Output:".
* Query-focused summarization pre-steps (paper Fig. 8: extractive, abstractive,
  extract-then-generate) and the relevance filter: not retrievable verbatim either; written from the
  paper's description.
* Post-hoc planner: the paper's post-hoc mode asks the planner to write a program that reconstructs
  a given answer; POSTHOC_PLANNER adapts PLANNER to that.
* LLM-prompt attribution baseline (benchmarks/bench_genprog_posthoc.py): our own wording.
"""

from __future__ import annotations

import re

PLANNER = """You are given a document consisting of passages and a question. Your task is to write an accurate, engaging and concise answer to the question that synthesizes the information in the document. Do not write the answer directly: output a list of Python function calls that, applied to the document's sentences, produce the answer.
The arguments are either sentence ids (e.g., S1) or other function calls. If a call has an instruction, it is written as instruction="YOUR INSTRUCTION".

Available functions:
1. **paraphrase(sentence, instruction=None)**
   Purpose: Rephrase the sentence while keeping its meaning.
   Optional: an instruction about the desired style or syntactic structure.

2. **compression(sentence, instruction=None)**
   Purpose: Shorten the sentence, keeping its essential content and structure.
   Optional: an instruction saying which parts to keep.

3. **fusion(sentence_1, sentence_2, ..., sentence_n, instruction=None)**
   Purpose: Merge several sentences into one sentence; they may carry similar or complementary information.
   Optional: an instruction on how to combine them, e.g. what to prioritize.

4. **extract(sentence)**
   Purpose: Use the sentence exactly as it is.

**Careful:**
- **[Format]** Output a bullet list in which each bullet is one sentence of the answer. Each bullet starts with "-" followed by the function calls that produce that sentence, and nothing else.
- **[Function Nesting]** Functions may be nested: any argument may be a sentence id from the document or another function call.

**EXAMPLES**
{examples}

**YOUR TASK**
Question:
{question}

Document:
{context}

Output:
"""

ONE_SHOT = {
    "question": "When did the Lighthouse of Alexandria stop working?",
    "context": (
        "Passage 1:\n"
        "S1: The Lighthouse of Alexandria was built by the Ptolemaic Kingdom during the reign of Ptolemy II Philadelphus.\n"
        "S2: It was one of the tallest man-made structures in the world for many centuries.\n"
        "S3: The lighthouse was badly damaged by three earthquakes between 956 and 1323 AD.\n\n"
        "Passage 2:\n"
        "S4: After the earthquake of 1303 the lighthouse became an abandoned ruin.\n"
        "S5: In 1480 the last of its remaining stones were used to build the Citadel of Qaitbay on the site."
    ),
    "output": (
        '- compression(S1, instruction="Keep that the lighthouse was built under Ptolemy II.")\n'
        '- fusion(S3, S4, instruction="Combine to say that earthquakes between 956 and 1323 damaged it and it was abandoned after 1303.")\n'
        "- extract(S5)"
    ),
}


def format_example(ex: dict, n: int = 1) -> str:
    return f"Example {n}:\nQuestion:\n{ex['question']}\n\nDocument:\n{ex['context']}\n\nOutput:\n{ex['output']}\n"


LENGTH_RULE = ("- **[Length]** Write at most {n} bullets: only the sentences that answer the question. "
               "Each bullet uses 1 to 3 source sentences (a fusion of many sentences makes an unreadable sentence).\n")


def planner_prompt(question: str, passages: str, examples: list[dict] | None = None, max_sentences: int = 0) -> str:
    exs = examples if examples is not None else [ONE_SHOT]
    text = "\n".join(format_example(e, i) for i, e in enumerate(exs, 1))
    prompt = PLANNER.format(examples=text, question=question, context=passages)
    if max_sentences and max_sentences > 0:  # our addition: the paper's prompt has no length rule
        anchor = "\n\n**EXAMPLES**"
        prompt = prompt.replace(anchor, "\n" + LENGTH_RULE.format(n=max_sentences).rstrip("\n") + anchor, 1)
    return prompt


POSTHOC_PLANNER = """You are given a document consisting of passages, a question, and an answer that was already written. Your task is to explain how the answer can be produced from the document: for each answer sentence, output a list of Python function calls that, applied to the document's sentences, reconstruct that sentence. Use the sentences that really contain the sentence's information.
The arguments are either sentence ids (e.g., S1) or other function calls. If a call has an instruction, it is written as instruction="YOUR INSTRUCTION".

Available functions:
1. **paraphrase(sentence, instruction=None)**: rephrase the sentence while keeping its meaning.
2. **compression(sentence, instruction=None)**: shorten the sentence, keeping its essential content.
3. **fusion(sentence_1, sentence_2, ..., sentence_n, instruction=None)**: merge several sentences into one.
4. **extract(sentence)**: use the sentence exactly as it is.

**Careful:**
- **[Format]** Output one bullet per answer sentence, in the same order. Each bullet starts with "-" followed by the function calls that reconstruct that sentence, and nothing else.
- **[Function Nesting]** Functions may be nested: any argument may be a sentence id from the document or another function call.

**EXAMPLE**
Question:
{ex_question}

Document:
{ex_context}

Answer sentences:
1. The Lighthouse of Alexandria was built under Ptolemy II.
2. Earthquakes between 956 and 1323 damaged it, and it was abandoned after 1303.

Output:
- compression(S1, instruction="Keep that it was built under Ptolemy II.")
- fusion(S3, S4, instruction="Combine the earthquakes and the abandonment.")

**YOUR TASK**
Question:
{question}

Document:
{context}

Answer sentences:
{sentences}

Output:
"""


def posthoc_prompt(question: str, passages: str, sentences: list[str]) -> str:
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
    return POSTHOC_PLANNER.format(
        ex_question=ONE_SHOT["question"], ex_context=ONE_SHOT["context"],
        question=question, context=passages, sentences=numbered,
    )


# --------------------------------------------------------------------------- modules (Fig. 7)
_INSTRUCTION_BLOCK = "**Instruction**:\n[[INSTRUCTION]]\n"

MODULE_PROMPTS = {
    "paraphrase": (
        "Paraphrase the following sentence. Keep its meaning; do not add information that is not in it."
        "[[QUESTION_BLOCK]]\n" + _INSTRUCTION_BLOCK + "**Sentence**:\n[[SENTENCE]]\n"
        "Output only the paraphrased sentence.\nOutput:"
    ),
    "compression": (
        "Compress the following sentence into a shorter sentence that keeps its essential content and syntactic structure. "
        "Do not add information that is not in it.[[QUESTION_BLOCK]]\n" + _INSTRUCTION_BLOCK + "**Sentence**:\n[[SENTENCE]]\n"
        "Output only the compressed sentence.\nOutput:"
    ),
    "fusion": (
        "Fuse the following sentences into a single sentence. They may contain similar or complementary information; "
        "keep what they say and do not add information that is not in them.[[QUESTION_BLOCK]]\n" + _INSTRUCTION_BLOCK
        + "**Sentences**:\n[[SENTENCE]]\nOutput only the fused sentence.\nOutput:"
    ),
}


def module_prompt(fn: str, sentences: list[str], instruction: str | None = None, question: str | None = None) -> str:
    """The module prompt with the instruction block removed when there is no instruction."""
    p = MODULE_PROMPTS[fn]
    if not instruction:
        p = p.replace(_INSTRUCTION_BLOCK, "")
    values = {
        "INSTRUCTION": instruction or "",
        "QUESTION_BLOCK": f"\n**Question** (the sentence is part of its answer):\n{question}" if question else "",
        "SENTENCE": "".join(s.replace("\n", " ").strip() + "\n" for s in sentences),
    }
    # one pass: text from the LLM (instruction, sentences) is never itself searched for placeholders
    return re.sub(r"\[\[(INSTRUCTION|QUESTION_BLOCK|SENTENCE)\]\]", lambda m: values[m.group(1)], p)


# --------------------------------------------------------------------------- pre-steps (Fig. 8)
RELEVANCE = """Is the following document relevant to the question, i.e. does it contain information that helps answer it? Answer "Yes" or "No" only.

Question: {question}

Document (Title: {title}):
{text}

Answer:"""

QFS_EXTRACTIVE = """Given a question and a document split into sentences, select the {n} sentences that are most relevant to the question. Copy each selected sentence exactly as it appears in the document, one per line, without ids, numbering or any other text.

Question: {question}

Document (Title: {title}):
{sentences}

Selected sentences:"""

QFS_ABSTRACTIVE = """Write a short summary of the document that focuses on the information relevant to the question. Use only information from the document. If the document contains nothing relevant, write "irrelevant".

Question: {question}

Document (Title: {title}):
{text}

Summary:"""

QFS_GENERATE = """Write a short summary that answers the question using only the following sentences, which were extracted from a document. Do not add any information that is not in them.

Question: {question}

Sentences:
{sentences}

Summary:"""
