"""Shared fixtures: scripted models, stub verifiers, and the location of ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CITEGRAPH_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """A file under ../shared/data, or skip the test with a clear reason."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared data not available: {p} (tests that need ../shared/data are skipped)")
    return p


@pytest.fixture
def docs():
    from citegraph.state import Document

    return [
        Document(id="a", title="Alpha", text="Alpha was founded in 1901 by Ann."),
        Document(id="b", title="Beta", text="Beta is a river in Chile."),
        Document(id="c", title="Gamma", text="Gamma won the 1990 prize."),
    ]


@pytest.fixture
def scripted():
    """Register a scripted chat model under a unique spec; returns (spec, model)."""
    from citegraph.testing import scripted_model

    def make(script=None, judge=0.5):
        return scripted_model(script, judge)

    return make
