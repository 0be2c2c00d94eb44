"""OpenTelemetry traces (OpenInference conventions) of a run, received by a real Arize Phoenix server the
test starts on loopback (skipped with the reason where it cannot start): the graph, its nodes, the LLM call
with its prompt and reply, the verifier call with its scores, the index search with its hits."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
import urllib.request
import uuid

import pytest

import loopback
from loopback import free_port

from citegraph.cli import main
from citegraph.tools import tracing

QUESTION = "What are Alpha and Beta?"
REPLY = "Alpha was founded in 1901 [1]. Beta is a river in Chile [2]."


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    try:
        import phoenix  # noqa: F401
    except ImportError:
        pytest.skip("arize-phoenix is not installed (it comes with the dev extra)")
    with loopback.phoenix(tmp_path_factory.mktemp("phoenix")) as url:
        yield url


@contextlib.contextmanager
def collector():
    """A bare OTLP/HTTP endpoint on loopback that accepts every export (for tests that need no Phoenix)."""
    class Accept(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Accept)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def spans_of(url: str, project: str, want: int = 1) -> list[dict]:
    """The project's spans from Phoenix's REST API (waiting a little for the ingestion queue)."""
    deadline = time.time() + 30
    spans: list[dict] = []
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/v1/projects/{project}/spans?limit=500", timeout=5) as r:
                spans = json.load(r)["data"]
        except OSError:
            spans = []
        if len(spans) >= want:
            return spans
        time.sleep(0.5)
    return spans


@pytest.fixture
def docs_file(tmp_path):
    p = tmp_path / "docs.jsonl"
    p.write_text('{"id": "a", "title": "Alpha", "text": "Alpha was founded in 1901 by Ann."}\n'
                 '{"id": "b", "title": "Beta", "text": "Beta is a river in Chile."}\n')
    return p


def test_a_traced_ask_reaches_phoenix_with_nodes_llm_and_verifier_spans(phoenix, docs_file, scripted, monkeypatch, capsys):
    from citegraph.testing import stub_verifier

    project = f"t{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(tracing.PROJECT_ENV, project)
    spec, _ = scripted([REPLY])
    ver = stub_verifier(lambda p, h: 0.9 if h.split()[0] in p else 0.1)
    assert main(["ask", "vanilla", "-q", QUESTION, "--docs", str(docs_file), "--llm", spec, "--verifier", ver,
                 "--set", "attribution=repair", "--trace", phoenix]) == 0
    assert "Alpha was founded in 1901." in capsys.readouterr().out
    assert not tracing.enabled()  # the command turned it on and off again

    spans = spans_of(phoenix, project, want=7)
    by_name: dict[str, list[dict]] = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    assert {"retrieve", "generate", "attribute", "attribution", "verifier"} <= set(by_name), sorted(by_name)
    ids = {s["context"]["span_id"]: s for s in spans}
    roots = [s for s in spans if not s.get("parent_id")]
    assert len(roots) == 1 and len({s["context"]["trace_id"] for s in spans}) == 1  # one run, one trace
    for node in ("retrieve", "generate", "attribute", "attribution"):
        (s,) = by_name[node]
        assert s["parent_id"] == roots[0]["context"]["span_id"]
        assert s["span_kind"] == "CHAIN" and s["attributes"]["metadata.langgraph_node"] == node

    (llm,) = [s for s in spans if s["span_kind"] == "LLM"]
    assert ids[llm["parent_id"]]["name"] == "generate"
    a = llm["attributes"]
    assert QUESTION in a["llm.input_messages.0.message.content"]
    assert a["llm.output_messages.0.message.content"] == REPLY
    assert int(a["llm.token_count.prompt"]) > 0 and int(a["llm.token_count.completion"]) > 0

    (ver_span,) = by_name["verifier"]
    assert ver_span["status_code"] == "OK"
    assert ver_span["span_kind"] == "EVALUATOR" and ids[ver_span["parent_id"]]["name"] in ("attribute", "attribution")
    rows = json.loads(ver_span["attributes"]["output.value"])
    assert {(r["claim"], r["score"]) for r in rows} >= {("Alpha was founded in 1901.", 0.9)}
    assert int(ver_span["attributes"]["citegraph.verifier.pairs"]) == len(rows) == len({(r["claim"], r["premise"]) for r in rows})


def test_index_searches_are_retriever_spans_with_their_hits(phoenix, tmp_path, tmp_path_factory, monkeypatch):
    from index_kill import tiny_embedder

    from citegraph.corpus import build_index, open_corpus

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": t}) + "\n" for i, t in enumerate(
        ["Alpha was founded in 1901 by Ann.", "Beta is a river in Chile.", "Gamma won the 1990 prize."])))
    build_index(corpus, tmp_path / "idx", chunk_tokens=32, embedder=tiny_embedder(tmp_path_factory.mktemp("emb") / "tiny"))
    project = f"t{uuid.uuid4().hex[:8]}"
    tracing.enable(phoenix, project=project)
    try:
        hits = open_corpus(str(tmp_path / "idx")).search("river in Chile", k=2, mode="bm25")
    finally:
        assert tracing.flush() == 0
        tracing.disable()
    (s,) = spans_of(phoenix, project)
    assert s["name"] == "index search" and s["span_kind"] == "RETRIEVER"
    a = s["attributes"]
    assert [a[f"retrieval.documents.{i}.document.id"] for i in range(len(hits))] == [h.chunk.id for h in hits]
    assert hits[0].chunk.doc_id == "d1" and a["retrieval.documents.0.document.content"] == "Beta is a river in Chile."
    assert "retrieval.documents.2.document.id" not in a and a["input.value"] == "river in Chile"


def test_bad_trace_urls_are_one_line_errors_before_anything_runs(capsys):
    port = free_port()  # nothing listens there
    for url, says in [("ftp://127.0.0.1/x", "needs an http(s) URL"), (f"http://127.0.0.1:{port}", "no trace collector answers")]:
        assert main(["ask", "vanilla", "--example", "--llm", "nonexistent-model", "--trace", url]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("citegraph: error:") and says in err and "\n" not in err
    assert not tracing.enabled()


def test_traces_url_and_the_off_switch():
    assert tracing.traces_url("http://127.0.0.1:6006") == "http://127.0.0.1:6006/v1/traces"
    assert tracing.traces_url("https://x.example/api/public/otel/") == "https://x.example/api/public/otel/v1/traces"
    assert tracing.traces_url("http://h:1/v1/traces") == "http://h:1/v1/traces"
    import langchain_core.callbacks as cb

    original = cb.BaseCallbackManager.__init__
    with tracing.span("x", "CHAIN") as s:
        assert s is None  # off: nothing is made
    with collector() as url:
        tracing.enable(url)
        try:
            assert cb.BaseCallbackManager.__init__ is not original  # LangChain's callbacks carry the tracer
            with tracing.span("x", "CHAIN") as s:
                assert s is not None and s.is_recording()
            assert tracing.flush() == 0
        finally:
            tracing.disable()
    assert cb.BaseCallbackManager.__init__ is original and not tracing.enabled()


def test_the_environment_switch_warns_and_runs_untraced_when_no_collector_answers(monkeypatch, caplog):
    monkeypatch.setenv(tracing.ENV, f"http://127.0.0.1:{free_port()}")
    from citegraph.graphs.registry import build_graph

    build_graph("vanilla")
    assert not tracing.enabled() and "running without traces" in caplog.text
