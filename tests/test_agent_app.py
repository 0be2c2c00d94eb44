"""citegraph inside an agent app (issue #39): the app's model (environment and parent Context), the
method as an agent's tool through an agent loop, one validation path for every entry point, inputs
bounded to the model's context window, and the CLI's question file / stdin / per-method view."""

from __future__ import annotations

import io
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from citegraph import as_tool, build_graph, make_context
from citegraph.cli import main
from citegraph.errors import InputError
from citegraph.state import AttributedAnswer, Document
from citegraph.state.vanilla import VanillaContext
from citegraph.testing import ScriptedChatModel
from citegraph.tools.models import register_chat_model
from citegraph.tools.verifier import FunctionVerifier, clear_verifier_cache, register_verifier

DOCS = [Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann."),
        Document(id="b", title="Beta", text="Beta is a river in Chile.")]
ANSWER = "Alpha was founded in 1901 [1]. Beta is in Chile [2]."


@pytest.fixture(autouse=True)
def _verifier():
    register_verifier("default", FunctionVerifier(lambda p, h: 1.0, spec="default"))
    yield
    clear_verifier_cache()


def spec_of(model: BaseChatModel, prefix: str = "scripted") -> str:
    spec = f"{prefix}-{uuid.uuid4().hex[:8]}"
    register_chat_model(spec, model)
    return spec


# ------------------------------------------------------------------------------ 1. the app's model
def test_environment_sets_every_contexts_default_models(monkeypatch):
    from citegraph.graphs.registry import GRAPHS, context_class

    monkeypatch.setenv("CITEGRAPH_LLM", "openai:gpt-4o-mini")
    monkeypatch.setenv("CITEGRAPH_VERIFIER", "llm-judge:openai:gpt-4o-mini")
    for name in GRAPHS:  # read when a Context is built, not at import
        ctx = context_class(name)()
        assert (ctx.llm, ctx.verifier) == ("openai:gpt-4o-mini", "llm-judge:openai:gpt-4o-mini"), name
    assert VanillaContext(llm="local").llm == "local"  # an explicit value wins
    monkeypatch.delenv("CITEGRAPH_LLM")
    assert VanillaContext().llm == "local"
    # the judge: CITEGRAPH_JUDGE, else CITEGRAPH_LLM, else local (eval --judge, llm-judge without a chat spec)
    from citegraph.state.base import default_judge
    from citegraph.tools.verifier import parse_judge_spec

    assert default_judge() == "local"
    monkeypatch.setenv("CITEGRAPH_LLM", "openai:a")
    assert default_judge() == "openai:a" and parse_judge_spec("table16") == ("openai:a", "table16")
    monkeypatch.setenv("CITEGRAPH_JUDGE", "openai:judge")
    assert parse_judge_spec("") == ("openai:judge", "ours")


def test_environment_model_answers_a_plain_invoke(monkeypatch):
    model = ScriptedChatModel(script=[ANSWER])
    monkeypatch.setenv("CITEGRAPH_LLM", spec_of(model))
    out = build_graph("vanilla").invoke({"question": "What are Alpha and Beta?", "documents": DOCS})
    assert out["answer"].render() == ANSWER and len(model.calls) == 1


def test_a_subgraph_under_an_apps_own_context_uses_the_apps_model(monkeypatch):
    local = ScriptedChatModel(script=["the embedded model must not answer"])
    monkeypatch.setitem(__import__("citegraph.tools.models.registry", fromlist=["_registry"])._registry, "local", local)
    app_model = ScriptedChatModel(script=[ANSWER])
    register_chat_model("scripted-x", app_model)

    @dataclass
    class AppContext:  # the app's own class, not a citegraph Context
        llm: str = "scripted-x"
        user: str = "ann"

    class AppState(TypedDict, total=False):
        question: str
        documents: list
        answer: Any

    parent = StateGraph(AppState, context_schema=AppContext)
    parent.add_node("cite", build_graph("vanilla"))
    parent.add_edge(START, "cite")
    parent.add_edge("cite", END)
    out = parent.compile().invoke({"question": "What are Alpha and Beta?", "documents": DOCS}, context=AppContext())
    assert out["answer"].render() == ANSWER
    assert len(app_model.calls) == 1 and local.calls == []


