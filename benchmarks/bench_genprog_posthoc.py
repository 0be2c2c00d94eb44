"""Post-hoc attribution on LFQA: GenerationPrograms (genprog-posthoc graph) vs an LLM-prompt baseline.

Data: ../shared/data/lfqa/dev.jsonl (Liu et al. 2023 via Attribute-First-then-Generate): each item
has ``query``, ``response_with_citations`` (the answer's sentences), ``documents`` (with
``documentText``: the document split into sentences) and ``set_of_highlights_in_context`` (gold:
for each answer sentence ``scuSentence``, the supporting document sentence ``sent_idx`` of
``documentFile``).

Both methods get the same documents (``documentText`` joined by newlines, so gold sentence
boundaries are hard boundaries of our splitter), the same S1..Sn source sentences (and the same
``--max-source-sentences`` cut) and the gold answer sentences. A predicted source sentence is
mapped to every gold document sentence its character span overlaps. Scores are sentence-level
precision / recall / F1 over (answer sentence, document sentence) pairs, micro-averaged over all
pairs and macro-averaged over answer sentences. The paper (Wan et al. 2025) reports 47.4 F1 for
GenerationPrograms vs 7.8 for an LLM-prompt baseline (GPT-4o).

``cite`` (the attribution stage alone, verifier only, no LLM call) runs on the same gold sentences with
the whole documents (the verifier has no context cap) and predicts each cited document's best sentence.

    python benchmarks/bench_genprog_posthoc.py --llm local --limit 5 --output bench_out/posthoc.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "lfqa" / "dev.jsonl"

BASELINE_PROMPT = """You are given a document consisting of passages split into sentences with ids (S1, S2, ...), a question, and an answer to it. For each answer sentence, list the ids of the document sentences that support it.

Format: one line per answer sentence, "<number>: <ids separated by commas>", e.g. "1: S3, S7". Write "<number>: none" if no sentence supports it. Output nothing else.

Question:
{question}

Document:
{context}

Answer sentences:
{sentences}

