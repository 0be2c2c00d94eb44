"""SQuAI (Besrour et al., CIKM 2025) and the standard RAG baseline: Context knobs and working state.

The state keeps the whole trace (sub-questions, every retrieved candidate with its per-document
answer and RelScore, τ and σ per sub-question, what was kept and why, the fallback, the evidence
check of every citation) so Studio shows each decision.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, Field

from citegraph.state.answer import Document
from citegraph.state.base import AttributionMode, BaseContext, CITE_FORMAT_HELP, CiteFormat, CiteFormatKnobs, InputState, OutputState, RetrievalMode, RunContextState, RunRecord, attribution_knob, context_dataclass, knob

JudgeMode = Literal["auto", "logodds", "verbal"]
JUDGE_MODES = get_args(JudgeMode)


@context_dataclass
class RetrievalKnobs:
    """Retrieval knobs shared by ``squai`` and ``rag`` (the same names as every graph's open-domain
    knobs; here retrieval runs inside the graph, per sub-question for SQuAI)."""

    documents_are_a_corpus: ClassVar[bool] = True  # the input documents are retrieved from, not all prompted

    corpus: str = knob("", "Index to retrieve from (an index folder, chroma+http://HOST:PORT/COLLECTION or "
                           "retriever:<name>) when the input has no documents; with documents, retrieval runs among "
                           "them (an in-memory index). Either is required.")
    retrieval_mode: RetrievalMode = knob("hybrid", "Retriever: hybrid (weighted sum of min-max normalised scores), bm25, dense, rrf.")
    retrieval_alpha: float = knob(0.65, "Hybrid retrieval: weight of the DENSE score (the corpus layer's alpha). 0.65 is "
                                        "the paper's alpha = w_sparse = 0.35 on the BM25 score "
                                        "(S = 0.35*S_sparse + 0.65*S_dense, after Mosquera et al.), which the SQuAI code "
                                        "writes as alpha = 0.65 on the dense score: the same weighting.", ge=0.0, le=1.0)

    @property
    def w_sparse(self) -> float:
        """The paper's alpha: the weight of the sparse (BM25) score, 1 - retrieval_alpha."""
        return 1.0 - self.retrieval_alpha


def two_sentences_knob() -> Any:
    """squai's and rag's ``cite_min_sentences`` (one definition: the two compose under the same rule)."""
    return knob(2, "cite_format=constrained: the answer has at least this many sentences (capped at "
                   "cite_max_sentences). 2 here, so that the grammar does not let the model stop after its "
                   "first cited sentence when the question has more to it (set 1 to allow one-sentence "
                   "answers); squai and rag share it so that they are compared on equal terms.", ge=1, le=30)


