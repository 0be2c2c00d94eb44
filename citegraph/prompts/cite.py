"""The prompt of ``cite --rewrite`` (a RARR-style revision: edit the sentence toward its evidence)."""

from __future__ import annotations

REWRITE = """Evidence:
{evidence}

Sentence: {sentence}

The sentence above is not fully supported by the evidence. Rewrite it so that it says only what the evidence says, \
keeping its topic and as much of its wording as is true. Reply with the rewritten sentence only, one sentence, \
no citation marks."""


def rewrite_prompt(sentence: str, evidence: list[str]) -> str:
    return REWRITE.format(evidence="\n".join(f"- {e}" for e in evidence), sentence=sentence.strip())