Supporting sentences:
"""


def load(path: Path, limit: int | None):
    from citegraph.state import Document

    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        docs, spans, index = [], [], {}
        for d in row["documents"]:
            sents = list(d["documentText"])
            text = "\n".join(sents)
            starts, pos = [], 0
            for s in sents:
                starts.append((pos, pos + len(s)))
                pos += len(s) + 1
            index.setdefault(d["documentFile"], len(docs))
            docs.append(Document(id=d["documentFile"], title=d.get("source_title") or "", text=text))
            spans.append(starts)
        answer = [s for s in row["response_with_citations"]]
        gold = [set() for _ in answer]
        for h in row["set_of_highlights_in_context"]:
            if h["scuSentence"] in answer and h["documentFile"] in index:
                gold[answer.index(h["scuSentence"])].add((index[h["documentFile"]] + 1, int(h["sent_idx"])))
        items.append({"id": row["unique_id"], "question": row["query"], "documents": docs, "answer": answer,
                      "gold": gold, "spans": spans})
        if limit and len(items) >= limit:
            break
    return items


def to_gold_units(sids: list[str], offsets: dict, spans: list[list[tuple[int, int]]]) -> set[tuple[int, int]]:
    """Predicted S-ids → the gold (doc, sentence index) units their character spans overlap."""
    out = set()
    for sid in sids:
        if sid not in offsets:
            continue
        d, a, b = offsets[sid]
        for j, (s, e) in enumerate(spans[d - 1]):
            if s < b and a < e:
                out.add((d, j))
    return out


def llm_prompt_baseline(spec: str, question: str, passages: str, sentences: list[str], valid: set[str], max_tokens: int):
    from citegraph.tools.models import chat_text

    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
    reply = chat_text(spec, BASELINE_PROMPT.format(question=question, context=passages, sentences=numbered),
                      temperature=0.0, max_tokens=max_tokens)
    pred: list[list[str]] = [[] for _ in sentences]
    for line in reply.splitlines():
        m = re.match(r"\s*(?:[-*]\s*)?(?:sentence\s*)?(\d+)\s*[:.)-]\s*(.*)", line, re.IGNORECASE)
        if not m:
            continue
        i = int(m.group(1)) - 1
        if 0 <= i < len(sentences):
            for sid in re.findall(r"\b[Ss](\d+)\b", m.group(2)):
                if f"S{int(sid)}" in valid and f"S{int(sid)}" not in pred[i]:
                    pred[i].append(f"S{int(sid)}")
    return pred, reply


def cite_stage(verifier, it: dict, sentences: int) -> tuple[list[set], list[dict]]:
    """The attribution stage (``cite``'s, with the item's documents given) on the gold answer sentences,
    none cited: each sentence's evidence (the best sentence of each document it cites) mapped to the gold
    document sentences its characters overlap. The documents are whole: the verifier has no context cap."""
    from citegraph.nodes.attribution import attribute_answer
    from citegraph.state import AttributedAnswer, CitedSentence

    ans = AttributedAnswer(question=it["question"], documents=it["documents"],
                           sentences=[CitedSentence(text=s) for s in it["answer"]])
    out = attribute_answer(ans, verifier, mode="repair", sentences=sentences)
    preds, raw = [], []
    for s in out.sentences:
        units = set()
        for e in s.evidence:
            text, spans = it["documents"][e.doc - 1].text, it["spans"][e.doc - 1]
            a = text.find(e.text)
            if a < 0:
                continue
            b = a + len(e.text)
            units |= {(e.doc, j) for j, (x, y) in enumerate(spans) if x < b and a < y}
        preds.append(units)
        raw.append({"citations": s.citations, "support": s.support, "score": s.support_score,
                    "evidence": [e.text[:200] for e in s.evidence]})
    return preds, raw


def leaf_check(items: list[dict], records: list[dict], verifier) -> list[tuple[str, dict]]:
    """genprog-posthoc's predicted source sentences re-scored by ``verifier`` (premise: the document sentence,
    hypothesis: the answer sentence) and pruned after the fact: every leaf kept ("as run"), those scoring at
    least a threshold, or the best one per answer sentence. Says whether checking the program's leaves
    would pay; it cannot add a sentence the program did not choose (recall stays at most the "as run" row's)."""
    by_id = {it["id"]: it for it in items}
    flat = []
    for r in records:
        it = by_id[r["id"]]
        for i, units in enumerate(r["genprog"]["predicted"]):
            for d, j in map(tuple, units):
                a, b = it["spans"][d - 1][j]
                flat.append(((r["id"], i, (d, j)), it["documents"][d - 1].text[a:b], it["answer"][i]))
    sc = dict(zip([k for k, _, _ in flat], verifier.score([(p, h) for _, p, h in flat])))
    rules = [("as run", lambda xs: [u for u, _ in xs])]
    rules += [(f"score >= {t}", lambda xs, t=t: [u for u, v in xs if v >= t]) for t in (0.1, 0.3, 0.5, 0.7)]
    rules += [("best leaf", lambda xs: [u for u, _ in sorted(xs, key=lambda z: -z[1])[:1]])]
    out = []
    for name, rule in rules:
        per_item = []
        for r in records:
            it = by_id[r["id"]]
            per_item.append([(set(rule([(tuple(u), sc[(r["id"], i, tuple(u))]) for u in units])), g)
                             for i, (units, g) in enumerate(zip(r["genprog"]["predicted"], it["gold"]))])
        out.append((name, {**score([p for rows in per_item for p in rows]), "f1_ci": f1_interval(per_item)}))
    return out


def f1_interval(items: list[list[tuple[set, set]]], n: int = 2000, seed: int = 0) -> list[float]:
    """95% bootstrap interval of the micro F1: items resampled with replacement (an item's sentences together)."""
    import random

    if not items:
        return [0.0, 0.0]
    rng = random.Random(seed)
    f1s = sorted(score([p for _ in items for p in rng.choice(items)])["f1"] for _ in range(n))
    return [f1s[int(0.025 * n)], f1s[int(0.975 * n) - 1]]


def score(pairs: list[tuple[set, set]]) -> dict:
    tp = sum(len(p & g) for p, g in pairs)
    np_ = sum(len(p) for p, _ in pairs)
    ng = sum(len(g) for _, g in pairs)
    P = tp / np_ if np_ else 0.0
    R = tp / ng if ng else 0.0
    F = 2 * P * R / (P + R) if P + R else 0.0
    macro = []
    for p, g in pairs:
        if not g:
            continue
        pp = len(p & g) / len(p) if p else 0.0
        rr = len(p & g) / len(g)
        macro.append((pp, rr, 2 * pp * rr / (pp + rr) if pp + rr else 0.0))
    n = max(1, len(macro))
    return {"precision": round(100 * P, 1), "recall": round(100 * R, 1), "f1": round(100 * F, 1),
            "macro_precision": round(100 * sum(m[0] for m in macro) / n, 1),
            "macro_recall": round(100 * sum(m[1] for m in macro) / n, 1),
            "macro_f1": round(100 * sum(m[2] for m in macro) / n, 1),
            "sentences": len(pairs), "predicted": np_, "gold": ng}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--llm", default="local")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--methods", default="genprog,llm-prompt,cite",
                    help="genprog (the genprog-posthoc graph), llm-prompt (one prompt listing the sentence ids), cite "
                         "(the attribution stage alone, verifier only: each cited document's best sentence is the "
                         "predicted source sentence)")
    ap.add_argument("--verifier", default="default", help="cite: the verifier of the attribution stage")
    ap.add_argument("--leaf-check", action="store_true",
                    help="genprog: also re-score its predicted source sentences with --verifier and print what "
                         "pruning them after the fact (by a threshold, or the best one per sentence) would score")
    ap.add_argument("--cite-sentences", type=int, default=None,
                    help="cite: a document's sentences checked alone against an answer sentence, those sharing the "
                         "most words with it (the stage's attribution_sentences knob; default: the stage's; 0 = all)")
    ap.add_argument("--max-source-sentences", type=int, default=150,
                    help="source sentences shown per item, ranked by overlap with question+answer (0 = all; the "
                         "local model has an 8k context)")
    ap.add_argument("--per-sentence", type=int, default=1, help="genprog: one planner call per answer sentence (1) or one joint program (0)")
    ap.add_argument("--max-new-tokens", type=int, default=300)
    ap.add_argument("--output", default=None, help="JSON with per-item predictions and the scores; finished items are "
                    "also journaled to OUTPUT.items.jsonl, and a re-run with the same settings resumes from it")
    ap.add_argument("--overwrite", action="store_true", help="discard the journal of an earlier run")
    args = ap.parse_args(argv)

    path = Path(args.data)
    if not path.exists():
        print(f"bench_genprog_posthoc: data not found: {path} (needs ../shared/data/lfqa/dev.jsonl)", file=sys.stderr)
        return 2
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = set(methods) - {"genprog", "llm-prompt", "cite"}
    if bad:
        print(f"bench_genprog_posthoc: unknown method(s) {sorted(bad)}", file=sys.stderr)
        return 2

    from citegraph.graphs.registry import build_graph
    from citegraph.nodes.attribution import SENTENCE_CANDIDATES
    from citegraph.nodes.genprog.sources import (
        rank_sources,
        render_passages,
        sentence_offsets,
        split_documents,
    )
    from citegraph.state.genprog import GenProgPosthocContext

    if args.cite_sentences is None:
        args.cite_sentences = SENTENCE_CANDIDATES
    items = load(path, args.limit)
    settings = {k: getattr(args, k) for k in ("data", "llm", "max_source_sentences", "per_sentence", "max_new_tokens",
                                              "cite_sentences")}
    journal = Path(args.output + ".items.jsonl") if args.output else None
    done: dict[str, dict] = {}
    if journal and journal.exists() and not args.overwrite:
        lines = [json.loads(x) for x in journal.read_text(encoding="utf-8").splitlines() if x.strip()]
        # a journal written before cite existed ran with the stage's default
        if lines and {"cite_sentences": SENTENCE_CANDIDATES, **lines[0].get("settings", {})} != settings:
            print(f"bench_genprog_posthoc: {journal} was written with other settings ({lines[0].get('settings')}); "
                  "pass --overwrite to start again", file=sys.stderr)
            return 2
        done = {r["id"]: r for r in lines[1:] if all(m in r for m in methods)}
        if done:
            print(f"resuming: {len(done)} item(s) already in {journal}", file=sys.stderr)
    if journal and (args.overwrite or not journal.exists() or not journal.read_text(encoding="utf-8").strip()):
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_text(json.dumps({"settings": settings}) + "\n", encoding="utf-8")
    graph = build_graph("genprog-posthoc")
    verifier = None
    if "cite" in methods:
        from citegraph.tools.verifier import get_verifier

        verifier = get_verifier(args.verifier)
    ctx = GenProgPosthocContext(llm=args.llm, max_new_tokens=args.max_new_tokens, per_sentence=bool(args.per_sentence),
                                max_source_sentences=args.max_source_sentences)
    pairs = {m: [] for m in methods}
    per_item = {m: [] for m in methods}  # each item's (predicted, gold) pairs, for the bootstrap intervals
    seconds = {m: 0.0 for m in methods}
    records = []
    shown_gold = all_gold = 0  # the ceiling: gold pairs whose document sentence is among the shown sources
    for k, it in enumerate(items, 1):
        shown = rank_sources(split_documents(it["documents"]), it["question"] + " " + " ".join(it["answer"]),
                             args.max_source_sentences)
        units = to_gold_units([s.sid for s in shown], sentence_offsets(it["documents"]), it["spans"])
        shown_gold += sum(len(g & units) for g in it["gold"])
        all_gold += sum(len(g) for g in it["gold"])
        if it["id"] in done:  # journaled by an earlier run: its predictions count, nothing is re-run
            rec = done[it["id"]]
            for m in methods:
                per_item[m].append([({tuple(u) for u in p}, g) for p, g in zip(rec[m]["predicted"], it["gold"])])
                pairs[m] += per_item[m][-1]
                seconds[m] += rec[m].get("seconds", 0.0)
            records.append(rec)
            continue
        offsets = sentence_offsets(it["documents"])
        rec = {"id": it["id"], "question": it["question"], "answer": it["answer"],
               "gold": [sorted(g) for g in it["gold"]]}
        for m in methods:
            t0 = time.perf_counter()
            if m == "genprog":
                out = graph.invoke({"question": it["question"], "documents": it["documents"],
                                    "answer_sentences": it["answer"]}, context=ctx)
                ans = out["answer"]
                pred_sids = [[e.sentence_id for e in s.evidence if e.sentence_id] for s in ans.sentences]
                raw = ans.metadata.get("program", "")
            elif m == "cite":
                preds, raw = cite_stage(verifier, it, args.cite_sentences)
                pred_sids = []
            else:
                pred_sids, raw = llm_prompt_baseline(args.llm, it["question"], render_passages(shown), it["answer"],
                                                     {s.sid for s in shown}, args.max_new_tokens)
            dt = time.perf_counter() - t0
            seconds[m] += dt
            if m != "cite":
                preds = [to_gold_units(s, offsets, it["spans"]) for s in pred_sids]
            per_item[m].append(list(zip(preds, it["gold"])))
            pairs[m] += per_item[m][-1]
            rec[m] = {"predicted_ids": pred_sids, "predicted": [sorted(p) for p in preds], "raw": raw,
                      "seconds": round(dt, 2)}
        records.append(rec)
        if journal:
            with journal.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
        print(f"[{k}/{len(items)}] " + "  ".join(f"{m}: F1 {score(pairs[m])['f1']}" for m in methods), file=sys.stderr)

    results = {m: {**score(pairs[m]), "f1_ci": f1_interval(per_item[m]), "seconds": round(seconds[m], 1)} for m in methods}
    print(f"LFQA post-hoc attribution, {len(items)} items, llm={args.llm}, max_source_sentences={args.max_source_sentences}")
    print(f"{'method':<12} {'P':>6} {'R':>6} {'F1':>6} {'F1 95% CI':>14} {'mP':>6} {'mR':>6} {'mF1':>6} {'pred':>6} "
          f"{'gold':>6} {'sec':>8}")
    for m, r in results.items():
        ci = f"[{r['f1_ci'][0]}, {r['f1_ci'][1]}]"
        print(f"{m:<12} {r['precision']:>6} {r['recall']:>6} {r['f1']:>6} {ci:>14} {r['macro_precision']:>6} "
              f"{r['macro_recall']:>6} {r['macro_f1']:>6} {r['predicted']:>6} {r['gold']:>6} {r['seconds']:>8}")
    print("F1 95% CI: the micro F1 over 2,000 resamples of the items (bootstrap, seed 0)")
    ceiling = round(100 * shown_gold / all_gold, 1) if all_gold else 0.0
    print(f"recall ceiling: {ceiling}% of the gold pairs have their document sentence among the shown sources")
    print("paper (GPT-4o): GenerationPrograms 47.4 F1, LLM-prompt baseline 7.8 F1")
    if args.leaf_check and "genprog" in methods:
        if verifier is None:
            from citegraph.tools.verifier import get_verifier

            verifier = get_verifier(args.verifier)
        rows = leaf_check(items, records, verifier)
        print(f"genprog's predicted sentences pruned by {args.verifier} (premise: the document sentence)")
        for name, r in rows:
            print(f"{name:<14} P {r['precision']:>5}  R {r['recall']:>5}  F1 {r['f1']:>5} "
                  f"[{r['f1_ci'][0]}, {r['f1_ci'][1]}]  pred {r['predicted']}")
        results["genprog_leaf_check"] = dict(rows)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps({"args": vars(args), "results": results, "recall_ceiling": ceiling,
                                                 "items": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
