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

_KINDS_OF_ERROR = (
    "A claim is NOT supported when it reverses what the passage says (a \"not\" added or dropped, approved for "
    "rejected), swaps who did what to whom, gives a fact to the wrong person, place or thing, changes a number "
    "or date, adds a detail the passage does not state, or joins facts from two sentences wrongly. A claim IS "
    "supported when it says the same thing in other words, in the other voice (\"A sold B to C\" = \"C bought B "
    "from A\"), with arithmetic the passage allows, or by combining sentences correctly.\n\n"
)

_EXAMPLES = (
    "Examples:\n"
    "Passage: The committee rejected the mayor's proposal to extend opening hours.\n"
    "Claim: The committee approved the mayor's proposal to extend opening hours.\nAnswer: No\n\n"
    "Passage: Brenna Tools bought the drill maker Ostrik for $40 million.\n"
    "Claim: Ostrik bought Brenna Tools for $40 million.\nAnswer: No\n\n"
    "Passage: Ostrik, a drill maker, was sold to Brenna Tools for $40 million.\n"
    "Claim: Brenna Tools acquired Ostrik in a $40 million deal.\nAnswer: Yes\n\n"
    "Passage: Lena Park founded the studio in 2004. Her brother Ivo directed its first film.\n"
    "Claim: Lena Park directed the studio's first film.\nAnswer: No\n\n"
    "Passage: Lena Park founded the studio in 2004. Its first film, Low Tide, won a prize in Vero.\n"
    "Claim: The studio Lena Park founded made Low Tide, which won a prize.\nAnswer: Yes\n\n"
    "Passage: The bridge opened in 1998 and is 420 metres long.\n"
    "Claim: The 420-metre bridge opened in 1998 to ease traffic in the old town.\nAnswer: No\n\n"
)

# the same question after a list of the kinds of error, without and with worked examples (which come
# first, so a local model re-uses them from its cache for every pair); measured against "ours" on the
# minimal-pair suites written blind and not better there (docs/verifier.md): options, not the default
CAREFUL_PROMPT = (
    "You check whether a claim is fully supported by a source passage. " + _KINDS_OF_ERROR +
    "Passage:\n{premise}\n\n"
    "Claim: {hypothesis}\n\n"
    "Is every part of the claim supported by the passage alone? Answer Yes or No."
)
FEWSHOT_PROMPT = (
    "You check whether a claim is fully supported by a source passage. " + _KINDS_OF_ERROR + _EXAMPLES +
    "Now the task.\nPassage:\n{premise}\n\n"
    "Claim: {hypothesis}\n\n"
    "Is every part of the claim supported by the passage alone? Answer Yes or No."
)

#: judge prompts by the name a spec's last segment gives (``llm-judge:local:table16``)
JUDGE_PROMPTS: dict[str, str] = {"ours": JUDGE_PROMPT, "table16": TABLE16_PROMPT, "careful": CAREFUL_PROMPT,
                                  "fewshot": FEWSHOT_PROMPT}