# ------------------------------------------------------------------------------ 2. a tool for agents
class ToolCallingModel(BaseChatModel):
    """An agent's model: asks the tool once (``args``), then answers with the tool's text."""

    args: dict
    tool_name: str = "cited_answer_vanilla"
    seen: list = []

    @property
    def _llm_type(self) -> str:
        return "tool-calling-test"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            msg = AIMessage(content=f"According to the tool: {last.content}")
        else:
            msg = AIMessage(content="", tool_calls=[{"name": self.tool_name, "args": self.args, "id": "call_1"}])
        return ChatResult(generations=[ChatGeneration(message=msg)])


class AgentState(TypedDict):
    messages: Annotated[list, add_messages]


def agent_loop(model: BaseChatModel, tools: list):
    """The LangGraph-native agent: a model node, a ToolNode, and tools_condition between them."""
    bound = model.bind_tools(tools)
    g = StateGraph(AgentState)
    g.add_node("agent", lambda s: {"messages": [bound.invoke(s["messages"])]})
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile()


def transcript(messages) -> str:
    out = []
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            out.append(f"AI tool call: {m.tool_calls[0]['name']}({json.dumps(m.tool_calls[0]['args'])})")
        else:
            out.append(f"{type(m).__name__}: {m.content}")
    return "\n".join(out)


def test_the_tool_through_an_agent_loop(capsys):
    cite = ScriptedChatModel(script=[ANSWER])
    tool = as_tool("vanilla", llm=spec_of(cite))
    schema = tool.tool_call_schema.model_json_schema()
    assert schema["required"] == ["question"] and set(schema["properties"]) == {"question", "documents"}
    q = "What are Alpha and Beta?"
    agent = ToolCallingModel(args={"question": q, "documents": [d.model_dump(include={"id", "title", "text"}) for d in DOCS]})
    out = agent_loop(agent, [tool]).invoke({"messages": [HumanMessage(q)]})
    tm = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert tm.status == "success"
    assert tm.content == f"{ANSWER}\n\nSources:\n[1] Alpha (id: a)\n[2] Beta (id: b)"
    assert isinstance(tm.artifact, AttributedAnswer) and tm.artifact.sentences[1].citations == [2]
    assert out["messages"][-1].content.startswith("According to the tool: Alpha was founded in 1901 [1].")
    with capsys.disabled():
        print("\n--- agent transcript ---\n" + transcript(out["messages"]))


def test_a_question_only_call_retrieves_from_the_configured_corpus():
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever

    from citegraph.corpus import register_retriever

    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [LCDocument(page_content="Alpha was founded in 1901 by Ann.", metadata={"source": "alpha.txt", "title": "Alpha"})]

    corpus = register_retriever(f"agent-{uuid.uuid4().hex[:6]}", Fixed())
    cite = ScriptedChatModel(script=["Alpha was founded in 1901 [1]."])
    tool = as_tool("vanilla", corpus=corpus, llm=spec_of(cite), top_k=1)
    out = agent_loop(ToolCallingModel(args={"question": "When was Alpha founded?"}), [tool]).invoke(
        {"messages": [HumanMessage("When was Alpha founded?")]})
    tm = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert tm.status == "success" and tm.content.startswith("Alpha was founded in 1901 [1].\n\nSources:\n[1] Alpha (id: ")
    assert tm.artifact.documents[0].metadata["doc_id"] == "alpha.txt"


def test_a_question_only_call_without_a_corpus_is_an_error_the_agent_sees():
    cite = ScriptedChatModel(script=[ANSWER])
    tool = as_tool(build_graph("vanilla"), llm=spec_of(cite))  # a graph already built alike
    out = agent_loop(ToolCallingModel(args={"question": "What is Alpha?"}), [tool]).invoke(
        {"messages": [HumanMessage("What is Alpha?")]})
    tm = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert tm.status == "error" and "no documents given and no corpus configured" in tm.content
    assert tm.artifact is None and cite.calls == []
    with pytest.raises(InputError, match="unknown setting\\(s\\) for vanilla: nope"):
        as_tool(build_graph("vanilla"), nope=1)
    with pytest.raises(InputError, match="unknown model spec 'gpt-5'"):
        as_tool("vanilla", llm="gpt-5")


