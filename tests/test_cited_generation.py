"""Generation that cites by construction (#34 item 2): the GBNF grammar and JSON schema of
``tools.models.cited_sentences``, the scripted path, the OpenAI JSON-schema path against the loopback
server (accepted and refused), the ``cite_format`` knob in the graphs, and one reply of the embedded
model (slow)."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from citegraph.graphs.registry import build_graph, make_context
from citegraph.state import Document
from citegraph.tools.models import citation_grammar, citation_schema, cited_sentences

from fake_openai import FakeOpenAI, Raw

DOCS = [
    Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann. It is based in Paris."),
    Document(id="b", title="Beta", text="Beta is a river in Chile."),
    Document(id="c", title="Gamma", text="Gamma won the 1990 prize."),
]


def _alternatives(gbnf: str) -> list[str]:
    line = next(l for l in gbnf.splitlines() if l.startswith("num ::="))
    return re.findall(r'"(\d+)"', line)


#: what the embedded model wrote to stay inside one sentence when a sentence could only end "text [n]."
#: and any letter (or any non-space) could follow an inner period (ASQA and SQuAI questions)
BAD_SENTENCES = ("There are 6 state parks in Virginia.document [1] [2].",
                 "Played by James and Oliver Phelps.James and Oliver are twins [3].",
                 "By Simon and Garfunkel._document [1].",
                 "Before the final.\u0438\u043b\u0430\u0441\u044c Jamaican rapper joined her [2].",
                 "It ends here. Next sentence goes on [1].",
                 "But where does all that trash come from? Most of it is plastic [2].")
GOOD_REPLIES = ("There are 6 state parks in Virginia [1] [2].",
                "There are 6 state parks in Virginia. [1] [2] Most opened in 1936 [3].",
                "It opens at 3 A.M. daily in the U.S. [2]. Growth was 3.5 percent [1].",
                "\"Sound of Silence\" was written by Paul Simon. [1]",
                "But where does all that trash come from? [2] Most of it is plastic [1].",
                "Who wrote the song that topped the charts [3]? It was Paul Simon [1]!")


@pytest.fixture(scope="module")
def vocab_llm():
    """The embedded model loaded for its vocabulary only (no weights: a second)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from citegraph.tools.local_model import embedded_model_path

    try:
        path = embedded_model_path("local")
    except Exception as e:  # noqa: BLE001 - the model is installed by make
        pytest.skip(f"embedded model not installed: {e}")
    llm = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    yield llm
    llm.close()


