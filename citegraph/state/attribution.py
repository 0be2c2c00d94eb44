"""Records of the shared attribution stage (``citegraph/nodes/attribution.py``) and of the checks it
shares with RAAC's CitationAgent."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SubsetCheck(BaseModel):
    """One set of documents (1-based) checked as the joint premise of one sentence."""

    subset: list[int]
    score: float
    entails: bool


#: why the stage flags a question unchecked (its ``conflicts``): it claims nothing a document could support
QUESTION_REASON = "a question: it asks, and states nothing a document could support"

ACTIONS = ("kept", "simplified", "re-pointed", "added", "partial", "flagged", "question", "dropped", "rewritten")


class SentenceAttribution(BaseModel):
    """What the attribution stage did to one answer sentence (``answer.metadata["attribution"]``)."""

    sentence: int = Field(description="0-based index of the sentence in the answer as the method wrote it.")
    text: str
    before: list[int] = Field(default_factory=list, description="Citations as the method wrote them.")
    after: list[int] = Field(default_factory=list, description="Citations after the stage.")
    action: str = Field(description="kept (the written citations entail it), simplified (a smaller subset of them does), "
                                    "re-pointed (other documents do), added (it had none; a document does), partial, "
                                    "flagged (unsupported), question (a question: flagged unsupported unchecked, it claims nothing), "
                                    "dropped (strict mode), rewritten (cite --rewrite).")
    support: str = Field(description="supported, partial or unsupported.")
    score: float = Field(description="The verifier's score of the chosen document set (the best one when none entails).")
    rewritten_from: str | None = Field(default=None, description="The sentence before an LLM rewrite (cite --rewrite).")
    conflicts: list[str] = Field(default_factory=list, description=(
        "Why a sentence that is not supported conflicts with the documents it cited (or, uncited, those the "
        "stage tried), when the verifier has structural checks (a '+checks' spec): e.g. \"negation: the claim "
        "says 'not' of 'ease', the premise does not\"."))