def test_the_tool_with_an_openai_compatible_agent_and_model(monkeypatch):
    """The agent (ChatOpenAI, tool calling) and the method's model both on the fake OpenAI server."""
    from langchain_openai import ChatOpenAI

    from fake_openai import FakeOpenAI

    def reply(body):
        msgs = body["messages"]
        if body.get("tools"):  # the agent
            if msgs[-1]["role"] == "tool":
                return "Per the tool: " + msgs[-1]["content"]
            call = {"id": "call_9", "type": "function", "function": {"name": "cited_answer_vanilla", "arguments": json.dumps(
                {"question": "What are Alpha and Beta?", "documents": [{"title": "Alpha", "text": DOCS[0].text, "id": "a"},
                                                                      {"title": "Beta", "text": DOCS[1].text, "id": "b"}]})}}
            return {"id": "x", "object": "chat.completion", "created": 0, "model": "agent",
                    "choices": [{"index": 0, "finish_reason": "tool_calls",
                                 "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
        return ANSWER  # the method's generation

    with FakeOpenAI(reply) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        tool = as_tool("vanilla", llm=f"openai:cite-{uuid.uuid4().hex[:6]}")
        agent = ChatOpenAI(model="agent", base_url=srv.url, api_key="test", max_retries=0)
        out = agent_loop(agent, [tool]).invoke({"messages": [HumanMessage("What are Alpha and Beta?")]})
    tm = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert tm.content.startswith(ANSWER + "\n\nSources:\n[1] Alpha (id: a)")
    assert out["messages"][-1].content.startswith("Per the tool: " + ANSWER)
    assert srv.requests[0]["tools"][0]["function"]["name"] == "cited_answer_vanilla"


# ------------------------------------------------------------------------------ 3. one validation path
def test_python_entry_points_validate_before_any_model_work():
    cite = ScriptedChatModel(script=[ANSWER])
    spec = spec_of(cite)
    g = build_graph("vanilla")
    with pytest.raises(InputError, match="^the question is empty and there are no documents and no corpus"):
        g.invoke({"question": " ", "documents": []}, context=VanillaContext(llm=spec))
    with pytest.raises(InputError, match="^unknown setting\\(s\\) for VanillaContext: bogus_knob; known: "):
        g.invoke({"question": "q", "documents": DOCS}, context={"llm": spec, "bogus_knob": 1})  # as the SDK sends it
    with pytest.raises(InputError, match="^VanillaContext.verifier: unknown verifier spec 'foo'"):
        g.invoke({"question": "q", "documents": DOCS}, context=VanillaContext(llm=spec, verifier="foo"))
    with pytest.raises(InputError, match="^VanillaContext.llm: unknown model spec 'gpt-4o'"):
        g.invoke({"question": "q", "documents": DOCS}, context={"llm": "gpt-4o"})
    with pytest.raises(InputError, match="GGUF model file not found"):
        list(g.stream({"question": "q", "documents": DOCS}, context=VanillaContext(llm="llamacpp:/nope.gguf")))
    assert cite.calls == []
    out = g.invoke({"question": "q", "documents": DOCS}, context={"llm": spec})  # a valid dict is the Context
    assert out["answer"].render() == ANSWER


def test_the_servers_app_passes_the_sent_context_keys_to_the_graph():
    """The LangGraph API server drops a context key its schema lacks before the graph sees it; the app
    langgraph.json mounts (graphs/webapp.py) sends the keys along as a header, and the graph names an
    unknown one (tests/test_studio.py checks it over the SDK). Other requests pass unchanged."""
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from citegraph.graphs.webapp import ContextKeysMiddleware

    async def echo(request):
        return JSONResponse({"header": request.headers.get("x-citegraph-context-keys"),
                             "body": (await request.body()).decode()})

    app = ContextKeysMiddleware(Starlette(routes=[Route(p, echo, methods=["POST"]) for p in
                                                  ("/threads/{t}/runs/wait", "/runs/stream", "/runs/batch", "/assistants")]))
    client = TestClient(app)
    body = json.dumps({"assistant_id": "vanilla", "context": {"llm": "x", "bogus_knob": 3}})
    got = client.post("/threads/t1/runs/wait", content=body).json()
    assert json.loads(got["header"]) == ["bogus_knob", "llm"] and got["body"] == body
    assert json.loads(client.post("/runs/stream", content=body).json()["header"]) == ["bogus_knob", "llm"]
    for path, content in (("/runs/stream", '{"assistant_id": "vanilla"}'), ("/runs/stream", "not json"),
                          ("/runs/batch", body), ("/assistants", body)):
        got = client.post(path, content=content).json()
        assert got["header"] is None and got["body"] == content, path
    repo = Path(__file__).resolve().parent.parent
    http = json.loads((repo / "langgraph.json").read_text())["http"]
    assert http["app"] == "./citegraph/graphs/webapp.py:app"
    assert http["configurable_headers"]["includes"] == ["x-citegraph-context-keys"]  # the server copies it to the run


def test_the_servers_mcp_endpoint_answers_with_the_answer_as_json():
    """langgraph dev's own /mcp endpoint writes a run's output as a Python repr; the app langgraph.json
    mounts makes a tools/call reply's text the AttributedAnswer as JSON and adds it as structuredContent
    (tests/test_studio.py checks it against the real server). Errors, tool lists, other routes and
    streamed replies pass unchanged."""
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from citegraph.graphs.webapp import McpJsonMiddleware

    output = {"answer": {"question": "Q?", "sentences": [{"text": "It's 330 m [2].", "citations": [2], "score": 0.9,
                                                         "supported": True, "evidence": None}]}}
    replies = {
        "call": {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": repr(output)}]}},
        "error": {"jsonrpc": "2.0", "id": 2, "result": {"isError": True, "content": [{"type": "text", "text": "{'a': 1}"}]}},
        "list": {"jsonrpc": "2.0", "id": 3, "result": {"tools": [{"name": "vanilla"}]}},
        "prose": {"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "__import__('os')"}]}},
    }

    async def mcp(request):
        kind = (await request.json())["kind"]
        if kind == "stream":
            return StreamingResponse(iter([b"data: {'a': 1}\n\n"]), media_type="text/event-stream")
        return JSONResponse(replies[kind])

    client = TestClient(McpJsonMiddleware(Starlette(routes=[Route(p, mcp, methods=["POST"]) for p in ("/mcp", "/other")])))
    got = client.post("/mcp", json={"kind": "call"})
    result = got.json()["result"]
    assert json.loads(result["content"][0]["text"]) == output["answer"] == result["structuredContent"]
    assert int(got.headers["content-length"]) == len(got.content)
    for kind in ("error", "list", "prose"):
        assert client.post("/mcp", json={"kind": kind}).json() == replies[kind], kind
    assert client.post("/other", json={"kind": "call"}).json() == replies["call"]
    assert client.post("/mcp", json={"kind": "stream"}).text == "data: {'a': 1}\n\n"


@pytest.mark.parametrize("argv, needle", [
    (["--verifier", "foo"], "VanillaContext.verifier: unknown verifier spec 'foo'"),
    (["--llm", "nonsense"], "VanillaContext.llm: unknown model spec 'nonsense'"),
    (["--set", "bogus=1"], "unknown setting(s) for vanilla: bogus"),
])
def test_ask_refuses_bad_specs_in_one_line_before_model_work(tmp_path, capsys, argv, needle):
    cite = ScriptedChatModel(script=[ANSWER])
    spec = spec_of(cite)
    docs = tmp_path / "d.jsonl"
    docs.write_text("\n".join(d.model_dump_json() for d in DOCS))
    code = main(["ask", "vanilla", "-q", "What?", "--docs", str(docs), "--llm", spec, *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and needle in err and len(err.splitlines()) == 1 and cite.calls == []


def test_ask_genprog_posthoc_takes_the_answer_or_refuses(tmp_path, capsys):
    docs = tmp_path / "d.jsonl"
    docs.write_text("\n".join(d.model_dump_json() for d in DOCS))
    planner = ScriptedChatModel(script=["- paraphrase(S1)"])
    spec = spec_of(planner)
    code = main(["ask", "genprog-posthoc", "-q", "What is Alpha?", "--docs", str(docs), "--llm", spec])
    err = capsys.readouterr().err
    assert code == 2 and "give it with --answer TEXT or --answer-file FILE" in err and planner.calls == []
    assert main(["ask", "vanilla", "-q", "Q?", "--docs", str(docs), "--llm", spec, "--answer", "x"]) == 2
    assert "vanilla writes its own answer" in capsys.readouterr().err
    code = main(["ask", "genprog-posthoc", "-q", "What is Alpha?", "--docs", str(docs), "--llm", spec,
                 "--answer", "Alpha was founded in 1901.", "--json"])
    ans = json.loads(capsys.readouterr().out)
    assert code == 0 and ans["sentences"][0]["text"] == "Alpha was founded in 1901." and ans["sentences"][0]["citations"] == [1]
    with pytest.raises(InputError, match="genprog-posthoc attributes an existing answer: the input has no answer_text"):
        build_graph("genprog-posthoc").invoke({"question": "q", "documents": DOCS}, context={"llm": spec})


def test_ginger_without_nuggets_says_so(scripted):
    spec, _ = scripted(['{"nuggets": ["a span that is in no passage"]}'])
    ans = build_graph("ginger").invoke({"question": "What is Alpha?", "documents": DOCS},
                                       context=make_context("ginger", llm=spec, ranker="size"))["answer"]
    assert ans.sentences == []
    assert ans.warnings and ans.warnings[0].startswith("no nugget found: the model marked 2 span(s) in 2 passage(s)")


# ------------------------------------------------------------------------------ 4. inputs bounded
def test_two_thousand_documents_are_bounded_with_a_warning(caplog):
    docs = [Document(id=f"d{i}", title=f"T{i}", text=" ".join(f"word{i}x{j}" for j in range(60))) for i in range(2000)]
    cite = ScriptedChatModel(script=["Word zero [1]. Word one [2]."])
    ctx = VanillaContext(llm=spec_of(cite), context_window=8192)
    ans = build_graph("vanilla").invoke({"question": "What words?", "documents": docs}, context=ctx)["answer"]
    kept = len(ans.documents)
    assert 0 < kept < 2000 and [d.id for d in ans.documents] == [f"d{i}" for i in range(kept)]  # in order, a prefix
    w = ans.warnings[0]
    assert w.startswith("input bounded to the model's context window of 8192 tokens")
    assert f"dropped {2000 - kept} of 2000 documents (documents {kept + 1}-2000, about " in w
    prompt = str(cite.calls[0]["messages"][-1].content)
    assert f"Document [{kept}]" in prompt and f"Document [{kept + 1}]" not in prompt
    assert len(prompt) / 4 <= 8192 - ctx.max_new_tokens  # the chars/4 estimate of the prompt fits the window
    assert ans.sentences[1].citations == [2]
    # the default window (128k for a model that declares none) holds these, so nothing is cut
    ans = build_graph("vanilla").invoke({"question": "q", "documents": docs[:50]}, context=VanillaContext(llm=ctx.llm))["answer"]
    assert len(ans.documents) == 50 and not any("bounded" in x for x in ans.warnings)


def test_the_budget_rule():
    from citegraph.prompts.budget import SKELETON_TOKENS, bound_documents

    docs = [Document(text="x" * 400) for _ in range(10)]  # 100 estimated tokens + 12 per document
    b = bound_documents(docs, window=SKELETON_TOKENS + 300 + 560, reply_tokens=300)
    assert len(b.documents) == 5 and b.dropped == [6, 7, 8, 9, 10] and b.dropped_tokens == 560
    one = bound_documents([Document(text=" ".join(["word"] * 5000))], window=SKELETON_TOKENS + 300 + 212, reply_tokens=300)
    assert one.cut_tokens > 0 and one.used <= 212 and "cut about" in one.warning()
    counted = bound_documents(docs, window=SKELETON_TOKENS + 300 + 30, reply_tokens=300, count=lambda t: 1)
    assert len(counted.documents) == 2  # the model's own counter decides when given (1 + 12 per document)


# ------------------------------------------------------------------------------ 5. CLI: question file / stdin, graphs
def test_ask_reads_the_question_from_a_file_or_stdin(tmp_path, capsys, monkeypatch):
    docs = tmp_path / "d.jsonl"
    docs.write_text("\n".join(d.model_dump_json() for d in DOCS))
    long_q = "What are Alpha and Beta? " + "Please be precise. " * 20000  # longer than a command line may be
    (tmp_path / "q.txt").write_text(long_q)
    cite = ScriptedChatModel(script=[ANSWER])
    spec = spec_of(cite)
    assert main(["ask", "vanilla", "--question-file", str(tmp_path / "q.txt"), "--docs", str(docs), "--llm", spec, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["question"] == long_q.strip()
    monkeypatch.setattr("sys.stdin", io.StringIO("From stdin?\n"))
    assert main(["ask", "vanilla", "--question", "-", "--docs", str(docs), "--llm", spec, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["question"] == "From stdin?"
    assert main(["ask", "vanilla", "--question-file", str(tmp_path / "none.txt"), "--docs", str(docs)]) == 2
    assert "--question-file: file not found" in capsys.readouterr().err


def test_graphs_compact_listing_and_one_method(capsys):
    assert main(["graphs"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 60 and "…" not in out
    flat = " ".join(out.split())
    assert "vanilla" in flat and "the LLM cites as [n]." in flat and "answer_text (the answer to attribute)" in flat
    assert "max_doc_words" not in flat  # no knobs in the listing
    assert main(["graphs", "raac"]) == 0
    one = " ".join(capsys.readouterr().out.split())
    assert one.startswith("raac — RAAC:") and "inputs: question; documents, or the corpus knob" in one
    assert "max_calibration_rounds" in one and "Default: $CITEGRAPH_LLM when set." in one and "genprog" not in one
    assert main(["graphs", "--knobs"]) == 0
    assert "squai" in capsys.readouterr().out
