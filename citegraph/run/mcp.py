"""citegraph as an MCP server (the official ``mcp`` SDK): the tools an agent or an IDE calls to check
citations and answer with them, over stdio (what desktop and IDE clients start) or streamable HTTP.

Tools, each with a typed input schema and a structured result:

- ``cite``: check a text's sentences against documents (given, or an index's top chunks per sentence):
  per sentence its status, score, citations and evidence with its page and character span;
- ``ask``: answer a question with a method (``vanilla``, ``rag``, ``raac``, ...; its knobs by name),
  reporting progress as its nodes finish;
- ``verify``: the verifier's score that an evidence text supports a claim;
- ``search``: an index's top chunks for a query, with their pages.

A saved run (``ask --save``, ``run --output``) under the server's runs folder is a resource:
``citegraph://runs/{name}`` is its evidence view (one HTML page).

Models and the verifier are loaded once, on the first call that needs them, and stay warm; calls run
one at a time in a worker thread (the CPU is the limit; a second call waits for the first instead of
loading a second copy of a model). A bad input is a tool error whose text is the line the CLI prints.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from citegraph import __version__
from citegraph.corpus import open_corpus
from citegraph.errors import InputError
from citegraph.graphs.registry import entry
from citegraph.run.datasets import Item, check_question, parse_documents
from citegraph.run.runner import answer_item
from citegraph.state.base import default_verifier
from citegraph.tools.verifier import get_verifier

ModeName = Literal["bm25", "dense", "hybrid", "rrf"]


class DocIn(BaseModel):
    id: str = Field(default="", description="Your identifier of the document (a content hash when empty).")
    title: str = Field(default="", description="Its title (may be empty).")
    text: str = Field(description="Its text.")


class EvidenceOut(BaseModel):
    doc: int = Field(description="1-based index into the result's documents.")
    text: str = Field(description="The supporting sentence, verbatim from the document.")
    score: float | None = Field(default=None, description="The verifier's score for this sentence alone.")
    page: int | None = Field(default=None, description="1-based page of the source document (a PDF).")
    start: int | None = Field(default=None, description="Character offset in the source document's text.")
    end: int | None = Field(default=None, description="End offset (exclusive).")


class SentenceOut(BaseModel):
    index: int = Field(description="1-based position in the answer.")
    text: str
    status: Literal["supported", "partial", "unsupported"] | None = Field(
        default=None, description="What the verifier found; null when not checked.")
    score: float | None = None
    citations: list[int] = Field(default_factory=list, description="1-based indices into documents.")
    evidence: list[EvidenceOut] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list, description=(
        "Why the sentence conflicts with its documents, when the verifier has structural checks "
        "('default+checks'): negation, antonym, number, name or role, with the words that show it."))


class DocumentOut(BaseModel):
    n: int = Field(description="The number citations use ([n]).")
    id: str
    title: str
    pages: list[int] = Field(default_factory=list, description="The pages this passage spans (a PDF's).")


class AnswerOut(BaseModel):
    method: str
    question: str = ""
    answer: str = Field(description="The answer as [n]-cited text.")
    sentences: list[SentenceOut]
    documents: list[DocumentOut]
    counts: dict[str, int] = Field(description="Sentences supported / partial / unsupported / unchecked.")
    warnings: list[str] = Field(default_factory=list)
    llm_calls: int = 0
    seconds: float = 0.0


class VerifyOut(BaseModel):
    score: float = Field(description="P(the evidence supports the claim), 0-1, calibrated on held-out pairs where the "
                                     "verifier has a calibration (docs/verifier.md).")
    supported: bool = Field(description="the verifier's score >= threshold (calibration keeps the decision at 0.5)")
    threshold: float
    verifier: str


class HitOut(BaseModel):
    rank: int
    score: float
    id: str
    doc_id: str
    title: str
    start: int
    end: int
    pages: list[int] = Field(default_factory=list)
    text: str


class SearchOut(BaseModel):
    index: str
    hits: list[HitOut]


def answer_out(method: str, ans: Any, usage: dict[str, Any], seconds: float) -> AnswerOut:
    """The structured result of a run (every graph ends with the same AttributedAnswer)."""
    sentences = [SentenceOut(index=i, text=s.text, status=s.support, score=s.support_score, citations=list(s.citations),
                             evidence=[EvidenceOut(doc=e.doc, text=e.text, score=e.score, page=e.page, start=e.start,
                                                   end=e.end) for e in s.evidence], conflicts=why)
                 for i, (s, why) in enumerate(zip(ans.sentences, ans.sentence_conflicts()), 1)]
    docs = [DocumentOut(n=n, id=d.id, title=d.title, pages=sorted({p for p, _, _ in d.pages}))
            for n, d in enumerate(ans.documents, 1)]
    return AnswerOut(method=method, question=ans.question, answer=ans.render(), sentences=sentences, documents=docs,
                     counts=ans.support_counts(), warnings=list(ans.warnings),
                     llm_calls=int(usage.get("llm_calls") or 0), seconds=round(seconds, 2))


class Service:
    """What the tools do, one call at a time, with the models kept warm between calls."""

    def __init__(self, runs_dir: str | Path | None = None, verifier: str | None = None,
                 render: Callable[[Path], str] | None = None) -> None:
        self.runs_dir = Path(runs_dir).resolve() if runs_dir else None
        self.verifier = verifier
        self.render = render  # a saved run's evidence view (HTML); the view room sits above this one
        self.lock = threading.Lock()
        self._graphs: dict[str, Any] = {}

    def _graph(self, method: str):
        if method not in self._graphs:
            self._graphs[method] = entry(method).build()
        return self._graphs[method]

    def _documents(self, documents: list[DocIn] | None) -> list:
        return parse_documents([d.model_dump() for d in documents or []], "documents")

    def cite(self, text: str, documents: list[DocIn] | None = None, index: str = "", k: int | None = None,
             question: str = "", verifier: str = "") -> AnswerOut:
        if bool(documents) == bool(index):
            raise InputError("give documents or an index (one of them) to attribute the text to")
        if not text.strip():
            raise InputError("text: nothing to attribute (it is empty)")
        knobs: dict[str, Any] = {}
        if index:
            open_corpus(index)  # a missing or unreadable index fails here with one line, as `citegraph cite`
            knobs["corpus"] = index
            if k is not None:
                knobs["top_k"] = k
        if verifier or self.verifier:
            knobs["verifier"] = verifier or self.verifier
        ctx = entry("cite").make_context(**knobs)
        item = Item(id="cite", question=question, documents=self._documents(documents), inputs={"answer_text": text})
        with self.lock:
            t0 = time.perf_counter()
            ans, usage = answer_item(self._graph("cite"), item, ctx)
        return answer_out("cite", ans, usage, time.perf_counter() - t0)

    def ask(self, method: str, question: str, documents: list[DocIn] | None = None, index: str = "",
            knobs: dict[str, Any] | None = None, on_progress=None) -> AnswerOut:
        e = entry(method)
        if e.answer_input:
            raise InputError(f"{method} attributes a given text: use the cite tool")
        question = check_question(question, "question")
        if bool(documents) == bool(index):
            raise InputError("give documents or an index (one of them) to answer from")
        knobs = dict(knobs or {})
        if index:
            open_corpus(index)
            knobs["corpus"] = index
        if self.verifier and "verifier" not in knobs:
            knobs["verifier"] = self.verifier
        ctx = e.make_context(**knobs)
        item = Item(id="ask", question=question, documents=self._documents(documents))
        done = [0]

        def on_event(ev: dict) -> None:
            if on_progress is None:
                return
            if ev.get("event") == "node":
                done[0] += 1
                on_progress(done[0], f"{method}: {ev.get('node')} done")
            elif ev.get("event") == "sentence_checked":  # each sentence as soon as it is checked
                cites = "".join(f"[{c}]" for c in ev.get("citations") or []) or "(no citation)"
                on_progress(done[0], f"sentence {ev.get('index')} checked: {ev.get('status')} {cites}")

        with self.lock:
            t0 = time.perf_counter()
            ans, usage = answer_item(self._graph(method), item, ctx, on_event=on_event)
        return answer_out(method, ans, usage, time.perf_counter() - t0)

    def verify(self, claim: str, evidence: str, verifier: str = "") -> VerifyOut:
        if not claim.strip() or not evidence.strip():
            raise InputError("claim and evidence must both be non-empty")
        spec = verifier or self.verifier or default_verifier()
        try:
            v = get_verifier(spec)
        except ValueError as e:
            raise InputError(str(e)) from None
        with self.lock:
            score = float(v.score([(evidence, claim)])[0])
        # the score shown is calibrated where the spec is (the same decision at the threshold)
        return VerifyOut(score=round(getattr(v, "shown", float)(score), 4), supported=score >= v.threshold, threshold=v.threshold,
                         verifier=spec)

    def search(self, index: str, query: str, k: int = 10, mode: ModeName = "hybrid", alpha: float = 0.5) -> SearchOut:
        if not query.strip():
            raise InputError("query is empty")
        if k < 1:
            raise InputError("k must be at least 1")
        with self.lock:
            hits = open_corpus(index).search(query, k=k, mode=mode, alpha=alpha)
        return SearchOut(index=index, hits=[HitOut(
            rank=h.rank, score=round(float(h.score), 6), id=h.chunk.id, doc_id=h.chunk.doc_id, title=h.chunk.title,
            start=h.chunk.start, end=h.chunk.end, pages=sorted({p for p, _, _ in h.chunk.metadata.get("pages") or []}),
            text=h.chunk.text) for h in hits])

    def run_view(self, name: str) -> str:
        if self.runs_dir is None or self.render is None:
            raise InputError("this server has no runs folder (start it with --runs DIR)")
        path = (self.runs_dir / name).resolve()
        if path.parent != self.runs_dir or not path.is_file():
            raise InputError(f"no saved run {name!r} in {self.runs_dir}")
        return self.render(path)

    def runs(self) -> list[str]:
        if self.runs_dir is None or not self.runs_dir.is_dir():
            return []
        return sorted(p.name for p in self.runs_dir.glob("*.json") if not p.name.endswith(".score.json"))


def build_server(service: Service | None = None):
    """The MCP server over ``service`` (a :class:`Service`; a default one when None)."""
    svc = service or Service()
    server = MCPServer(
        name="citegraph", version=_version(),
        instructions="Check that every sentence of a text is supported by documents (cite), answer with citations "
                     "(ask), score one claim against evidence (verify), search an index (search). Results are "
                     "structured: per sentence a status (supported / partial / unsupported), its citations and the "
                     "evidence sentence with its page.")

    async def call(fn, *args, **kwargs):
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except InputError as e:
            raise ToolError(str(e)) from None
        except ValueError as e:  # a knob out of range, an unknown spec: the same one line the CLI prints
            raise ToolError(str(e).splitlines()[0]) from None

    @server.tool(description="Check each sentence of a text against documents (or an index's chunks): per sentence "
                             "supported / partial / unsupported with the verifier's score, the documents that "
                             "support it ([n] marks in the text are checked and re-pointed) and the evidence "
                             "sentence with its page and character span. No LLM call.")
    async def cite(text: str, documents: list[DocIn] | None = None, index: str = "", k: int | None = None,
                   question: str = "", verifier: str = "") -> AnswerOut:
        return await call(svc.cite, text, documents, index, k, question, verifier)

    @server.tool(description="Answer a question with citations by one of citegraph's methods (vanilla, rag, raac, "
                             "genprog, squai, ginger, odmds, summ, snippet, rerank), from the given documents or an "
                             "index; every sentence is checked and carries its status and evidence. knobs: the "
                             "method's Context settings by name (citegraph graphs METHOD lists them). Progress is "
                             "reported as the method's steps finish.")
    async def ask(method: str, question: str, ctx: Context, documents: list[DocIn] | None = None, index: str = "",
                  knobs: dict[str, Any] | None = None) -> AnswerOut:
        def progress(n: int, message: str) -> None:
            anyio.from_thread.run(lambda: ctx.report_progress(n, None, message))

        return await call(svc.ask, method, question, documents, index, knobs, progress)

    @server.tool(description="The verifier's score (0-1) that an evidence text supports a claim, and whether it "
                             "passes the verifier's threshold.")
    async def verify(claim: str, evidence: str, verifier: str = "") -> VerifyOut:
        return await call(svc.verify, claim, evidence, verifier)

    @server.tool(description="Search a citegraph index (a folder built by `citegraph index build`, or "
                             "chroma+http://HOST:PORT/COLLECTION): the top k chunks with their document, pages and "
                             "character span. mode: bm25, dense, hybrid (alpha = weight of dense) or rrf.")
    async def search(index: str, query: str, k: int = 10, mode: ModeName = "hybrid", alpha: float = 0.5) -> SearchOut:
        return await call(svc.search, index, query, k, mode, alpha)

    @server.resource("citegraph://runs/{name}", mime_type="text/html",
                     description="The evidence view (one self-contained HTML page) of a saved run in the server's "
                                 "runs folder: each sentence, its citations and the evidence highlighted in the document.")
    async def run_view(name: str) -> str:
        try:
            return await anyio.to_thread.run_sync(lambda: svc.run_view(name))
        except InputError as e:
            raise ToolError(str(e)) from None

    return server


def _version() -> str:
    return __version__
