"""Where a benchmark figure came from: code version, libraries, models, machine.

Every output record carries the provenance of the process that produced it, so a report can say
which commit made its numbers, and notice when a resumed run mixed items from two versions.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from citegraph import __version__
from citegraph.tools.local_model import EMBEDDED
from citegraph.tools.verifier import ASSET_DIR, checks, parse_judge_spec

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def git_revision() -> str | None:
    """The short commit of the checkout the package is imported from, ``+dirty`` when tracked files
    under the package differ from it; None outside a git checkout (an installed wheel)."""
    root = PACKAGE_DIR.parent
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=10)
        # a wheel installed into a checkout's .venv sits inside that work tree too: only a package
        # at the top of its own work tree is that commit's code
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root.resolve():
            return None
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                str(PACKAGE_DIR)], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def model_identity(spec: str | None) -> str | None:
    """A chat model spec with what pins it down: the sha256 prefix of an embedded GGUF."""
    if not spec:
        return None

    if spec in EMBEDDED:
        return f"{spec} (sha256 {EMBEDDED[spec].sha256[:12]})"
    if spec.partition(":")[0] == "openai":
        return f"{spec} at {endpoint_url()}"
    return spec


def endpoint_url() -> str:
    """The OpenAI-compatible endpoint ``openai:`` specs reach: its base URL without credentials
    (a ``user:password@`` part is dropped; the API key is never recorded)."""
    from urllib.parse import urlsplit, urlunsplit

    url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "(unparseable OPENAI_BASE_URL)"


@functools.lru_cache(maxsize=None)
def _file_sha256(path: str) -> str | None:
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def verifier_identity(spec: str | None) -> str | None:
    """A verifier spec with what pins it down: the sha256 prefix of the shipped ``default`` weights,
    or of the judge's embedded chat model (``llm-judge:local``)."""
    if not spec:
        return None
    if spec.endswith("+checks") and len(spec) > len("+checks"):  # the base's identity and the rules' version

        sha = _file_sha256(checks.__file__)
        return f"{verifier_identity(spec[: -len('+checks')])} +checks" + (f" (sha256 {sha[:12]})" if sha else "")
    if spec == "default":
        sha = _file_sha256(str(ASSET_DIR / "model.safetensors"))
        return f"default (sha256 {sha[:12]})" if sha else spec
    name, _, arg = spec.partition(":")
    if name == "llm-judge":
        chat, prompt = parse_judge_spec(arg)
        return f"llm-judge:{model_identity(chat)}" + ("" if prompt == "ours" else f" prompt {prompt}")
    return spec


@functools.lru_cache(maxsize=None)
def _static() -> dict[str, Any]:
    return {
        "citegraph": __version__,
        "git": git_revision(),
        "python": platform.python_version(),
        "llama_cpp_python": _version("llama_cpp_python"),
        "torch": _version("torch"),
        "langgraph": _version("langgraph"),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


def provenance(llm: str | None = None, verifier: str | None = None) -> dict[str, Any]:
    """The provenance of this process for a run with these model specs."""
    return {**_static(), "llm": model_identity(llm), "verifier": verifier_identity(verifier)}


def code_label(p: dict[str, Any] | None) -> str:
    """What decides an output besides the settings: ``citegraph 0.1.0 (git abc123), llama-cpp-python
    0.3.36, chat model local (sha256 …), verifier default (sha256 …)``; ``unknown`` for records written before provenance existed."""
    if not p:
        return "unknown (no provenance recorded)"
    git = p.get("git")
    parts = [f"citegraph {p.get('citegraph')}" + (f" (git {git})" if git else "")]
    if p.get("llama_cpp_python"):
        parts.append(f"llama-cpp-python {p['llama_cpp_python']}")
    if p.get("llm"):
        parts.append(f"chat model {p['llm']}")
    if p.get("verifier"):
        parts.append(f"verifier {p['verifier']}")
    return ", ".join(parts)


def summarize_records(records: Iterable[dict]) -> Counter:
    """How many records each code version produced."""
    return Counter(code_label((r.get("citegraph") or {}).get("provenance")) for r in records)
