#!/usr/bin/env python
"""Training pairs written by helper sessions from supported pairs of the training pool.

The rule-made negatives of ``verifier_data.minimal_pair_negatives`` teach a checker the edits the rules
make; the blind minimal-pair suites show the checkers missing the edits a writing model makes (a
negation that keeps the premise's words, a role swap across a long sentence, a fact moved to another
entity of the premise). So a writer reads a supported pair of the pool and writes claims about its
premise: supported rewordings, and claims one realistic mistake away. The writers here were helper
sessions (a large LLM), given ``benchmarks/data/written_pairs_brief.md`` and one file each of the
pairs ``sample`` wrote; they read nothing else.

    python scripts/written_pairs.py sample --out /tmp/wp --parts 8 --per 40   # the writers' inputs
    python scripts/written_pairs.py sample --out /tmp/wp2 --parts 8 --per 40 --seed 43 \
        --exclude benchmarks/data/written_pairs.jsonl                          # a second batch, other premises
    python scripts/written_pairs.py check /tmp/wp/out_*.jsonl                 # their files, validated
    python scripts/written_pairs.py merge /tmp/wp/out_*.jsonl --out benchmarks/data/written_pairs.jsonl

The committed file holds the claims, labels and categories and the line number (``src``) of the premise
in ``../shared/data/nli_train/attribution_pairs.jsonl``, never the premise itself: the pool is read
from there (``rows``), not committed. Only the pool's training part is sampled: its held-out split
(``train_verifier.heldout_split``, seed 13) and the excluded sources never, and none of the sets kept
apart for acceptance (``../shared/data/README.md``) is read.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
DATA = REPO.parent / "shared" / "data"
POOL = "nli_train/attribution_pairs.jsonl"
CATEGORIES = ("negation", "role_swap", "entity_swap", "number_date", "added_detail", "paraphrase",
              "two_sentence", "two_sentence_neg", "control")
POSITIVE = {"paraphrase", "two_sentence", "control"}
# sources of factual documents (dialogue and meeting sources left out: their premises are transcripts);
# LFQA and WiCE rows are skipped though the pool may keep them (their sets are kept apart for acceptance)
SOURCES = ("climate_fever", "healthver", "attributionbench/Stanford-GenSearch", "attributionbench/AttributedQA",
           "attributionbench/AttrScore-GenSearch", "summedits/ectsum", "summedits/scitldr", "cogensumm_sentpairs",
           "qags/cnndm", "summedits/news", "begin/wow", "attributionbench/BEGIN")
SEED = 41


def pool_rows(data: Path) -> list[dict]:
    import train_verifier as tv

    return tv.read_jsonl(data / POOL)


def candidates(attr: list[dict]) -> list[int]:
    """Line numbers of the pool's (``attr``) supported training pairs with a premise of 30-220 words."""
    import train_verifier as tv

    held = tv.heldout_split(attr, 0.10, 13)  # the verifiers' held-out lines: never written from
    return [i for i, r in enumerate(attr) if i not in held and r["label"] == "supported"
            and r["source"] in SOURCES and 30 <= len(r["premise"].split()) <= 220]


