"""State and knobs of ``cite``: attribute a given text (an answer another tool wrote, a draft) to
documents, sentence by sentence, with the shared attribution stage."""

from __future__ import annotations


from pydantic import Field

from citegraph.state.base import AttributionMode, BaseContext, InputState, OutputState, RunContextState, attribution_knob, context_dataclass, knob


class CiteInput(InputState):
    """The text to attribute, and the documents (or none: the Context's corpus is searched per sentence)."""

    question: str = Field(default="", description="Optional: the question the text answers (kept in the answer).")
    answer_text: str = Field(default="", description="The text to attribute; split into sentences. [n] marks in it "
                                                     "are read as its own citations into the documents.")


class CiteState(CiteInput, OutputState, RunContextState):
    attribution_candidates: list[list[int]] = Field(default_factory=list,
                                        description="Per sentence, the documents it may cite (retrieved for it).")


@context_dataclass
class CiteContext(BaseContext):
    """Knobs of ``cite``."""

    attribution: AttributionMode = attribution_knob("repair")
    top_k: int = knob(3, "With a corpus and no documents: chunks retrieved per sentence as its candidate evidence "
                         "(the union becomes the answer's documents).", ge=1, le=20)
    rewrite: bool = knob(False, "Ask the LLM to rewrite each sentence left unsupported so that it says only what its "
                                "best evidence says, then check it again (RARR-style). Off: verifier only, no LLM call.")
    max_new_tokens: int = knob(120, "Maximum tokens of one rewritten sentence.", ge=1)
