"""The shared attribution stage (citegraph/nodes/attribution.py): keep, re-point, add, joint support,
partial, flag, strict drop, evidence; wired at the end of every graph by the `attribution` knob."""

from __future__ import annotations

import re

import pytest

from citegraph.nodes.attribution import attribute_answer
from citegraph.state import AttributedAnswer, CitedSentence, Document
from citegraph.tools.verifier import FunctionVerifier, get_verifier, register_verifier

_STOP = {"the", "and", "was", "is", "in", "a", "of", "by", "it", "its", "to"}


def _words(t: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", t.lower()) if w not in _STOP}


def overlap(premise: str, hypothesis: str) -> float:
    """Share of the hypothesis' content words found in the premise (a transparent stub verifier)."""
    h = _words(hypothesis)
    return len(h & _words(premise)) / len(h) if h else 0.0


@pytest.fixture
def verifier():
    return FunctionVerifier(overlap, spec="stub:overlap-attr", threshold=0.99)


@pytest.fixture
def docs4():
    return [
        Document(id="a", title="", text="Alpha was founded in 1901 by Ann. It has a blue logo."),
        Document(id="b", title="", text="Beta is a river in Chile."),
        Document(id="c", title="", text="Gamma won the 1990 prize."),
        Document(id="d", title="", text="Delta makes bicycles in Lyon."),
    ]


def _answer(docs, *sents):
    return AttributedAnswer(question="q", documents=docs,
                            sentences=[CitedSentence(text=t, citations=c) for t, c in sents])


def test_the_stages_steps_each_decide_their_own_sentences(verifier, docs4):
    """keep_own decides what a sentence's own citations support, repoint what one other document does,
    check_jointly what needs two documents together (or flags it); each step leaves the others' alone."""
    from citegraph.nodes.attribution import _Attribution

    ans = _answer(docs4,
                  ("Beta is a river in Chile.", [2, 4]),                       # its own [2]
                  ("Gamma won the 1990 prize.", [4]),                          # another document: [3]
                  ("Beta is a river in Chile and Gamma won the 1990 prize.", [1]),  # two together: [2, 3]
                  ("Omega sells pianos.", [1]))                                # nothing supports it
    run = _Attribution(ans, verifier, max_docs=3, candidates=None, sentences=4)
    run.keep_own(simplify=True)
    assert run.decided == {0: ([2], 1.0, "simplified")}
    run.repoint()
    assert run.decided[1] == ([3], 1.0, "re-pointed") and set(run.decided) == {0, 1}
    assert (2, 3) in run.joint[2]
    run.check_jointly(partial=0.2)
    assert run.decided[2] == ([2, 3], 1.0, "re-pointed") and run.decided[3][2] == "flagged"
    sents, records, dropped, reported = run.sentences_out("strict", max_evidence=1)
    assert [s.citations for s in sents] == [[2], [3], [2, 3]] and [r.action for r in records][-1] == "dropped"
    assert dropped[0]["text"] == "Omega sells pianos." and reported == [(1, 0), (2, 1), (3, 2)]


def test_keep_simplify_repoint_add(verifier, docs4):
    ans = _answer(docs4,
                  ("Alpha was founded in 1901.", [1]),          # right: kept
                  ("Beta is a river in Chile.", [2, 4]),        # over-cited: simplified to [2]
                  ("Gamma won the 1990 prize.", [4]),           # wrong document: re-pointed to [3]
                  ("Delta makes bicycles in Lyon.", []))        # uncited: added [4]
    out = attribute_answer(ans, verifier, mode="repair")
    assert [s.citations for s in out.sentences] == [[1], [2], [3], [4]]
    assert [s.support for s in out.sentences] == ["supported"] * 4
    actions = [r["action"] for r in out.metadata["attribution"]["sentences"]]
    assert actions == ["kept", "simplified", "re-pointed", "added"]
    # each citation carries the document sentence that supports it, with its score
    ev = out.sentences[0].evidence
    assert [(e.doc, e.text) for e in ev] == [(1, "Alpha was founded in 1901 by Ann.")]
    assert ev[0].score == pytest.approx(1.0)
    assert out.metadata["attribution"]["counts"] == {"supported": 4, "partial": 0, "unsupported": 0, "unchecked": 0}


def test_simplify_off_keeps_citations_that_support_together(verifier, docs4):
    """attribution_simplify=false: a sentence its citations support together keeps them all (each one's
    evidence attached); one they do not support is still re-pointed, as with the Simplifier."""
    ans = _answer(docs4,
                  ("Beta is a river in Chile.", [2, 4]),        # supported by [2] alone, [4] unnecessary
                  ("Gamma won the 1990 prize.", [4]))           # wrong document
    out = attribute_answer(ans, verifier, mode="repair", simplify=False)
    assert [s.citations for s in out.sentences] == [[2, 4], [3]]
    assert [r["action"] for r in out.metadata["attribution"]["sentences"]] == ["kept", "re-pointed"]
    assert {e.doc for e in out.sentences[0].evidence} == {2, 4}
    assert attribute_answer(ans, verifier, mode="repair").sentences[0].citations == [2]  # the default simplifies
    # more citations than max_docs: the first max_docs are kept together, not cut to the smallest subset
    many = _answer(docs4, ("Beta is a river in Chile.", [1, 2, 3, 4]))
    out = attribute_answer(many, verifier, mode="repair", simplify=False, max_docs=3)
    assert out.sentences[0].citations == [1, 2, 3]
    assert out.metadata["attribution"]["sentences"][0]["action"] == "simplified"


def test_joint_support_needs_two_documents(verifier, docs4):
    ans = _answer(docs4, ("Ann founded Alpha and Gamma won the 1990 prize.", []))
    out = attribute_answer(ans, verifier, mode="repair")
    s = out.sentences[0]
    assert s.citations == [1, 3] and s.support == "supported"
    assert {e.doc for e in s.evidence} == {1, 3}


def test_partial_and_flagged_and_strict(verifier, docs4):
    ans = _answer(docs4,
                  ("Alpha was founded in 1901 in Paris.", [2]),   # 3 of 4 words: partial, re-pointed to [1]
                  ("The moon is made of cheese.", [1]),           # nothing: flagged, citation removed
                  ("Beta is a river in Chile.", [2]))
    out = attribute_answer(ans, verifier, mode="repair", partial=0.5)
    assert [s.support for s in out.sentences] == ["partial", "unsupported", "supported"]
    assert out.sentences[0].citations == [1]
    assert out.sentences[1].citations == [] and out.sentences[1].evidence == []
    assert any("flagged unsupported" in w for w in out.warnings)
    # a citation known to be unsupported never reaches the reader
    assert "[1]" not in out.render().split(".")[1]

    strict = attribute_answer(ans, verifier, mode="strict", partial=0.5)
    assert [s.text for s in strict.sentences] == ["Alpha was founded in 1901 in Paris.", "Beta is a river in Chile."]
    dropped = strict.metadata["attribution"]["dropped"]
    assert [d["text"] for d in dropped] == ["The moon is made of cheese."] and dropped[0]["citations"] == [1]
    assert any("dropped 1 unsupported" in w for w in strict.warnings)


@pytest.mark.parametrize("text, asks", [
    ("Why are some pills different colors than other ones?", True),
    ("Who plays Charlie on It's Always Sunny? [1][2]", True),
    ("Is it safe? [1, 2]", True),
    ("Why is the sky blue? Light scatters.", False),            # a question run into a statement
    ('The 1988 film was "Who Framed Roger Rabbit?"', False),     # a title that ends the statement
    ("Pearls are rare.", False),
])
def test_is_question(text, asks):
    from citegraph.tools.sentences import is_question

    assert is_question(text) is asks


def test_a_question_claims_nothing_and_is_flagged_without_a_citation(verifier, docs4):
    """A restated question scores as entailed by an on-topic document (here every word of it is in [2]);
    the stage checks no question: flagged, its citation removed, the reason said; strict drops it."""
    ans = _answer(docs4,
                  ("Is Beta a river in Chile?", [2]),
                  ("Beta is a river in Chile.", [2]),
                  ('The song "Gamma?" won the 1990 prize.', []))   # a title ending in "?": a statement
    assert overlap(docs4[1].text, "Is Beta a river in Chile?") == 1.0
    out = attribute_answer(ans, verifier, mode="repair")
    q = out.sentences[0]
    assert (q.support, q.citations, q.evidence, q.support_score) == ("unsupported", [], [], 0.0)
    rec = out.metadata["attribution"]["sentences"][0]
    assert rec["action"] == "question" and rec["before"] == [2] and "a question" in rec["conflicts"][0]
    assert [s.support for s in out.sentences[1:]] == ["supported", "partial"]
    assert out.metadata["attribution"]["questions"] == 1
    assert any("1 question(s) flagged" in w for w in out.warnings)
    assert not any("no document supports" in w for w in out.warnings)  # the question is not counted there
    strict = attribute_answer(ans, verifier, mode="strict")
    assert [s.text for s in strict.sentences] == ["Beta is a river in Chile.", 'The song "Gamma?" won the 1990 prize.']
    assert strict.metadata["attribution"]["dropped"][0]["text"] == "Is Beta a river in Chile?"


def test_existing_evidence_kept_and_never_out_of_range(verifier, docs4):
    from citegraph.state import Evidence

    ans = AttributedAnswer(question="q", documents=docs4, sentences=[
        CitedSentence(text="Beta is a river in Chile.", citations=[2], evidence=[Evidence(doc=2, text="Beta is a river in Chile.")]),
        CitedSentence(text="Gamma won the 1990 prize.", citations=[3]),
    ])
    out = attribute_answer(ans, verifier, mode="repair", candidates=[[2], [1, 2]])  # [3] is not a candidate
    assert out.sentences[0].evidence[0].score is None  # the method's own evidence, kept as it was
    # sentence 2 may only use documents 1-2 (neither supports it) but its own citation still does
    assert out.sentences[1].citations == [3]
    assert all(1 <= c <= 4 for s in out.sentences for c in s.citations)


def test_every_graph_ends_with_the_stage():
    from citegraph.graphs.registry import build_graph, context_class, names

    for name in names():
        g = build_graph(name)
        assert "attribution" in g.get_graph().nodes, name
        ctx = context_class(name)()
        expected = "repair" if name in ("squai", "rag", "ginger", "odmds", "genprog-posthoc", "cite") else "off"
        assert ctx.attribution == expected, name
        # GINGER keeps a sentence's own passages while together they support it; the others simplify
        assert ctx.attribution_simplify is (name != "ginger"), name


def test_vanilla_repair_through_the_graph(scripted, docs):
    """VANILLA's uncited and mis-cited sentences are repaired inside the graph; off leaves them."""
    from citegraph.graphs.registry import build_graph, make_context

    register_verifier("stub:overlap-graph", FunctionVerifier(overlap, spec="stub:overlap-graph", threshold=0.99))
    spec, _ = scripted(["Alpha was founded in 1901 by Ann [2]. Beta is a river in Chile. The sky is green."])
    g = build_graph("vanilla")
    inp = {"question": "Tell me about Alpha and Beta.", "documents": docs}
    off = g.invoke(inp, context=make_context("vanilla", llm=spec, verifier="stub:overlap-graph"))["answer"]
    assert [s.citations for s in off.sentences] == [[2], [], []]
    assert all(s.support is None for s in off.sentences)

    spec, _ = scripted(["Alpha was founded in 1901 by Ann [2]. Beta is a river in Chile. The sky is green."])
    rep = g.invoke(inp, context=make_context("vanilla", llm=spec, verifier="stub:overlap-graph",
                                              attribution="strict"))["answer"]
    assert [s.citations for s in rep.sentences] == [[1], [2]]
    assert [s.support for s in rep.sentences] == ["supported", "supported"]
    assert rep.metadata["attribution"]["dropped"][0]["text"] == "The sky is green."


def test_simplify_knob_reaches_the_graphs_stage(scripted, docs):
    from citegraph.graphs.registry import build_graph, make_context

    register_verifier("stub:overlap-simplify", FunctionVerifier(overlap, spec="stub:overlap-simplify", threshold=0.99))
    g = build_graph("vanilla")
    inp = {"question": "Tell me about Alpha.", "documents": docs}
    got = []
    for simplify in (True, False):
        spec, _ = scripted(["Alpha was founded in 1901 by Ann [1][2]."])
        ctx = make_context("vanilla", llm=spec, verifier="stub:overlap-simplify", attribution="repair",
                           attribution_simplify=simplify)
        got.append([s.citations for s in g.invoke(inp, context=ctx)["answer"].sentences])
    assert got == [[[1]], [[1, 2]]]


def test_bad_mode_is_a_one_line_error():
    from citegraph.errors import InputError
    from citegraph.graphs.registry import make_context

    with pytest.raises(InputError, match="attribution must be one of off, repair, strict"):
        make_context("vanilla", attribution="fix")


# --------------------------------------------------------------------------- citegraph cite
def _write_docs(tmp_path, docs):
    import json

    p = tmp_path / "docs.jsonl"
    p.write_text("\n".join(json.dumps({"id": d.id, "text": d.text}) for d in docs) + "\n")
    return p


def test_cite_cli_attributes_a_text(tmp_path, capsys, docs4):
    import json

    from citegraph.cli import main

    register_verifier("stub:overlap-cli", FunctionVerifier(overlap, spec="stub:overlap-cli", threshold=0.99))
    text = tmp_path / "answer.txt"
    text.write_text("Gamma won the 1990 prize [1]. Delta makes bicycles in Lyon. Paris is in Texas.")
    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs4)),
                 "--verifier", "stub:overlap-cli", "--json"])
    assert code == 0
    ans = json.loads(capsys.readouterr().out)
    assert [s["citations"] for s in ans["sentences"]] == [[3], [4], []]
    assert [s["support"] for s in ans["sentences"]] == ["supported", "supported", "unsupported"]
    assert ans["sentences"][0]["evidence"][0]["text"] == "Gamma won the 1990 prize."
    assert ans["metadata"]["attribution"]["sentences"][0]["action"] == "re-pointed"

    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs4)),
                 "--verifier", "stub:overlap-cli"])
    out = " ".join(capsys.readouterr().out.split())  # rich wraps at the console's width
    assert code == 0 and "unsupported: no document supports it" in out and "1 unsupported" in out