def sample(args) -> int:
    data = Path(args.data)
    attr = pool_rows(data)
    used = set()  # premises an earlier file was written from: a new batch writes about others
    for path in args.exclude:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                used.add(attr[json.loads(line)["src"]]["premise"])
    by = collections.defaultdict(list)
    for i in candidates(attr):
        if attr[i]["premise"] not in used:
            by[attr[i]["source"]].append(i)
    rng = random.Random(args.seed)
    want = args.parts * args.per
    per_source = max(1, want // len(by))
    for src in sorted(by):
        rng.shuffle(by[src])
    rest = [i for src in sorted(by) for i in by[src][per_source:]]
    rng.shuffle(rest)
    chosen, seen = [], set()
    # about as many from every source, then the rest at random; one pair per premise
    for i in [i for src in sorted(by) for i in by[src][:per_source]] + rest:
        if len(chosen) < want and attr[i]["premise"] not in seen:
            chosen.append(i)
            seen.add(attr[i]["premise"])
    rng.shuffle(chosen)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for k in range(args.parts):
        part = chosen[k * args.per:(k + 1) * args.per]
        with (out / f"in_{k + 1}.jsonl").open("w", encoding="utf-8") as f:
            for i in part:
                r = attr[i]
                f.write(json.dumps({"src": i, "premise": r["premise"], "claim": r["hypothesis"]},
                                   ensure_ascii=False) + "\n")
    print(f"{len(chosen)} pairs from {len(by)} sources in {args.parts} files under {out}")
    return 0


def read_written(paths: list[str], data: Path) -> tuple[list[dict], list[str]]:
    """Every row of the writers' files that is well formed, and one line per problem."""
    attr = pool_rows(data)
    allowed = set(candidates(attr))
    rows, problems = [], []
    for path in paths:
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"{where}: not JSON ({e.msg})")
                continue
            src, cat, claim, label = r.get("src"), r.get("category"), r.get("claim"), r.get("label")
            if src not in allowed:
                problems.append(f"{where}: src {src!r} is not a supported training pair that was sampled from")
            elif cat not in CATEGORIES:
                problems.append(f"{where}: category {cat!r} is not one of {', '.join(CATEGORIES)}")
            elif not isinstance(claim, str) or not claim.strip():
                problems.append(f"{where}: empty claim")
            elif label not in (0, 1) or (label == 1) != (cat in POSITIVE):
                problems.append(f"{where}: label {label!r} does not fit category {cat}")
            elif claim.strip() == attr[src]["hypothesis"].strip() and label == 0:
                problems.append(f"{where}: the pool's own supported claim labelled 0")
            else:
                rows.append({"src": src, "category": cat, "claim": claim.strip(), "label": label})
    return rows, problems


def check(args) -> int:
    rows, problems = read_written(args.files, Path(args.data))
    for p in problems:
        print(p)
    c = collections.Counter(r["category"] for r in rows)
    print(f"{len(rows)} rows, {len(problems)} problems; " + ", ".join(f"{k} {c[k]}" for k in CATEGORIES))
    return 1 if problems and args.strict else 0


def merge(args) -> int:
    rows, problems = read_written(args.files, Path(args.data))
    seen, out = set(), []
    for r in rows:
        key = (r["src"], r["claim"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    out.sort(key=lambda r: (r["src"], CATEGORIES.index(r["category"]), r["claim"]))
    with Path(args.out).open("w", encoding="utf-8") as f:
        for r in out:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(out)} rows to {args.out} ({len(problems)} malformed rows left out)")
    return 0


def rows(path: Path, data: Path = DATA, attr: list[dict] | None = None) -> list[dict]:
    """The committed file joined to its premises: ``{premise, hypothesis, label, y, source, category}``;
    ``attr``: the pool's rows where the caller has read them already (else read from ``data``)."""
    attr = pool_rows(data) if attr is None else attr
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out.append({"premise": attr[r["src"]]["premise"], "hypothesis": r["claim"], "y": int(r["label"]),
                            "label": "supported" if r["label"] else "unsupported",
                            "source": f"written/{r['category']}", "category": r["category"], "src": r["src"]})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("sample", help="the writers' input files")
    p.add_argument("--out", required=True)
    p.add_argument("--parts", type=int, default=7)
    p.add_argument("--per", type=int, default=40)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--exclude", nargs="*", default=[], help="written files whose premises are not sampled again")
    p = sub.add_parser("check", help="validate the writers' files")
    p.add_argument("files", nargs="+")
    p.add_argument("--strict", action="store_true", help="exit 1 on any problem")
    p = sub.add_parser("merge", help="the writers' files as one committed file")
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    return {"sample": sample, "check": check, "merge": merge}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
