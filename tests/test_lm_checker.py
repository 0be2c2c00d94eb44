"""The language-model checker (lm-check, tools/verifier/lmcheck.py + lm.py), its second-opinion spec
(``<spec>+lm``) and its training script (scripts/train_lm_checker.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from citegraph.errors import InputError
from citegraph.tools.verifier import FunctionVerifier, check_verifier_spec
from citegraph.tools.verifier.lm import LM_ASSET_DIR, SecondOpinionVerifier
from citegraph.tools.verifier import lmcheck

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "benchmarks" / "data" / "minimal_pairs.jsonl"


def _gguf() -> Path:
    from citegraph.tools.local_model import embedded_model_path

    try:
        return embedded_model_path("local-small")
    except Exception as e:  # the [local] extra is not installed
        pytest.skip(f"the packaged 0.5B GGUF is not available: {e}")


def test_gguf_names_map_onto_qwen2_parameters():
    assert lmcheck.hf_name("token_embd.weight") == "embed_tokens.weight"
    assert lmcheck.hf_name("output_norm.weight") == "norm.weight"
    assert lmcheck.hf_name("blk.11.attn_q.bias") == "layers.11.self_attn.q_proj.bias"
    assert lmcheck.hf_name("blk.0.ffn_down.weight") == "layers.0.mlp.down_proj.weight"
    assert lmcheck.hf_name("blk.3.attn_norm.weight") == "layers.3.input_layernorm.weight"
    assert lmcheck.hf_name("output.weight") is None  # the LM head: the checker has its own
    assert lmcheck.layer_of("blk.23.ffn_up.weight") == 23 and lmcheck.layer_of("token_embd.weight") is None


def test_second_opinion_only_where_the_first_is_unsure():
    seen = []

    def second(pairs):
        seen.extend(pairs)
        return [1.0] * len(pairs)

    first = FunctionVerifier(lambda p, h: {"a": 0.05, "b": 0.4, "c": 0.95, "d": 0.1}[h], spec="first")
    first.explain = lambda p, h: ["role: stub"] if h == "d" else []
    v = SecondOpinionVerifier(first, FunctionVerifier(second, spec="second", batched=True))
    got = v.score([("p", "a"), ("p", "b"), ("p", "c"), ("p", "d")])
    assert got == [0.05, pytest.approx(0.7), pytest.approx(0.975), 0.1]  # 0.1 is a rule's cap: it stands
    assert sorted(seen) == [("p", "b"), ("p", "c")]  # every score above 0.1, a sure one too
    seen.clear()
    narrow = SecondOpinionVerifier(first, FunctionVerifier(second, spec="second", batched=True), band=(0.1, 0.9))
    assert narrow.score([("p", "c"), ("p", "b")]) == [0.95, pytest.approx(0.7)] and seen == [("p", "b")]
    assert v.explain("p", "d") == ["role: stub"] and v.spec == "first+lm"


def test_below_the_band_the_checker_alone_decides_a_premise_the_first_read_in_part():
    seen = []

    def second(pairs):
        seen.extend(pairs)
        return [{"claim": 0.9, "unsure": 0.2}[h] for _, h in pairs]

    class Windowed(FunctionVerifier):  # the first verifier reads premises longer than 3 words in part
        def premise_cut(self, pairs):
            return [len(p.split()) > 3 for p, _ in pairs]

        def explain(self, premise, claim):
            return ["number: stub"] if claim == "capped" else []

    first = Windowed(lambda p, h: {"claim": 0.05, "capped": 0.1, "unsure": 0.6}[h], spec="first")
    v = SecondOpinionVerifier(first, FunctionVerifier(second, spec="second", batched=True))
    long_p, short_p = "a premise of many words", "short one"
    got = v.score([(long_p, "unsure"), (long_p, "claim"), (short_p, "claim"), (long_p, "capped")])
    # in the band: the mean; below it on a premise read in part: the checker alone; a check's cap stands;
    # a short premise was read whole
    assert got == [pytest.approx(0.4), pytest.approx(0.9), 0.05, 0.1]
    assert sorted(seen) == [(long_p, "claim"), (long_p, "unsure")]
    plain = SecondOpinionVerifier(FunctionVerifier(lambda p, h: 0.05, spec="f"), FunctionVerifier(second, spec="s"))
    assert plain.score([(long_p, "claim")]) == [0.05]  # a first verifier that cannot tell keeps its score


def test_the_default_verifier_tells_a_premise_longer_than_its_window():
    from citegraph.tools.verifier import get_verifier

    try:
        first = get_verifier("default+checks")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"default weights not available: {e}")
    short = "The Eiffel Tower is in Paris."
    long_p = " ".join(["The tower was painted again in a brown colour by the city's workers that year."] * 20)
    assert first.premise_cut([(short, "It is in Paris."), (long_p, "It is in Paris.")]) == [False, True]


def test_the_fitted_combination_reads_both_scores_and_the_words_a_claim_keeps():
    sys.path.insert(0, str(REPO / "scripts"))
    import fit_second_opinion as fso

    premise = "The drug had no measurable effect in children."
    feats = fso.combination_features(0.9, 0.2, premise, "The drug reduced symptoms in children.")
    assert len(feats) == len(fso.COMBINATION_FEATURES) and feats[-1] == 1.0
    assert feats[2] == pytest.approx(0.5)  # drug, children kept; reduced, symptoms not
    assert fso.combination_features(0.9, 0.2, premise, "The drug had no effect in children.")[2] == 1.0
    assert fso.combination_features(0.999999999, 1e-12, premise, "x")[:2] == [6.0, -6.0]  # logits bounded


def test_specs_accept_lm_check_and_the_plus_lm_suffix():
    assert check_verifier_spec("lm-check") == "lm-check"
    assert check_verifier_spec("default+checks+lm") == "default+checks+lm"
    assert check_verifier_spec("lm-check:runs/a") == "lm-check:runs/a"  # another adapter's folder
    assert check_verifier_spec("default+checks+lm:runs/a") == "default+checks+lm:runs/a"
    with pytest.raises(InputError, match="unknown verifier spec 'lm-check:'"):
        check_verifier_spec("default+lm:")
    with pytest.raises(InputError, match=r"unknown verifier spec 'nope';.*then \+lm"):
        check_verifier_spec("nope+lm")


def test_the_checker_built_from_the_gguf_predicts_what_llama_cpp_predicts():
    """All 24 layers rebuilt in torch from the GGUF give llama.cpp's next-token logits: the name map,
    the dequantization and the attention layout are right (the checker uses the first 12 of them)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("gguf")
    llama_cpp = pytest.importorskip("llama_cpp")
    path = _gguf()
    meta, tensors, head = lmcheck.gguf_tensors(path, meta_layers := 24)
    ids = [785, 468, 3092, 301, 21938, 374, 7407, 304, 279, 3283, 315]  # "The Eiffel Tower is located in the city of"
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, n_threads=2, verbose=False, logits_all=True)
    llm.eval(ids)
    ref = np.array(llm.scores[len(ids) - 1])
    rows = lmcheck.head_rows(head, range(head.data.shape[0]))
    model = lmcheck.build_checker(meta, tensors, meta_layers, rows[0])
    with torch.no_grad():
        h = model.body(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long)).last_hidden_state[0, -1]
    ours = (torch.from_numpy(rows) @ h).numpy()
    assert list(np.argsort(-ours)[:5]) == list(np.argsort(-ref)[:5])
    assert np.corrcoef(ref, ours)[0, 1] > 0.999