@context_dataclass
class SquaiContext(CiteFormatKnobs, RetrievalKnobs, BaseContext):
    """Knobs of SQuAI."""

    attribution: AttributionMode = attribution_knob("repair")

    max_new_tokens: int = knob(400, "Maximum tokens of the final cited answer (Agent 4).", ge=1)
    max_sub_questions: int = knob(3, "Decomposer: at most this many sub-questions (the paper gives no cap; "
                                     "each costs top_k generator and judge calls).", ge=1, le=10)
    top_k: int = knob(5, "Documents retrieved per sub-question (paper: adjustable 3-10).", ge=3, le=10)
    candidate_factor: int = knob(2, "Each retriever (BM25, dense) contributes candidate_factor*top_k candidates "
                                    "before the hybrid scores are combined (the SQuAI code's 2*top_k).", ge=1)
    answer_tokens: int = knob(120, "Agent 2: maximum tokens of the short answer from one document.", ge=1)
    max_doc_words: int = knob(300, "Truncate each document to this many words in the Agent 2/3/4 prompts (0 = no limit).")
    judge: JudgeMode = knob("auto", "Agent 3: logodds = RelScore = log p(Yes) - log p(No) of the first token (local, openai: "
                              "with logprobs); verbal = ask Yes/No in words, RelScore +1/-1 (for models without "
                              "logprobs); auto = logodds, falling back to verbal (recorded once) when the model "
                              "returns no logprobs.")
    filter_n: float = knob(0.5, "Adaptive filter: keep a document iff RelScore >= tau_q - n*sigma over its sub-question's "
                                "candidates (mean, population std). Paper/MAIN-RAG: n = 0.5; negative n is stricter "
                                "than the mean.", ge=-3.0, le=3.0)
    fallback_keep: int = knob(3, "When no document passes any sub-question's filter, retrieve for the original question "
                                 "and keep its first this-many documents (the SQuAI code's fallback).", ge=1)
    dedupe_by: Literal["chunk", "document"] = knob("chunk", "Merge: de-duplicate the kept documents by the retrieved unit's id (chunk: each chunk is "
                                   "its own citable document) or by source document id (document: first chunk of a document "
                                   "wins; the paper's abstracts are one unit each, so both agree there).")
    max_evidence: int = knob(2, "Supporting sentences stored per citation: the verifier's best entailing sentences of the "
                                "cited document.", ge=1)
    citation_retries: int = knob(1, "Agent 4, cite_format=free: a reply that cites none of the merged documents is asked "
                                    "again this many times, in the same conversation, to add [n] citations (the paper has no "
                                    "such step). It costs a call only when the first reply cites nothing. 0 = keep the first "
                                    "reply. Not used with cite_format=constrained (every sentence cites by construction).",
                                 ge=0, le=3)
    cite_format: CiteFormat = knob("constrained", CITE_FORMAT_HELP + " Agent 4 (compose) uses it; constrained by default "
                                           "because every answer sentence must be checkable against the merged documents, "
                                           "and free decoding of the embedded model mostly writes no [n].")
    cite_min_sentences: int = two_sentences_knob()


@context_dataclass
class RagContext(CiteFormatKnobs, RetrievalKnobs, BaseContext):
    """Knobs of the standard RAG baseline."""

    attribution: AttributionMode = attribution_knob("repair")

    top_k: int = knob(10, "Documents retrieved for the question and put into the one prompt (paper's baseline: top-10).",
                      ge=1, le=50)
    candidate_factor: int = knob(2, "Each retriever contributes candidate_factor*top_k candidates to the hybrid fusion.", ge=1)
    max_doc_words: int = knob(300, "Truncate each document to this many words in the prompt (0 = no limit).")
    citation_retries: int = knob(1, "cite_format=free: a reply that cites none of the documents is asked again this many "
                                    "times, in the same conversation, to add [n] citations (as for SQuAI's Agent 4, so that "
                                    "the two systems are compared on equal terms). 0 = keep the first reply. Not used with "
                                    "cite_format=constrained.", ge=0, le=3)
    cite_format: CiteFormat = knob("constrained", CITE_FORMAT_HELP + " Constrained by default for the same reason as squai's "
                                           "(compared on equal terms).")
    cite_min_sentences: int = two_sentences_knob()


# --------------------------------------------------------------------------- trace records
class Decomposition(BaseModel):
    """What Agent 1 returned and what was made of it."""

    split: bool = False
    sub_questions: list[str] = Field(default_factory=list, description="The (sub-)questions retrieval runs on.")
    raw: str = Field(default="", description="The model's reply as parsed (JSON), for inspection.")
    problems: list[str] = Field(default_factory=list, description="Malformed output, merged duplicates, the cap.")


class SubQuestionTask(RunRecord):
    """Payload of one retrieval Send."""

    sub_q: int
    question: str
    documents: list[Document] = Field(default_factory=list, description="The caller's documents (when no corpus is set).")


class Candidate(BaseModel):
    """A retrieved document of one sub-question (with its retrieval scores)."""

    sub_q: int = Field(description="0-based index of the sub-question; -1 = the fallback on the original question.")
    sub_question: str
    rank: int = Field(description="0-based retrieval rank within the sub-question.")
    key: str = Field(description="De-duplication key: the retrieved unit's id (a chunk id when the index is chunked).")
    doc_id: str = ""
    document: Document
    score: float | None = None
    dense_score: float | None = None
    sparse_score: float | None = None


