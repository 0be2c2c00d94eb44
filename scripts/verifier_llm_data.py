#!/usr/bin/env python
"""Supported pairs written by the embedded LLM for the default verifier's training (issue #50, item 2):
what the rule-made data of ``verifier_data.py`` cannot make.

* ``paraphrase``  a supported training claim said in other words ("born in Ulm" -> "a native of Ulm"):
                  the verifier must not read "fewer shared words" as "unsupported".
* ``two``         one sentence that joins a fact of one premise sentence with a fact of the next one
                  ("He studied in Munich" after "Einstein was born in Ulm" -> "Einstein, born in Ulm,
                  studied in Munich"): support that no single sentence holds.

    python scripts/verifier_llm_data.py generate --kind paraphrase --out runs/llm_pairs/paraphrase.jsonl --minutes 30
    python scripts/verifier_llm_data.py generate --kind two --out runs/llm_pairs/two.jsonl --minutes 20
    python scripts/verifier_llm_data.py stats runs/llm_pairs/*.jsonl

Sources: the supported pairs of the training pool's train split (``attribution_pairs.jsonl`` less
ExpertQA and the held-out split of ``train_verifier.py``, seed 13) and FEVER-NLI dev; nothing of the
sets kept apart for acceptance (../shared/data/README.md) nor of the benchmark's sets. Every reply is
written, kept or not, with the reason (``why``), so the filters can change without generating again;
a killed run continues where it stopped (the source order depends only on ``--seed``). The filters
reject a reply that is the claim again, brings a number, a name or a negation the premise does not
have, or that the structural checks (``default+checks``) find in conflict with the premise.
Greedy decoding, one reply per source pair. Reading a file (``read_kept``, ``stats``) judges every
reply again with the filters as they are now, so the ``why`` written at generation is only a record.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import verifier_data  # noqa: E402  (the rule-made recipe beside this script)

DEFAULT_DATA = REPO.parent / "shared" / "data" / "nli_train"

_WORD = re.compile(r"[A-Za-z0-9][\w'\-]*")
_NUM = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")
_NEG = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without)\b|n't\b", re.I)
_SPLIT = verifier_data._SPLIT  # the recipe's sentence splitter
_STOP = set("a an the of in on at to for by with from as and or but is are was were be been being it its this that "
            "these those he she they his her their him them who which what also has have had do does did".split())
_PRONOUN_START = re.compile(r"^(?:He|She|It|They|His|Her|Its|Their|The|This|These|In|Later|After)\b")

PARAPHRASE = ("Rewrite the sentence below in different words. Keep exactly the same facts: add nothing, "
              "leave nothing out, keep every name and number. Change the wording and the structure "
              "(for example another verb or noun with the same meaning, or active to passive). "
              "Reply with the rewritten sentence only.\n\nSentence: {claim}")
TWO = ("Here are two sentences from one text.\nA: {a}\nB: {b}\n\nWrite ONE short sentence that states one fact "
       "from A together with one fact from B, so that it needs both A and B to be true. Say only what A and B say. "
       "Write names instead of he, she, it or they. Reply with the sentence only.")


def content(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]


def _norm(word: str) -> str:
    """A word as the name filter compares it: lower case, no possessive, no plural s ("Earth’s" = "earth")."""
    w = word.lower().replace("’", "'")
    w = w[:-2] if w.endswith("'s") else w
    return w[:-1] if len(w) > 3 and w.endswith("s") else w


def _names(text: str) -> set[str]:
    """Capitalised words not at the start of a sentence (a rough name finder), normalised by :func:`_norm`."""
    out = set()
    for s in _SPLIT.split(text):
        ws = _WORD.findall(s)
        out.update(_norm(w) for w in ws[1:] if w[:1].isupper())
    return out


def clean_reply(text: str) -> str:
    """The first line of a reply, with a leading label ("Sentence:", "Rewritten:") and quotes taken off."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^(?:\w+(?: \w+)?\s*:\s*)", "", line) if re.match(r"^\w+(?: \w+)?\s*:\s", line) else line
    return line.strip().strip('"“”').strip()


