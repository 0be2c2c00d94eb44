"""Prompts of GenerationPrograms (Wan et al., 2025, arXiv:2506.14580), from the paper's Appendix E.

Each prompt carries the content of the printed one, in our words:

* Planner (Figure 6, :data:`PLANNER`): the same task statement (an accurate, engaging and concise
  answer that synthesises the document, written as Python function calls over sentence ids instead
  of directly), the argument rule (ids or nested calls; ``instruction="..."``), the same function
  descriptions, the ``[Format]`` rule (a bullet list, one bullet per answer sentence, only the
  calls) and the ``[Function Nesting]`` rule, and the ``EXAMPLES`` / ``YOUR TASK`` layout.
* Modules (Figure 7, :data:`MODULE_PROMPTS`): a compression, paraphrasing and fusion assistant with
  the figure's rules (keep the original meaning; paraphrase strictly preserving it and adding
  nothing; fusion merges similar information while keeping every difference, its sentences one per
  line; follow the optional instruction; reply with the sentence only, no commentary or labels) and
  the ``**Instruction**`` / ``**Sentence**`` blocks.
* Query-focused summaries (Figure 8): extractive (copy ``n`` sentences exactly, as bullets),
  abstractive (summarise within ``n`` sentences, as bullets) and extract-then-generate (revise the
  extracted summary into ``n`` sentences keeping all its key information, as bullets).
* Relevance filtering (Appendix B): the paper asks the LLM whether each document is relevant to
  the question and drops the irrelevant ones; it prints no prompt, so :data:`RELEVANCE` is ours.

Deliberate differences, and why:

1. ``extract(sentence)``: a fourth module that copies a sentence verbatim (our issue's addition;
   the parser and executor accept it). The paper's three modules are described unchanged.
2. Two planner rules the paper's prompt does not have, each only when its knob is on:
   ``[Length]`` (at most ``max_answer_sentences`` bullets) and ``[Sentences]`` (a fusion merges at
   most ``max_fusion_inputs`` sentences; separate facts go in separate bullets). On ASQA the embedded
   1.5B model otherwise wrote 1.4 bullets per answer, each one fusion of many sentences (~70 words,
   3.4 citations per sentence). Both knobs at 0 give the paper's prompt.
3. The one-shot example is our own (the paper's examples are not printed).
4. A module prompt without an instruction leaves out the ``**Instruction**`` block instead of
   showing an empty one; ``module_with_question`` (off by default) adds the question.
5. Pre-steps on one document (relevance, extractive, abstractive, extract-then-generate) open with
   the same document block (title, then its sentences one per line) and put their task after it,
   so a local llama.cpp model reads each document once for all of them (its KV cache keeps the
   longest common prefix). The paper puts the instruction first and the document last.
6. The extractive and extract-then-generate replies are bullets; only verbatim copies of source
   sentences are kept from the extractive one (non-verbatim lines are counted and dropped).
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


LENGTH_RULE = "- **[Length]** Write at most {n} bullets: only the sentences that answer the question.\n"
SENTENCES_RULE = ("- **[Sentences]** Each bullet produces one answer sentence of ordinary length from few source sentences: "
                  "a fusion merges at most {k} sentences. Write a separate bullet for each separate fact or answer "
                  "instead of fusing everything into one long sentence.\n")


def planner_prompt(question: str, passages: str, examples: list[dict] | None = None, max_sentences: int = 0,
                   max_fusion_inputs: int = 0) -> str:
    """Figure 6, plus our ``[Length]`` / ``[Sentences]`` rules when their caps are on (> 0)."""
    exs = examples if examples is not None else [ONE_SHOT]
    text = "\n".join(format_example(e, i) for i, e in enumerate(exs, 1))
    prompt = PLANNER.format(examples=text, question=question, context=passages)
    rules = ""
    if max_sentences and max_sentences > 0:
        rules += LENGTH_RULE.format(n=max_sentences)
    if max_fusion_inputs and max_fusion_inputs > 0:
        rules += SENTENCES_RULE.format(k=max_fusion_inputs)
    if rules:
        anchor = "\n\n**EXAMPLES**"
        prompt = prompt.replace(anchor, "\n" + rules.rstrip("\n") + anchor, 1)
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
_INSTRUCTION_BLOCK = "**Instruction**: [[INSTRUCTION]]\n"

MODULE_PROMPTS = {
    "paraphrase": (
        "Paraphrase the sentence below. You are a paraphrasing assistant: write a paraphrased version of the "
        "sentence that strictly preserves its original meaning. If an instruction is given, your paraphrase "
        "follows it. Introduce no additional information and no commentary; reply with the paraphrased sentence "
        "only, without any extra text or labels.[[QUESTION_BLOCK]]\n\n" + _INSTRUCTION_BLOCK + "**Sentence**: [[SENTENCE]]"
    ),
    "compression": (
        "Compress the sentence below. You are a sentence compression assistant: write a compressed version of the "
        "sentence that keeps its original meaning. If an instruction is given, your output follows it. Add no "
        "commentary and no other text; reply with the compressed sentence only.[[QUESTION_BLOCK]]\n\n"
        + _INSTRUCTION_BLOCK + "**Sentence**: [[SENTENCE]]"
    ),
    "fusion": (
        "Fuse the sentences below. You are a sentence fusion assistant: write a single sentence that fuses the "
        "information of the given sentences (one per line). Merge the information they share and keep every "
        "difference between them. If an instruction is given, follow it. Reply with the fused sentence only, "
        "without commentary or labels.[[QUESTION_BLOCK]]\n\n" + _INSTRUCTION_BLOCK + "**Sentence(s)**:\n[[SENTENCE]]"
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
        "SENTENCE": "\n".join(s.replace("\n", " ").strip() for s in sentences),
    }
    # one pass: text from the LLM (instruction, sentences) is never itself searched for placeholders
    return re.sub(r"\[\[(INSTRUCTION|QUESTION_BLOCK|SENTENCE)\]\]", lambda m: values[m.group(1)], p)


# --------------------------------------------------------------------------- pre-steps (Appendix B, Fig. 8)
def document_block(title: str, sentences: list[str]) -> str:
    """The block every pre-step prompt on one document opens with (identical across them, so a
    llama.cpp model re-uses it from its KV cache): the title, then the sentences one per line."""
    lines = "\n".join(" ".join(s.split()) for s in sentences)
    return f"**Document** (Title: {title or ''}):\n{lines}\n\n"


RELEVANCE = """{document}Question: {question}

