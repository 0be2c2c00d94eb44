"""The model layer: spec resolution, scripted fake, structured output with repair/retry/fallback,
the Yes/No judge, and a loopback OpenAI-compatible server (structured output, logprobs, errors)."""

from __future__ import annotations

import socket
import uuid

import pytest
from pydantic import BaseModel

from citegraph.errors import ModelError
from citegraph.tools import models
from citegraph.tools.models import chat_text, extract_json, get_chat_model, structured, yes_probability

from fake_openai import FakeOpenAI


class Verdict(BaseModel):
    label: str
    score: int


def test_unknown_specs_fail_clearly():
    with pytest.raises(ModelError, match="unknown model spec"):
        get_chat_model("nonsense:thing")
    with pytest.raises(ModelError, match="not found"):
        get_chat_model(f"llamacpp:/nonexistent/{uuid.uuid4().hex}.gguf").invoke("hi")
    with pytest.raises(ModelError, match="no scripted model"):
        get_chat_model("fake:never-registered")


def test_models_are_cached_per_spec(scripted):
    spec, m = scripted(["x"])
    assert get_chat_model(spec) is m


@pytest.mark.parametrize("text,expected", [
    ('{"label": "a", "score": 2}', {"label": "a", "score": 2}),
    ('Sure! ```json\n{"label": "a", "score": 2}\n``` hope it helps', {"label": "a", "score": 2}),
    ("{'label': 'a', 'score': 2}", {"label": "a", "score": 2}),
    ('{"label": "a", "score": 2,}', {"label": "a", "score": 2}),
    ('{"label": "a", "score": 2', {"label": "a", "score": 2}),
    ('{"label": "a", "score": 2} and then more text {', {"label": "a", "score": 2}),
])
def test_extract_json_repairs(text, expected):
    assert extract_json(text) == expected


def test_extract_json_rejects_prose():
    with pytest.raises(ValueError):
        extract_json("no json here")


def test_structured_retries_then_succeeds(scripted):
    spec, m = scripted(["garbage", '{"label": "ok", "score": "x"}', '{"label": "ok", "score": 3}'])
    v, problems = structured(spec, "judge", Verdict, retries=2)
    assert v == Verdict(label="ok", score=3)
    assert len(problems) == 2 and len(m.calls) == 3
    # the retry tells the model what was wrong
    assert "not valid" in m.calls[1]["messages"][-1].content


def test_structured_falls_back_never_raises(scripted):
    spec, m = scripted(["garbage"])
    v, problems = structured(spec, "judge", Verdict, retries=1, fallback=Verdict(label="none", score=0))
    assert v.label == "none" and len(m.calls) == 2
    assert problems[-1].endswith("used fallback after 2 attempts")


def test_structured_coerce_errors_are_retried_and_plain_text_salvaged(scripted):
    def coerce(d):
        return {"label": d["label"].lower(), "score": d["score"]}  # TypeError/KeyError on odd shapes

    spec, m = scripted(["[1, 2]", '{"label": "OK", "score": 1}'])
    v, problems = structured(spec, "judge", Verdict, coerce=coerce, retries=2)
    assert v == Verdict(label="ok", score=1) and len(m.calls) == 2 and "unexpected JSON shape" in problems[0]

    spec, m = scripted(["The label is good, score 4."])
    salvage = lambda t: {"label": "good", "score": 4} if "good" in t else None  # noqa: E731
    v, problems = structured(spec, "judge", Verdict, coerce_text=salvage)
    assert v == Verdict(label="good", score=4) and len(m.calls) == 1 and "salvaged" in problems[0]


def test_structured_without_fallback_raises(scripted):
    spec, _ = scripted(["garbage"])
    with pytest.raises(models.StructuredOutputError):
        structured(spec, "judge", Verdict, retries=0)


def test_yes_probability_scripted(scripted):
    spec, _ = scripted(judge=lambda prompt: 0.9 if "sky" in prompt else 0.1)
    assert yes_probability(spec, "Is the sky blue?") == pytest.approx(0.9)


def test_two_way_softmax():
    import math
    from citegraph.tools.models.llamacpp import _two_way

    p = _two_way([math.log(3.0), math.log(1.0)], [0], [1])
    assert p == pytest.approx(0.75)


@pytest.fixture
def openai_env(monkeypatch):
    def use(url):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("CITEGRAPH_OPENAI_RETRIES", "1")
        monkeypatch.setenv("CITEGRAPH_OPENAI_TIMEOUT", "5")
        spec = f"openai:model-{uuid.uuid4().hex[:6]}"  # a fresh spec: models are cached per spec
        return spec
    return use


