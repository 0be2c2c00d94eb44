"""OpenTelemetry traces of a run, in the OpenInference conventions (off by default).

``enable("http://127.0.0.1:6006")`` sends spans over OTLP/HTTP to any collector: Arize Phoenix running
locally, Langfuse, LangSmith (their headers through OpenTelemetry's own ``OTEL_EXPORTER_OTLP_HEADERS``).
LangChain and LangGraph runs (the graph, each node, each chat-model call with its messages, reply and
token counts, each LangChain retriever) are traced by ``openinference-instrumentation-langchain``; the two
things LangChain does not see get their own spans here, under the node that made them:

* every verifier call (``EVALUATOR``): the verifier, the pairs scored and the cache hits, and per pair
  the claim, the premise (cut at 1,000 characters) and its score;
* every index search (``RETRIEVER``): the query, mode, k and the hits with their chunk ids and scores.

When tracing is off nothing of OpenTelemetry is imported and :func:`span` is a ``nullcontext``. The CLI
turns it on with ``--trace URL``; an app sets ``CITEGRAPH_TRACE=URL`` (read when a graph is built) or
calls :func:`enable`. ``CITEGRAPH_TRACE_PROJECT`` names the Phoenix project (default ``citegraph``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import socket
import threading
from typing import Any, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

from citegraph.errors import InputError
from citegraph.settings import setting

ENV = "CITEGRAPH_TRACE"
PROJECT_ENV = "CITEGRAPH_TRACE_PROJECT"
PREMISE_CHARS = 1000

log = logging.getLogger(__name__)
_lock = threading.Lock()
_on: dict[str, Any] = {}  # endpoint, provider, instrumentor, tracer while tracing is on


def traces_url(url: str) -> str:
    """The OTLP/HTTP traces endpoint for ``url``: a collector's base URL gets ``/v1/traces``."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"--trace needs an http(s) URL of an OTLP collector (e.g. http://127.0.0.1:6006), got {url!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1/traces"):
        path += "/v1/traces"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def enabled() -> bool:
    return bool(_on)


def endpoint() -> str | None:
    return _on.get("endpoint")


def _reachable(url: str, timeout_s: float = 2.0) -> bool:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def enable(url: str, project: str | None = None, *, check: bool = True) -> str:
    """Export this process's runs to ``url`` from now on; returns the traces endpoint. Calling it again
    with the same endpoint does nothing; with another one it switches. ``check``: an ``InputError`` when
    nothing accepts a connection there (a run's spans would be lost)."""
    target = traces_url(url)
    if check and _on.get("endpoint") != target and not _reachable(target):
        raise InputError(f"no trace collector answers at {target} (start one, e.g. `phoenix serve`; docs/operations.md#traces)")
    with _lock:
        if _on.get("endpoint") == target:
            return target
        if _on:
            _shutdown_locked()
        try:
            from openinference.instrumentation.langchain import LangChainInstrumentor
            from opentelemetry import trace as trace_api
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as e:
            raise InputError(f"tracing needs the 'trace' extra (pip install 'citegraph[trace]'): {e.name} is missing") from e
        project = project or setting("trace_project") or "citegraph"
        provider = TracerProvider(resource=Resource.create(
            {"service.name": "citegraph", "openinference.project.name": project}))
        exporter = _Counted(OTLPSpanExporter(endpoint=target))
        provider.add_span_processor(BatchSpanProcessor(exporter))
        # the exporter logs each retry of a failed batch; the count of lost spans is said once instead
        logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter").setLevel(logging.CRITICAL)
        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        _on.update(endpoint=target, provider=provider, exporter=exporter, instrumentor=instrumentor, project=project,
                   tracer=trace_api.get_tracer("citegraph", tracer_provider=provider), trace_api=trace_api)
    return target


def enable_from_env() -> str | None:
    """Turn tracing on when ``CITEGRAPH_TRACE`` names a collector (an app's switch); None when unset. A
    collector that does not answer is a logged warning, not an error: an app runs on untraced."""
    url = setting("trace")
    if not url or enabled():
        return endpoint() if url else None
    try:
        return enable(url)
    except InputError as e:
        log.warning("%s=%s: %s; running without traces", ENV, url, e)
        return None