def test_merging_the_shipped_adapter_touches_every_target_and_nothing_else():
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    card = lmcheck.read_card(LM_ASSET_DIR)
    adapter = load_file(str(LM_ASSET_DIR / "adapter.safetensors"))
    shapes = {"q_proj": (896, 896), "k_proj": (128, 896), "v_proj": (128, 896), "o_proj": (896, 896),
              "gate_proj": (4864, 896), "up_proj": (4864, 896), "down_proj": (896, 4864)}
    part = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
            "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}
    tensors = {f"layers.{i}.{part[m]}.{m}.weight": np.zeros(s, dtype=np.float32)
               for i in range(card["layers"]) for m, s in shapes.items()}
    tensors["norm.weight"] = np.ones(896, dtype=np.float32)
    before = {k: v.copy() for k, v in tensors.items()}
    head = lmcheck.merge_adapter(tensors, adapter, card["lora"])
    assert head.shape == (897,) and np.isfinite(head).all()
    changed = [k for k, v in tensors.items() if not np.array_equal(v, before[k])]
    assert len(changed) == 7 * card["layers"] and "norm.weight" not in changed
    a = adapter["base_model.model.body.layers.0.self_attn.q_proj.lora_A.weight"].float()
    b = adapter["base_model.model.body.layers.0.self_attn.q_proj.lora_B.weight"].float()
    want = (b @ a * card["lora"]["lora_alpha"] / card["lora"]["r"]).numpy()
    assert np.allclose(tensors["layers.0.self_attn.q_proj.weight"], want, atol=1e-6)
    del torch


