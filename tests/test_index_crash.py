"""Index crash safety and writers (issue #38): real SIGKILLs at seeded write calls of `index build` and
`index add` (tests/index_kill.py), then a re-run: nothing lost, duplicated or stale, and no stale
search in between; two writers on one folder serialised; bad corpus lines and duplicate ids reported
one line each; `ask --index` on an empty index refused before the model; the progress callback
moving inside one large document."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from index_kill import ROOT, audit, counting_writes, sparse_mismatches, tiny_embedder  # noqa: E402

from citegraph.corpus import Corpus, add_to_index, build_index  # noqa: E402

CHILD = str(Path(__file__).resolve().parent / "index_kill.py")
SENTENCES = ["The {w} river crosses a wide valley near the old town.", "Farmers grow barley and rye on its {w} banks.",
             "A stone bridge was built over the {w} in the twelfth century.", "Travellers stop at the {w} inn for bread.",
             "Storms in spring flood the {w} fields every few years."]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_embedder(tmp_path_factory.mktemp("emb") / "tiny")


def mark(i: int, version: str) -> str:
    """The word unique to (document, version): "old" and "new" give the same word-piece count."""
    return f"{version}mark{i}"


def doc(i: int, version: str, sentences: int = 10) -> dict:
    """A document whose every version has the same length (the same chunk count: the count alone
    cannot tell an old sparse side from a new one) and, in every sentence, a word unique to
    (document, version)."""
    rng = random.Random(i)
    return {"id": f"d{i}", "title": f"Doc {i}",
            "text": " ".join(rng.choice(SENTENCES).format(w=mark(i, version)) for _ in range(sentences))}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def child(kill_at: int, what: str, corpus: Path, index: Path, tiny: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, CHILD, str(kill_at), what, str(corpus), str(index), "--chunk-tokens", "32",
                           "--write-batch", "16", "--embedder", tiny, *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def stale_searches(index: Path, words: list[str]) -> int:
    """Sparse rows that do not index their chunk's stored text, and BM25 hits whose chunk does not hold
    the word searched."""
    c = Corpus.open(index)
    return sparse_mismatches(c) + sum(word not in h.chunk.text for word in words for h in c.search(word, k=5, mode="bm25"))


def test_killed_build_of_a_many_batch_document_is_finished_by_the_rerun(tmp_path, tiny):
    big = doc(0, "old", sentences=400)  # ~150 chunks of 32 word pieces: ~10 write calls of 16
    docs = [big, doc(1, "old"), doc(2, "old")]
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    with counting_writes() as calls:
        build_index(corpus, tmp_path / "count", chunk_tokens=32, embedder=tiny, write_batch=16)
    writes = len(calls)
    assert writes >= 8
    markers = {d["id"]: mark(int(d["id"][1:]), "old") for d in docs}
    kept = []
    for kill_at in sorted({writes - 1, *random.Random(38).sample(range(2, writes - 1), 2)}):
        idx = tmp_path / f"idx{kill_at}"
        r = child(kill_at, "build", corpus, idx, tiny)
        assert r.returncode == -9, (kill_at, r.stderr[-2000:])
        # the next open finishes the killed batch from the writer's journal (every document of this
        # corpus is in the first batch); searches agree with the store
        healed = Corpus.open(idx)
        assert healed.healed == 3 and not healed.incomplete_docs, kill_at
        assert stale_searches(idx, list(markers.values())) == 0
        rep = build_index(corpus, idx, chunk_tokens=32, embedder=tiny, write_batch=16)
        assert rep.docs_unchanged == 3, kill_at
        kept.append(healed.heal_report.chunks_kept)
        assert audit(idx, docs, markers) == {"lost": 0, "duplicated": 0, "stale": 0}, kill_at
    assert max(kept) > 0  # a document cut off half-way resumes: the chunks already written are not embedded again
    # without the journal (a writer older than it, or a journal removed by hand) the re-run finishes it
    idx = tmp_path / "nojournal"
    r = child(writes // 2, "build", corpus, idx, tiny)
    assert r.returncode == -9
    (idx / "pending.jsonl").unlink()
    assert stale_searches(idx, list(markers.values())) == 0
    rep = build_index(corpus, idx, chunk_tokens=32, embedder=tiny, write_batch=16)
    assert rep.docs_added + rep.docs_resumed >= 1
    assert audit(idx, docs, markers) == {"lost": 0, "duplicated": 0, "stale": 0}
    # the case on a finished index: a document's tail gone (chunk 0 still there) is written again
    c = Corpus.open(idx)
    tail = [ch.id for ch in c.chunks() if ch.doc_id == "d0"][-20:]
    c._col.delete(ids=tail)
    rep = build_index(corpus, idx, chunk_tokens=32, embedder=tiny)
    assert rep.docs_resumed == 1 and rep.docs_unchanged == 2 and rep.chunks_added > 20
    assert audit(idx, docs, markers) == {"lost": 0, "duplicated": 0, "stale": 0}


def test_killed_add_that_replaces_documents_never_leaves_search_stale(tmp_path, tiny):
    old = [doc(i, "old") for i in range(40)]
    new = [doc(i, "new") for i in range(40)]
    c_old, c_new = write_jsonl(tmp_path / "old.jsonl", old), write_jsonl(tmp_path / "new.jsonl", new)
    base = tmp_path / "base"
    build_index(c_old, base, chunk_tokens=32, embedder=tiny)
    n_old = len(Corpus.open(base))
    scratch = tmp_path / "scratch"
    shutil.copytree(base, scratch)
    with counting_writes() as calls:
        add_to_index(c_new, scratch, write_batch=16, batch_docs=8)
    writes = len(calls)
    new_marks, old_marks = {f"d{i}": mark(i, "new") for i in range(40)}, [mark(i, "old") for i in range(40)]
    assert len(Corpus.open(scratch)) == n_old  # the replacement keeps the chunk count (and so can hide a stale side)
    assert audit(scratch, new, new_marks, old_marks) == {"lost": 0, "duplicated": 0, "stale": 0}
    # kill points: right after the first batch of 8 documents is complete (chunk counts equal again, 8 of
    # 40 documents replaced), just before the last write, and two seeded ones
    first_batch_done = next(n for n, (m, ids) in enumerate(calls, 1) if m == "upsert" and ids[0].endswith("#0"))
    words = [mark(i, v) for i in range(40) for v in ("old", "new")]
    for kill_at in sorted({first_batch_done, writes - 1, *random.Random(7).sample(range(1, writes - 1), 2)}):
        idx = tmp_path / f"idx{kill_at}"
        shutil.copytree(base, idx)
        r = child(kill_at, "add", c_new, idx, tiny, "--batch-docs", "8")
        assert r.returncode == -9, (kill_at, r.stderr[-2000:])
        assert stale_searches(idx, words) == 0, kill_at
        add_to_index(c_new, idx, write_batch=16, batch_docs=8)
        got = audit(idx, new, new_marks, old_marks)
        assert got == {"lost": 0, "duplicated": 0, "stale": 0}, kill_at


def test_killed_add_heals_on_the_next_open_without_a_rerun(tmp_path, tiny):
    """Killed right after a batch's old chunks were deleted (and at two seeded moments), the next open
    finishes the batch from the writer's journal: no document is missing, each is whole in its old or
    new version, the killed batch's ones in the new; no re-run of `index add`."""
    old = [doc(i, "old") for i in range(24)]
    new = [doc(i, "new") for i in range(24)]
    c_old, c_new = write_jsonl(tmp_path / "old.jsonl", old), write_jsonl(tmp_path / "new.jsonl", new)
    base = tmp_path / "base"
    build_index(c_old, base, chunk_tokens=32, embedder=tiny)
    scratch = tmp_path / "scratch"
    shutil.copytree(base, scratch)
    with counting_writes() as calls:
        add_to_index(c_new, scratch, write_batch=16, batch_docs=8)
    # each batch of 8 documents begins with its deletes (one call per 16 chunks)
    deletes = [n for n, (m, _) in enumerate(calls, 1) if m == "delete" and calls[n - 2][0] != "delete"]
    assert len(deletes) == 3
    for kill_at in sorted({deletes[1], *random.Random(11).sample(range(deletes[0], len(calls) - 1), 2)}):
        idx = tmp_path / f"idx{kill_at}"
        shutil.copytree(base, idx)
        r = child(kill_at, "add", c_new, idx, tiny, "--batch-docs", "8")
        assert r.returncode == -9, (kill_at, r.stderr[-2000:])
        assert (idx / "pending.jsonl").exists(), kill_at  # killed between a batch's first and last change
        c = Corpus.open(idx)
        assert c.healed == 8 and not (idx / "pending.jsonl").exists(), kill_at
        assert not c.incomplete_docs, kill_at
        versions = {}
        for i in range(24):
            found = [v for v in ("old", "new") if any(h.chunk.doc_id == f"d{i}" for h in c.search(mark(i, v), k=1, mode="bm25"))]
            versions[i] = found
        assert all(len(v) == 1 for v in versions.values()), (kill_at, versions)  # none missing, none mixed
        killed_batch = max(b for b, first in enumerate(deletes) if first <= kill_at)  # its deletes come first
        assert all(versions[i] == ["new"] for i in range(8 * killed_batch + 8)), (kill_at, versions)
        assert stale_searches(idx, [mark(i, v) for i in range(24) for v in ("old", "new")]) == 0
        # the re-run then finishes the rest and the index is the new corpus exactly
        add_to_index(c_new, idx, write_batch=16, batch_docs=8)
        assert audit(idx, new, {f"d{i}": mark(i, "new") for i in range(24)}, [mark(i, "old") for i in range(24)]) == \
            {"lost": 0, "duplicated": 0, "stale": 0}