def _common(premise: str, claim: str, reply: str) -> str | None:
    if not reply or not reply[:1].isupper() or reply[-1:] not in ".!?":
        return "not a sentence"
    if len(_SPLIT.split(reply)) > 1:
        return "more than one sentence"
    if set(_NUM.findall(reply)) - set(_NUM.findall(premise)):
        return "a number the premise lacks"
    if _names(reply) - {_norm(w) for w in _WORD.findall(premise)}:
        return "a name the premise lacks"
    if len(_NEG.findall(reply)) != len(_NEG.findall(claim)):
        return "negation changed"
    from citegraph.tools.verifier.checks import find_conflicts

    found = find_conflicts(premise, reply)
    if found:
        return f"checks: {found[0].kind}"
    return None


def judge_paraphrase(premise: str, claim: str, reply: str) -> str | None:
    """``None`` when ``reply`` may serve as a supported paraphrase of ``claim`` under ``premise``;
    otherwise the reason it may not."""
    why = _common(premise, claim, reply)
    if why:
        return why
    a, b = content(claim), content(reply)
    if not 0.6 <= len(b) / max(1, len(a)) <= 1.6:
        return "length changed"
    sa, sb = set(a), set(b)
    if sb == sa or not sb - sa:
        return "too close to the claim"
    if len(sa & sb) / max(1, len(sa)) < 0.3:
        return "too far from the claim"
    return None


