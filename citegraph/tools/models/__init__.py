"""The model layer: chat models resolved from spec strings, once per process.

Specs (the ``llm`` field of every graph's Context):

- ``local``               the embedded Qwen2.5-Coder-1.5B-Instruct GGUF (offline default)
- ``local-small``         the embedded 0.5B variant
- ``llamacpp:<path>``     any GGUF file
- ``server:<model>``      ``local``, ``local-small`` or a GGUF path behind a managed llama-server
                          subprocess: ``$CITEGRAPH_SERVER_SLOTS`` sequences (default 1) decoded per
                          step, KV cache kept per slot and in host memory, ``$CITEGRAPH_SERVER_DRAFT``
                          for speculative decoding
- ``openai:<model>``      langchain-openai ``ChatOpenAI``; ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``
                          from the environment, so OpenAI, vLLM and Ollama all work
- ``fake:<name>``         a scripted model registered with :func:`register_chat_model` (tests)

Nodes never construct models: they call :func:`chat_text`, :func:`structured` or
:func:`yes_probability` with the spec string from their Context.

The package's modules: ``base`` (the prompt type, :class:`LocalChatModel`), ``llamacpp`` (the in-process
llama.cpp adapter), ``server`` (the managed llama-server), ``registry`` (specs to models), ``calls`` (one chat call under the failure policy),
``structured`` (JSON replies validated against a schema), ``judgements`` (Yes/No from the next-token
distribution), ``cited`` (replies that cite by construction). Every public name is importable from here.
"""

from citegraph.tools.models.base import LocalChatModel, Messages, as_messages
from citegraph.tools.models.llamacpp import LOAD_TIMES, LlamaCppChat
from citegraph.tools.models.server import LlamaServer, LlamaServerChat, running_servers, stop_servers
from citegraph.tools.models.registry import (
    CHAT_SPECS,
    DEFAULT_CONTEXT_WINDOW,
    ChatSpec,
    check_chat_spec,
    context_window,
    get_chat_model,
    parse_chat_spec,
    register_chat_model,
    reset_local_models,
    token_counter,
    want_server_slots,
)
from citegraph.tools.models.calls import TRUNCATED, Reply, chat_reply, chat_text
from citegraph.tools.models.structured import StructuredOutputError, extract_json, structured
from citegraph.tools.models.judgements import NoLogprobsError, judge_many, judge_workers, yes_no_log_odds, yes_probability
from citegraph.tools.models.cited import (
    CitedReply,
    cited_sentences,
    citation_grammar,
    citation_schema,
    sentences_from_json,
    sentences_from_text,
)

__all__ = [
    "CHAT_SPECS", "DEFAULT_CONTEXT_WINDOW", "LOAD_TIMES", "TRUNCATED",
    "ChatSpec", "CitedReply", "LlamaCppChat", "LlamaServer", "LlamaServerChat", "LocalChatModel", "Messages", "NoLogprobsError", "Reply", "StructuredOutputError",
    "as_messages", "chat_reply", "chat_text", "check_chat_spec", "citation_grammar", "citation_schema",
    "cited_sentences", "context_window", "extract_json", "get_chat_model", "parse_chat_spec", "register_chat_model",
    "reset_local_models", "sentences_from_json", "sentences_from_text", "structured", "token_counter",
    "yes_no_log_odds", "yes_probability", "judge_many", "judge_workers", "running_servers", "stop_servers",
    "want_server_slots",
]
