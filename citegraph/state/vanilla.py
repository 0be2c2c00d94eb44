"""VANILLA (ALCE): one prompt with all documents, the LLM writes the cited answer."""

from __future__ import annotations


from pydantic import Field

from citegraph.state.base import BaseContext, CiteFormatKnobs, InputState, OutputState, RunContextState, context_dataclass, knob


@context_dataclass
class VanillaContext(CiteFormatKnobs, BaseContext):
    """Knobs of the VANILLA baseline."""

    ndemo: int = knob(1, "Demonstrations in the prompt: from demos_file, else our built-in one-shot demo (0 = none).")
    demos_file: str = knob("", "ALCE prompt file with demos, e.g. ../shared/data/alce/prompts/asqa_default.json.")
    max_doc_words: int = knob(0, "Truncate each document to this many words in the prompt (0 = no limit).")
    attach_trailing_citations: bool = knob(True, "A citation after the period belongs to the sentence before it.")


class VanillaState(InputState, OutputState, RunContextState):
    """Working state of VANILLA: the prompt and raw generation are kept for inspection."""

    prompt: str = Field(default="", description="The prompt sent to the LLM.")
    generation: str = Field(default="", description="The LLM's raw cited text (cite_format=constrained: its sentences as [n]-cited text).")
    cite_mode: str = Field(default="", description="cite_format=constrained: grammar, json_schema, or free (the server refused the schema).")
    cite_notes: list[str] = Field(default_factory=list, description="cite_format=constrained: what happened (a refused schema, dropped citations).")