def judge_two(premise: str, a: str, b: str, reply: str) -> str | None:
    """``None`` when ``reply`` joins a fact of ``a`` and one of ``b`` (a word of each that the other
    lacks) and passes the common filters; otherwise the reason it does not."""
    why = _common(premise, a + " " + b, reply)
    if why:
        return why
    ca, cb, cr = set(content(a)), set(content(b)), set(content(reply))
    if not (cr & (ca - cb)) or not (cr & (cb - ca)):
        return "not from both sentences"
    if len(content(reply)) > 30:
        return "too long"
    if len(cr - ca - cb) > max(1, len(cr) // 4):
        return "words of neither sentence"
    return None


def sources(data_dir: Path, seed: int) -> list[dict]:
    """The supported training pairs (pool train split + FEVER-NLI dev), in a seeded order."""
    import train_verifier

    attr = train_verifier.read_jsonl(data_dir / "attribution_pairs.jsonl")
    held = train_verifier.heldout_split(attr, 0.10, 13)
    rows = [{"premise": r["premise"], "claim": r["hypothesis"], "from": f"pool:{i}"} for i, r in enumerate(attr)
            if i not in held and r["source"] not in train_verifier.EXCLUDED_SOURCES and r["label"] == "supported"]
    fever = verifier_data.read_fever_nli(data_dir / "extra" / "fever_nli" / "dev.txt", -1, random.Random(seed))
    rows += [{"premise": r["premise"], "claim": r["hypothesis"], "from": f"fever_dev:{k}"}
             for k, r in enumerate(fever) if r["y"] == 1]
    random.Random(seed).shuffle(rows)
    return rows


def two_sentence_item(premise: str) -> tuple[str, str] | None:
    """Two neighbouring sentences of the premise where the second goes on about the first (it opens with
    a pronoun or a connective, or shares a name with it), both plain sentences; ``None`` without one."""
    body = premise.split("\n\n", 1)[1] if premise.startswith("Title:") and "\n\n" in premise else premise
    sents = [" ".join(s.split()) for s in _SPLIT.split(body)]
    for a, b in zip(sents, sents[1:]):
        if not (6 <= len(a.split()) <= 35 and 6 <= len(b.split()) <= 35):
            continue
        if _PRONOUN_START.match(b) or (_names(a) & _names(b)):
            return a, b
    return None


def generate(args) -> int:
    from citegraph.tools.local_model import embedded_model_path
    from llama_cpp import Llama

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        done = {json.loads(line)["from"] for line in out.open(encoding="utf-8") if line.strip()}
    rows = sources(Path(args.data), args.seed)
    llm = Llama(model_path=str(embedded_model_path(args.model)), n_ctx=1024, n_threads=args.threads,
                n_batch=512, verbose=False, seed=0)
    t0, made, kept = time.perf_counter(), 0, 0
    with out.open("a", encoding="utf-8") as f:
        for r in rows:
            if time.perf_counter() - t0 > args.minutes * 60 or (args.n and made >= args.n):
                break
            if r["from"] in done:
                continue
            if args.kind == "paraphrase":
                if not 5 <= len(r["claim"].split()) <= 30:
                    continue
                prompt = PARAPHRASE.format(claim=r["claim"])
            else:
                item = two_sentence_item(r["premise"])
                if item is None:
                    continue
                prompt = TWO.format(a=item[0], b=item[1])
            reply = llm.create_chat_completion([{"role": "user", "content": prompt}], temperature=0.0,
                                               max_tokens=70)["choices"][0]["message"]["content"]
            text = clean_reply(reply)
            why = (judge_paraphrase(r["premise"], r["claim"], text) if args.kind == "paraphrase"
                   else judge_two(r["premise"], *item, text))
            rec = {"from": r["from"], "kind": args.kind, "premise": r["premise"], "hypothesis": text,
                   "claim": r["claim"] if args.kind == "paraphrase" else list(item), "why": why,
                   "model": args.model}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            f.flush()
            made += 1
            kept += why is None
            if made % 20 == 0:
                el = time.perf_counter() - t0
                print(f"{made} replies, {kept} kept, {el / made:.1f} s each", flush=True)
    el = time.perf_counter() - t0
    print(f"done: {made} replies, {kept} kept, {el / 60:.1f} min ({el / max(1, made):.1f} s each) -> {out}")
    return 0


def rejudge(r: dict) -> str | None:
    """The reason a written reply is not kept, by the filters as they are now (``None``: kept)."""
    if r["kind"] == "paraphrase":
        return judge_paraphrase(r["premise"], r["claim"], r["hypothesis"])
    return judge_two(r["premise"], r["claim"][0], r["claim"][1], r["hypothesis"])


def read_kept(paths: list[Path]) -> list[dict]:
    """The kept replies of generated files (judged again: :func:`rejudge`) as supported training pairs."""
    rows = []
    for p in paths:
        for line in p.open(encoding="utf-8"):
            if not line.strip():
                continue
            r = json.loads(line)
            if rejudge(r) is None:
                rows.append({"premise": r["premise"], "hypothesis": r["hypothesis"], "label": "synthetic_entailed",
                             "source": f"synthetic/llm_{r['kind']}", "y": 1})
    return rows


def stats(paths: list[str]) -> int:
    for p in paths:
        c = collections.Counter()
        for line in open(p, encoding="utf-8"):
            if line.strip():
                c[rejudge(json.loads(line)) or "kept"] += 1
        total = sum(c.values())
        print(f"{p}: {total} replies, kept {c['kept']} ({100 * c['kept'] / max(1, total):.0f}%)")
        for why, n in c.most_common():
            if why != "kept":
                print(f"  {why}: {n}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write the LLM's replies (kept or not) to a JSONL file; resumable")
    g.add_argument("--kind", choices=["paraphrase", "two"], required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--data", default=str(DEFAULT_DATA))
    g.add_argument("--model", default="local", help="embedded model: local (1.5B) or local-small (0.5B)")
    g.add_argument("--minutes", type=float, default=30, help="stop after this long")
    g.add_argument("--n", type=int, default=0, help="stop after N replies (0 = only the time limit)")
    g.add_argument("--seed", type=int, default=41)
    g.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("stats", help="kept share and the reasons for the rest")
    s.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "stats":
        return stats(args.files)
    if not (Path(args.data) / "attribution_pairs.jsonl").exists():
        print(f"training data not found under {args.data} (expected ../shared/data/nli_train)", file=sys.stderr)
        return 2
    return generate(args)


if __name__ == "__main__":
    sys.exit(main())