def test_two_index_adds_on_one_folder_run_one_after_the_other(tmp_path, tiny):
    idx = tmp_path / "idx"
    build_index([doc(0, "old")], idx, chunk_tokens=32, embedder=tiny)
    parts = [[doc(i, p, sentences=60) for i in range(k, k + 12)] for k, p in ((100, "p"), (200, "q"))]
    files = [write_jsonl(tmp_path / f"part{n}.jsonl", rows) for n, rows in enumerate(parts)]
    traces = [tmp_path / f"trace{n}.txt" for n in range(2)]
    procs = [subprocess.Popen([sys.executable, CHILD, "0", "add", str(f), str(idx), "--write-batch", "16", "--trace", str(t)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for f, t in zip(files, traces)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    spans = [[float(x) for x in t.read_text().split()] for t in traces]
    assert all(len(s) >= 10 for s in spans)  # each wrote in many calls
    first, second = sorted(spans, key=min)
    assert max(first) < min(second)  # no write of one between two writes of the other
    assert sum("waiting" in o[1] for o in outs) == 1
    every = [doc(0, "old"), *parts[0], *parts[1]]
    marks = {d["id"]: mark(int(d["id"][1:]), v) for d, v in zip(every, ["old"] + ["p"] * 12 + ["q"] * 12)}
    assert audit(idx, every, marks) == {"lost": 0, "duplicated": 0, "stale": 0}


BAD_LINES = [  # (line, what the one-line message says)
    (b'{"id": "u", "text": "caf\xe9 au lait"}', "not UTF-8"),
    (b'{"id": "n", "text": ' + b"[" * 100000 + b"]" * 100000 + b"}", "nested too deeply"),
    (b'{"id": "t", "title": {"a": 1}, "text": "A nested title."}', '"title" must be a string, got an object'),
    (b'{"id": "l", "title": ["x"], "text": "A list title."}', '"title" must be a string, got a list'),
    (b'{"id": {"k": 1}, "text": "An object id."}', '"id" must be a string, got an object'),
    (b'{"id": "o", "text": {"nested": "json"}}', '"text" must be a string, got an object'),
    (b'{"id": "s", "text": "lone \\ud800 surrogate"}', "lone surrogate"),
    (b'{"id": "i", "text": "big", "n": ' + b"9" * 5000 + b"}", "4300"),
    (b'{"id": "keep", "text": "A second document with the id keep."}', "duplicate id 'keep' (first at"),
    (b'"just a string"', "expected a JSON object"),
]


@pytest.mark.parametrize("line,message", BAD_LINES, ids=[m for _, m in BAD_LINES])
def test_index_build_skips_a_bad_line_with_one_line_and_indexes_the_rest(tmp_path, capsys, tiny, line, message):
    from citegraph.cli import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b'{"id": "keep", "text": "Kept before the bad line."}\n' + line
                       + b'\n{"id": "after", "title": 7, "text": "Kept after the bad line."}\n')
    assert main(["index", "build", "--corpus", str(corpus), "--index", str(tmp_path / "idx"), "--chunk-tokens", "32",
                 "--embedder", tiny]) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "bad line" in x]
    assert len(lines) == 1 and f"c.jsonl:2: " in lines[0] and message in lines[0], err[-1500:]
    assert "Traceback" not in err
    c = Corpus.open(tmp_path / "idx")
    assert {x.doc_id: x.text for x in c.chunks()} == {"keep": "Kept before the bad line.", "after": "Kept after the bad line."}
    assert c.get(["after#0"])[0].title == "7"


def test_ask_on_an_empty_index_stops_before_the_model(tmp_path, capsys, scripted, tiny):
    from citegraph.cli import main

    idx = tmp_path / "idx"
    build_index([], idx, chunk_tokens=32, embedder=tiny)
    llm, model = scripted(["An answer from nothing."])
    assert main(["ask", "vanilla", "--question", "What is there?", "--index", str(idx), "--llm", llm]) == 2
    err = capsys.readouterr().err
    assert "is empty (0 chunks)" in err and len(err.strip().splitlines()) == 1
    assert model.calls == []


def test_progress_moves_inside_one_large_document(tmp_path, tiny):
    big = doc(0, "old", sentences=300)
    corpus = write_jsonl(tmp_path / "c.jsonl", [big])
    seen: list[tuple[float, int]] = []
    rep = build_index(corpus, tmp_path / "idx", chunk_tokens=32, embedder=tiny, write_batch=16,
                      on_progress=lambda r: seen.append((r.bytes_done, r.chunks_added)))
    size = corpus.stat().st_size
    inside = [b for b, _ in seen if 0 < b < size]
    assert len(inside) >= 5 and inside == sorted(inside)  # moved many times before the document was done
    assert seen[-1][0] == pytest.approx(size) and rep.total_chunks >= 80
    # an add of the same corpus: unchanged, the bar still reaches the end
    seen.clear()
    assert add_to_index(corpus, tmp_path / "idx", on_progress=lambda r: seen.append((r.bytes_done, 0))).docs_unchanged == 1
    assert seen[-1][0] == pytest.approx(size)


# ------------------------------------------------------------------------------ list and remove
def test_list_and_remove_by_id_and_by_source(tmp_path, tiny, capsys):
    from citegraph.cli import main
    from citegraph.corpus import list_documents, remove_from_index
    from citegraph.errors import InputError

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"note{i}.txt").write_text(doc(i, "old")["text"])
    write_jsonl(folder / "more.jsonl", [doc(7, "old"), doc(8, "old")])
    idx = tmp_path / "idx"
    build_index(folder, idx, chunk_tokens=32, embedder=tiny)
    held = {d.id: d for d in list_documents(idx)}
    assert set(held) == {"note0.txt", "note1.txt", "note2.txt", "d7", "d8"}
    assert held["note1.txt"].source == "note1.txt" and held["note1.txt"].complete and held["note1.txt"].added
    total = len(Corpus.open(idx))
    with pytest.raises(InputError, match="no document with id 'nope'"):
        remove_from_index(idx, ids=["d7", "nope"])
    assert len(Corpus.open(idx)) == total  # a bad name changes nothing, the good one included
    rep = remove_from_index(idx, ids=["d7"], sources=[str(folder / "note1.txt")])
    assert rep.docs_removed == ["d7", "note1.txt"]
    assert rep.chunks_deleted == held["d7"].chunks + held["note1.txt"].chunks
    c = Corpus.open(idx)
    assert len(c) == total - rep.chunks_deleted == rep.total_chunks
    assert not c.search(mark(7, "old"), k=5, mode="bm25") and c.search(mark(8, "old"), k=5, mode="bm25")
    assert main(["index", "list", "--index", str(idx), "--json"]) == 0
    listed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [d["id"] for d in listed] == ["d8", "note0.txt", "note2.txt"]
    assert main(["index", "remove", "--index", str(idx), "--source", "gone.pdf"]) == 2
    assert "holds no document read from 'gone.pdf'" in capsys.readouterr().err