def test_cite_says_when_the_passage_as_a_whole_supports_a_sentence_no_single_sentence_does(tmp_path, capsys, docs4):
    from citegraph.cli import main

    register_verifier("stub:overlap-whole", FunctionVerifier(overlap, spec="stub:overlap-whole", threshold=0.99))
    text = tmp_path / "answer.txt"
    text.write_text("Alpha was founded in 1901 and has a blue logo [1]. Beta is a river in Chile [2].")
    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs4)), "--verifier", "stub:overlap-whole"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and out.count("supported 1.00") == 2
    # sentence 1: doc 1 as a whole entails it, neither of its sentences alone: said before the closest ones
    first, second = out.split(" 2. ")[0], out.split(" 2. ")[1].split("Attribution")[0]
    assert "the cited passage as a whole does" in first and "Alpha was founded in 1901 by Ann." in first
    assert "as a whole" not in second  # sentence 2's evidence entails it alone


def test_cite_rewrite_rechecks(tmp_path, capsys, docs4, scripted):
    import json

    from citegraph.cli import main

    register_verifier("stub:overlap-rw", FunctionVerifier(overlap, spec="stub:overlap-rw", threshold=0.99))
    spec, model = scripted(["Beta is a river in Chile."])
    text = tmp_path / "answer.txt"
    text.write_text("Beta is a lake in Peru.")
    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs4)), "--verifier",
                 "stub:overlap-rw", "--llm", spec, "--rewrite", "--set", "attribution_partial=0.9", "--json"])
    assert code == 0
    ans = json.loads(capsys.readouterr().out)
    s = ans["sentences"][0]
    assert s["text"] == "Beta is a river in Chile." and s["citations"] == [2] and s["support"] == "supported"
    rec = ans["metadata"]["attribution"]["sentences"][0]
    assert rec["action"] == "rewritten" and rec["rewritten_from"] == "Beta is a lake in Peru."


