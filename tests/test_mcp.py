"""``citegraph mcp``: the MCP server, called by the official SDK's client in-process, over stdio (a real
subprocess, as a desktop client starts it) and over streamable HTTP with a bearer token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from loopback import free_port  # noqa: E402
from test_pdf import FACTS, survey_pdf  # noqa: E402

from citegraph.cli import main  # noqa: E402

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

from citegraph.cli.mcp import render_run  # noqa: E402
from citegraph.run.mcp import Service, build_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCS = [{"id": "eiffel", "title": "Eiffel Tower", "text": "The Eiffel Tower in Paris was built from 1887 to 1889. It is 330 metres tall."},
        {"id": "gustave", "title": "Gustave Eiffel", "text": "Gustave Eiffel's company designed and built the tower."}]


def call(server, name: str, args: dict, **kw):
    async def go():
        async with Client(server) as c:
            return await c.call_tool(name, args, **kw)

    return anyio.run(go)


def test_tools_are_listed_with_schemas_and_descriptions():
    async def go():
        async with Client(build_server(Service())) as c:
            return (await c.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == {"cite", "ask", "verify", "search"}
    for t in tools.values():
        assert len(t.description or "") > 60 and t.output_schema  # a description an agent can act on; structured
    assert tools["cite"].input_schema["required"] == ["text"]
    assert set(tools["ask"].input_schema["required"]) == {"method", "question"}
    assert "sentences" in tools["cite"].output_schema["properties"]


def test_cite_returns_each_sentence_with_status_citations_and_located_evidence():
    r = call(build_server(Service()), "cite", {
        "text": "The tower was built from 1887 to 1889 [2]. It is made of chocolate.", "documents": DOCS})
    assert not r.is_error
    out = r.structured_content
    first, second = out["sentences"]
    assert first["status"] == "supported" and first["citations"] == [1]  # re-pointed to the document that says it
    ev = first["evidence"][0]
    assert ev["doc"] == 1 and DOCS[0]["text"][ev["start"]:ev["end"]] == ev["text"]
    assert second["status"] == "unsupported" and not second["citations"]
    assert out["counts"]["supported"] == 1 and [d["id"] for d in out["documents"]] == ["eiffel", "gustave"]
    assert json.loads(r.content[0].text)["answer"] == out["answer"]  # the text block is the same JSON, not a repr


def test_cite_with_structural_checks_says_why_a_sentence_conflicts():
    r = call(build_server(Service(verifier="default+checks")), "cite", {
        "text": "The tower was not built from 1887 to 1889 [1]. It is 330 metres tall [1].", "documents": DOCS})
    first, second = r.structured_content["sentences"]
    assert first["status"] == "unsupported" and first["conflicts"][0].startswith("[1] negation: the claim says 'not'")
    assert second["status"] == "supported" and second["conflicts"] == []


def test_errors_are_tool_errors_with_the_clis_line(tmp_path):
    server = build_server(Service())
    bad = call(server, "cite", {"text": "Some text."})
    assert bad.is_error and "give documents or an index (one of them)" in bad.content[0].text
    unknown = call(server, "ask", {"method": "nope", "question": "Why?", "documents": DOCS})
    assert unknown.is_error and "unknown method 'nope'" in unknown.content[0].text
    missing = call(server, "search", {"index": str(tmp_path / "none"), "query": "tower"})
    assert missing.is_error and "no index at" in missing.content[0].text
    knob = call(server, "ask", {"method": "vanilla", "question": "When?", "documents": DOCS, "knobs": {"ndoc": -3}})
    assert knob.is_error and "ndoc" in knob.content[0].text and "Traceback" not in knob.content[0].text


def test_verify_scores_one_claim():
    r = call(build_server(Service()), "verify", {"claim": "The tower is 330 metres tall.",
                                                 "evidence": "The Eiffel Tower is 330 metres tall."})
    assert not r.is_error and r.structured_content["supported"] is True and r.structured_content["verifier"] == "default"
    no = call(build_server(Service()), "verify", {"claim": "The tower is made of chocolate.",
                                                  "evidence": "The Eiffel Tower is 330 metres tall."})
    assert no.structured_content["supported"] is False


def test_ask_reports_progress_and_search_and_cite_over_an_index_of_pdfs(tmp_path, scripted):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    survey_pdf(folder / "survey.pdf")
    idx = tmp_path / "idx"
    assert main(["index", "build", "--corpus", str(folder), "--index", str(idx), "--chunk-tokens", "64"]) == 0
    server = build_server(Service())
    hits = call(server, "search", {"index": str(idx), "query": "when were the rats removed", "k": 2, "mode": "bm25"})
    assert not hits.is_error and 3 in hits.structured_content["hits"][0]["pages"]
    cited = call(server, "cite", {"text": "The rats were removed from the island in 2015.", "index": str(idx), "k": 3})
    ev = cited.structured_content["sentences"][0]["evidence"][0]
    assert ev["page"] == 3 and ev["text"] == FACTS[2]
    spec, _ = scripted(["The tower was built from 1887 to 1889 [1]."])
    seen = []

    async def progress(done, total, message):
        seen.append((done, message))

    r = call(server, "ask", {"method": "vanilla", "question": "When was the tower built?", "documents": DOCS,
                             "knobs": {"llm": spec, "attribution": "repair"}}, progress_callback=progress)
    assert not r.is_error, r.content
    out = r.structured_content
    assert out["sentences"][0]["status"] == "supported" and out["llm_calls"] == 1
    assert seen and [d for d, _ in seen] == sorted(d for d, _ in seen) and "vanilla:" in seen[0][1]
    assert "sentence 1 checked: supported [1]" in [m for _, m in seen]  # before the result, as it is decided


def test_a_saved_run_is_a_resource(tmp_path, scripted):
    spec, _ = scripted(["The tower was built from 1887 to 1889 [1]."])
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    runs = tmp_path / "runs"
    runs.mkdir()
    assert main(["ask", "vanilla", "-q", "When was it built?", "--docs", str(docs), "--llm", spec,
                 "--save", str(runs / "one.json")]) == 0

    async def go():
        async with Client(build_server(Service(runs_dir=runs, render=render_run))) as c:
            templates = (await c.list_resource_templates()).resource_templates
            page = await c.read_resource("citegraph://runs/one.json")
            bad = None
            try:
                await c.read_resource("citegraph://runs/..%2Fdocs.jsonl")
            except Exception as e:  # noqa: BLE001 - the SDK raises the server's error
                bad = str(e)
            return templates, page, bad

    templates, page, bad = anyio.run(go)
    assert [t.uri_template for t in templates] == ["citegraph://runs/{name}"]
    assert "built from 1887 to 1889" in page.contents[0].text and page.contents[0].mime_type == "text/html"
    assert bad is not None


def test_stdio_server_as_a_client_starts_it():
    params = StdioServerParameters(command=sys.executable, args=["-m", "citegraph.cli", "mcp"], cwd=str(ROOT),
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def go():
        async with Client(params, read_timeout_seconds=120) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            first = await c.call_tool("verify", {"claim": "It is 330 metres tall.", "evidence": DOCS[0]["text"]})
            second = await c.call_tool("cite", {"text": "It is 330 metres tall.", "documents": DOCS})
            return names, first, second

    names, first, second = anyio.run(go)
    assert "cite" in names and first.structured_content["supported"] is True
    assert second.structured_content["sentences"][0]["status"] == "supported"


def test_http_needs_the_bearer_token_and_a_token_for_other_interfaces(capsys):
    import httpx

    assert main(["mcp", "--http", "--host", "0.0.0.0"]) == 2
    assert "is not a loopback address: give --token" in capsys.readouterr().err
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "citegraph.cli", "mcp", "--http", "--port", str(port), "--token", "s3cret"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.time() + 60
        while True:
            try:
                r = httpx.post(url, json={}, timeout=2)
                break
            except httpx.TransportError:
                if time.time() > deadline or proc.poll() is not None:
                    pytest.fail(f"server did not start: {proc.stderr.read() if proc.poll() is not None else ''}")
                time.sleep(0.3)
        assert r.status_code == 401
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"Accept": "application/json, text/event-stream"}
        assert httpx.post(url, json=init, headers={**headers, "Authorization": "Bearer wrong"}, timeout=10).status_code == 401
        ok = httpx.post(url, json=init, headers={**headers, "Authorization": "Bearer s3cret"}, timeout=30)
        assert ok.status_code == 200 and "citegraph" in ok.text
    finally:
        proc.terminate()
        proc.wait(timeout=20)
