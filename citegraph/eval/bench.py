"""``citegraph bench``: run several methods on the same items with the same models, score them,
and write a report folder.

    <out>/raw/<method>.json          outputs (ALCE-compatible, resumable through run_dataset)
    <out>/raw/<method>.score.json    per-item scores
    <out>/raw/<method>.score.<verifier>.json   per-item scores by each --score-verifier (written as it goes)
    <out>/report.md                  quality and cost per method: mean [95% bootstrap interval]
    <out>/summary.json               method → metric → mean (for scripts)
    <out>/citation_f1_vs_tokens.png  ALCE citation F1 against LLM tokens per question
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Sequence

from citegraph.errors import InputError
from citegraph.eval import scoring
from citegraph.graphs.presets import get_preset, preset_overrides
from citegraph.graphs.registry import entry, method_context
from citegraph.metrics import resolve_verifier
from citegraph.run.datasets import attach_answers, check_answer_field, load_items
from citegraph.run.provenance import provenance, summarize_records
from citegraph.run.runner import run_dataset
from citegraph.state.base import CliText
from citegraph.tools.checkpoints import open_checkpointer

# (key, header) of the report's columns, in order; absent metrics are skipped
QUALITY_COLUMNS = [
    ("citation_rec", "Cit. recall"), ("citation_prec", "Cit. precision"), ("citation_f1", "Cit. F1"),
    ("raac_f1", "RAAC cit. F1"), ("str_em", "STR-EM"), ("claims_nli", "Claims"), ("qampari_rec", "QAMPARI rec"),
    ("qampari_rec_top5", "QAMPARI rec-5"), ("rougeLsum", "ROUGE-Lsum"), ("length", "Words"),
    ("uncited_pct", "Uncited sent. %"), ("cited_or_flagged_pct", "Cited or flagged %"), ("flagged_pct", "Flagged %"), ("sentences", "Sentences"), ("words_per_sentence", "Words/sent."),
    ("citations_per_sentence", "Cit./sent."), ("module_entail_before", "Module entail. before"),
    ("module_entail_after", "Module entail. after"),
]
COST_COLUMNS = [
    ("llm_calls", "LLM calls"), ("tokens", "Tokens"), ("verifier_pairs", "Verifier pairs"), ("seconds", "Seconds"),
]
#: the columns a second verifier changes (the rest of a row does not depend on the verifier)
VERIFIER_COLUMNS = {"citation_rec", "citation_prec", "citation_f1", "raac_f1", "claims_nli"}
#: items per score-file write when scoring with an extra verifier (an LLM judge takes minutes per item)
EXTRA_SAVE_EVERY = 1


def verifier_slug(spec: str) -> str:
    """A file-name-safe form of a verifier spec: ``llm-judge:local:table16`` → ``llm-judge_local_table16``."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", spec).strip("_") or "verifier"


_VARIANT_SPLIT = re.compile(r":(?=\s*[A-Za-z_]\w*\s*=)")


def parse_method(label: str) -> tuple[str, dict[str, Any]]:
    """``"genprog:refine=true:max_candidates=3"`` → ``("genprog", {"refine": "true", "max_candidates": "3"})``
    (CliText values, which the Context reads as True and 3).

    A variant is a method plus Context settings of its own (read by each knob's type), so
    ablations and on/off comparisons sit in one report; its label names its raw files.
    """
    # split only at a ":" that starts a new key=, so a value may hold one: "raac:verifier=llm-judge:local"
    name, *settings = [x.strip() for x in _VARIANT_SPLIT.split(label)]
    if ":" in name:
        raise InputError(f"method variant {label!r}: expected method:key=value[:key=value], got {name!r}")
    own: dict[str, Any] = {}
    for s in settings:
        k, _, v = s.partition("=")
        own[k.strip()] = CliText(v)
    return name, own


def _cell(mean: float | None, ci: Sequence[float] | None, digits: int = 1) -> str:
    if mean is None:
        return "–"
    s = f"{mean:.{digits}f}"
    if ci:
        s += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return s