class DocTask(RunRecord):
    """Payload of one per-document Send (Agent 2, then Agent 3)."""

    candidate: Candidate
    answer: str = ""


class DocAnswer(BaseModel):
    """Agent 2's short answer from one document alone (the Q-A-E triplet's A)."""

    sub_q: int
    rank: int
    answer: str


class Judgement(BaseModel):
    """Agent 3's RelScore for one (sub-question, document, answer) triplet."""

    sub_q: int
    rank: int
    rel_score: float | None = Field(default=None, description="log p(Yes) - log p(No); +1/-1 with the verbal judge; None = failed.")
    method: str = Field(default="logodds", description="logodds | verbal")
    note: str = ""


class SubQuestionFilter(BaseModel):
    """The adaptive filter of one sub-question."""

    sub_q: int
    sub_question: str
    n: float
    tau: float | None = Field(default=None, description="Mean RelScore of the candidates (tau_q).")
    sigma: float | None = Field(default=None, description="Population standard deviation of the RelScores.")
    threshold: float | None = Field(default=None, description="tau_q - n*sigma")
    kept: list[int] = Field(default_factory=list, description="Retrieval ranks kept.")
    reasons: list[str] = Field(default_factory=list, description="Per candidate: kept/dropped and why.")


class MergedDoc(BaseModel):
    """A document of the merged list (its position + 1 is its citation number)."""

    key: str
    document: Document
    rel_score: float | None = None
    sub_q: int
    rank: int
    answer: str = ""


class CitationCheck(BaseModel):
    """The supporting-sentence search of one citation."""

    sentence: int = Field(description="0-based answer sentence.")
    doc: int = Field(description="1-based cited document.")
    supported: bool
    evidence: list[str] = Field(default_factory=list)
    best_score: float | None = None


class SquaiState(InputState, OutputState, RunContextState):
    """Working state of SQuAI."""

    decomposition: Decomposition | None = None
    sub_questions: list[str] = Field(default_factory=list)
    candidates: Annotated[list[Candidate], operator.add] = Field(default_factory=list)
    doc_answers: Annotated[list[DocAnswer], operator.add] = Field(default_factory=list)
    judgements: Annotated[list[Judgement], operator.add] = Field(default_factory=list)
    filters: list[SubQuestionFilter] = Field(default_factory=list, description="tau, sigma, threshold and decisions per sub-question.")
    merged: list[MergedDoc] = Field(default_factory=list, description="The documents the answer may cite, in citation order.")
    fallback: str = Field(default="", description="Why the fallback ran (empty: it did not).")
    notes: list[str] = Field(default_factory=list, description="Run notes, e.g. the judge's fallback to the verbal judgement.")
    prompt: str = ""
    generation: str = Field(default="", description="Agent 4's reply as written (decoding loops are cut when it is parsed).")
    truncated: bool = Field(default=False, description="Agent 4's reply stopped at max_new_tokens.")
    citation_retry: list[str] = Field(default_factory=list, description="Agent 4 asked again because its reply cited no document: what each try gave.")
    citation_checks: list[CitationCheck] = Field(default_factory=list)
    cite_mode: str = Field(default="", description="cite_format=constrained: grammar, json_schema, or free (the server refused the schema).")
    cite_notes: list[str] = Field(default_factory=list, description="cite_format=constrained: what happened (a refused schema, dropped citations).")


class RagState(InputState, OutputState, RunContextState):
    """Working state of the standard RAG baseline."""

    retrieved: list[Candidate] = Field(default_factory=list)
    prompt: str = ""
    generation: str = Field(default="", description="The reply as written (decoding loops are cut when it is parsed).")
    truncated: bool = Field(default=False, description="The reply stopped at max_new_tokens.")
    citation_retry: list[str] = Field(default_factory=list, description="Asked again because the reply cited no document: what each try gave.")
    cite_mode: str = Field(default="", description="cite_format=constrained: grammar, json_schema, or free (the server refused the schema).")
    cite_notes: list[str] = Field(default_factory=list, description="cite_format=constrained: what happened (a refused schema, dropped citations).")
