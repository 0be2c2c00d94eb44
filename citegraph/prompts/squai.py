"""Prompts of SQuAI's four agents and of the standard RAG baseline (ours; see notes per prompt).

Per-document prompts put the document first and the step's instructions after it, so llama.cpp
re-uses the document's KV cache between Agent 2 and Agent 3 where the calls follow each other.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from citegraph.state.answer import Document


def clip_words(text: str, max_words: int) -> str:
    words = text.split()
    if not max_words or len(words) <= max_words:
        return text.strip()
    return " ".join(words[:max_words]) + " ..."


def doc_block(doc: Document, max_words: int) -> str:
    title = f"Title: {doc.title}\n" if doc.title else ""
    return f"{title}{clip_words(doc.text, max_words)}"


# --------------------------------------------------------------------------- Agent 1
class DecompositionReply(BaseModel):
    """Agent 1's structured output."""

    split: bool = Field(description="True only when the question has two or more distinct parts.")
    sub_questions: list[str] = Field(default_factory=list)


def decompose_prompt(question: str, cap: int) -> str:
    return (
        "You decompose research questions for a literature search.\n"
        "If the question asks about two or more distinct things, split it into self-contained sub-questions "
        f"(at most {cap}), each answerable on its own. If it asks about one thing, do not split it.\n"
        'Reply with JSON only: {"split": true|false, "sub_questions": ["...", "..."]}. '
        'When split is false, sub_questions is [].\n\n'
        'Example: "What is quantum computing and how is it used in cryptography?" -> '
        '{"split": true, "sub_questions": ["What is quantum computing?", "How is quantum computing used in cryptography?"]}\n'
        'Example: "How do graph neural networks aggregate neighbour features?" -> {"split": false, "sub_questions": []}\n\n'
        f"Question: {question}\nJSON:"
    )


# --------------------------------------------------------------------------- Agent 2
def doc_answer_prompt(question: str, doc: Document, max_words: int) -> str:
    return (
        f"Document:\n{doc_block(doc, max_words)}\n\n"
        f"Question: {question}\n\n"
        "Using only this document, answer the question in one to three sentences. "
        "If the document does not help answer it, say so in one sentence.\nAnswer:"
    )


# --------------------------------------------------------------------------- Agent 3
def judge_prompt(question: str, doc: Document, answer: str, max_words: int) -> str:
    """The Yes/No relevance question of Agent 3 (scored by the first token's log-odds)."""
    return (
        f"Document:\n{doc_block(doc, max_words)}\n\n"
        f"Question: {question}\n"
        f"Answer drawn from the document: {answer.strip() or '(none)'}\n\n"
        "Is this document relevant for answering the question? Reply with only Yes or No."
    )


# --------------------------------------------------------------------------- Agent 4
# The paper uses "three carefully crafted exemplars illustrating correct and incorrect citation
# practices" but prints none; these three are ours.
FEW_SHOT = """Example 1 (correct):
Documents: [1] Transformers rely on self-attention instead of recurrence. [2] Self-attention lets every token attend to every other token, at quadratic cost in sequence length.
Question: How do transformers process sequences?
Answer: Transformers replace recurrence with self-attention [1]. Every token attends to every other token, which costs time quadratic in the sequence length [2].

Example 2 (incorrect, then corrected):
Documents: [1] Dropout randomly zeroes activations during training. [2] Batch normalisation normalises layer inputs over a mini-batch.
Question: How does dropout reduce overfitting?
Wrong: Dropout randomly zeroes activations and was invented in 2012 [1]. It is the most popular regulariser.
(Wrong because the year is in no document, and the second sentence cites nothing.)
Right: Dropout randomly zeroes activations during training [1].

Example 3 (incorrect, then corrected):
Documents: [1] Graphene is a single layer of carbon atoms. [2] Graphene has very high electron mobility. [3] Graphene is used in flexible electronics.
Question: Why is graphene interesting for electronics?
Wrong: Graphene is a single carbon layer with high electron mobility and is used in flexible electronics [1].
(Wrong because one document is cited for claims of three.)
Right: Graphene is a single layer of carbon atoms [1] with very high electron mobility [2], which makes it useful in flexible electronics [3]."""


#: the line that introduces SQuAI's sub-questions in Agent 4's prompt (the 1.5B composer sometimes copies it)
SUB_QUESTIONS_HEADING = "The question has these parts; answer each:"


def compose_prompt(question: str, sub_questions: list[str], docs: list[Document], max_words: int) -> str:
    """Agent 4's single call: the rules and the exemplars first, then the documents and the question
    (the embedded 1.5B model left out every citation when the exemplars followed the documents)."""
    blocks = "\n\n".join(f"[{i}] {doc_block(d, max_words)}" for i, d in enumerate(docs, 1))
    subs = ""
    if len(sub_questions) > 1:
        subs = SUB_QUESTIONS_HEADING + "\n" + "\n".join(f"- {s}" for s in sub_questions) + "\n\n"
    return (
        "Write a concise answer (three to six sentences) to the question using only the numbered documents.\n"
        "Rules:\n"
        "- Every factual sentence cites at least one document as [n]; several as [1][2]. Put the citation before the period.\n"
        "- Cite only documents that state the claim; use diverse sources rather than one document for everything.\n"
        f"- Cite only numbers from 1 to {len(docs)}.\n"
        "- If no document supports a claim, rephrase it so that one does, or leave it out.\n\n"
        f"{FEW_SHOT}\n\nNow the task.\n\n"
        f"Documents:\n{blocks}\n\n"
        f"Question: {question}\n\n{subs}"
        "Answer (every sentence with its citation [n]):"
    )


# --------------------------------------------------------------------------- standard RAG
def rag_prompt(question: str, docs: list[Document], max_words: int) -> str:
    """The baseline's single prompt. The paper's baseline has no citation instruction; ours asks
    for [n] citations so the two systems' attributions can be compared."""
    blocks = "\n\n".join(f"[{i}] {doc_block(d, max_words)}" for i, d in enumerate(docs, 1))
    return (
        "Answer the question in three to six sentences using the numbered documents. Cite the supporting "
        "document(s) of every sentence as [n] (several as [1][2]), before the period.\n\n"
        f"Documents:\n{blocks}\n\n"
        f"Question: {question}\n\n"
        "Answer (every sentence with its citation [n]):"
    )


# --------------------------------------------------------------------------- citation reminder (ours)
CITE_REMINDER = (
    "Your answer cites no document. Write it again: end every sentence with the number of the document "
    "that states it, as [n] (several as [1][2]), before the period, and leave out any sentence that no "
    "document states."
)