def test_openai_compatible_chat_and_structured(openai_env):
    replies = iter(['not json', '{"label": "good", "score": 3}'])
    with FakeOpenAI(lambda body: next(replies)) as srv:
        spec = openai_env(srv.url)
        v, problems = structured(spec, "judge this", Verdict, retries=2)
        assert v.label == "good" and len(problems) == 1
        assert srv.requests[0]["messages"][-1]["content"] == "judge this"
    with FakeOpenAI(lambda body: "plain answer") as srv:
        spec = openai_env(srv.url)
        assert chat_text(spec, "hi", max_tokens=5, temperature=0.3) == "plain answer"
        assert srv.requests[0]["max_completion_tokens"] == 5 and srv.requests[0]["temperature"] == 0.3


def test_openai_compatible_logprobs_judge(openai_env):
    import math

    with FakeOpenAI(lambda body: "Yes", top_logprobs=[("Yes", math.log(0.6)), (" no", math.log(0.2)), ("maybe", -1)]) as srv:
        spec = openai_env(srv.url)
        p = yes_probability(spec, "Is it?")
        assert p == pytest.approx(0.75)
        req = srv.requests[0]
        assert req["logprobs"] is True and req["top_logprobs"] == 20 and req["max_completion_tokens"] == 1


def test_both_yes_no_judges_read_the_top_logprobs_alike(openai_env):
    """The two judges share one path to a server: no logprobs in the reply is a NoLogprobsError (a
    ModelError) for both; a top list naming neither Yes nor No is P(Yes) 0.5 and log-odds 0."""
    from citegraph.tools.models import NoLogprobsError, yes_no_log_odds

    plain = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Yes"}}],
             "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    with FakeOpenAI(lambda body: plain) as srv:
        spec = openai_env(srv.url)
        for judge in (yes_probability, yes_no_log_odds):
            with pytest.raises(NoLogprobsError, match="returned no logprobs"):
                judge(spec, "Is it?")
        assert len(srv.requests) == 2 and all(r["top_logprobs"] == 20 for r in srv.requests)
    with FakeOpenAI(lambda body: "Maybe", top_logprobs=[("Maybe", -0.1), ("Perhaps", -1.0)]) as srv:
        spec = openai_env(srv.url)
        assert yes_probability(spec, "Is it?") == 0.5
        assert yes_no_log_odds(spec, "Is it?") == 0.0


def test_unreachable_endpoint_is_a_clear_error(openai_env):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    spec = openai_env(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ModelError, match=r"cannot connect to the endpoint .*after 2 attempts.*the run stops") as e:
        chat_text(spec, "hi")
    assert type(e.value).__name__ == "EndpointUnreachable" and str(e.value).count("\n") == 0


def test_usage_tracker_counts_openai_tokens(openai_env):
    from citegraph.tools.usage import UsageTracker

    with FakeOpenAI(lambda body: "ok") as srv:
        spec = openai_env(srv.url)
        t = UsageTracker()
        get_chat_model(spec).invoke("hi", config={"callbacks": [t]})
        assert t.totals()["prompt_tokens"] == 11 and t.totals()["completion_tokens"] == 7


@pytest.mark.parametrize("raw, expected", [("", 32), ("0", 0), (" 8 ", 8), ("x", "whole number"), ("-1", "0 or more")])
def test_prefix_states_capacity_from_the_environment(monkeypatch, raw, expected):
    from citegraph.errors import ModelError
    from citegraph.tools.models.llamacpp import prefix_states_capacity

    monkeypatch.setenv("CITEGRAPH_PREFIX_STATES", raw)
    if isinstance(expected, int):
        assert prefix_states_capacity() == expected
    else:
        with pytest.raises(ModelError, match=expected):
            prefix_states_capacity()


def test_reset_local_models_restarts_the_sampling_seeds():
    # sampled calls are seeded 0, 1, 2... per model; the runner's per-item reset restarts them, so
    # an item's samples do not depend on how many sampled calls ran before it (no model is loaded)
    from citegraph.tools.models import LlamaCppChat, register_chat_model, reset_local_models

    chat = LlamaCppChat(model_path="/nonexistent/model.gguf")
    register_chat_model("llamacpp-seedtest", chat)
    assert [next(chat._calls) for _ in range(3)] == [0, 1, 2]
    reset_local_models()
    assert next(chat._calls) == 0