def test_killed_remove_leaves_no_removed_document_searchable_and_the_rerun_finishes(tmp_path, tiny):
    docs = [doc(i, "old") for i in range(12)]
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    base = tmp_path / "base"
    build_index(corpus, base, chunk_tokens=32, embedder=tiny)
    gone = [f"d{i}" for i in range(0, 12, 2)]
    words_gone = [mark(i, "old") for i in range(0, 12, 2)]
    words_kept = [mark(i, "old") for i in range(1, 12, 2)]
    from citegraph.corpus import list_documents, remove_from_index

    scratch = tmp_path / "scratch"
    shutil.copytree(base, scratch)
    with counting_writes() as calls:
        remove_from_index(scratch, ids=gone, write_batch=4)
    for kill_at in range(1, len(calls)):  # after every write call but the last
        idx = tmp_path / f"idx{kill_at}"
        shutil.copytree(base, idx)
        r = child(kill_at, "remove", ",".join(gone), idx, tiny, "--write-batch", "4")
        assert r.returncode == -9, (kill_at, r.stderr[-2000:])
        c = Corpus.open(idx)
        whole = {d.id for d in list_documents(idx) if d.complete}
        found = {h.chunk.doc_id for w in words_gone for h in c.search(w, k=3, mode="bm25") if w in h.chunk.text}
        assert found <= whole, kill_at  # a document the kill left half-removed is never searched
        assert all(any(w in h.chunk.text for h in c.search(w, k=3, mode="bm25")) for w in words_kept), kill_at
        half = [d.id for d in list_documents(idx) if d.id in gone]
        if half:  # what the kill left is named as incomplete, and the same removal finishes it
            remove_from_index(idx, ids=half)
        assert not [d for d in list_documents(idx) if d.id in gone]
        assert sparse_mismatches(Corpus.open(idx)) == 0
