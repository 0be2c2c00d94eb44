"""Named per-dataset settings: a preset is a set of Context overrides per method, from the papers.

``citegraph ask|run|bench --preset NAME`` applies the preset's overrides for the chosen method(s)
first; ``--set`` and a bench variant's own settings are applied after it and win. The preset and
the settings it applied are recorded in the output file's ``args`` (``preset``, ``preset_settings``),
and ``citegraph graphs`` lists every preset. Nothing is ever switched by a data set's name: without
``--preset`` every method runs with its Context defaults.

Where the presets come from:

* RAAC, Table 7 (Qwen2.5-7B main experiments): D = 5 documents, k = 5 TextAgent rounds, tau = 0.8
  and M = 1 Summary-Calibration round on ASQA, M = 2 on ELI5. D, k and tau are the RaacContext
  defaults (``top_docs``, ``k``, ``tau``); M is ``max_calibration_rounds``. Both presets name all
  four, so a preset run records them even where they equal the defaults.
* GenerationPrograms, Appendix B: on ASQA, where some retrieved passages are irrelevant, the paper
  first asks the LLM whether each document is relevant and drops the irrelevant ones
  (``relevance_filter``); the asqa preset turns that on. LFQA (the paper's other QA set, closest
  to ELI5) has no such step, so the eli5 preset leaves GenerationPrograms at its defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from citegraph.errors import InputError


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # method -> {knob: value}
    source: str = ""


_RAAC_SHARED = {"top_docs": 5, "k": 5, "tau": 0.8}

PRESETS: dict[str, Preset] = {
    "asqa": Preset(
        "asqa", "ASQA (short factoid answers, ambiguous questions)",
        {"raac": {**_RAAC_SHARED, "max_calibration_rounds": 1},
         "genprog": {"relevance_filter": True}},
        source="RAAC Table 7 (D=5, k=5, tau=0.8, M=1); GenerationPrograms Appendix B (relevance filtering on ASQA)",
    ),
    "eli5": Preset(
        "eli5", "ELI5 (long-form explanatory answers)",
        {"raac": {**_RAAC_SHARED, "max_calibration_rounds": 2}},
        source="RAAC Table 7 (D=5, k=5, tau=0.8, M=2)",
    ),
}


def preset_names() -> list[str]:
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    key = (name or "").strip().lower()
    if key not in PRESETS:
        raise InputError(f"unknown preset {name!r}; available: {', '.join(PRESETS)}")
    return PRESETS[key]


def preset_overrides(name: str | None, method: str) -> dict[str, Any]:
    """The preset's Context overrides for ``method`` (empty when no preset is given or the preset
    does not touch that method)."""
    if not name:
        return {}
    return dict(get_preset(name).settings.get(method, {}))