def test_yes_no_log_odds_openai_first_token(openai_env):
    import math

    from citegraph.tools.models import yes_no_log_odds

    with FakeOpenAI(lambda body: "Yes", top_logprobs=[("Yes", math.log(0.5)), (" yes", math.log(0.1)),
                                                      ("No", math.log(0.2)), ("maybe", math.log(0.05))]) as srv:
        spec = openai_env(srv.url)
        assert yes_no_log_odds(spec, "Is it?") == pytest.approx(math.log(0.6) - math.log(0.2))
        req = srv.requests[0]
        assert req["logprobs"] is True and req["max_completion_tokens"] == 1
    # "No" outside the top list: bounded by the lowest listed log-probability
    with FakeOpenAI(lambda body: "Yes", top_logprobs=[("Yes", math.log(0.9)), ("maybe", math.log(0.01))]) as srv:
        spec = openai_env(srv.url)
        assert yes_no_log_odds(spec, "Is it?") == pytest.approx(math.log(0.9) - math.log(0.01))


def test_log_odds_sums_variants_and_scripted_judge(scripted):
    import math

    from citegraph.tools.models import yes_no_log_odds
    from citegraph.tools.models.llamacpp import _log_odds

    logits = [0.0, math.log(3.0), math.log(1.0), math.log(2.0)]
    assert _log_odds(logits, [1, 2], [3]) == pytest.approx(math.log(4.0) - math.log(2.0))
    spec, _ = scripted(judge=0.8)
    assert yes_no_log_odds(spec, "Relevant?") == pytest.approx(math.log(0.8 / 0.2))


def test_yes_no_judgements_are_counted_as_llm_calls(scripted):
    # GINGER's pairwise ranker and the nugget assigner call yes_probability; SQuAI's judge calls
    # yes_no_log_odds: both count one LLM call each against the active tracker (outside LangChain)
    from citegraph.tools.models import yes_no_log_odds, yes_probability
    from citegraph.tools.usage import UsageTracker

    spec, _ = scripted(judge=0.7)
    t = UsageTracker()
    with t.active():
        assert yes_probability(spec, "Is A better than B?") == pytest.approx(0.7)
        yes_no_log_odds(spec, "Relevant?")
    assert t.totals()["llm_calls"] == 2 and t.totals()["prompt_tokens"] == 6  # words, for a scripted model
    yes_probability(spec, "No tracker active: nothing to count.")
    assert t.totals()["llm_calls"] == 2


def test_judge_many_keeps_endpoint_judgements_in_flight_together_in_order_and_counted(openai_env, monkeypatch):
    # the evaluator's Yes/No judges (contextual relevancy, the nugget assigner, llm-judge) ask their
    # questions together: on an endpoint several are in flight at once; answers come back in the
    # order asked, and each is one LLM call for the tracker that is active where judge_many is called
    import math
    import threading
    import time

    from langchain_core.runnables import RunnableLambda

    from citegraph.tools.models import judge_many, judge_workers
    from citegraph.tools.usage import UsageTracker

    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def reply(body):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return "Yes"

    def tops(body):  # P(Yes) = k / 10 for the prompt "claim k"
        k = int(body["messages"][-1]["content"].split()[-1])
        return [("Yes", math.log(k / 10)), ("No", math.log(1 - k / 10))]

    monkeypatch.setenv("CITEGRAPH_JUDGE_WORKERS", "4")
    with FakeOpenAI(reply, top_logprobs=tops) as srv:
        spec = openai_env(srv.url)
        assert judge_workers(spec) == 4
        t = UsageTracker()
        t0 = time.perf_counter()
        got = RunnableLambda(lambda _: judge_many(spec, [f"claim {k}" for k in range(1, 9)])).invoke(
            None, config={"callbacks": [t]})
        took = time.perf_counter() - t0
    assert got == pytest.approx([k / 10 for k in range(1, 9)])
    assert state["most"] == 4 and took < 8 * 0.15  # 4 at a time: about two rounds, not eight
    assert t.totals()["llm_calls"] == 8


def test_judge_many_asks_an_in_process_model_one_after_another(scripted):
    import math

    from citegraph.tools.models import judge_many, judge_workers
    from citegraph.tools.usage import UsageTracker

    spec, model = scripted(judge=lambda text: 0.2 if "first" in text else 0.6)
    assert judge_workers(spec) == 1
    t = UsageTracker()
    with t.active():
        got = judge_many(spec, ["the first", "the second"], kind="yes_no_log_odds")
    assert got == pytest.approx([math.log(0.2 / 0.8), math.log(0.6 / 0.4)])
    assert t.totals()["llm_calls"] == 2
    with pytest.raises(ValueError, match="judge kind"):
        judge_many(spec, ["x"], kind="vote")


