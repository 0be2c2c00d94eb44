"""Prompts of the Yes/No LLM judge (``citegraph.tools.verifier.judge``): a spec's last segment
names one of :data:`JUDGE_PROMPTS` (``llm-judge:local:table16``). Each has ``{premise}`` and
``{hypothesis}`` slots; the passage comes first so a local model re-uses its cached prefix."""

JUDGE_PROMPT = (
    "You check whether a claim is fully supported by a source passage.\n\n"
    "Passage:\n{premise}\n\n"
    "Claim: {hypothesis}\n\n"
    "Is every part of the claim supported by the passage alone? Answer Yes or No."
)


# RAAC (Chen et al.), appendix Table 16, "LLM as the evaluator to evaluate citation metrics": the
# same role, task, two choices, output and note, in our words; the premise is the cited documents.
TABLE16_PROMPT = (
    "Role: data annotator.\n"
    "Instructions: you are given the following materials:\n"
    "- Passage: {premise}\n"
    "- Sentence: {hypothesis}\n\n"
    "Task: judge whether the passage fully supports the sentence.\n"
    "Choices:\n"
    "1. Fully supports: choose this when the passage supports every aspect of the sentence completely and clearly.\n"
    "2. Does not fully support: choose this when any discrepancy, omission or inaccuracy in the passage keeps it "
    "from fully supporting the sentence.\n"
    "Output: \"Yes.\" if the passage fully supports the sentence; \"No.\" if it does not.\n"
    "Note: add nothing that these instructions do not ask for."
)

#: judge prompts by the name a spec's last segment gives (``llm-judge:local:table16``)
JUDGE_PROMPTS: dict[str, str] = {"ours": JUDGE_PROMPT, "table16": TABLE16_PROMPT}