def test_cite_flags_a_question_unchecked_and_never_rewrites_it(tmp_path, capsys, docs4, scripted):
    import json

    from citegraph.cli import main

    register_verifier("stub:overlap-q", FunctionVerifier(overlap, spec="stub:overlap-q", threshold=0.99))
    spec, model = scripted(["Beta is a river in Chile."])
    text = tmp_path / "answer.txt"
    text.write_text("Is Beta a river in Chile? [2] Beta is a lake in Peru.")
    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs4)), "--verifier",
                 "stub:overlap-q", "--llm", spec, "--rewrite", "--set", "attribution_partial=0.9", "--json"])
    assert code == 0 and len(model.calls) == 1  # the LLM rewrote the statement only
    ans = json.loads(capsys.readouterr().out)
    assert [(s["citations"], s["support"]) for s in ans["sentences"]] == [([], "unsupported"), ([2], "supported")]
    assert [r["action"] for r in ans["metadata"]["attribution"]["sentences"]] == ["question", "rewritten"]
    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs4)), "--verifier", "stub:overlap-q"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "unsupported: a question, it claims nothing" in out and "✗" not in out.split(" 2. ")[0]


@pytest.mark.parametrize("partial, support", [("0.5", "partial"), ("0.9", "unsupported")])
def test_cite_rewrite_recheck_follows_the_stage_knobs(tmp_path, capsys, docs4, scripted, partial, support):
    """The rewrite's second check runs with the Context's attribution_* knobs, as the first one does:
    the rewrite shares 3 of its 5 content words with document 2 (0.6), partial below 0.6, unsupported above."""
    import json

    from citegraph.cli import main

    register_verifier("stub:overlap-rw2", FunctionVerifier(overlap, spec="stub:overlap-rw2", threshold=0.99))
    spec, _ = scripted(["Beta is a river in Chile near Lima."])
    text = tmp_path / "answer.txt"
    text.write_text("Beta is a lake in Peru.")
    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs4)), "--verifier",
                 "stub:overlap-rw2", "--llm", spec, "--rewrite", "--set", f"attribution_partial={partial}", "--json"])
    assert code == 0
    ans = json.loads(capsys.readouterr().out)
    s, rec = ans["sentences"][0], ans["metadata"]["attribution"]["sentences"][0]
    assert s["text"] == "Beta is a river in Chile near Lima." and rec["action"] == "rewritten"
    assert s["support"] == support and rec["rewritten_from"] == "Beta is a lake in Peru."