Is the document above relevant to the question, that is, does it contain information that helps answer it? Answer "Yes" or "No" only.

Answer:"""

QFS_EXTRACTIVE = """{document}Given the document above and the question "{question}", extract {n} sentences from the document that can answer the question. Do not change the sentences: copy each one exactly as it is written. Format your output as a bullet list with one sentence per bullet; each bullet starts with "-" followed by the sentence."""

QFS_ABSTRACTIVE = """{document}Given the document above and the question "{question}", summarize the document in at most {n} sentences that can answer the question. Format your output as a bullet list with one sentence per bullet; each bullet starts with "-" followed by the sentence."""

QFS_GENERATE = """{document}Given the document above, the question "{question}" and the extractive summary of the document below, revise the summary into {n} sentences that can answer the question. The revised summary must include all the key information of the extractive summary. Format your output as a bullet list with one sentence per bullet; each bullet starts with "-" followed by the sentence.

Extractive summary:
{summary}"""


def relevance_prompt(question: str, title: str, sentences: list[str]) -> str:
    return RELEVANCE.format(document=document_block(title, sentences), question=question)


def extractive_prompt(question: str, title: str, sentences: list[str], n: int) -> str:
    return QFS_EXTRACTIVE.format(document=document_block(title, sentences), question=question, n=n)


def abstractive_prompt(question: str, title: str, sentences: list[str], n: int) -> str:
    return QFS_ABSTRACTIVE.format(document=document_block(title, sentences), question=question, n=n)


def extract_then_generate_prompt(question: str, title: str, sentences: list[str], extracted: list[str], n: int) -> str:
    summary = "\n".join(f"- {' '.join(s.split())}" for s in extracted)
    return QFS_GENERATE.format(document=document_block(title, sentences), question=question, n=n, summary=summary)
