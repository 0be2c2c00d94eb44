"""The corpus layer (citegraph.corpus): chunking, stable ids, incremental add, fusion arithmetic,
LangChain interop both ways, open-domain mode in a graph, a real Chroma server, bad corpus lines."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import pytest

from loopback import free_port, serve

from citegraph.corpus import Chunker, Corpus, add_to_index, build_index, forget_opened, register_retriever
from citegraph.corpus.fusion import fuse, fuse_ranx
from citegraph.errors import InputError

DOCS = [
    {"id": "nile", "title": "Nile", "text": "The Nile is the longest river in Africa. It flows north through eleven countries. "
                                            "Its water feeds the farms of Egypt.", "lang": "en"},
    {"id": "cats", "title": "Cats", "text": "Cats are small carnivorous mammals. They were domesticated in the Near East "
                                            "about ten thousand years ago. Many households keep cats as pets."},
    {"id": "tea", "title": "Tea", "text": "Tea is brewed from the leaves of Camellia sinensis. It was first drunk in China."},
]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def tokenizer():
    from citegraph.tools.embeddings import get_embedder

    return get_embedder("minilm").tokenizer


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    d = tmp_path_factory.mktemp("idx")
    rep = build_index(DOCS, d / "idx", chunk_tokens=24)
    assert rep.docs_added == 3 and not rep.bad_lines
    return d / "idx"


# ------------------------------------------------------------------------------------- chunking
def test_chunks_are_verbatim_slices_within_the_token_budget(tokenizer):
    text = ("First sentence here. Second one is a little longer than the first.\n\n"
            "A new paragraph starts. " + "word " * 60 + "ends the long one. Last.")
    ch = Chunker(tokenizer, chunk_tokens=20)
    chunks = ch.chunk("d", "T", text, {"k": 1})
    assert len(chunks) >= 5
    for i, c in enumerate(chunks):
        assert c.text == text[c.start:c.end]
        assert c.order == i and c.id == f"d#{i}" and c.doc_id == "d" and c.metadata == {"k": 1}
        assert len(tokenizer(c.text)["input_ids"]) <= 20  # [CLS]/[SEP] included
        assert c.prev_id == (chunks[i - 1].id if i else None)
        assert c.next_id == (chunks[i + 1].id if i + 1 < len(chunks) else None)
    # no overlap, in order, and every non-space character of the text is in some chunk
    for a, b in zip(chunks, chunks[1:]):
        assert a.end <= b.start
    covered = "".join(c.text for c in chunks)
    assert covered.replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")
    # sentence-aligned: the first chunk ends at the end of a sentence
    assert chunks[0].text.endswith(".")
    # paragraphs never merge into one sentence: the second paragraph starts a new unit
    assert any(c.text.startswith("A new paragraph") or "A new paragraph" in c.text for c in chunks)


def test_overlap_repeats_the_previous_chunks_last_sentences(tokenizer):
    text = " ".join(f"Sentence number {n} is here." for n in range(12))
    plain = Chunker(tokenizer, chunk_tokens=30).chunk("d", "", text)
    over = Chunker(tokenizer, chunk_tokens=30, overlap_tokens=9).chunk("d", "", text)
    assert all(a.end <= b.start for a, b in zip(plain, plain[1:]))
    assert any(b.start < a.end for a, b in zip(over, over[1:]))  # overlapping spans
    for a, b in zip(over, over[1:]):
        assert b.start >= a.start and text[b.start:].startswith("Sentence")  # still sentence-aligned
    with pytest.raises(ValueError):
        Chunker(tokenizer, chunk_tokens=30, overlap_tokens=20)


def test_whitespace_normalising_splitter_still_gets_exact_offsets(tokenizer):
    text = "Odd   spacing  here.\tAnd a tab.   Then   more."
    chunks = Chunker(tokenizer, chunk_tokens=12).chunk("d", "", text)
    assert [c.text for c in chunks] and all(c.text == text[c.start:c.end] for c in chunks)


# ------------------------------------------------------------------------------------- fusion
def test_hybrid_fusion_arithmetic_by_hand():
    sparse = {"a": 3.0, "b": 1.0, "c": 2.0}      # min-max: a 1, c 0.5, b 0
    dense = {"a": 0.5, "d": 0.9, "b": 0.7}       # min-max: d 1, b 0.5, a 0
    got = dict(fuse(sparse, dense, alpha=0.4))  # 0.4 dense + 0.6 sparse; missing = 0
    assert got == pytest.approx({"a": 0.6, "d": 0.4, "c": 0.3, "b": 0.2})
    assert [k for k, _ in fuse(sparse, dense, alpha=0.4)] == ["a", "d", "c", "b"]
    assert [k for k, _ in fuse(sparse, dense, alpha=0.0)][:2] == ["a", "c"]  # pure BM25 order first
    assert [k for k, _ in fuse(sparse, dense, alpha=1.0)][:2] == ["d", "b"]  # pure dense order first
    rrf = dict(fuse(sparse, dense, method="rrf"))
    assert rrf["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert rrf["b"] == pytest.approx(1 / 63 + 1 / 62)
    assert rrf["d"] == pytest.approx(1 / 61)
    assert rrf["c"] == pytest.approx(1 / 62)
    assert fuse({}, {}) == []
    with pytest.raises(ValueError):
        fuse(sparse, dense, alpha=1.5)


def test_numpy_fusion_equals_ranx():
    rnd = random.Random(7)
    sparse, dense = {}, {}
    for q in range(20):
        pool = [f"d{i}" for i in range(40)]
        sparse[f"q{q}"] = {d: rnd.uniform(0, 20) for d in rnd.sample(pool, rnd.randint(1, 15))}
        dense[f"q{q}"] = {d: rnd.uniform(-0.2, 0.9) for d in rnd.sample(pool, rnd.randint(1, 15))}
    sparse["q0"], dense["q1"] = {}, {}  # one retriever with no candidates
    for method, alpha in (("hybrid", 0.4), ("hybrid", 0.0), ("hybrid", 1.0), ("rrf", 0.5)):
        ref = fuse_ranx(sparse, dense, method=method, alpha=alpha)
        for q in sparse:
            ours = dict(fuse(sparse[q], dense[q], method=method, alpha=alpha))
            theirs = {k: v for k, v in ref.get(q, {}).items()}
            assert set(ours) == set(theirs), (method, q)
            for k in ours:
                assert ours[k] == pytest.approx(theirs[k], abs=1e-6), (method, alpha, q, k)


# ------------------------------------------------------------------------------------- index
def test_search_modes_and_provenance(small_index):
    c = Corpus.open(small_index)
    assert len(c) >= 3
    for mode in ("bm25", "dense", "hybrid", "rrf"):
        hits = c.search("Which river is the longest in Africa?", k=3, mode=mode)
        assert hits and hits[0].chunk.doc_id == "nile", mode
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    h = c.search("longest river Africa", k=1, mode="hybrid", alpha=0.5)[0]
    assert h.dense_score is not None and h.sparse_score is not None
    d = h.chunk.to_document()
    assert d.id == h.chunk.id and d.metadata["doc_id"] == "nile" and d.metadata["source"] == {"lang": "en"}
    src = next(x for x in DOCS if x["id"] == "nile")["text"]
    assert src[d.metadata["start"]:d.metadata["end"]] == d.text
    assert c.search("zzzqqq", k=3, mode="bm25") == []  # no query term in the vocabulary
    with pytest.raises(InputError):
        c.search("x", mode="nope")
    chunks = list(c.chunks())
    assert [(x.doc_id, x.order) for x in chunks] == sorted((x.doc_id, x.order) for x in chunks)
    assert c.get([chunks[1].id, "missing#0", chunks[0].id]) == [chunks[1], chunks[0]]


def test_ids_are_stable_and_a_second_build_is_a_no_op(tmp_path, small_index):
    rep = build_index(DOCS, tmp_path / "again", chunk_tokens=24)
    assert [x.id for x in Corpus.open(tmp_path / "again").chunks()] == [x.id for x in Corpus.open(small_index).chunks()]
    again = build_index(DOCS, tmp_path / "again", chunk_tokens=24)
    assert again.chunks_added == 0 and again.docs_unchanged == 3 and again.total_chunks == rep.total_chunks
    with pytest.raises(InputError, match="other settings"):
        build_index(DOCS, tmp_path / "again", chunk_tokens=64)


def test_incremental_add_skips_unchanged_and_replaces_changed(tmp_path):
    idx = tmp_path / "idx"
    build_index(DOCS, idx, chunk_tokens=24)
    c0 = Corpus.open(idx)
    n0 = len(c0)
    changed = dict(DOCS[2], text="Coffee is brewed from roasted beans. Kaldi found it in Ethiopia.")
    rep = add_to_index([DOCS[0], changed, {"id": "new", "text": "Penguins live in the Southern Hemisphere."}], idx)
    assert (rep.docs_added, rep.docs_updated, rep.docs_unchanged) == (1, 1, 1)
    c = Corpus.open(idx)
    assert len(c) == n0 - rep.chunks_deleted + rep.chunks_added
    assert c.search("penguins", k=1, mode="bm25")[0].chunk.doc_id == "new"  # the BM25 side was rebuilt
    assert not any("Camellia" in x.text for x in c.chunks())  # the old version's chunks are gone
    assert c.search("Camellia sinensis", k=5, mode="bm25") == []
    assert any("Kaldi" in x.text for x in c.chunks() if x.doc_id == "tea")
    # a stale BM25 side (e.g. a run cut off after writing to Chroma) is rebuilt on open
    ptr = json.loads((idx / "bm25" / "current.json").read_text())
    (idx / "bm25" / "current.json").write_text(json.dumps({**ptr, "stamp": "old"}))
    assert Corpus.open(idx).search("penguins", k=1, mode="bm25")[0].chunk.doc_id == "new"
    with pytest.raises(InputError):
        add_to_index(DOCS, tmp_path / "nothing-here")


def test_from_documents_is_in_memory_and_searchable(docs):
    c = Corpus.from_documents(docs, chunk_tokens=64)
    hits = c.search("Which river is in Chile?", k=2, mode="hybrid", alpha=0.5)
    assert hits[0].chunk.doc_id == "b" and hits[0].chunk.text == docs[1].text
    c.close()


# ------------------------------------------------------------------------------------- the door
def test_one_door_caches_what_it_opens(small_index, docs, monkeypatch):
    """open_corpus: an index opened once; given documents indexed once per content (metadata and chunk
    size included), the last few kept; a registered corpus wins; neither spec nor documents: InputError."""
    import citegraph.corpus.registry as door
    from citegraph.corpus import open_corpus, register_corpus, unregister_corpus

    forget_opened()
    built = []
    real = Corpus.from_documents
    monkeypatch.setattr(door.Corpus, "from_documents",
                        classmethod(lambda cls, d, **kw: built.append(len(d)) or real.__func__(cls, d, **kw)))
    idx = open_corpus(str(small_index))
    assert open_corpus(f"  {small_index} ") is idx and len(idx) > 0
    mem = open_corpus("", docs)
    assert open_corpus(str(small_index), list(docs)) is mem and built == [3]  # given documents win over a spec
    assert open_corpus("", docs, chunk_tokens=64) is not mem  # another chunk size: another index
    relinked = [d.model_copy(update={"metadata": {"links": ["x"]}}) for d in docs]
    assert open_corpus("", relinked) is not mem and built == [3, 3, 3]
    for i in range(door.MAX_DOCUMENT_CORPORA):
        open_corpus("", docs[:1] + [docs[1].model_copy(update={"text": f"Beta {i} flows."})])
    assert open_corpus("", docs) is not mem and len(built) == 3 + door.MAX_DOCUMENT_CORPORA + 1  # evicted
    assert open_corpus(str(small_index)) is idx  # a named index is kept

    class Fixed:
        def search(self, query, k=10, mode="hybrid", alpha=0.5, **_):
            return []

    spec = register_corpus("fixed:door", Fixed())
    assert isinstance(open_corpus(spec), Fixed)
    unregister_corpus(spec)
    with pytest.raises(InputError, match="no index at fixed:door"):
        open_corpus(spec)
    with pytest.raises(InputError, match="search"):
        register_corpus("nothing", object())
    with pytest.raises(InputError, match="no documents given and no corpus set"):
        open_corpus("", [])
    forget_opened()
    assert open_corpus(str(small_index)) is not idx


def test_corpus_modules_import_no_loop():
    """index -> retrievers -> chunking, registry -> index + retrievers: no corpus module imports one that
    imports it back (lazy imports inside functions included)."""
    import ast

    root = Path(__file__).resolve().parents[1] / "citegraph" / "corpus"
    deps = {}
    for f in root.glob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("citegraph.corpus."):
                names.add(node.module.rsplit(".", 1)[1])
        deps[f.stem] = names

    def reaches(a, b, seen=()):
        return any(d == b or (d not in seen and reaches(d, b, seen + (d,))) for d in deps.get(a, ()))

    assert deps["index"] >= {"retrievers", "chunking"} and "index" not in deps["retrievers"]
    assert [m for m in deps if m != "__init__" and reaches(m, m)] == []


def test_retrieval_modes_are_defined_once():
    from citegraph.corpus import MODES
    from citegraph.state.base import RETRIEVAL_MODES, knob_choices, knob_info
    from citegraph.state.odmds import OdmdsContext
    from citegraph.state.squai import RagContext, SquaiContext
    from citegraph.state.vanilla import VanillaContext

    assert MODES is RETRIEVAL_MODES
    for ctx in (VanillaContext, SquaiContext, RagContext, OdmdsContext):
        assert knob_choices(knob_info(ctx)["retrieval_mode"]) == RETRIEVAL_MODES, ctx


# ------------------------------------------------------------------------------------- LangChain
def test_as_retriever_and_a_langchain_retriever_in(small_index, scripted, tmp_path):
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever

    from citegraph.graphs.registry import build_graph, make_context

    r = Corpus.open(small_index).as_retriever(k=2, mode="hybrid")
    assert isinstance(r, BaseRetriever)
    out = r.invoke("domesticated cats")
    assert len(out) == 2 and out[0].metadata["doc_id"] == "cats" and out[0].id == out[0].metadata["chunk_id"]

    class FixedRetriever(BaseRetriever):  # any LangChain retriever, e.g. a vector store's
        def _get_relevant_documents(self, query, *, run_manager):
            return [LCDocument(page_content="Mount Fuji is 3,776 metres high.", metadata={"source": "fuji.txt", "title": "Fuji"}),
                    LCDocument(page_content="It last erupted in 1707.", metadata={"source": "fuji.txt"})]

    spec = register_retriever("fixed-test", FixedRetriever())
    llm, _ = scripted(["Mount Fuji is 3,776 metres high [1]. It last erupted in 1707 [2]."])
    ans = build_graph("vanilla").invoke({"question": "How high is Fuji?", "documents": []},
                                        context=make_context("vanilla", llm=llm, corpus=spec, top_k=2))["answer"]
    assert [d.text for d in ans.documents] == ["Mount Fuji is 3,776 metres high.", "It last erupted in 1707."]
    assert ans.documents[0].metadata["doc_id"] == "fuji.txt" and ans.sentences[0].citations == [1]
    with pytest.raises(InputError, match="no retriever registered"):
        build_graph("vanilla").invoke({"question": "q", "documents": []},
                                      context=make_context("vanilla", llm=llm, corpus="retriever:nobody"))


# ------------------------------------------------------------------------------------- open-domain
def test_open_domain_ask_retrieves_then_answers(small_index, scripted, docs, capsys):
    from citegraph.cli import main
    from citegraph.graphs.registry import build_graph, make_context

    forget_opened()
    llm, model = scripted(["The Nile is the longest river in Africa [1].", "Beta is in Chile [2]."])
    ctx = make_context("vanilla", llm=llm, corpus=str(small_index), top_k=2, retrieval_mode="hybrid")
    ans = build_graph("vanilla").invoke({"question": "What is the longest river in Africa?"}, context=ctx)["answer"]
    assert len(ans.documents) == 2 and ans.documents[0].metadata["doc_id"] == "nile"
    m = ans.documents[0].metadata
    assert {"doc_id", "chunk_id", "order", "start", "end"} <= set(m) and m["retrieval_rank"] == 1
    assert ans.sentences[0].citations == [1]
    # documents given: no retrieval
    given = build_graph("vanilla").invoke({"question": "Where is Beta?", "documents": docs}, context=ctx)["answer"]
    assert [d.id for d in given.documents] == ["a", "b", "c"]
    # the CLI: ask --index
    llm2, _ = scripted(["Cats were domesticated in the Near East [1]."])
    rc = main(["ask", "vanilla", "--question", "Where were cats domesticated?", "--index", str(small_index),
               "--k", "2", "--mode", "bm25", "--llm", llm2, "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["documents"][0]["metadata"]["doc_id"] == "cats" and len(out["documents"]) <= 2
    with pytest.raises(InputError):
        make_context("vanilla", retrieval_mode="fuzzy")
    assert main(["ask", "vanilla", "--question", "q", "--index", str(small_index) + "-missing", "--llm", llm2]) == 2


# ------------------------------------------------------------------------------------- CLI, bad lines
def test_cli_build_reports_bad_lines_keeps_the_rest_and_exits_2(tmp_path, capsys):
    from citegraph.cli import main

    corpus = write_jsonl(tmp_path / "c.jsonl", [DOCS[0], "{not json", {"id": "x", "title": "t"}, DOCS[1], "[1, 2]"])
    idx = tmp_path / "idx"
    assert main(["index", "build", "--corpus", str(corpus), "--index", str(idx), "--chunk-tokens", "64"]) == 2
    err = capsys.readouterr().err
    assert "c.jsonl:2" in err and "c.jsonl:3" in err and "c.jsonl:5" in err and "c.jsonl:1:" not in err
    assert {x.doc_id for x in Corpus.open(idx).chunks()} == {"nile", "cats"}
    # a later add with only bad lines loses nothing already indexed
    bad = write_jsonl(tmp_path / "bad.jsonl", ["oops"])
    assert main(["index", "add", "--corpus", str(bad), "--index", str(idx)]) == 2
    assert {x.doc_id for x in Corpus.open(idx).chunks()} == {"nile", "cats"}
    # a folder corpus: .txt/.md files are documents, .jsonl files are read line by line
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "note.md").write_text("# Volcanoes\n\nMount Etna is in Sicily.")
    write_jsonl(folder / "more.jsonl", [DOCS[2]])
    assert main(["index", "add", "--corpus", str(folder), "--index", str(idx)]) == 0
    assert main(["index", "search", "--index", str(idx), "--query", "Etna Sicily", "--k", "1", "--json"]) == 0
    hit = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert hit["doc_id"] == "sub/note.md" and hit["title"] == "Volcanoes"  # a Markdown file's first heading
    assert main(["index", "search", "--index", str(tmp_path / "none"), "--query", "x"]) == 2
    assert main(["index", "build", "--corpus", str(tmp_path / "none.jsonl"), "--index", str(idx)]) == 2


# ------------------------------------------------------------------------------------- Chroma server
@pytest.fixture
def chroma_server(tmp_path):
    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(exe).exists():
        pytest.skip("the chroma command is not installed")
    port = free_port()
    with serve([exe, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
               f"http://127.0.0.1:{port}/api/v2/heartbeat", tmp_path / "chroma.log", "chroma run"):
        yield port


def test_chroma_server_round_trip(chroma_server, tmp_path):
    spec = f"chroma+http://127.0.0.1:{chroma_server}/roundtrip"
    rep = build_index(DOCS, spec, chunk_tokens=24, local_dir=tmp_path / "local_a")
    assert rep.docs_added == 3
    c = Corpus.open(spec, local_dir=tmp_path / "local_a")
    assert c.search("longest river", k=1, mode="hybrid")[0].chunk.doc_id == "nile"
    # a second machine: no local files, the BM25 side is rebuilt from the server's chunks
    other = Corpus.open(spec, local_dir=tmp_path / "local_b")
    assert other.search("domesticated", k=1, mode="bm25")[0].chunk.doc_id == "cats"
    assert [x.id for x in other.chunks()] == [x.id for x in c.chunks()]
    assert build_index(DOCS, spec, chunk_tokens=24, local_dir=tmp_path / "local_b").chunks_added == 0
    rep = add_to_index([{"id": "new", "text": "Penguins live in the Southern Hemisphere."}], spec, local_dir=tmp_path / "local_b")
    assert rep.docs_added == 1
    assert Corpus.open(spec, local_dir=tmp_path / "local_a").search("penguins", k=1, mode="bm25")[0].chunk.doc_id == "new"
    with pytest.raises(InputError):
        Corpus.open(f"chroma+http://127.0.0.1:{chroma_server}/no-such-collection", local_dir=tmp_path / "x")