def _llama_accepts(llm, grammar: str, text: str) -> bool:
    """Whether llama.cpp's own grammar sampler lets the model's tokenizer write ``text`` token by
    token, as in decoding, and then end the reply (the end-of-generation token allowed)."""
    import ctypes

    import llama_cpp

    smpl = llama_cpp.llama_sampler_init_grammar(llama_cpp.llama_model_get_vocab(llm._model.model), grammar.encode(), b"root")

    def allowed(tok: int) -> bool:
        arr = (llama_cpp.llama_token_data * 1)()
        arr[0].id, arr[0].logit, arr[0].p = tok, 0.0, 0.0
        cur = llama_cpp.llama_token_data_array(data=arr, size=1, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(smpl, ctypes.byref(cur))
        return arr[0].logit != float("-inf")

    try:
        for tok in llm.tokenize(text.encode(), add_bos=False, special=False):
            if not allowed(tok):
                return False
            llama_cpp.llama_sampler_accept(smpl, tok)
        return allowed(llm.token_eos())
    finally:
        llama_cpp.llama_sampler_free(smpl)


def test_llama_cpp_grammar_takes_a_period_before_or_after_the_markers_and_no_glued_sentence(vocab_llm):
    g = citation_grammar(5)
    for ok in GOOD_REPLIES:
        assert _llama_accepts(vocab_llm, g, ok), ok
    for bad in BAD_SENTENCES + ("A sentence citing a document that is not there [6].", "No marker at all here."):
        assert not _llama_accepts(vocab_llm, g, bad), bad


def _body_regex(gbnf: str) -> "re.Pattern":
    """The grammar's sentence-body rule as a Python regex, translated mechanically (character classes
    and quoted literals, alternatives, one bounded repetition), so the test checks the rule shipped."""
    line = next(l for l in gbnf.splitlines() if l.startswith("body ::="))
    m = re.fullmatch(r"body ::= \((.*)\)\{(\d+),(\d+)\}", line)
    alts = []
    for alt in m.group(1).split(" | "):
        alts.append("".join(re.escape(tok[1:-1]) if tok.startswith('"') else tok for tok in alt.split(" ")))
    return re.compile("(?:" + "|".join(alts) + ")+")


def test_grammar_markers_are_exactly_1_to_n_and_sentences_end_at_their_markers():
    g = citation_grammar(12, min_sentences=2, max_sentences=4, max_citations=2)
    assert _alternatives(g) == [str(i) for i in range(1, 13)]  # multi-digit included, nothing else
    assert 'root ::= sent (" " sent){1,3}' in g
    assert 'cite ::= " [" num "]" (" [" num "]"){0,1}' in g
    body = _body_regex(g)
    for ok in ("Alpha grew 3.5 percent in the U.S. market", "It opens at 3 A.M. daily", "See e.g. the page"):
        assert body.fullmatch(ok), ok
    for bad in [b.split(" [")[0] for b in BAD_SENTENCES] + ["A bracket [1 inside", "Two\nlines"]:
        assert not body.fullmatch(bad), bad
    assert "root ::= sent\n" in citation_grammar(3, max_sentences=1)
    assert "{0,1}" not in citation_grammar(3, max_citations=1)
    with pytest.raises(ValueError):
        citation_grammar(0)


def test_grammar_compiles_in_llama_cpp():
    llama_cpp = pytest.importorskip("llama_cpp")
    llama_cpp.LlamaGrammar.from_string(citation_grammar(12), verbose=False)  # raises on a grammar it cannot parse


def test_schema_cites_only_listed_documents():
    sch = citation_schema(4, min_sentences=1, max_sentences=3, max_citations=2)
    item = sch["properties"]["sentences"]["items"]
    assert item["properties"]["citations"]["items"]["enum"] == [1, 2, 3, 4]
    assert item["properties"]["citations"]["minItems"] == 1 and item["properties"]["citations"]["maxItems"] == 2
    assert sch["properties"]["sentences"]["maxItems"] == 3


def test_scripted_model_gets_the_grammar_and_a_defensive_parse(scripted):
    spec, model = scripted(["Alpha was founded in 1901 [1]. Beta is a river in Chile [2] [7]. Gamma won [3] [1] [2]."])
    r = cited_sentences(spec, "Documents...\n\nQuestion: Q?\n\nAnswer:", 3, max_sentences=4, max_citations=2)
    assert r.mode == "grammar"
    kw = model.calls[0]["kwargs"]
    assert kw["grammar"] == citation_grammar(3, max_sentences=4, max_citations=2)
    prompt = model.calls[0]["messages"][-1].content
    assert prompt.endswith("numbers 1 to 3 only.\nAnswer:")  # the format note goes before the answer cue
    assert [(s.text, s.citations) for s in r.sentences] == [
        ("Alpha was founded in 1901.", [1]), ("Beta is a river in Chile.", [2]), ("Gamma won.", [3, 1])]
    assert any("out-of-range citation(s) [7]" in n for n in r.notes)
    assert any("kept the first 2 of 3" in n for n in r.notes)
    assert r.text == "Alpha was founded in 1901 [1]. Beta is a river in Chile [2]. Gamma won [3][1]."


def test_a_question_in_a_grammar_reply_is_a_sentence_of_its_own_and_keeps_its_citation(scripted):
    spec, _ = scripted(["But where does all that trash come from? [2] Most of it is plastic [1]. Who counts it [3]?"])
    r = cited_sentences(spec, "Q?", 3)
    assert [(s.text, s.citations) for s in r.sentences] == [
        ("But where does all that trash come from?", [2]), ("Most of it is plastic.", [1]), ("Who counts it?", [3])]


def test_a_sentence_cut_before_its_marker_is_dropped(scripted):
    from citegraph.testing import ScriptedChatModel
    from citegraph.tools.models import register_chat_model

    spec = f"fake:{uuid.uuid4().hex[:8]}"
    register_chat_model(spec, ScriptedChatModel(script=["Alpha was founded in 1901 [1]. Beta is a river in"],
                                                emulate_max_tokens=True))
    r = cited_sentences(spec, "Q?", 3, max_tokens=9)
    assert r.truncated and [(s.text, s.citations) for s in r.sentences] == [("Alpha was founded in 1901.", [1])]
    assert any("cut at max_tokens" in n for n in r.notes)


@pytest.fixture
def openai_spec(monkeypatch):
    def use(url):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("CITEGRAPH_OPENAI_RETRIES", "1")
        monkeypatch.setenv("CITEGRAPH_OPENAI_TIMEOUT", "5")
        return f"openai:model-{uuid.uuid4().hex[:6]}"
    return use


def test_openai_json_schema_accepted(openai_spec):
    reply = {"sentences": [{"sentence": "Alpha was founded in 1901.", "citations": [1]},
                           {"sentence": "Beta is a river.", "citations": ["[2]", 9]}]}
    with FakeOpenAI(lambda body: json.dumps(reply) if body.get("response_format") else "no") as srv:
        spec = openai_spec(srv.url)
        r = cited_sentences(spec, "Documents...\nAnswer:", 3, max_sentences=4)
        fmt = srv.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == citation_schema(3, max_sentences=4)
    assert r.mode == "json_schema"
    assert [(s.text, s.citations) for s in r.sentences] == [("Alpha was founded in 1901.", [1]), ("Beta is a river.", [2])]
    assert any("[9]" in n for n in r.notes)  # never a citation outside 1..n


def test_openai_json_schema_refused_falls_back_to_free_text_recorded(openai_spec):
    refusal = Raw(body=json.dumps({"error": {"message": "response_format json_schema is not supported by this server"}}),
                  status=400)
    with FakeOpenAI(lambda body: refusal if body.get("response_format") else "Alpha dates from 1901 [1]. Beta flows.") as srv:
        spec = openai_spec(srv.url)
        r = cited_sentences(spec, "Q?", 3)
        again = cited_sentences(spec, "Q?", 3)  # known to refuse: not asked with the schema again
        with_format = [q for q in srv.requests if q.get("response_format")]
    assert r.mode == "free" and [(s.text, s.citations) for s in r.sentences] == [("Alpha dates from 1901.", [1]),
                                                                                  ("Beta flows.", [])]
    assert any("refused the JSON-schema response format" in n and "HTTP 400" in n for n in r.notes)
    assert again.mode == "free" and any("refuses the JSON-schema" in n for n in again.notes)
    assert len(with_format) == 1 and len(srv.requests) == 3


def test_openai_reply_that_is_not_json_is_read_as_cited_text(openai_spec):
    with FakeOpenAI(lambda body: "Alpha dates from 1901 [1] [4].") as srv:
        r = cited_sentences(openai_spec(srv.url), "Q?", 3)
    assert r.mode == "json_schema" and [(s.text, s.citations) for s in r.sentences] == [("Alpha dates from 1901.", [1])]
    assert any("not the JSON asked for" in n for n in r.notes)


def test_vanilla_knob_default_free_and_constrained_in_the_graph(scripted):
    assert make_context("vanilla").cite_format == "free"
    for method in ("squai", "rag", "odmds"):
        assert make_context(method).cite_format == "constrained"
    spec, model = scripted(["Alpha was founded in 1901 [1]. Beta is a river in Chile [2]."])
    g = build_graph("vanilla")
    ans = g.invoke({"question": "Q?", "documents": DOCS}, context=make_context("vanilla", llm=spec))["answer"]
    assert "grammar" not in model.calls[-1]["kwargs"] and "cite_format" not in ans.metadata
    ans = g.invoke({"question": "Q?", "documents": DOCS},
                   context=make_context("vanilla", llm=spec, cite_format="constrained", cite_max_sentences=3))["answer"]
    assert model.calls[-1]["kwargs"]["grammar"] == citation_grammar(3, max_sentences=3)
    assert ans.metadata["cite_format"] == "grammar" and [s.citations for s in ans.sentences] == [[1], [2]]
    g.invoke({"question": "Q?", "documents": DOCS},
             context=make_context("vanilla", llm=spec, cite_format="constrained", cite_min_sentences=2))
    assert model.calls[-1]["kwargs"]["grammar"] == citation_grammar(3, min_sentences=2, max_sentences=5)
    assert "write 2 to 5 complete sentences" in str(model.calls[-1]["messages"][-1].content)
    g.invoke({"question": "Q?", "documents": DOCS},  # a minimum above the maximum is capped at it
             context=make_context("vanilla", llm=spec, cite_format="constrained", cite_min_sentences=4, cite_max_sentences=2))
    assert model.calls[-1]["kwargs"]["grammar"] == citation_grammar(3, min_sentences=2, max_sentences=2)


def test_rag_constrained_skips_the_citation_retry(scripted):
    spec, model = scripted(["Beta is a river in Chile [1]."])
    ans = build_graph("rag").invoke({"question": "Which river is in Chile?", "documents": DOCS},
                                    context=make_context("rag", llm=spec, top_k=2))["answer"]
    assert len(model.calls) == 1 and model.calls[0]["kwargs"]["grammar"] == citation_grammar(2, min_sentences=2, max_sentences=5)
    assert ans.metadata["cite_format"] == "grammar" and all(s.citations for s in ans.sentences)
    assert not any("retry" in w for w in ans.warnings)


@pytest.mark.slow
def test_embedded_model_constrained_reply_cites_every_sentence():
    from citegraph.prompts.alce import build_prompt
    from citegraph.run.datasets import bundled_example

    item = bundled_example()
    prompt = build_prompt(item.question, item.documents, ndemo=1)
    r = cited_sentences("local", prompt, len(item.documents), max_sentences=4, max_tokens=300)
    assert r.mode == "grammar" and r.sentences
    n = len(item.documents)
    assert all(s.citations and all(1 <= c <= n for c in s.citations) for s in r.sentences), r.text
