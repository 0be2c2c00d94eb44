"""RAAC prompts (Chen et al., Findings of ACL 2026): the appendix prompts, Tables 12-16, in our words.

Each prompt carries the content of the printed one -- its rules, its criteria with the paper's
definitions, its 1-3 scale, its output format and JSON keys -- reworded, not copied:

* Table 12 (initial generation, :func:`generate_prompt`): six instructions (accurate and engaging;
  cite as ``[id]`` / ``[id1][id2]``, never more than three for one content; every sentence 1-3
  citations; nothing that is not in the documents; objective, neutral tone like a news report or an
  encyclopedia; original or near-verbatim wording) and three notes (no personal elaboration or
  summarisation; 1-3 citations per sentence; the citation goes at the end of the sentence, before
  the period, as in "He scored 805 goals in official matches[5].").
* Table 13 (feedback, :func:`feedback_prompt`): an evaluation expert scores Completeness,
  Objectivity, Specificity, Length, Citation Recall and Citation Precision from 1 to 3 with
  suggestions, by the paper's definitions (e.g. Objectivity: original sentences from the documents
  or sentences with the same meaning, no paraphrasing or new interpretation; Specificity: no general
  expressions such as "This is important", "Many studies have shown", "According to xxx"; Length:
  no fewer than 50 words), and returns the paper's JSON:
  ``{"Completeness": {"Score": .., "Suggestions": ..}, ..., "Total Score": ..}``
  (:class:`FeedbackModel`, below, carries these keys as aliases, so llama.cpp's grammar
  asks for exactly them).
* Table 14 (refine, :func:`refine_prompt`): an assistant revises the summary from the scores and
  suggestions, focusing on the weak areas, keeping factual consistency and the strengths, under the
  five notes of the paper; JSON ``{"revised": ...}``. Each aspect is listed as
  ``<aspect>: score: <s>, suggestion: <text>`` as the paper prints it.
* Table 15 (AddCitation, :func:`add_citation_prompt`): the sentence and its candidate documents;
  cite with ``[1][2][3]`` without changing the sentence, no reasoning, only the smallest sufficient
  subset (1-3), nothing when no document supports it.
* Table 16 (the citation evaluator) lives with the verifier judge's prompts: ``citegraph.prompts.judge.TABLE16_PROMPT``
  (spec ``llm-judge:<llm>:table16``).

Deliberate differences, and why:

1. Order. The paper puts the instructions first and the question and documents after them. Ours
   open generate, feedback and refine with the same block -- the paper's reference-format note,
   the documents (in ALCE's format, difference 5), then the question -- and name the
   step's task only after it, with a distinctive ``### Task: ...`` line (logs and scripted test
   models tell the steps apart by it). A local llama.cpp model re-uses the KV cache of the longest
   common prefix, so within one question the ~700-token document block is read once instead of
   once per call (about 20 s per call at 40 prompt tokens/s on 2 cores).
2. Stop rule. Algorithm 1 stops when the feedback's "Total Score" equals 21, which six aspects
   scored 1-3 cannot reach; the TextAgent stops when every aspect has the maximum (total 18), and
   recomputes the total from the six scores instead of trusting the model's sum.
3. AddCitation's reply. The paper asks for the sentence with its citations appended; we ask for
   the chosen ids as JSON ``{"citations": [...]}``, which llama.cpp's grammar constrains to a list
   of numbers (a 1.5B model otherwise rewrites the sentence or adds prose). The ids are what the
   paper's reply is read for; ids outside the candidates are rejected in the node.
4. Feedback suggestions are bounded (``SUGGESTION_CHARS``) and their number of reply tokens by
   ``feedback_max_tokens``, so a grammar-constrained reply always closes its JSON.
5. Reference format. The paper writes each document as ``[id]: Title<|>Text``; ours uses ALCE's
   ``Document [id](Title: title): text`` (the vanilla baseline's format). Measured on ASQA dev item 0
   with the embedded 1.5B model (commit 33258bf): given the paper's format, the model began its
   summary by copying the first reference ("[1]: Argentina-Brazil football rivalry<|>Josef Bican
   ..."), and the refine rounds looped on "Josef Bican"; with ALCE's format it wrote a summary.
   ``clean_summary`` also strips such an echoed reference header, should a model still write one.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from citegraph.state import Document

ASPECTS: tuple[str, ...] = (
    "completeness", "objectivity", "specificity", "length", "citation_recall", "citation_precision",
)
MIN_SCORE, MAX_SCORE = 1, 3
SUGGESTION_CHARS = 200
#: the feedback reply's JSON keys as RAAC's Table 13 prints them (aspect -> key), and the inner keys
ASPECT_KEYS: tuple[tuple[str, str], ...] = (
    ("completeness", "Completeness"), ("objectivity", "Objectivity"), ("specificity", "Specificity"),
    ("length", "Length"), ("citation_recall", "Citation Recall"), ("citation_precision", "Citation Precision"),
)
SCORE_KEY, SUGGESTION_KEY, TOTAL_KEY = "Score", "Suggestions", "Total Score"


# --------------------------------------------------------------------------- the replies these prompts ask for
def _to_score(v: Any) -> int:
    """'2', 2.6, '3/3', 'Score: 2' -> an int clamped to 1..3 (unparseable -> 1)."""
    if isinstance(v, dict):
        v = v.get("score", v.get("value"))
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, str):
        m = re.search(r"-?\d+(?:\.\d+)?", v)
        v = float(m.group(0)) if m else MIN_SCORE
    try:
        n = int(round(float(v)))
    except (TypeError, ValueError, OverflowError):  # None, "", NaN, Infinity / 1e999
        n = MIN_SCORE
    return max(MIN_SCORE, min(MAX_SCORE, n))


class AspectFeedback(BaseModel):
    """One aspect of the TextAgent's self-feedback: a 1-3 score and a suggestion (JSON keys "Score" and
    "Suggestions", as the paper's Table 13; the field names are accepted too)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)
    score: int = Field(alias=SCORE_KEY, description="1 (poor) to 3 (excellent).", json_schema_extra={"enum": [1, 2, 3]})
    # maxLength bounds a grammar-constrained (llama.cpp) reply: six long suggestions used to run past
    # feedback_max_tokens, leaving unclosed JSON and a retry; other models' longer text is cut here.
    suggestion: str = Field(default="", alias=SUGGESTION_KEY, description="How to improve this aspect (one short sentence).",
                            json_schema_extra={"maxLength": SUGGESTION_CHARS})

    @field_validator("score", mode="before")
    @classmethod
    def _clamp(cls, v: Any) -> int:
        return _to_score(v)

    @field_validator("suggestion", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str:
        return "" if v is None else str(v)[:SUGGESTION_CHARS]


class FeedbackModel(BaseModel):
    """The feedback reply (paper Table 13): six aspects and the total the LLM reports. The JSON keys are
    the paper's ("Completeness", ..., "Citation Precision", "Total Score"), so a grammar-constrained
    reply uses them; the field names are accepted too."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)
    completeness: AspectFeedback = Field(alias="Completeness")
    objectivity: AspectFeedback = Field(alias="Objectivity")
    specificity: AspectFeedback = Field(alias="Specificity")
    length: AspectFeedback = Field(alias="Length")
    citation_recall: AspectFeedback = Field(alias="Citation Recall")
    citation_precision: AspectFeedback = Field(alias="Citation Precision")
    total: int | None = Field(default=None, alias=TOTAL_KEY, description="The total the LLM reports (we recompute it).")

    @field_validator("total", mode="before")
    @classmethod
    def _total(cls, v: Any) -> int | None:
        if v is None:
            return None
        try:
            return int(round(float(str(v).split("/")[0].strip())))
        except (ValueError, OverflowError):  # prose, NaN, Infinity / 1e999
            return None

    def scores(self) -> dict[str, int]:
        return {a: getattr(self, a).score for a in ASPECTS}

    def suggestions(self) -> dict[str, str]:
        return {a: getattr(self, a).suggestion for a in ASPECTS}


class RefineModel(BaseModel):
    """The refine reply (paper Table 14)."""

    revised: str = Field(description="The revised summary with [id] citations.")


class AddCitationModel(BaseModel):
    """The AddCitation reply (paper Table 15): ids of the chosen documents (may be empty)."""

    citations: list[int] = Field(default_factory=list, description="Document ids, 1-3 of the candidates shown.")


# --------------------------------------------------------------------------- prompts

GENERATE_HEADER = "### Task: attributed summary"
FEEDBACK_HEADER = "### Task: summary feedback"
REFINE_HEADER = "### Task: revise the summary"
ADD_CITATION_HEADER = "### Task: add citations"

#: the aspect names as the paper writes them (also the feedback JSON keys)
ASPECT_NAMES = dict(ASPECT_KEYS)
#: Table 13's criteria, in our words
ASPECT_RUBRIC = {
    "completeness": "the summary fully answers the question.",
    "objectivity": "the summary is made of original sentences from the documents, or of sentences with the same "
                   "meaning; it keeps strictly to the source content, without paraphrasing it or adding new "
                   "interpretations.",
    "specificity": "the summary avoids general expressions such as \"This is important\", \"Many studies have "
                   "shown\" or \"According to xxx\".",
    "length": "the summary has no fewer than 50 words.",
    "citation_recall": "every sentence has 1 to 3 citations, and what the sentence says is consistent with the "
                       "documents it cites.",
    "citation_precision": "when several sentences carry citations, check that each of their citations is valid.",
}

REFERENCE_FORMAT = (
    "Reference format: each reference is written as Document [id](Title: title): text, where \"id\" identifies "
    "the reference, \"title\" is its title and \"text\" is its body."
)

CITATION_EXAMPLE = "He scored 805 goals in official matches[5]."


def _clip_words(text: str, max_words: int | None) -> str:
    if not max_words:
        return text
    words = text.split()
    return " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")


def format_reference(i: int, doc: Document, max_words: int | None = None) -> str:
    """One reference as ``Document [id](Title: title): text`` (ALCE's format, not the paper's
    ``[id]: Title<|>Text``: see difference 5 in the module docstring; newlines flattened)."""
    text = " ".join(_clip_words(doc.text, max_words).split())
    title = " ".join((doc.title or "").split())
    return f"Document [{i}](Title: {title}): {text}"


def format_documents(documents: list[Document], max_words: int | None = None) -> str:
    """The documents as ``Document [id](Title: title): text`` lines, ids 1-based."""
    return "\n".join(format_reference(i, d, max_words) for i, d in enumerate(documents, 1))


def context_block(question: str, documents: list[Document], max_words: int | None = None) -> str:
    """The shared prefix of the TextAgent prompts: reference format, documents, then the question."""
    return f"{REFERENCE_FORMAT}\n\nDocuments:\n{format_documents(documents, max_words)}\n\nQuestion: {question}\n\n"


def generate_prompt(question: str, documents: list[Document], max_words: int | None = None) -> str:
    """Table 12: the initial attributed summary."""
    return (
        context_block(question, documents, max_words)
        + f"{GENERATE_HEADER}\n"
        "Write a summary that answers the question from the documents above, following these instructions:\n"
        "1. The summary is accurate and engaging.\n"
        "2. It cites the references correctly: name a reference by its id in the form [id]; when a sentence cites "
        "several references, write [id1][id2]. If several documents support the same content, cite no more than three.\n"
        "3. Every sentence of the summary cites at least one reference and at most three.\n"
        "4. Include nothing that cannot be found in the documents.\n"
        "5. Keep an objective, neutral tone, as a news report or an encyclopedia would.\n"
        "6. For accurate citations, prefer the original wording of the cited sources, or phrasing very close to it.\n"
        "Notes:\n"
        "1. Use the information of the documents strictly as it is, without elaborating on it or summarising it in your own terms.\n"
        "2. Every sentence of the summary cites at least one reference and at most three.\n"
        "3. Write each citation as [id] or [id1][id2] at the end of its sentence, before the period. "
        f"Example: \"{CITATION_EXAMPLE}\"\n\n"
        f"Question: {question}\n"
        "Summary:"
    )


def _feedback_example() -> str:
    one = f'"{ASPECT_NAMES[ASPECTS[0]]}": {{"{SCORE_KEY}": 2, "{SUGGESTION_KEY}": "..."}}'
    return f'{{{one}, ..., "{TOTAL_KEY}": 12}}'


def feedback_prompt(question: str, documents: list[Document], summary: str, max_words: int | None = None) -> str:
    """Table 13: score each criterion 1-3 with suggestions, plus the total."""
    rubric = "\n".join(f"- {ASPECT_NAMES[a]}: {ASPECT_RUBRIC[a]}" for a in ASPECTS)
    keys = ", ".join(f'"{ASPECT_NAMES[a]}"' for a in ASPECTS)
    return (
        context_block(question, documents, max_words)
        + f"{FEEDBACK_HEADER}\n"
        "You are an expert evaluator. Evaluate the summary below, which answers the question from the documents "
        "above and cites them as [id], on the following criteria. Give each criterion a score of 1, 2 or 3 points "
        "and suggestions for improving the summary.\n"
        "Evaluation criteria:\n"
        f"{rubric}\n\n"
        f"Summary: {summary}\n\n"
        "Output format: return only a JSON object holding, for each criterion, its score and suggestions, and the "
        f"total score (the sum of the six scores). Follow the example's structure strictly: the keys are {keys} "
        f'and "{TOTAL_KEY}"; each criterion is an object with "{SCORE_KEY}" and "{SUGGESTION_KEY}".\n'
        f"Example: {_feedback_example()}"
    )


def refine_prompt(
    question: str, documents: list[Document], summary: str, scores: dict[str, int], suggestions: dict[str, str],
    max_words: int | None = None,
) -> str:
    """Table 14: revise the summary following the scores and suggestions."""
    lines = []
    for a in ASPECTS:
        s = scores.get(a)
        tip = (suggestions.get(a) or "").strip() or ("keep as is" if s == 3 else "(no concrete suggestion: improve this aspect)")
        lines.append(f"{ASPECT_NAMES[a]}: score: {s if s is not None else 'n/a'}, suggestion: {tip}")
    return (
        context_block(question, documents, max_words)
        + f"{REFINE_HEADER}\n"
        "You are an AI assistant that revises answers so that they improve over time, guided by scores and "
        "suggestions for modification. You are given the question, the reference documents above, a summary, and "
        "feedback scores with suggestions for improvement. Revise the summary accordingly. Concentrate on the "
        "areas where the feedback shows weaknesses, stay factually consistent with the documents, and keep what "
        "the summary already does well: the result is a better, updated version of the summary that follows the "
        "feedback.\n\n"
        f"Summary: {summary}\n\n"
        "Scores and suggestions:\n" + "\n".join(lines) + "\n\n"
        "Notes:\n"
        "1. Cite a reference in the form [id]; several references as [id1][id2][id3].\n"
        "2. Return the result strictly in the output format below.\n"
        "3. Use the information of the documents strictly as it is, without elaborating on it or summarising it in your own terms.\n"
        "4. Every sentence of the summary cites at least one reference and at most three.\n"
        f"5. Write each citation as [id] or [id1][id2] at the end of its sentence, before the period. Example: \"{CITATION_EXAMPLE}\"\n"
        'Output format: only a JSON object holding the revised summary, e.g. {"revised": "<the revised summary with [id] citations>"}'
    )


def add_citation_prompt(sentence: str, candidates: list[tuple[int, Document]], max_words: int | None = None) -> str:
    """Table 15: the smallest sufficient subset (1-3) of the candidate documents for an uncited sentence."""
    docs = "\n".join(format_reference(i, d, max_words) for i, d in candidates)
    ids = ", ".join(str(i) for i, _ in candidates)
    return (
        f"{ADD_CITATION_HEADER}\n"
        "You are given a sentence and several related documents. Add citations of these documents to the sentence "
        "without changing the sentence; cite as [1][2][3].\n\n"
        f"{REFERENCE_FORMAT}\n"
        f"Documents:\n{docs}\n\n"
        f"Sentence: {sentence}\n\n"
        "Notes:\n"
        "1. Do not explain your reasoning.\n"
        "2. Do not cite every supporting document: choose only the smallest sufficient set (1 to 3 documents) that "
        "entails the sentence. If no document supports it, cite none.\n"
        f"Candidate ids: {ids}\n"
        'Output: only a JSON object with the ids of the documents to cite, e.g. {"citations": [2]} '
        '({"citations": []} when no document supports the sentence).'
    )
