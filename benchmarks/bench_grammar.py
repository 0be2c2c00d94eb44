"""What the citation grammar costs per token: llama.cpp's grammar sampler applied to the whole vocabulary
of the embedded model (as decoding applies it) while a reply is written token by token under
``citation_grammar``; no model weights are loaded (the vocabulary only).

    python benchmarks/bench_grammar.py                      # the shipped grammar
    python benchmarks/bench_grammar.py --abbreviations      # and a body that also allows "St.", "Jr." ...

Prints milliseconds per token for each grammar, two rounds, alternating. The reply must be one the
shipped grammar accepts (the default one is).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citegraph.tools.models import citation_grammar  # noqa: E402

TEXT = ("The Wildcats defeated Saint John's, Seton Hall, and Creighton to win the tournament championship in 2018 "
        "after a long season. [2] It was their third title in five years and the first since 2016. [1]")
#: the 22 titles' and companies' abbreviations tried in 5094e66 (reverted in 1731f04 for this cost)
ABBREVIATIONS = ("St", "Ft", "Mr", "Mrs", "Ms", "Dr", "Jr", "Sr", "Prof", "Gen", "Sen", "Rep", "Lt", "Col",
                 "Inc", "Co", "Ltd", "Corp", "Bros", "Ave", "No", "vs")


def with_abbreviations(gbnf: str) -> str:
    alts = " | ".join(f'"{a}."' for a in ABBREVIATIONS)
    anchor = '"." [A-Za-z] "."){'
    if anchor not in gbnf:  # the shipped body changed: say so rather than time the same grammar twice
        raise SystemExit(f"error: the citation grammar's body no longer ends with {anchor!r}")
    return gbnf.replace(anchor, f'"." [A-Za-z] "." | {alts}){{')


def ms_per_token(llm, gbnf: str, text: str) -> float:
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    toks = llm.tokenize(text.encode(), add_bos=False, special=False)
    smpl = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
    arr = (llama_cpp.llama_token_data * n_vocab)()
    spent = 0.0
    try:
        for tok in toks:
            for i in range(n_vocab):
                arr[i].id, arr[i].logit, arr[i].p = i, 0.0, 0.0
            cur = llama_cpp.llama_token_data_array(data=arr, size=n_vocab, selected=-1, sorted=False)
            t0 = time.perf_counter()
            llama_cpp.llama_sampler_apply(smpl, ctypes.byref(cur))
            spent += time.perf_counter() - t0
            if arr[tok].logit == float("-inf"):
                raise SystemExit(f"error: the grammar does not allow the reply at token {llm.detokenize([tok])!r}")
            llama_cpp.llama_sampler_accept(smpl, tok)
    finally:
        llama_cpp.llama_sampler_free(smpl)
    return 1000 * spent / len(toks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--abbreviations", action="store_true", help="also time the body with ABBREVIATIONS allowed")
    ap.add_argument("--docs", type=int, default=5, help="documents the grammar may cite (default 5)")
    ap.add_argument("--text", default=TEXT, help="the reply to write under the grammar")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    import llama_cpp

    from citegraph.tools.local_model import embedded_model_path

    llm = llama_cpp.Llama(str(embedded_model_path("local")), vocab_only=True, verbose=False)
    shipped = citation_grammar(a.docs, min_sentences=2, max_sentences=5)
    grammars = {"shipped": shipped}
    if a.abbreviations:
        grammars["abbreviations"] = with_abbreviations(shipped)
    n = len(llm.tokenize(a.text.encode(), add_bos=False, special=False))
    for r in range(a.rounds):
        for name in (list(grammars) if r % 2 == 0 else list(grammars)[::-1]):
            print(f"round {r + 1} · {name}: {ms_per_token(llm, grammars[name], a.text):.1f} ms a token "
                  f"({n} tokens, vocabulary of the `local` model)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
