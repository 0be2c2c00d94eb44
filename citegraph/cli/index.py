"""``citegraph index build|add|list|remove|search``: the corpus index (``citegraph.corpus``).

    citegraph index build  --corpus papers.jsonl --index idx/     # or a PDF, or a folder of .pdf/.txt/.md/.jsonl
    citegraph index add    --corpus more.jsonl   --index idx/     # unchanged documents are skipped
    citegraph index list   --index idx/                          # documents, chunks, pages, source, when added
    citegraph index remove --index idx/ --id DOC | --source papers/old.pdf
    citegraph index search --index idx/ --query "..." [--mode bm25|dense|hybrid|rrf] [--k 10] [--alpha 0.5]

``--index`` may also be ``chroma+http://HOST:PORT/COLLECTION`` (a Chroma server). Bad corpus lines are
reported by file and line number and the rest is indexed (as is a second document with an id
already read: the first one is kept); the exit status is then 2. Two writers on one index run one
after the other; a killed build or add is finished by running it again (see citegraph.corpus.index).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

from citegraph.cli.common import EXIT_INPUT
from citegraph.corpus import Corpus, add_to_index, build_index, list_documents, remove_from_index
from citegraph.corpus.sources import corpus_bytes
from citegraph.errors import InputError
from citegraph.state.base import RETRIEVAL_MODES


def _run_index(args, build: bool) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    if not Path(args.corpus).exists():
        raise InputError(f"corpus not found: {args.corpus}")
    console = Console(stderr=True)
    # the bar counts the corpus's bytes, a document's by its chunks as they are embedded and written:
    # one huge document moves it too, and the rate and time left come from it
    with Progress(TextColumn("[bold]index[/bold]"), BarColumn(), TaskProgressColumn(),
                  TextColumn("{task.fields[docs]} docs, {task.fields[chunks]} chunks ({task.fields[rate]} chunks/s)"),
                  TimeElapsedColumn(), TextColumn("elapsed,"), TimeRemainingColumn(), TextColumn("left"),
                  console=console, transient=False) as prog:
        task = prog.add_task("index", total=max(1, corpus_bytes(args.corpus)), docs=0, chunks=0, rate="-")

        def on_progress(rep) -> None:
            dt = time.perf_counter() - rep.started
            prog.update(task, completed=rep.bytes_done, docs=rep.docs_seen, chunks=rep.chunks_added,
                        rate=f"{rep.chunks_added / dt:.1f}" if dt > 0 and rep.chunks_added else "-")

        def on_wait(msg: str) -> None:
            console.print(escape(msg), soft_wrap=True)

        if build:
            rep = build_index(args.corpus, args.index, chunk_tokens=args.chunk_tokens, overlap_tokens=args.overlap_tokens,
                              embedder=args.embedder, title_in_index=not args.no_title, on_progress=on_progress,
                              on_wait=on_wait)
        else:
            rep = add_to_index(args.corpus, args.index, on_progress=on_progress, on_wait=on_wait)
    for note in rep.notes[:20]:
        console.print(f"[yellow]warning:[/yellow] {escape(note)}", soft_wrap=True)
    for b in rep.bad_lines[:20]:
        console.print(f"[red]bad line[/red] {escape(str(b))}", soft_wrap=True)
    if len(rep.bad_lines) > 20:
        console.print(f"[red]... and {len(rep.bad_lines) - 20} more bad lines[/red]")
    print(f"{args.index}: {rep.summary()}")
    return EXIT_INPUT if rep.bad_lines else 0


def cmd_build(args) -> int:
    return _run_index(args, build=True)


def cmd_add(args) -> int:
    return _run_index(args, build=False)


def cmd_search(args) -> int:
    if not args.query.strip():
        raise InputError("--query is empty")
    if args.k < 1:
        raise InputError("--k must be at least 1")
    c = Corpus.open(args.index)
    if c.incomplete_docs:
        print(f"warning: {len(c.incomplete_docs)} document(s) of {args.index} were left incomplete by an interrupted "
              "write and are not searched; run the same `citegraph index build/add` again to finish them", file=sys.stderr)
    hits = c.search(args.query, k=args.k, mode=args.mode, alpha=args.alpha)
    if args.json:
        for h in hits:
            print(json.dumps({"rank": h.rank, "score": h.score, "dense_score": h.dense_score, "sparse_score": h.sparse_score,
                              "id": h.chunk.id, "doc_id": h.chunk.doc_id, "title": h.chunk.title, "order": h.chunk.order,
                              "start": h.chunk.start, "end": h.chunk.end, "pages": sorted({p for p, _, _ in h.chunk.metadata.get("pages") or []}),
                              "text": h.chunk.text}, ensure_ascii=False))
        return 0
    for h in hits:
        fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
        snippet = " ".join(h.chunk.text.split())[:160]
        pages = sorted({p for p, _, _ in h.chunk.metadata.get("pages") or []})
        where = "" if not pages else (f" p. {pages[0]}" if len(pages) == 1 else f" pp. {pages[0]}-{pages[-1]}")
        print(f"{h.rank:>3}. {h.score:.4f}  dense {fmt(h.dense_score)}  bm25 {fmt(h.sparse_score)}  "
              f"{h.chunk.id} [{h.chunk.start}:{h.chunk.end}]{where} {h.chunk.title}\n     {snippet}")
    if not hits:
        print("(no results)")
    return 0


def cmd_list(args) -> int:
    docs = list_documents(args.index)
    if args.json:
        for d in docs:
            print(json.dumps(dataclasses.asdict(d), ensure_ascii=False))
        return 0
    for d in docs:
        pages = f"{d.pages} pages" if d.pages else "-"
        state = "" if d.complete else "  (incomplete: left by an interrupted write, not searched)"
        print(f"{d.id}\t{d.chunks} chunks\t{pages}\t{d.source or '-'}\t{d.added or '-'}\t{d.title}{state}")
    print(f"{args.index}: {len(docs)} document(s), {sum(d.chunks for d in docs)} chunks", file=sys.stderr)
    return 0


def cmd_remove(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True)
    rep = remove_from_index(args.index, ids=args.id or (), sources=args.source or (),
                            on_wait=lambda msg: console.print(escape(msg), soft_wrap=True))
    print(f"{args.index}: removed {len(rep.docs_removed)} document(s) ({', '.join(rep.docs_removed)}), "
          f"{rep.chunks_deleted} chunks; index holds {rep.total_chunks} chunks")
    return 0


def register(sub) -> None:
    p = sub.add_parser("index", help="build, extend, list, prune and search a corpus index (Chroma + bm25s; PDFs too)")
    isub = p.add_subparsers(dest="index_command", required=True)
    for name, func, helptext in (("build", cmd_build, "index a corpus (a second build of the same corpus is a no-op)"),
                                 ("add", cmd_add, "add documents to an index (unchanged ones are skipped)")):
        b = isub.add_parser(name, help=helptext)
        b.add_argument("--corpus", required=True, help="JSONL ({id?, title?, text, ...} per line), a PDF, or a folder of .pdf/.txt/.md/.jsonl "
                       "(a PDF's pages are kept: citations name them)")
        b.add_argument("--index", required=True, help="index folder, or chroma+http://HOST:PORT/COLLECTION")
        if name == "build":
            b.add_argument("--chunk-tokens", type=int, default=256,
                           help="word pieces per chunk in the embedder's tokenizer, [CLS]/[SEP] included (default 256, MiniLM's limit)")
            b.add_argument("--overlap-tokens", type=int, default=0, help="start each chunk with the previous chunk's last sentences, up to this many word pieces")
            b.add_argument("--embedder", default="minilm", help="embedding spec: minilm (packaged) or st:<path>; -int8 appended (minilm-int8): int8 linear layers, faster on a CPU")
            b.add_argument("--no-title", action="store_true", help="do not prepend the title to each chunk when embedding and BM25-indexing")
        b.set_defaults(func=func)
    ls = isub.add_parser("list", help="the documents an index holds: id, chunks, pages, source file, when added, title")
    ls.add_argument("--index", required=True)
    ls.add_argument("--json", action="store_true", help="one JSON object per document")
    ls.set_defaults(func=cmd_list)
    rm = isub.add_parser("remove", help="remove documents by id or by the file they were read from (crash-safe)")
    rm.add_argument("--index", required=True)
    rm.add_argument("--id", action="append", help="a document id (repeat for more)")
    rm.add_argument("--source", action="append", help="a file the documents were read from (repeat for more)")
    rm.set_defaults(func=cmd_remove)
    s = isub.add_parser("search", help="search an index")
    s.add_argument("--index", required=True)
    s.add_argument("--query", "-q", required=True)
    s.add_argument("--mode", choices=RETRIEVAL_MODES, default="hybrid")
    s.add_argument("--k", type=int, default=10)
    s.add_argument("--alpha", type=float, default=0.5, help="hybrid: weight of the dense score (0 = BM25 only, 1 = dense only)")
    s.add_argument("--json", action="store_true", help="one JSON object per hit")
    s.set_defaults(func=cmd_search)