def flush(timeout_s: float = 10.0) -> int:
    """Send the spans still buffered; returns how many spans never reached the collector so far."""
    provider = _on.get("provider")
    if provider is None:
        return 0
    provider.force_flush(int(timeout_s * 1000))
    return _on["exporter"].lost


class _Counted:
    """An OpenTelemetry span exporter that counts the spans it failed to deliver."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.lost = inner, 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.lost += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def disable() -> None:
    """Send what is buffered and stop tracing (LangChain's callbacks are restored)."""
    with _lock:
        _shutdown_locked()


def _shutdown_locked() -> None:
    if not _on:
        return
    try:
        _on["instrumentor"].uninstrument()
    finally:
        provider = _on["provider"]
        _on.clear()
        provider.shutdown()


atexit.register(disable)


@contextlib.contextmanager
def span(name: str, kind: str, attributes: dict[str, Any] | None = None) -> Iterator[Any]:
    """A span named ``name`` of OpenInference kind ``kind`` under the running node's span (or the current
    OpenTelemetry span); yields None and costs nothing when tracing is off. Set more attributes on the
    yielded span with :func:`set_attributes`."""
    if not _on:
        yield None
        return
    trace_api = _on["trace_api"]
    parent = None
    try:
        from openinference.instrumentation.langchain import get_current_span

        node = get_current_span()
        parent = trace_api.set_span_in_context(node) if node is not None else None
    except Exception:  # noqa: BLE001 - outside a LangChain run: the current OpenTelemetry context
        parent = None
    with _on["tracer"].start_as_current_span(name, context=parent) as s:
        s.set_attribute("openinference.span.kind", kind)
        set_attributes(s, attributes or {})
        yield s  # an exception is recorded on the span and sets its status to ERROR
        s.set_status(_on["trace_api"].Status(_on["trace_api"].StatusCode.OK))


def set_attributes(s: Any, attributes: dict[str, Any]) -> None:
    if s is None:
        return
    for key, value in attributes.items():
        if value is None:
            continue
        if not isinstance(value, (str, bool, int, float)):
            value = json.dumps(value, ensure_ascii=False, default=str)
        s.set_attribute(key, value)


def verifier_attributes(spec: str, pairs: Sequence[tuple[str, str]], scores: Sequence[float], cache_hits: int) -> dict[str, Any]:
    """An EVALUATOR span's attributes for one verifier call (claims as input, scores as output)."""
    rows = [{"claim": h, "premise": p[:PREMISE_CHARS] + ("…" if len(p) > PREMISE_CHARS else ""), "score": round(float(s), 4)}
            for (p, h), s in zip(pairs, scores)]
    return {"citegraph.verifier.spec": spec, "citegraph.verifier.pairs": len(pairs),
            "citegraph.verifier.cache_hits": cache_hits,
            "input.value": json.dumps([r["claim"] for r in rows], ensure_ascii=False), "input.mime_type": "application/json",
            "output.value": json.dumps(rows, ensure_ascii=False), "output.mime_type": "application/json"}


def retrieval_attributes(query: str, hits: Sequence[Any], mode: str, k: int) -> dict[str, Any]:
    """A RETRIEVER span's attributes for one index search (OpenInference ``retrieval.documents``)."""
    out: dict[str, Any] = {"input.value": query, "citegraph.retrieval.mode": mode, "citegraph.retrieval.k": k}
    for i, h in enumerate(hits):
        pre = f"retrieval.documents.{i}.document"
        out[f"{pre}.id"] = h.chunk.id
        out[f"{pre}.content"] = h.chunk.text
        out[f"{pre}.score"] = float(h.score)
        out[f"{pre}.metadata"] = {"doc_id": h.chunk.doc_id, "title": h.chunk.title, "rank": h.rank}
    return out