def test_pairs_are_cut_to_fit_and_keep_the_claim_and_the_matching_window():
    pytest.importorskip("gguf")
    from citegraph.tools.verifier.lm import gguf_tokenizer

    tok = gguf_tokenizer(_gguf())
    filler = " ".join(f"Sentence {k} is about the weather in the valley." for k in range(80))
    premise = filler + " The bridge over the Vlora river was finished in 1911. " + filler
    ids = lmcheck.encode_pairs(tok, [(premise, "The bridge was finished in 1911."), ("Short premise.", "A claim.")], 96)
    assert max(len(x) for x in ids) <= 96
    text = tok.decode(ids[0])
    assert "finished in 1911" in text.split("Claim:")[0]  # the window holding the claim's words
    assert text.endswith(lmcheck.PROMPT_TAIL) and "The bridge was finished in 1911." in text
    assert tok.decode(ids[1]) == lmcheck.PROMPT_HEAD + "Short premise." + lmcheck.PROMPT_MID + "A claim." + lmcheck.PROMPT_TAIL


@pytest.mark.slow
@pytest.mark.skipif(not (LM_ASSET_DIR / "checker.json").exists(), reason="no adapter in citegraph/assets/verifier_lm")
def test_lm_check_minimal_pair_floors():
    """The shipped checker on the first minimal-pair suite, a floor per category under what it scored here
    (docs/verifier.md), and on the second suite, written blind, a floor on balanced accuracy; ``default`` fails
    the role-swap and negation floors, and the first adapter (56.9 on the second suite) the second."""
    _gguf()
    from citegraph.eval.verifier_sets import binary_report, minimal_pair_table, read_minimal_pairs
    from citegraph.tools.verifier import get_verifier

    pairs = read_minimal_pairs(SUITE)
    table = minimal_pair_table(pairs, get_verifier("lm-check").score([(p.premise, p.claim) for p in pairs]))
    floors = {"role_swap": 0.8, "negation": 0.5, "entity_swap": 0.7, "number_date": 0.85, "added_detail": 0.9,
              "long_premise": 0.6, "paraphrase": 0.55, "control": 0.75}
    low = {c: table[c]["share"] for c, f in floors.items() if table[c]["share"] < f}
    assert not low, f"below the floors: {low} (table {table})"
    blind = read_minimal_pairs(SUITE.with_name("minimal_pairs_blind.jsonl"))
    rep = binary_report([p.label for p in blind], get_verifier("lm-check").score([(p.premise, p.claim) for p in blind]),
                        boot=0)
    assert rep.balanced_accuracy >= 0.68, rep


