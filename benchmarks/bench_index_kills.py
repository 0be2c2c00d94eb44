"""The index kill matrix (issue #38): chunks lost, duplicated and stale after SIGKILLs of `index build`
on documents of 1-10 MB and of `index add` replacing documents, each followed by a re-run.

    python benchmarks/bench_index_kills.py [--sizes 1,4,10] [--build-kills 3] [--add-docs 400] [--add-kills 6]
                                           [--seed 38] [--embedder tiny|minilm]

Every kill is a real SIGKILL of a child process (``tests/index_kill.py``) writing the index with the
library's defaults (chunks of 256 word pieces, 256 chunks per write call, 64 documents per batch).
Kill moments, seeded: even-numbered kills right after a randomly chosen Chroma write call returned
(``call``); odd-numbered ones at a random moment within the clean run's write span, from the parent
(``timer``: these may land inside a Chroma call). Per scenario, first a clean run (no kill) counts the
write calls and times them; then, per kill: a fresh index (``build``: empty; ``add``: a copy of the
index of the old versions), the killed child, an open of the killed index — which finishes the
killed batch from the writer's journal (``healed on open``: its documents, and the seconds the open
took) — then what a reader sees before anyone re-runs (``stale after kill``: sparse rows that do
not index their chunk's stored text + BM25 hits for a document's marker word that lack it; the
documents not searchable: ``build`` documents of later batches, never written, and for ``add``
replaced documents whose old chunks are gone and new ones not written: 0 expected once healed),
the same build/add again in this process, and the audit (``tests/index_kill.py: audit``):

* lost: chunks of the current documents the store does not hold;
* duplicated: chunks held beyond the documents' own (an old version's tail, a document twice) and
  sparse rows naming one chunk twice;
* stale: stored chunks whose text is not the current version's, sparse rows not indexing the stored
  text, BM25 hits for a current marker word that miss its document, and any hit for an old version's
  marker word.

``build-<N>MB``: one document of N MB and two small ones. ``add-replace``: ``--add-docs`` documents
of ~2 KB, each replaced by a new version of the same length (the same chunk count: what hid the stale
BM25 side before #38), a marker word per (document, version) in every sentence.

The embedder: ``tiny`` (default) is a 1-layer, 32-wide sentence-transformer on MiniLM's tokenizer
built locally (``tests/index_kill.py: tiny_embedder``, random weights): the chunks are MiniLM's, the
embedding ~50x cheaper, so 10 MB documents are written and killed in minutes on a 2-core CPU; what
is measured (the write protocol) does not depend on what the vectors mean. ``minilm`` runs the real
model (about 8 chunks/s on 2 cores: a 10 MB document takes ~20 minutes per run).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from index_kill import audit, counting_writes, sparse_mismatches, tiny_embedder  # noqa: E402

from citegraph.corpus import Corpus, add_to_index, build_index  # noqa: E402
from citegraph.corpus.index import _doc_of  # noqa: E402

CHILD = str(ROOT / "tests" / "index_kill.py")
WORDS = ("river valley town farmers barley bridge century travellers storm spring field water stone north "
         "south market bread road hill forest mill harbour lantern orchard meadow").split()


def text_of(nbytes: int, marker: str, seed: int) -> str:
    """About ``nbytes`` of sentences of 8-20 words, ``marker`` in every sentence; the same seed gives
    the same sentence lengths whatever the marker."""
    rng = random.Random(seed)
    out, size = [], 0
    while size < nbytes:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
        words.insert(rng.randrange(len(words)), marker)
        s = " ".join(words).capitalize() + "."
        out.append(s)
        size += len(s) + 1
    return " ".join(out)


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    import json

    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def kill_child(kill: str, rng: random.Random, what: str, corpus: Path, index: Path, embedder: str,
               writes: int, span: float, work: Path) -> tuple[bool, str]:
    """Run the child and SIGKILL it; (killed, where)."""
    args = [sys.executable, CHILD, "0", what, str(corpus), str(index), "--embedder", embedder]
    if kill == "call":
        at = rng.randint(1, writes - 1)
        args[2] = str(at)
        r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        return r.returncode == -9, f"after write {at}/{writes}"
    trace = work / f"trace-{time.time_ns()}.txt"
    p = subprocess.Popen([*args, "--trace", str(trace)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not trace.exists() and p.poll() is None:
        time.sleep(0.02)
    delay = rng.uniform(0, span)
    time.sleep(delay)
    p.kill()
    p.wait()
    return p.returncode == -9, f"{delay:.1f} s after its first write (clean span {span:.1f} s)"


def scenario(name: str, what: str, base: Path | None, corpus: Path, docs: list[dict], markers: dict[str, str],
             gone: list[str], kills: int, rng: random.Random, embedder: str, work: Path) -> dict:
    def run_in_process(index: Path):
        if what == "build":
            return build_index(corpus, index, embedder=embedder)
        return add_to_index(corpus, index)

    def fresh(tag: str) -> Path:
        index = work / f"{name}-{tag}"
        if base is not None:
            shutil.copytree(base, index)
        return index

    clean = fresh("clean")
    cw = counting_writes()
    t0 = time.perf_counter()
    with cw as calls:
        rep = run_in_process(clean)
    clean_s = time.perf_counter() - t0
    writes, span = len(calls), cw.times[-1] - cw.times[0]
    clean_audit = audit(clean, docs, markers, gone)
    row = {"scenario": name, "chunks": rep.total_chunks, "writes": writes, "clean_s": clean_s, "clean": clean_audit,
           "kills": 0, "kinds": [], "stale_after_kill": 0, "incomplete_after_kill": 0, "missing_after_kill": 0, "lost": 0, "duplicated": 0,
           "stale": 0, "resumed": 0, "rerun_s": [], "healed": 0, "heal_s": [], "missing_replaced": 0}
    print(f"{name}: clean run {clean_s:.1f} s, {writes} write calls, {rep.total_chunks} chunks, audit {clean_audit}", flush=True)
    for k in range(kills):
        kind = "call" if k % 2 == 0 else "timer"
        index = fresh(f"k{k}")
        killed, where = kill_child(kind, rng, what, corpus, index, embedder, writes, span, work)
        t0 = time.perf_counter()
        after = Corpus.open(index)
        heal_s = time.perf_counter() - t0
        stale_now = sparse_mismatches(after) + sum(
            word not in h.chunk.text for word in [*markers.values(), *gone] for h in after.search(word, k=3, mode="bm25"))
        incomplete = len(after.incomplete_docs)
        visible = {_doc_of(i) for i in after._ensure_sparse().ids}
        missing = sum(d["id"] not in visible for d in docs)
        missing_replaced = sum(d["id"] not in visible for d in docs) if what == "add" else 0
        row["healed"] += after.healed
        row["heal_s"].append(heal_s)
        row["missing_replaced"] += missing_replaced
        t0 = time.perf_counter()
        rep = run_in_process(index)
        rerun = time.perf_counter() - t0
        a = audit(index, docs, markers, gone)
        row["kills"] += killed
        row["kinds"].append(kind)
        row["stale_after_kill"] += stale_now
        row["incomplete_after_kill"] += incomplete
        row["missing_after_kill"] += missing
        row["resumed"] += rep.docs_resumed
        row["rerun_s"].append(rerun)
        for key in ("lost", "duplicated", "stale"):
            row[key] += a[key]
        print(f"  kill {k + 1} ({kind}, {where}): {'killed' if killed else 'FINISHED BEFORE THE KILL'}; "
              f"next open healed {after.healed} docs in {heal_s:.1f} s; then {stale_now} stale, {incomplete} incomplete docs hidden, {missing} of {len(docs)} not searchable; re-run {rerun:.1f} s "
              f"({rep.docs_resumed} resumed, {rep.docs_added} added, {rep.docs_updated} updated); audit {a}", flush=True)
        shutil.rmtree(index, ignore_errors=True)
    shutil.rmtree(clean, ignore_errors=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,4,10", help="MB per large document, one build scenario each")
    ap.add_argument("--build-kills", type=int, default=3)
    ap.add_argument("--add-docs", type=int, default=400)
    ap.add_argument("--add-kills", type=int, default=6)
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--embedder", default="tiny", help="tiny (see the module doc) or minilm")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-index-kills-") as tmp:
        work = Path(tmp)
        embedder = tiny_embedder(work / "tiny") if a.embedder == "tiny" else a.embedder
        for mb in [float(x) for x in a.sizes.split(",") if x.strip()]:
            docs = [{"id": "big", "title": f"A {mb:g} MB document", "text": text_of(int(mb * 1e6), "bigmark", 1)},
                    {"id": "s1", "title": "Small one", "text": text_of(3000, "smallmarka", 2)},
                    {"id": "s2", "title": "Small two", "text": text_of(3000, "smallmarkb", 3)}]
            corpus = write_jsonl(work / f"build-{mb:g}.jsonl", docs)
            markers = {"big": "bigmark", "s1": "smallmarka", "s2": "smallmarkb"}
            rows.append(scenario(f"build-{mb:g}MB", "build", None, corpus, docs, markers, [], a.build_kills, rng,
                                 embedder, work))
        n = a.add_docs
        old = [{"id": f"d{i}", "title": f"Doc {i}", "text": text_of(2000, f"old{i}mark", 100 + i)} for i in range(n)]
        new = [{"id": f"d{i}", "title": f"Doc {i}", "text": text_of(2000, f"new{i}mark", 100 + i)} for i in range(n)]
        base = work / "add-base"
        build_index(write_jsonl(work / "old.jsonl", old), base, embedder=embedder)
        rows.append(scenario("add-replace", "add", base, write_jsonl(work / "new.jsonl", new), new,
                             {f"d{i}": f"new{i}mark" for i in range(n)}, [f"old{i}mark" for i in range(n)],
                             a.add_kills, rng, embedder, work))
    print()
    print(f"embedder {a.embedder}, seed {a.seed}; per scenario: kills that landed (call / timer), then after the kills, summed")
    print("| scenario | chunks | write calls | clean run s | kills (call/timer) | docs healed on the next open | that open s (median) "
          "| stale after it, before re-run | incomplete docs hidden | docs not searchable (never written) | replaced docs missing "
          "| docs resumed by the re-run | lost | duplicated | stale | re-run s (median) |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def med(xs):
        return sorted(xs)[len(xs) // 2] if xs else 0.0

    for r in rows:
        kinds = f"{r['kills']} ({r['kinds'].count('call')}/{r['kinds'].count('timer')})"
        never = r["missing_after_kill"] - r["missing_replaced"]
        print(f"| {r['scenario']} | {r['chunks']} | {r['writes']} | {r['clean_s']:.1f} | {kinds} | {r['healed']} | {med(r['heal_s']):.1f} "
              f"| {r['stale_after_kill']} | {r['incomplete_after_kill']} | {never} | {r['missing_replaced']} | {r['resumed']} "
              f"| {r['lost']} | {r['duplicated']} | {r['stale']} | {med(r['rerun_s']):.1f} |")
    total = {k: sum(r[k] for r in rows) for k in ("kills", "lost", "duplicated", "stale", "stale_after_kill", "missing_replaced")}
    clean_bad = sum(sum(r["clean"].values()) for r in rows)
    print(f"\ntotal: {total['kills']} kills; lost {total['lost']}, duplicated {total['duplicated']}, stale {total['stale']} "
          f"after the re-runs; {total['stale_after_kill']} stale and {total['missing_replaced']} replaced documents missing between a "
          f"kill and its re-run; clean runs' audits: {clean_bad} problems")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    main()