def markdown_table(scores: dict[str, dict], only: set[str] | None = None) -> str:
    """Rows: methods; columns: quality then cost metrics present in any method (``only``: these keys)."""
    present = set()
    for res in scores.values():
        present |= {k for k, v in res["summary"].items() if v is not None}
    cols = [(k, h) for k, h in QUALITY_COLUMNS + COST_COLUMNS if k in present and (only is None or k in only)]
    lines = ["| Method | N | " + " | ".join(h for _, h in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for method, res in scores.items():
        summ, ci = res["summary"], res.get("ci95", {})
        cells = []
        for k, _ in cols:
            digits = 2 if k in ("llm_calls", "seconds") else (0 if k in ("tokens", "verifier_pairs") else 1)
            cells.append(_cell(summ.get(k), ci.get(k), digits))
        lines.append(f"| {method} | {int(summ.get('n_items', 0))} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(scores: dict[str, dict], path: Path) -> None:
    """ALCE citation F1 against tokens per question (mean, with the 95% intervals as error bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for method, res in scores.items():
        s, ci = res["summary"], res.get("ci95", {})
        x, y = s.get("tokens"), s.get("citation_f1")
        if x is None or y is None:
            continue
        xerr = [[x - ci["tokens"][0]], [ci["tokens"][1] - x]] if "tokens" in ci else None
        yerr = [[y - ci["citation_f1"][0]], [ci["citation_f1"][1] - y]] if "citation_f1" in ci else None
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt="o", capsize=3, label=method)
        ax.annotate(method, (x, y), textcoords="offset points", xytext=(6, 6))
    ax.set_xlabel("LLM tokens per question (prompt + completion)")
    ax.set_ylabel("ALCE citation F1")
    ax.set_title("Citation quality vs cost")
    ax.grid(True, alpha=0.3)
    if ax.has_data():
        ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def code_lines(code: dict[str, Counter], llm: str | None) -> list[str]:
    """The report's provenance lines: which code, llama.cpp and chat model produced the items (per
    method when they differ, with a warning when one method's items come from several) and this
    process' software."""
    labels = {label for c in code.values() for label in c}
    lines = []
    if len(labels) == 1:
        lines.append(f"- code: {labels.pop()} for every item")
    elif labels:
        lines.append("- code, per method: " + "; ".join(
            f"{m}: " + (", ".join(f"{label} ×{n}" for label, n in c.most_common()) or "no items")
            for m, c in code.items()))
        mixed = [m for m, c in code.items() if len(c) > 1]
        if mixed:
            lines.append(f"- **warning**: the items of {', '.join(mixed)} were produced by more than one version of "
                         "the code or models (a run resumed after an update); re-run with --overwrite for one")
    p = provenance(llm)
    libs = ", ".join(f"{k.replace('_', '-')} {p[k]}" for k in ("torch", "langgraph") if p.get(k))
    lines.append(f"- software (this process): Python {p['python']}, {libs}; {p['cpus']} CPUs ({p['machine']})")
    return lines


def item_counts(methods: Sequence[str], selected: Sequence[str], scores: dict[str, dict],
                runs: dict[str, dict]) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per method: items ``finished`` (in its raw file), ``failed`` in this run, ``missing`` (selected
    but not finished: failed now or earlier, or not run); and the common items, in selection order:
    those every method finished (none when a method finished none)."""
    done = {m: {s["id"] for s in scores[m]["items"]} if m in scores else set() for m in methods}
    counts = {m: {"finished": sum(i in done[m] for i in selected), "failed": int(runs.get(m, {}).get("failed") or 0),
                  "missing": sum(i not in done[m] for i in selected)} for m in methods}
    return counts, [i for i in selected if all(i in done[m] for m in methods)]


def on_items(res: dict, ids: Sequence[str]) -> dict:
    """A score result restricted to the items ``ids``: its summary and bootstrap intervals again."""
    wanted = set(ids)
    items = [s for s in res["items"] if s.get("id") in wanted]
    return {**res, "items": items, "summary": scoring.summarize(items),
            "ci95": {k: list(v) for k, v in scoring.bootstrap(items).items()}}


def item_lines(counts: dict[str, dict[str, int]], scores: dict[str, dict], common: Sequence[str]) -> list[str]:
    """The report's lines on unequal item sets: each method's finished/failed/missing items and, when
    a method finished more than the common items, its scores on all of them (not comparable across
    methods); nothing when every method finished every item."""
    if all(c["missing"] == 0 and c["failed"] == 0 for c in counts.values()):
        return []
    lines = ["Items per method (the table above uses only the common items):", "",
             "| Method | finished | failed (this run) | missing (not finished) |", "|---|---|---|---|"]
    lines += [f"| {m} | {c['finished']} | {c['failed']} | {c['missing']} |" for m, c in counts.items()]
    lines.append("")
    more = {m: res for m, res in scores.items() if len(res["items"]) > len(common)}
    if more:
        lines += ["Each method on all the items it finished (different item sets: not a comparison):", "",
                  markdown_table(more), ""]
    return lines


def run_bench(
    methods: Sequence[str],
    data: str | Path,
    out_dir: str | Path,
    *,
    limit: int | None = None,
    llm: str | None = None,
    verifier: str | None = None,
    overrides: dict[str, Any] | None = None,
    preset: str | None = None,
    dataset: str | None = None,
    concurrency: int = 1,
    overwrite: bool = False,
    on_method: Callable[[str, dict], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    on_error: Callable[[str, Any, BaseException], None] | None = None,
    answer_field: str | None = None,
    checkpoint: str | None = None,
    score_verifiers: Sequence[str] = (),
    workers_db: str | None = None,
    lease_s: float | None = None,
) -> dict:
    """Run, score and report. Returns ``{"scores": {method: score result}, "runs": {...}, "report": path}``.

    ``score_verifiers``: more verifiers that score the same outputs (not used by the methods), each
    reported in a table of its own (the citation and claim columns) and written item by item to
    ``raw/<method>.score.<verifier>.json``, so a stopped bench keeps what an LLM judge scored.

    ``preset`` (``citegraph.graphs.presets``) gives each method its per-dataset settings first;
    ``overrides`` (``--set``) and a variant's own settings are applied after it and win.

    ``workers_db``: this process is one of several workers sharing every method's items through that
    PostgreSQL database (``run_dataset``); each worker scores and reports the whole job."""
    plan = _plan(methods, data, out_dir, limit=limit, llm=llm, verifier=verifier, overrides=overrides, preset=preset,
                 answer_field=answer_field, checkpoint=checkpoint, score_verifiers=score_verifiers)
    runs, scores, extra_scores = _run_and_score(
        plan, dataset=dataset, concurrency=concurrency, overwrite=overwrite, on_method=on_method, progress=progress,
        on_error=on_error, checkpoint=checkpoint, workers_db=workers_db, lease_s=lease_s)
    return _report(plan, runs, scores, extra_scores, dataset=dataset)


@dataclass
class _BenchPlan:
    """What a bench runs, checked before any work: the variants, each one's registry entry and Context, the
    items, the verifiers that score, the output folder."""

    methods: list[str]
    base: dict[str, str]
    entries: dict[str, Any]
    contexts: dict[str, Any]
    items: list
    data: str | Path
    limit: int | None
    preset_name: str | None
    answer_field: str | None
    eval_verifier: str
    extra: list[str]
    out: Path


def _plan(methods, data, out_dir, *, limit, llm, verifier, overrides, preset, answer_field, checkpoint,
          score_verifiers) -> _BenchPlan:
    """Every input checked (one-line errors, before any generation) and the variants' Contexts built."""
    methods = [m.strip() for m in methods if m.strip()]
    if not methods:
        raise InputError("--methods needs at least one method")
    if len(set(methods)) != len(methods):
        raise InputError("--methods lists a method twice")
    base: dict[str, str] = {}
    own: dict[str, dict[str, Any]] = {}
    entries = {}  # each variant's registry entry, resolved once
    for m in methods:
        base[m], own[m] = parse_method(m)
        entries[m] = entry(base[m])  # unknown method → InputError
        if any(c in m for c in '/\\'):
            raise InputError(f"method variant {m!r}: '/' and '\\' are not allowed (the label names a file)")
    if limit is not None and limit < 1:
        raise InputError("--limit must be at least 1")
    overrides = dict(overrides or {})
    preset_name = get_preset(preset).name if preset else None  # unknown preset → InputError, before any work
    contexts = {}
    for m in methods:
        bad = sorted(set(own[m]) - entries[m].knob_names())
        if bad:
            raise InputError(f"method variant {m!r}: {base[m]} has no setting {', '.join(bad)}")
        # --set applies to every method that has the knob; a variant's own settings must all be known (above)
        contexts[m] = method_context(entries[m], overrides={**overrides, **own[m]}, preset=preset_name, llm=llm,
                                     verifier=verifier, only_known=True)
    unused = [k for k in overrides if not any(k in {f.name for f in fields(c)} for c in contexts.values())]
    if unused:
        raise InputError(f"--set {', '.join(unused)}: no selected method has such a setting")
    check_answer_field(list(entries.values()), answer_field)
    items = load_items(data, limit=limit)
    resolve_verifier(verifier or "default")  # fail fast, before any generation
    extra = [v.strip() for v in score_verifiers if v and v.strip()]
    if len(set(extra)) != len(extra) or (verifier or "default") in extra:
        raise InputError("--score-verifier names a verifier twice (or the run's own --verifier)")
    for spec in extra:
        resolve_verifier(spec)
    if checkpoint:
        open_checkpointer(checkpoint)  # a bad store fails here too
    out = Path(out_dir)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    return _BenchPlan(methods, base, entries, contexts, items, data, limit, preset_name, answer_field,
                      verifier or "default", extra, out)


def _run_and_score(plan: _BenchPlan, *, dataset, concurrency, overwrite, on_method, progress, on_error, checkpoint,
                   workers_db, lease_s) -> tuple[dict, dict, dict]:
    """Each variant run into ``raw/<variant>.json`` (resumable), then scored by the run's verifier and by
    every ``--score-verifier`` (items scored before keep their scores)."""
    out, items, extra = plan.out, plan.items, plan.extra
    runs: dict[str, dict] = {}
    scores: dict[str, dict] = {}
    extra_scores: dict[str, dict[str, dict]] = {spec: {} for spec in extra}
    for m in plan.methods:
        raw = out / "raw" / f"{m}.json"
        t0 = time.perf_counter()
        m_items = attach_answers(items, plan.answer_field) if plan.entries[m].answer_input else items
        runs[m] = run_dataset(
            plan.entries[m], m_items, raw, plan.contexts[m], concurrency=concurrency, overwrite=overwrite,
            progress=(lambda d, t, m=m: progress(m, d, t)) if progress else None,
            on_error=(lambda it, e, m=m: on_error(m, it, e)) if on_error else None,
            extra_args={"input": str(Path(plan.data).resolve()), "limit": plan.limit, "variant": m,
                        **({"preset": plan.preset_name,
                            "preset_settings": preset_overrides(plan.preset_name, plan.base[m])}
                           if plan.preset_name else {})},
            checkpoint=checkpoint, workers_db=workers_db, lease_s=lease_s,
        )
        runs[m]["wall_seconds"] = round(time.perf_counter() - t0, 2)
        if not raw.exists():
            continue
        # items scored by an earlier (killed) bench keep their scores: only new or changed ones are scored
        scores[m] = scoring.score_file(raw, verifier=plan.eval_verifier, dataset=dataset,
                                       only_ids={it.id for it in items}, reuse=True)
        if on_method:
            on_method(m, scores[m])
        for spec in extra:
            extra_scores[spec][m] = scoring.score_file(
                raw, verifier=spec, dataset=dataset, only_ids={it.id for it in items}, reuse=True,
                output=out / "raw" / f"{m}.score.{verifier_slug(spec)}.json", save_every=EXTRA_SAVE_EVERY)
            if on_method:
                on_method(m, extra_scores[spec][m])
    return runs, scores, extra_scores


def _report(plan: _BenchPlan, runs: dict, scores: dict, extra_scores: dict, *, dataset) -> dict:
    """The tables on the items every variant finished: ``summary.json``, one summary per extra verifier,
    the citation-F1-vs-tokens plot and ``report.md``."""
    out, items, methods, data, limit = plan.out, plan.items, plan.methods, plan.data, plan.limit
    preset_name, eval_verifier = plan.preset_name, plan.eval_verifier
    counts, common = item_counts(methods, [it.id for it in items], scores, runs)
    compared = {m: on_items(res, common) for m, res in scores.items()}
    table = markdown_table(compared)
    summary = {m: {**res["summary"], **{f"n_{k}": float(v) for k, v in counts[m].items()}}
               for m, res in compared.items()}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    extra_tables: dict[str, str] = {}
    for spec, by_method in extra_scores.items():
        done = {m: on_items(res, common) for m, res in by_method.items()}
        extra_tables[spec] = markdown_table(done, only=VERIFIER_COLUMNS)
        (out / f"summary.{verifier_slug(spec)}.json").write_text(
            json.dumps({m: res["summary"] for m, res in done.items()}, indent=1))
    if compared:
        plot(compared, out / "citation_f1_vs_tokens.png")
    ds = next(iter(scores.values()))["dataset"] if scores else (dataset or "?")
    code: dict[str, Counter] = {}
    wanted = {it.id for it in items}
    for m in scores:
        records = json.loads((out / "raw" / f"{m}.json").read_text()).get("data", [])
        code[m] = summarize_records(r for r in records if (r.get("citegraph") or {}).get("item_id") in wanted)
    ctx0 = next(iter(plan.contexts.values()))
    failed = {m: r["failed"] for m, r in runs.items() if r.get("failed")}
    report = [
        "# citegraph bench",
        "",
        f"- data: `{data}` ({ds}, {len(items)} item(s){f', limit {limit}' if limit else ''})",
        f"- chat model: `{ctx0.llm}`; verifier (methods and scoring): `{eval_verifier}`",
        f"- methods: {', '.join(methods)}",
        *([f"- preset: `{preset_name}` ({get_preset(preset_name).source}), applied before --set and variant settings"]
          if preset_name else []),
        *code_lines(code, llm=ctx0.llm),
        "- quality on ALCE's 0-100 scale; cell = mean [95% bootstrap interval, 1000 resamples, seed 0];"
        " Cit. F1 = harmonic mean of mean citation recall and precision (ALCE, at most 3 citations per sentence);"
        " RAAC cit. F1 = sentence-level F1 over essential citations; cost per question.",
        f"- compared on the {len(common)} item(s) that every method finished (the common items)"
        + ("" if len(common) == len(items) else f", of {len(items)} selected"),
        "",
        table,
        "",
        *item_lines(counts, scores, common),
        *[line for spec, t in extra_tables.items() for line in (
            f"Scored by `{spec}` as well (the same outputs and items; only the columns a verifier decides):",
            "", t, "")],
        "![citation F1 vs tokens](citation_f1_vs_tokens.png)",
        "",
        "Raw outputs and per-item scores: `raw/<method>.json`, `raw/<method>.score.json`.",
    ]
    if failed:
        report += ["", "Failed items (re-run the same command to retry): "
                   + ", ".join(f"{m}: {n}" for m, n in failed.items())]
    (out / "report.md").write_text("\n".join(report) + "\n")
    return {"scores": scores, "runs": runs, "report": str(out / "report.md"), "table": table, "common": common,
            "counts": counts, "extra_scores": extra_scores, "extra_tables": extra_tables}