def test_training_script_smoke_run_payload_train_and_load(tmp_path):
    """payload (one layer, a handful of pairs) -> train two steps on the CPU -> the adapter loads in
    the lm-check backend, whose CPU scores are the ones the training run wrote."""
    pytest.importorskip("peft")
    pytest.importorskip("gguf")
    _gguf()
    rows = [{"split": "train", "premise": f"The river {k} flows north.", "claim": f"The river {k} flows "
             + ("north." if k % 2 else "south."), "y": k % 2,
             "part": "written" if k >= 8 else "extra" if k >= 6 else "base"} for k in range(10)]
    rows += [{"split": "eval", "set": "minimal", "group": "negation", "premise": "Ann won.", "claim": "Ann lost.", "y": 0},
             {"split": "eval", "set": "minimal", "group": "control", "premise": "Ann won.", "claim": "Ann won.", "y": 1}]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pay, out = tmp_path / "pay", tmp_path / "out"
    run = [sys.executable, str(REPO / "scripts" / "train_lm_checker.py")]
    p = subprocess.run(run + ["payload", "--out", str(pay), "--layers", "1", "--pairs", str(pairs)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (pay / "p1" / "weights1.npz").exists() and (pay / "all" / "payload.json").exists()
    t = subprocess.run(run + ["train", "--payload", str(pay / "all"), "--out", str(out), "--device", "cpu",
                              "--max-steps", "2", "--batch", "4", "--workers", "1", "--parts", "base"],
                       capture_output=True, text=True, timeout=600)
    assert t.returncode == 0, t.stderr[-2000:]
    card = json.loads((out / "checker.json").read_text())
    assert card["steps"] == 2 and card["layers"] == 1 and card["eval"]["minimal"]["n"] == 2
    assert card["train_pairs"] == 6  # --parts base: the rows marked part=extra or part=written left out
    from citegraph.tools.verifier.lm import LMCheckVerifier

    written = [json.loads(line)["p"] for line in (out / "eval_scores.jsonl").read_text().splitlines()]
    for dtype, tol in (("float32", 0.005), ("bfloat16", 0.03), ("auto", 0.03)):  # fp32 in the run's own scoring
        v = LMCheckVerifier(folder=out, cache=False, dtype=dtype)
        got = v.score([("Ann won.", "Ann lost."), ("Ann won.", "Ann won.")])
        assert np.allclose(got, written, atol=tol), (dtype, got, written)
    with pytest.raises(ValueError, match="dtype must be auto, bfloat16 or float32"):
        LMCheckVerifier(folder=out, dtype="int8")
    from citegraph.tools.verifier import get_verifier

    assert np.allclose(get_verifier(f"lm-check:{out}", cache=False).score([("Ann won.", "Ann lost.")]), written[:1],
                       atol=0.03)  # another adapter by its folder
    # continued from that adapter on the written rows beside a sample of the base rows, each written row twice
    out2 = tmp_path / "out2"
    t2 = subprocess.run(run + ["train", "--payload", str(pay / "all"), "--out", str(out2), "--device", "cpu",
                               "--max-steps", "1", "--batch", "4", "--workers", "1", "--parts", "written",
                               "--train-max", "3", "--written-repeat", "2", "--init", str(out), "--lr", "0"],
                        capture_output=True, text=True, timeout=600)
    assert t2.returncode == 0, t2.stderr[-2000:]
    card2 = json.loads((out2 / "checker.json").read_text())
    assert card2["train_pairs"] == 3 + 2 * 2 and "continued from" in t2.stdout
    again = [json.loads(line)["p"] for line in (out2 / "eval_scores.jsonl").read_text().splitlines()]
    assert np.allclose(again, written, atol=0.005)  # learning rate 0: the adapter it continued (saved in bf16)
    bad = subprocess.run(run + ["train", "--payload", str(tmp_path / "none"), "--out", str(tmp_path / "x"),
                                "--device", "cpu"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no payload.json" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_soup_of_adapters_merges_to_the_mean_of_their_weight_changes(tmp_path):
    """train_lm_checker.py soup: the soup's merged weight change is the mean of each adapter's (ranks and
    alpha / r may differ), its head the mean of the heads; adapters of another base are refused in one line."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    g = torch.Generator().manual_seed(0)
    key = "base_model.model.body.layers.0.self_attn.q_proj.lora_{}.weight"
    base_card = {"base_gguf": "x.gguf", "layers": 1, "max_len": 64, "prompt": ["a", "b", "c"], "threshold": 0.5}
    folders = []
    for k, (r, alpha) in enumerate(((2, 4), (3, 12))):  # alpha / r: 2 and 4
        f = tmp_path / f"a{k}"
        f.mkdir()
        save_file({key.format("A"): torch.randn(r, 6, generator=g), key.format("B"): torch.randn(6, r, generator=g),
                   "head.weight": torch.randn(1, 6, generator=g), "head.bias": torch.randn(1, generator=g)},
                  str(f / "adapter.safetensors"))
        (f / "checker.json").write_text(json.dumps({**base_card, "lora": {"r": r, "lora_alpha": alpha,
                                                                          "target_modules": ["q_proj"]}}))
        folders.append(f)
    run = [sys.executable, str(REPO / "scripts" / "train_lm_checker.py"), "soup"]
    p = subprocess.run(run + [str(f) for f in folders] + ["--out", str(tmp_path / "soup")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    card = json.loads((tmp_path / "soup" / "checker.json").read_text())
    assert card["lora"]["r"] == 5 and card["lora"]["lora_alpha"] == 10 and len(card["soup_of"]) == 2

    def merged(folder):
        c = json.loads((folder / "checker.json").read_text())
        tensors = {"layers.0.self_attn.q_proj.weight": np.zeros((6, 6), dtype=np.float32)}
        head = lmcheck.merge_adapter(tensors, load_file(str(folder / "adapter.safetensors")), c["lora"])
        return tensors["layers.0.self_attn.q_proj.weight"], head

    (w0, h0), (w1, h1), (ws, hs) = merged(folders[0]), merged(folders[1]), merged(tmp_path / "soup")
    assert np.allclose(ws, (w0 + w1) / 2, atol=1e-5) and not np.allclose(ws, w0, atol=1e-2)
    assert np.allclose(hs, (h0 + h1) / 2, atol=1e-6)
    (folders[1] / "checker.json").write_text(json.dumps({**base_card, "layers": 2, "lora": {
        "r": 3, "lora_alpha": 12, "target_modules": ["q_proj"]}}))
    p = subprocess.run(run + [str(f) for f in folders] + ["--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip() == "the adapters differ in layers: not one base, their weights do not average"
    assert not (tmp_path / "bad").exists()
    del torch