@pytest.mark.parametrize("argv, needle", [
    (["cite", "--text", "MISSING.txt", "--docs", "DOCS"], "cannot read"),
    (["cite", "--text", "EMPTY", "--docs", "DOCS"], "no text to attribute"),
    (["cite", "--text", "TEXT"], "give --docs"),
    (["cite", "--text", "TEXT", "--docs", "DOCS", "--index", "x"], "give --docs"),
    (["cite", "--text", "TEXT", "--docs", "DOCS", "--verifier", "nonsense-verifier"], "unknown verifier spec"),
    (["cite", "--text", "TEXT", "--docs", "DOCS", "--set", "attribution=maybe"], "attribution must be one of"),
    (["cite", "--text", "TEXT", "--index", "NOINDEX"], ""),
])
def test_cite_cli_bad_input(tmp_path, capsys, docs4, argv, needle):
    from citegraph.cli import main

    (tmp_path / "empty.txt").write_text("  \n")
    (tmp_path / "t.txt").write_text("Beta is a river.")
    subst = {"MISSING.txt": str(tmp_path / "missing.txt"), "EMPTY": str(tmp_path / "empty.txt"),
             "TEXT": str(tmp_path / "t.txt"), "DOCS": str(_write_docs(tmp_path, docs4)),
             "NOINDEX": str(tmp_path / "no_index")}
    code = main([subst.get(a, a) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("citegraph: error:") and needle in err


def test_ask_save_writes_what_show_reads_and_never_overwrites(tmp_path, capsys, scripted):
    from citegraph.cli import main
    from citegraph.view.page import build_page, render_page

    register_verifier("stub:overlap-save", FunctionVerifier(overlap, spec="stub:overlap-save", threshold=0.99))
    spec, _ = scripted(["The Eiffel Tower is in Paris [3]. It was painted green by aliens."])
    out = tmp_path / "demo.json"
    argv = ["ask", "vanilla", "--example", "--llm", spec, "--verifier", "stub:overlap-save",
            "--set", "attribution=repair", "--save", str(out)]
    assert main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert f"citegraph show {out} --open" in printed
    page = build_page([out], verifier=None)
    sents = page.rows[0].cells[0].sentences
    assert [s.support for s in sents][-1] == "unsupported"
    assert "support unsupported" in render_page(page)
    before = out.read_bytes()
    assert main(argv) == 2  # an existing file is never overwritten
    assert "exists" in capsys.readouterr().err and out.read_bytes() == before


def test_a_document_that_supports_only_as_a_whole_shows_its_two_best_sentences(verifier):
    docs = [Document(id="a", text="Alpha was founded in 1901. Ann started it. Its logo is blue.")]
    out = attribute_answer(_answer(docs, ("Alpha was founded in 1901 by Ann.", [])), verifier, mode="repair")
    s = out.sentences[0]
    assert s.citations == [1] and s.support == "supported"
    assert [e.text for e in s.evidence] == ["Alpha was founded in 1901.", "Ann started it."]
    assert all(e.score < 0.99 for e in s.evidence)  # neither sentence entails it alone


def test_own_citations_first_and_only_the_closest_document_sentences():
    """A sentence its own citation supports never has the other documents checked; a document's
    sentences checked alone are the `sentences` sharing the most words with the answer sentence."""
    def filler(d):
        return " ".join(f"Line {w} of {d} mentions nothing useful." for w in ("one", "two", "three", "four", "five", "six"))

    docs = [Document(id="a", title="", text=f"{filler('a')} Alpha was founded in 1901 by Ann."),
            Document(id="b", title="", text=f"{filler('b')} Beta is a river in Chile."),
            Document(id="c", title="", text=f"{filler('c')} Gamma won the 1990 prize.")]
    asked: list[tuple[str, str]] = []

    def score(pairs):
        asked.extend(pairs)
        return [overlap(p, h) if len(p) < 60 else 0.0 for p, h in pairs]  # whole documents: "too long" for it

    v = FunctionVerifier(score, spec="stub:record", batched=True, threshold=0.99, cache=False)
    ans = _answer(docs, ("Alpha was founded in 1901.", [1]), ("Gamma won the 1990 prize.", []))
    out = attribute_answer(ans, v, mode="repair", sentences=2)
    assert [s.citations for s in out.sentences] == [[1], [3]]
    assert out.sentences[0].evidence[0].text == "Alpha was founded in 1901 by Ann."
    first = [p for p, h in asked if h == "Alpha was founded in 1901."]
    assert not any("Beta" in p or "Gamma" in p for p in first)  # supported by its own citation: nothing else asked
    alone = [p for p in first if p != docs[0].text]
    assert len(alone) == 2 and "Alpha was founded in 1901 by Ann." in alone  # 2 of document a's 7 sentences
    second = {p for p, h in asked if h == "Gamma won the 1990 prize."}
    assert len(second) == 3 * (1 + 2)  # every document, whole and its 2 closest sentences
    asked.clear()
    attribute_answer(ans, v, mode="repair", sentences=0)
    assert len({p for p, h in asked if h == "Alpha was founded in 1901."}) == 1 + 7  # 0: every sentence


def test_structural_checks_veto_a_documents_sentences_and_say_why(tmp_path, capsys):
    """A lenient stub accepts any pair; with +checks, a sentence that negates what its cited document says is
    flagged even though another sentence of that document is accepted alone, and cite prints the reason."""
    from citegraph.cli import main

    def lenient(premise: str, hypothesis: str) -> float:  # accepts everything but unrelated text
        return 0.9 if overlap(premise, hypothesis) > 0.2 else 0.05

    register_verifier("stub:lenient", FunctionVerifier(lenient, spec="stub:lenient"))
    docs = [Document(id="a", title="", text="The Orvik vaccine protected adults against the virus. "
                                            "It did not protect infants.")]
    negated = "The Orvik vaccine did not protect adults against the virus."
    true = "The Orvik vaccine protected adults against the virus."
    plain = attribute_answer(_answer(docs, (negated, [1]), (true, [1])), get_verifier("stub:lenient"))
    assert [s.support for s in plain.sentences] == ["supported", "supported"]  # the stub alone accepts both
    checked = attribute_answer(_answer(docs, (negated, [1]), (true, [1])), get_verifier("stub:lenient+checks"))
    assert [s.support for s in checked.sentences] == ["unsupported", "supported"]
    recs = checked.metadata["attribution"]["sentences"]
    assert recs[0]["conflicts"] and recs[0]["conflicts"][0].startswith("[1] negation:") and recs[1]["conflicts"] == []

    text = tmp_path / "answer.txt"
    text.write_text(f"{negated} [1] {true} [1]")
    code = main(["cite", "--text", str(text), "--docs", str(_write_docs(tmp_path, docs)), "--verifier",
                 "stub:lenient+checks"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "✗ [1] negation: the claim says 'not' of 'protect'" in out and "1 unsupported" in out


def test_an_uncited_flagged_sentence_is_explained_by_the_closest_conflicting_document():
    register_verifier("stub:lenient2", FunctionVerifier(lambda p, h: 0.9 if overlap(p, h) > 0.2 else 0.05,
                                                        spec="stub:lenient2"))
    docs = [Document(id="a", title="", text="Delta makes bicycles in Lyon."),
            Document(id="b", title="", text="The Orvik vaccine protected adults against the virus.")]
    out = attribute_answer(_answer(docs, ("The Orvik vaccine did not protect adults against the virus.", [])),
                           get_verifier("stub:lenient2+checks"))
    assert out.sentences[0].support == "unsupported"
    (why,) = out.metadata["attribution"]["sentences"][0]["conflicts"]
    assert why.startswith("[2] negation: the claim says 'not' of 'protect'")


def _second_opinion_verifier(first_scores: dict, second_scores: dict, asked: list):
    from citegraph.tools.verifier.lm import SecondOpinionVerifier

    def second(pairs):
        asked.extend(pairs)
        return [second_scores[pair] for pair in pairs]

    return SecondOpinionVerifier(FunctionVerifier(lambda p, h: first_scores[(p, h)], spec="stub:first"),
                                 FunctionVerifier(second, spec="stub:second", batched=True))


def test_the_second_opinion_is_asked_only_about_the_pairs_that_decide_a_sentence():
    """``<spec>+lm`` at the stage: every pair is scored by the first verifier; the second one is asked
    about the pair a sentence's status rests on when the first is unsure of it. A[1] (0.6) kept the
    sentence; the second opinion (0.1) brings it to 0.35, so the stage decides again and re-points it to
    B[2] (0.7), whose own second opinion (0.9) makes it 0.8. The other sentence rests on C[3] (0.95): the
    second opinion is asked there too (every deciding score above 0.1) and its 0.75 makes it 0.85. D (0.3,
    deciding nothing) and C for the first sentence (0.05: the first is sure) are never asked about; scoring
    every pair the stage tries with ``score`` would have asked about D too."""
    docs = [Document(id=x, title="", text=t)
            for x, t in zip("abcd", ["Alpha holds it.", "Beta holds it.", "Gamma holds it.", "Delta holds it."])]
    claim, sure = "The claim.", "The sure claim."
    first = {(docs[0].text, claim): 0.6, (docs[1].text, claim): 0.7, (docs[2].text, claim): 0.05,
             (docs[3].text, claim): 0.3, (docs[3].text, sure): 0.02,
             (docs[0].text, sure): 0.02, (docs[1].text, sure): 0.02, (docs[2].text, sure): 0.95}
    second = {(docs[0].text, claim): 0.1, (docs[1].text, claim): 0.9, (docs[2].text, sure): 0.75}
    asked: list = []
    out = attribute_answer(_answer(docs, (claim, [1]), (sure, [3])), _second_opinion_verifier(first, second, asked))
    s, t = out.sentences
    assert (s.citations, s.support, s.support_score) == ([2], "supported", 0.8)
    assert (t.citations, t.support, t.support_score) == ([3], "supported", 0.85)
    assert sorted(asked) == sorted([(docs[0].text, claim), (docs[2].text, sure), (docs[1].text, claim)])
    assert out.metadata["attribution"]["second_opinions"] == 3
    assert out.metadata["attribution"]["sentences"][0]["action"] == "re-pointed"


def test_at_the_stage_the_checker_alone_decides_a_long_document_the_first_read_in_part():
    """A sentence the first verifier rejects outright (0.05) from a document longer than its window: the
    checker's score (0.85) replaces it, and the sentence is supported; the same score from a short
    document stands (the first read it whole)."""
    from citegraph.tools.verifier.lm import SecondOpinionVerifier

    class Windowed(FunctionVerifier):
        def premise_cut(self, pairs):
            return [len(p.split()) > 5 for p, _ in pairs]

    claim = "The claim."
    for text, support, n_asked in (("Alpha holds it, as the long report says at length.", "supported", 1),
                                   ("Alpha holds it.", "unsupported", 0)):
        asked: list = []

        def second(pairs, asked=asked):
            asked.extend(pairs)
            return [0.85] * len(pairs)

        v = SecondOpinionVerifier(Windowed(lambda p, h: 0.05, spec="stub:first"),
                                  FunctionVerifier(second, spec="stub:second", batched=True))
        out = attribute_answer(_answer([Document(id="a", title="", text=text)], (claim, [1])), v)
        assert out.sentences[0].support == support and len(asked) == n_asked
        assert out.metadata["attribution"]["second_opinions"] == n_asked


def test_a_flagged_sentence_whose_best_pair_is_a_sentence_gets_its_whole_documents_second_opinion():
    """The first verifier scores the long document 0.05 and its best sentence 0.08: the sentence is flagged
    on the sentence's pair, which the checker does not take (read whole, below the band); the whole
    document's pair is offered too, and the checker's 0.85 for it supports the sentence."""
    from citegraph.tools.verifier.lm import SecondOpinionVerifier

    class Windowed(FunctionVerifier):
        def premise_cut(self, pairs):
            return [len(p.split()) > 8 for p, _ in pairs]

    text = "Alpha holds the first part of it. Beta holds the second part of it. Gamma adds nothing here."
    claim = "The claim."
    asked: list = []

    def second(pairs):
        asked.extend(pairs)
        return [0.85] * len(pairs)

    v = SecondOpinionVerifier(Windowed(lambda p, h: 0.05 if p == text else 0.08, spec="stub:first"),
                              FunctionVerifier(second, spec="stub:second", batched=True))
    out = attribute_answer(_answer([Document(id="a", title="", text=text)], (claim, [1])), v)
    s = out.sentences[0]
    assert (s.citations, s.support) == ([1], "supported") and s.support_score == pytest.approx(0.85)
    assert asked == [(text, claim)] and out.metadata["attribution"]["second_opinions"] == 1


def test_a_second_opinion_can_lift_a_flagged_sentence_and_is_not_asked_where_the_first_is_sure():
    docs = [Document(id="a", title="", text="Alpha holds it.")]
    claim = "The claim."
    asked: list = []
    v = _second_opinion_verifier({(docs[0].text, claim): 0.15}, {(docs[0].text, claim): 0.95}, asked)
    s = attribute_answer(_answer(docs, (claim, [])), v).sentences[0]
    assert (s.citations, s.support, s.support_score) == ([1], "supported", 0.55)  # flagged at 0.15 -> added
    asked.clear()
    v = _second_opinion_verifier({(docs[0].text, claim): 0.05}, {}, asked)
    out = attribute_answer(_answer(docs, (claim, [1])), v)
    assert out.sentences[0].support == "unsupported" and asked == [] and out.metadata["attribution"]["second_opinions"] == 0