def test_llm_judge_verifier_on_an_endpoint_scores_pairs_together_as_one_at_a_time_would(openai_env, monkeypatch):
    import math
    import re as _re

    from citegraph.tools.verifier import get_verifier

    def tops(body):  # P(Yes) from the digit in the claim
        k = int(_re.findall(r"claim (\d)", body["messages"][-1]["content"])[-1])
        return [("Yes", math.log(k / 10)), ("No", math.log(1 - k / 10))]

    pairs = [(f"passage {k % 3}", f"claim {k}") for k in range(1, 10)]
    with FakeOpenAI(lambda body: "Yes", top_logprobs=tops) as srv:
        spec = openai_env(srv.url)
        monkeypatch.setenv("CITEGRAPH_JUDGE_WORKERS", "3")
        together = get_verifier(f"llm-judge:{spec}", cache=False).score(pairs)
        monkeypatch.setenv("CITEGRAPH_JUDGE_WORKERS", "1")
        alone = get_verifier(f"llm-judge:{spec}", cache=False).score(pairs)
    assert together == pytest.approx([k / 10 for k in range(1, 10)]) and together == pytest.approx(alone)
    assert len(srv.requests) == 18


# ------------------------------------------------------------------ any LangChain chat model
def test_init_spec_reaches_langchains_init_chat_model(monkeypatch):
    """``init:<provider>:<model>`` builds the model with LangChain's init_chat_model: here the openai
    provider against the fake server, so a real HTTP request is made."""
    import uuid

    from fake_openai import FakeOpenAI

    from citegraph.graphs.registry import build_graph
    from citegraph.state.vanilla import VanillaContext

    with FakeOpenAI(lambda body: "Alpha was founded in 1901 [1].") as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        model = f"m-{uuid.uuid4().hex[:6]}"
        out = build_graph("vanilla").invoke({"question": "When?", "documents": [{"title": "A", "text": "Alpha was founded in 1901."}]},
                                            context=VanillaContext(llm=f"init:openai:{model}"))
        assert srv.requests and srv.requests[0]["model"] == model
    assert out["answer"].sentences[0].citations == [1]


def test_init_spec_errors_are_one_line():
    from citegraph.errors import InputError, ModelError
    from citegraph.tools.models.registry import check_chat_spec, get_chat_model

    with pytest.raises(InputError, match="init spec needs a provider and a model"):
        check_chat_spec("init:anthropic")
    with pytest.raises(ModelError, match="Unsupported provider='nope'"):
        get_chat_model("init:nope:some-model")


def test_a_langchain_provider_prefix_is_an_init_chat_model_spec():
    """``anthropic:<model>`` (any provider init_chat_model knows by name, openai excepted) is LangChain's,
    as ``init:anthropic:<model>`` is; an unknown prefix is still refused before any work."""
    from citegraph.errors import InputError, ModelError
    from citegraph.tools.models.registry import check_chat_spec, get_chat_model, parse_chat_spec

    assert parse_chat_spec("anthropic:claude-sonnet-4-5") == ("init", "anthropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5")
    assert parse_chat_spec("ollama:llama3.1").kind == "init" and parse_chat_spec("openai:gpt-4o").kind == "openai"
    assert check_chat_spec("anthropic:claude-sonnet-4-5") == "anthropic:claude-sonnet-4-5"
    try:
        import langchain_anthropic  # noqa: F401
    except ImportError:  # the provider's package is the user's to install: its one-line advice
        with pytest.raises(ModelError, match="langchain-anthropic") as e:
            get_chat_model("anthropic:claude-sonnet-4-5")
        assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="unknown model spec 'anthropc:claude'"):
        check_chat_spec("anthropc:claude")


def test_a_context_takes_the_chat_model_object_an_app_holds():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from citegraph.graphs.registry import build_graph
    from citegraph.state.vanilla import VanillaContext
    from citegraph.tools.models.registry import get_chat_model

    model = FakeListChatModel(responses=["Alpha was founded in 1901 [1]."])
    ctx = VanillaContext(llm=model)
    assert ctx.llm.startswith("object:FakeListChatModel:") and get_chat_model(ctx.llm) is model
    assert VanillaContext(llm=model).llm == ctx.llm  # the same object, the same spec
    out = build_graph("vanilla").invoke({"question": "When?", "documents": [{"title": "A", "text": "Alpha was founded in 1901."}]},
                                        context=ctx)
    assert out["answer"].render() == "Alpha was founded in 1901 [1]."
