"""Scoring whole output files (ours or ALCE's) and aggregating with bootstrap intervals.

A record is one item of an output file: ALCE's format (``question``, ``docs``, ``output`` plus the
dataset's gold fields) or ours (the same plus ``citegraph: {item_id, answer, usage}``). The
dataset type decides the correctness metrics: ``qa_pairs`` → ASQA (STR-EM, ROUGE-Lsum), ``claims``
→ ELI5 (claim recall, ROUGE-Lsum), ``answers`` as a list of alias lists → QAMPARI (list recall
and precision; citations scored on comma-separated items, as ALCE does).

Quality metrics are reported on ALCE's 0-100 scale; cost metrics as raw counts. All verifier
checks of a file go through :func:`citegraph.metrics.run_jobs` (one batched call per round).

``alce=True`` (``citegraph eval --alce``) scores every item as ALCE's eval.py does, item by item:
the ``output`` field as written (first line, ``<|im_end|>`` removed), punkt sentences, ALCE's
citation regex and indexing, documents' ``sent`` before ``text``, the first two references for
ROUGE-Lsum (punkt on lower-cased text) and the bootstrap median as the corpus ROUGE-Lsum. The
default mode keeps the deviations listed in docs/evaluate.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Sequence

from citegraph import metrics as M
from citegraph.errors import InputError
from citegraph.run.output import read_output_file  # the output file has one reader (run.output)
from citegraph.run.provenance import verifier_identity
from citegraph.state.answer import AttributedAnswer, Document
from citegraph.tools.citations import parse_answer

DATASETS = ("asqa", "eli5", "qampari", "generic")
COST_KEYS = ("llm_calls", "prompt_tokens", "completion_tokens", "tokens", "verifier_pairs", "seconds")
# metrics whose corpus value is the harmonic mean of two corpus means (recomputed per bootstrap sample)
DERIVED = {"citation_f1": ("citation_rec", "citation_prec"), "raac_f1": ("raac_rec", "raac_prec")}


# --------------------------------------------------------------------------- reading
def infer_dataset(records: Sequence[dict]) -> str:
    r = records[0]
    if r.get("qa_pairs"):
        return "asqa"
    if r.get("claims"):
        return "eli5"
    ans = r.get("answers")
    if isinstance(ans, list) and ans and all(isinstance(a, list) for a in ans):
        return "qampari"
    return "generic"


def record_documents(rec: dict) -> list:
    """The documents a record's citations point into: the answer's own (``citegraph.documents``, written
    when a method answered from other documents than the item's, or from them in another order: a
    retriever's ranking, chunks of them), else the item's ``docs`` (ALCE's field) or ``documents``."""
    cg = rec.get("citegraph")
    if isinstance(cg, dict) and isinstance(cg.get("documents"), list):
        return cg["documents"]
    return rec.get("docs", rec.get("documents", []))


#: what eval and the evidence view say of a record for which :func:`misplaced_evidence` holds
MISPLACED_EVIDENCE = ("its evidence lies in another of its documents than the one cited: its citations point into "
                      "another list of the documents than the file's (an output written before records kept the "
                      "answer's own documents, by a method that ranks or chunks the given ones?), so its citation "
                      "scores and the documents shown for them are wrong; run it again")


def misplaced_evidence(rec: dict) -> bool:
    """Whether a record's answer holds evidence found in another of its documents than the one its
    citation points to (and not in that one): its citations were written into another list of
    documents than the record's. An output written before records kept the answer's own documents
    (``citegraph.documents``) by a method that ranks or chunks the given ones reads so; its citation
    scores would be wrong."""
    cg = rec.get("citegraph")
    if not isinstance(cg, dict) or "documents" in cg or not isinstance(cg.get("answer"), dict):
        return False
    raw = record_documents(rec)
    if not isinstance(raw, list):
        return False
    docs = [" ".join(str((d.get("text") or d.get("sent") or "") if isinstance(d, dict) else d).split()) for d in raw]
    for s in cg["answer"].get("sentences") or []:
        for e in (s.get("evidence") or []) if isinstance(s, dict) else []:
            if not isinstance(e, dict) or not isinstance(e.get("doc"), int):
                continue
            text = " ".join(str(e.get("text") or "").split())
            if not text or (1 <= e["doc"] <= len(docs) and text in docs[e["doc"] - 1]):
                continue
            if any(text in d for d in docs):
                return True
    return False


def _raw_documents(rec: dict, where: str) -> list[dict]:
    """:func:`record_documents` checked: a list of objects (a bare string is a document's text)."""
    raw = record_documents(rec)
    if not isinstance(raw, list):
        raise InputError(f"{where}: 'docs' must be a list")
    out = []
    for i, d in enumerate(raw, 1):
        d = {"text": d} if isinstance(d, str) else d
        if not isinstance(d, dict):
            raise InputError(f"{where}: document {i} must be an object")
        out.append(d)
    return out


def _documents(rec: dict, where: str) -> list[Document]:
    docs = []
    for d in _raw_documents(rec, where):
        text = d.get("text") if isinstance(d.get("text"), str) else d.get("sent") or ""
        docs.append(Document(id=d.get("id") or "", title=d.get("title") or "", text=str(text)))
    return docs


def structured_answer(rec: dict, docs: list[Document]) -> AttributedAnswer | None:
    """Our structured answer, when the record is one of ours."""
    cg = rec.get("citegraph")
    if isinstance(cg, dict) and isinstance(cg.get("answer"), dict):
        try:
            return AttributedAnswer.model_validate({**cg["answer"], "documents": docs})
        except Exception:  # noqa: BLE001 - an edited or foreign file: fall back to the text
            return None
    return None


def _alce_documents(rec: dict, where: str) -> list[dict]:
    """The record's documents as ALCE reads them (dicts with ``title`` and ``sent``/``text``)."""
    return [{k: ("" if d.get(k) is None else str(d[k])) for k in ("title", "text", "sent") if k in d}
            for d in _raw_documents(rec, where)]


def _alce_references(rec: dict) -> list[str]:
    """ALCE's references: the first two annotations' long answers (ASQA), else ``answer`` twice."""
    ann = rec.get("annotations")
    if isinstance(ann, list) and ann:
        refs = [a.get("long_answer") if isinstance(a, dict) else None for a in ann[:2]]
        refs = [r if isinstance(r, str) else "" for r in refs]
        return refs * 2 if len(refs) == 1 else refs
    return [rec["answer"]] * 2 if isinstance(rec.get("answer"), str) and rec["answer"].strip() else []


def _references(rec: dict) -> list[str]:
    refs = [a.get("long_answer") for a in rec.get("annotations") or [] if isinstance(a, dict)]
    refs = [r for r in refs if isinstance(r, str) and r.strip()]
    if not refs and isinstance(rec.get("answer"), str):
        refs = [rec["answer"]]
    return refs


# --------------------------------------------------------------------------- scoring
def item_id(rec: dict, n: int) -> str:
    """The id of the ``n``-th record (1-based): ours, the dataset's, else its position."""
    cg = rec.get("citegraph") if isinstance(rec.get("citegraph"), dict) else {}
    return str(cg.get("item_id") or rec.get("sample_id") or rec.get("id") or n)


@functools.lru_cache(maxsize=1)
def scorer_digest() -> str:
    """sha256 prefix of the scoring code (this module and the metrics), part of every cache key:
    scores cached by another version of the scorer are not re-used."""
    h = hashlib.sha256()
    for path in (__file__, M.__file__):
        h.update(Path(path).read_bytes())
    return h.hexdigest()[:16]


def score_key(rec: dict, *, verifier: str, dataset: str, settings: dict) -> str:
    """What an item's scores depend on, hashed: the whole record (its output and structured answer,
    documents, gold fields, cost counters), the verifier (with the sha256 of the shipped weights for
    ``default``), the dataset type, the scoring settings and the scoring code."""
    blob = json.dumps({"record": rec, "verifier": verifier_identity(verifier) if isinstance(verifier, str) else repr(verifier),
                       "dataset": dataset, "settings": settings, "scorer": scorer_digest()},
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def _previous_scores(path: Path) -> dict[str, dict]:
    """key → item scores of an earlier score file (nothing when absent, unreadable or keyless)."""
    try:
        prev = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    keys, items = (prev.get("item_keys"), prev.get("items")) if isinstance(prev, dict) else (None, None)
    if not isinstance(keys, list) or not isinstance(items, list) or len(keys) != len(items):
        return {}
    return {k: it for k, it in zip(keys, items) if isinstance(k, str) and isinstance(it, dict)}


def score_records(
    records: Sequence[dict],
    *,
    verifier: Any = "default",
    dataset: str | None = None,
    cut_newline: bool = False,
    attach_trailing: bool = True,
    at_most_citations: int | None = 3,
    alce: bool = False,
) -> tuple[str, list[dict]]:
    """Score every record; returns ``(dataset, per-item scores)``. Citation scores of an item with
    an empty output are ``None`` (ALCE leaves such items out of the citation averages).
    ``alce=True``: ALCE's eval.py item by item (implies ``cut_newline`` and ALCE's sentences; see the
    module doc)."""
    if alce:
        cut_newline, attach_trailing = True, False
    dataset = dataset or infer_dataset(records)
    if dataset not in DATASETS:
        raise InputError(f"unknown dataset type {dataset!r}; choose {', '.join(DATASETS)}")
    items: list[dict] = []
    jobs: list = []
    slots: list[tuple[int, str]] = []
    for n, rec in enumerate(records, 1):
        where = f"item {n}"
        docs = _documents(rec, where)
        iid = item_id(rec, n)
        struct, output, ans = _answer_of(rec, docs, alce=alce, cut_newline=cut_newline, attach_trailing=attach_trailing)
        plain = M.remove_citations(output)
        s: dict[str, Any] = {"id": iid, "length": float(len(plain.split()))}
        _shape_scores(s, ans, struct)
        _text_scores(s, rec, dataset, output, plain, alce=alce)
        if dataset == "eli5":
            claims = rec.get("claims") or []
            if claims:
                jobs.append(M.claims_job(plain, claims))
                slots.append((len(items), "claims"))
        # citation quality: ALCE (on the text / structured answer) and RAAC's F1
        if alce:
            jobs.append(M.alce_exact_citation_job(output, _alce_documents(rec, where), at_most_citations=at_most_citations,
                                                  qampari=dataset == "qampari", question=rec.get("question", "")))
        else:
            alce_input: Any = struct if struct is not None and dataset != "qampari" else output
            jobs.append(M.alce_citation_job(alce_input, docs, cut_newline=cut_newline, attach_trailing=attach_trailing,
                                            at_most_citations=at_most_citations, qampari=dataset == "qampari",
                                            question=rec.get("question", "")))
        slots.append((len(items), "alce"))
        jobs.append(M.raac_citation_job(ans))
        slots.append((len(items), "raac"))
        _cost_scores(s, rec)
        items.append(s)
    _settle(items, slots, M.run_jobs(verifier, jobs))
    if dataset == "eli5":
        for s in items:
            s.setdefault("claims_nli", None)
    return dataset, items


def _answer_of(rec: dict, docs, *, alce: bool, cut_newline: bool, attach_trailing: bool):
    """``(structured answer or None, the output text as scored, the answer as scored)`` of one record: its
    structured answer when the file has one, else the text parsed; ALCE's settings act on what the model
    wrote, and ``--alce`` reads the file's output field, as ALCE's eval.py does."""
    struct = structured_answer(rec, docs)
    alce_flags = cut_newline or not attach_trailing
    raw = rec["output"]
    if struct is not None and alce_flags and not alce and isinstance(struct.metadata.get("raw_output"), str):
        raw = struct.metadata["raw_output"]
    output = M.alce_exact_output(raw) if alce else M.prepare_output(raw, cut_newline=cut_newline)
    ans = struct if struct is not None else parse_answer(
        output, question=rec.get("question", ""), documents=docs, attach_trailing=attach_trailing)
    return struct, output, ans


def _shape_scores(s: dict[str, Any], ans: AttributedAnswer, struct: AttributedAnswer | None) -> None:
    """The answer's shape and the attribution stage's verdicts, into ``s``."""
    # share of answer sentences with no citation at all (what GenerationPrograms rules out)
    s["uncited_pct"] = (100.0 * sum(not cs.citations for cs in ans.sentences) / len(ans.sentences)
                        if ans.sentences else None)
    # the attribution stage's verdicts, when it ran (support None = unchecked): flagged sentences
    # are uncited on purpose, so "cited or flagged" is the share a reader can check or is warned about
    if ans.sentences and any(cs.support for cs in ans.sentences):
        k = len(ans.sentences)
        s["supported_pct"] = 100.0 * sum(cs.support == "supported" for cs in ans.sentences) / k
        s["flagged_pct"] = 100.0 * sum(cs.support == "unsupported" for cs in ans.sentences) / k
        s["cited_or_flagged_pct"] = 100.0 * sum(bool(cs.citations) or cs.support == "unsupported"
                                                for cs in ans.sentences) / k
    # answer shape (GenerationPrograms' run-on sentences): sentences, words and citations per sentence,
    # on the answer as scored (all citations, before ALCE's cap of 3)
    n_sent = len(ans.sentences)
    s["sentences"] = float(n_sent)
    s["words_per_sentence"] = s["length"] / n_sent if n_sent else None
    s["citations_per_sentence"] = sum(len(cs.citations) for cs in ans.sentences) / n_sent if n_sent else None
    meta = struct.metadata if struct is not None else {}
    for key, name in (("entailment_rate_before", "module_entail_before"),
                      ("entailment_rate_after", "module_entail_after")):
        if isinstance(meta.get(key), (int, float)):  # GenerationPrograms' module-level check
            s[name] = 100.0 * meta[key]


def _text_scores(s: dict[str, Any], rec: dict, dataset: str, output: str, plain: str, *, alce: bool) -> None:
    """Correctness against the references (STR-EM, ROUGE-Lsum, QAMPARI's precision/recall), into ``s``."""
    if dataset == "asqa":
        em = M.str_em(output, rec.get("qa_pairs") or [])
        s["str_em"], s["str_hit"] = 100 * em["str_em"], 100 * em["str_hit"]
    if dataset in ("asqa", "eli5"):
        refs = _alce_references(rec) if alce else _references(rec)
        rouge = M.alce_rouge_lsum if alce else M.rouge_lsum
        s["rougeLsum"] = 100 * rouge(plain, refs) if refs else None
    if dataset == "qampari":
        q = M.qampari_scores(output, rec.get("answers") or [])
        s.update({k: (v if k == "num_preds" else 100 * v) for k, v in q.items()})


def _cost_scores(s: dict[str, Any], rec: dict) -> None:
    """What the item cost (``COST_KEYS``, from the record's usage), into ``s``."""
    cg = rec.get("citegraph") if isinstance(rec.get("citegraph"), dict) else {}
    usage = cg.get("usage") if isinstance(cg.get("usage"), dict) else {}
    for k in COST_KEYS:
        v = usage.get(k)
        if k == "tokens" and v is None and usage:
            v = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        s[k] = float(v) if isinstance(v, (int, float)) else None


def _settle(items: list[dict], slots: list[tuple[int, str]], results: list) -> None:
    """The verifier jobs' results (claims, ALCE citations, RAAC's F1) into their items."""
    for (i, kind), res in zip(slots, results):
        s = items[i]
        if kind == "claims":
            s["claims_nli"] = 100 * res
        elif kind == "alce":
            empty = res["empty"]
            s["citation_rec"] = None if empty else 100 * res["recall"]
            s["citation_prec"] = None if empty else 100 * res["precision"]
            s["citation_f1"] = None if empty else 100 * res["f1"]
            s["n_sentences"] = float(res["n_sentences"])
            s["n_citations"] = float(res["n_citations"])
        else:
            s["raac_rec"], s["raac_prec"], s["raac_f1"] = 100 * res.recall, 100 * res.precision, 100 * res.f1


# --------------------------------------------------------------------------- aggregation
def _values(items: Sequence[dict], key: str) -> list[float]:
    return [float(s[key]) for s in items if isinstance(s.get(key), (int, float)) and not math.isnan(float(s[key]))]


def metric_names(items: Sequence[dict]) -> list[str]:
    keys: list[str] = []
    for s in items:
        for k in s:
            if k != "id" and k not in keys:
                keys.append(k)
    return keys


def summarize(items: Sequence[dict]) -> dict[str, float | None]:
    """Mean of every metric over the items that have it; ``citation_f1`` / ``raac_f1`` are the
    harmonic mean of the mean recall and mean precision (corpus-level F1)."""
    out: dict[str, float | None] = {}
    for k in metric_names(items):
        v = _values(items, k)
        out[k] = sum(v) / len(v) if v else None
    for k, (r, p) in DERIVED.items():
        if k in out:
            R, P = out.get(r), out.get(p)
            out[k] = (2 * R * P / (R + P) if R + P else 0.0) if R is not None and P is not None else None
    out["n_items"] = float(len(items))
    return out


def bootstrap(items: Sequence[dict], n_resamples: int = 1000, seed: int = 0, alpha: float = 0.05) -> dict[str, tuple[float, float]]:
    """95% percentile bootstrap interval of every summary value (items resampled with replacement;
    seeded, numpy)."""
    import numpy as np

    n = len(items)
    if n == 0:
        return {}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    keys = metric_names(items)
    mat = {k: np.array([float(s[k]) if isinstance(s.get(k), (int, float)) else np.nan for s in items]) for k in keys}
    means: dict[str, Any] = {}
    with np.errstate(invalid="ignore"):
        for k in keys:
            a = mat[k][idx]
            cnt = (~np.isnan(a)).sum(axis=1)
            tot = np.nansum(a, axis=1)
            means[k] = np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)
        for k, (r, p) in DERIVED.items():
            if k in means and r in means and p in means:
                R, P = means[r], means[p]
                means[k] = np.where(R + P > 0, 2 * R * P / np.where(R + P > 0, R + P, 1), 0.0)
    out = {}
    for k, m in means.items():
        m = m[~np.isnan(m)]
        if len(m):
            out[k] = (float(np.percentile(m, 100 * alpha / 2)), float(np.percentile(m, 100 * (1 - alpha / 2))))
    return out


def score_file(
    path: str | Path,
    *,
    verifier: str = "default",
    dataset: str | None = None,
    cut_newline: bool = False,
    attach_trailing: bool = True,
    at_most_citations: int | None = 3,
    output: str | Path | None = None,
    only_ids: set[str] | None = None,
    alce: bool = False,
    reuse: bool = False,
    save_every: int | None = None,
) -> dict:
    """Score an output file and write ``<name>.score.json`` next to it (or to ``output``).

    ``only_ids``: score only the records of these items (``bench`` passes the items of the
    current selection, so a file that holds more items from a longer run is compared on the same
    items as the other methods). ``alce``: ALCE's eval.py item by item, and its corpus ROUGE-Lsum
    (bootstrap median) in the summary. ``reuse``: an item whose :func:`score_key` is in the score
    file already there keeps its scores from it; only new or changed items are scored (``bench``,
    so a resumed bench scores each finished item once). The result counts ``scored`` and ``reused``.
    ``save_every``: score the new items in groups of this many and write the score file after each
    group, so a slow verifier (an LLM judge: minutes per item) that is stopped keeps what it scored;
    with ``reuse`` a re-run then scores only the rest."""
    args, records = read_output_file(path)
    if only_ids is not None:
        records = [r for r in records if (r.get("citegraph") or {}).get("item_id") in only_ids]
    if alce:
        cut_newline, attach_trailing = True, False
    settings = {"cut_newline": cut_newline, "attach_trailing": attach_trailing, "at_most_citations": at_most_citations,
                "alce": alce}
    if records:
        dataset = dataset or infer_dataset(records)
    if dataset is not None and dataset not in DATASETS:
        raise InputError(f"unknown dataset type {dataset!r}; choose {', '.join(DATASETS)}")
    out = Path(output) if output else score_path(path)
    keys = [score_key(r, verifier=verifier, dataset=dataset or "generic", settings=settings) for r in records]
    prev = _previous_scores(out) if reuse else {}
    todo = [i for i, k in enumerate(keys) if k not in prev]
    misplaced = [item_id(r, i + 1) for i, r in enumerate(records) if misplaced_evidence(r)]
    fresh: dict[int, dict] = {}

    def write() -> dict:
        return _write_scores(out, path, args.get("method"), dataset, verifier, settings, records, keys, prev, fresh,
                             alce=alce, misplaced=misplaced)

    if todo:
        M.resolve_verifier(verifier)  # fail fast on a bad spec / missing weights
        step = max(1, int(save_every)) if save_every else len(todo)
        for start in range(0, len(todo), step):
            group = todo[start: start + step]
            dataset, scored = score_records([records[i] for i in group], verifier=verifier, dataset=dataset,
                                            cut_newline=cut_newline, attach_trailing=attach_trailing,
                                            at_most_citations=at_most_citations, alce=alce)
            for i, s in zip(group, scored):
                s["id"] = item_id(records[i], i + 1)  # its position in the whole file, not in the re-scored part
                fresh[i] = s
            if start + step < len(todo):
                write()
    result = write()
    result.update(written=str(out), scored=len(todo), reused=len(records) - len(todo))
    return result


def _write_scores(out: Path, path, method, dataset, verifier, settings, records, keys, prev, fresh, *, alce: bool,
                  misplaced: list[str]) -> dict:
    """The score file for the items scored so far (``fresh`` now, ``prev`` reused), in file order: its summary,
    intervals, items and each item's score key; ``incomplete`` while groups remain."""
    ready = [i for i, k in enumerate(keys) if i in fresh or k in prev]
    items = [fresh[i] if i in fresh else {**prev[keys[i]], "id": item_id(records[i], i + 1)} for i in ready]
    summary = summarize(items)
    if alce and summary.get("rougeLsum") is not None:
        summary["rougeLsum"] = 100 * M.alce_rouge_aggregate([s["rougeLsum"] / 100 for s in items
                                                             if isinstance(s.get("rougeLsum"), (int, float))])
    result = {
        "input": str(path),
        "method": method,
        "dataset": dataset or "generic",  # (no record selected)
        "verifier": verifier,
        "settings": settings,
        "summary": summary,
        "ci95": {k: list(v) for k, v in bootstrap(items).items()},
        "items": items,
        "item_keys": [keys[i] for i in ready],  # score_key of each item: what a later run with reuse compares
    }
    if len(ready) < len(keys):
        result["incomplete"] = f"{len(ready)} of {len(keys)} item(s) scored"
    if misplaced:
        result["warnings"] = [f"{len(misplaced)} of {len(records)} record(s) ({', '.join(misplaced[:5])}"
                              f"{' …' if len(misplaced) > 5 else ''}): {MISPLACED_EVIDENCE}"]
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return result


def score_path(path: str | Path) -> Path:
    p = Path(path)
    name = p.name[:-5] if p.name.endswith(".json") else p.name
    return p.with_name(name + ".score.json")
