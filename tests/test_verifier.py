"""Tests of citegraph.tools.verifier: label mapping, windowing, caching, backends, verify_file."""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import math
import os
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from citegraph.errors import InputError  # noqa: E402
from citegraph.tools import verifier as V  # noqa: E402
from citegraph.cli import verify as VC  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CITEGRAPH_SHARED_DATA", REPO.parent / "shared" / "data"))  # as in conftest.py

WORDS = ("the cat sat on mat dog ran in park a is red blue sky paris capital of france "
         "needle hay stack berlin germany city water wet fire hot cold").split()


@pytest.fixture(autouse=True)
def _fresh_registry():
    V.clear_verifier_cache()
    torch.manual_seed(0)
    yield
    V.clear_verifier_cache()


# ------------------------------------------------------------------------------------------------
# tiny randomly initialised models, saved and loaded through the real loading code
# ------------------------------------------------------------------------------------------------
def _bert_tokenizer(tmp: Path):
    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + WORDS
    (tmp / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return BertTokenizerFast.from_pretrained(str(tmp))  # reads vocab.txt (transformers 4.x and 5.x)


def make_bert(tmp: Path, id2label: dict[int, str], bias: list[float] | None = None, max_pos: int = 128) -> Path:
    from transformers import BertConfig, BertForSequenceClassification

    tmp.mkdir(parents=True, exist_ok=True)
    tok = _bert_tokenizer(tmp)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=37, max_position_embeddings=max_pos, num_labels=len(id2label),
                     id2label=id2label, label2id={v: k for k, v in id2label.items()})
    model = BertForSequenceClassification(cfg)
    if bias is not None:  # constant logits = bias, whatever the input
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    return tmp


def make_t5(tmp: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    tmp.mkdir(parents=True, exist_ok=True)
    vocab = {w: i for i, w in enumerate(["<pad>", "</s>", "<unk>", "premise:", "hypothesis:", "1", "0"] + WORDS)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    cfg = T5Config(vocab_size=len(vocab), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, tie_word_embeddings=False)
    model = T5ForConditionalGeneration(cfg)
    with torch.no_grad():  # make the "1" and "0" logits clearly different
        model.lm_head.weight[vocab["1"]] = 4 * model.lm_head.weight[vocab["0"]].neg() + 1.0
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    return tmp


def _softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


# ------------------------------------------------------------------------------------------------
# label mapping
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("id2label,expected", [
    ({0: "entailment", 1: "neutral", 2: "contradiction"}, 0),
    ({0: "contradiction", 1: "neutral", 2: "entailment"}, 2),
    ({0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"}, 1),
    ({0: "not_entailment", 1: "entailment"}, 1),
    ({0: "entailment", 1: "not_entailment"}, 0),
    ({0: "non-entailment", 1: "entailment"}, 1),
    ({0: "unsupported", 1: "supported"}, 1),
    ({0: "LABEL_0", 1: "LABEL_1"}, 1),
])
def test_entailment_index(id2label, expected):
    assert V.entailment_index(id2label, len(id2label)) == expected


@pytest.mark.parametrize("id2label,bias", [
    ({0: "contradiction", 1: "entailment", 2: "neutral"}, [0.3, 2.0, -1.0]),
    ({0: "entailment", 1: "neutral", 2: "contradiction"}, [1.5, 0.2, -0.7]),
    ({0: "entailment", 1: "not_entailment"}, [1.0, -0.5]),
    ({0: "not_entailment", 1: "entailment"}, [1.0, -0.5]),
])
def test_classifier_probability_uses_entailment_column(tmp_path, id2label, bias):
    path = make_bert(tmp_path / "m", id2label, bias=bias)
    v = V.get_verifier(f"hf-classifier:{path}", device="cpu")
    p = v.score([("the cat sat on the mat .", "a cat is on the mat .")])[0]
    idx = [k for k, lab in id2label.items() if lab.lower() == "entailment"][0]
    assert p == pytest.approx(_softmax(bias)[idx], abs=1e-5)
    assert v.entails("the cat sat on the mat .", "a cat is on the mat .") == (p >= 0.5)


def test_seq2seq_true_style_probability(tmp_path):
    path = make_t5(tmp_path / "t5")
    v = V.get_verifier(f"hf-seq2seq:{path}", device="cpu")
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    tok = AutoTokenizer.from_pretrained(path)
    model = T5ForConditionalGeneration.from_pretrained(path).eval()
    pairs = [("the cat sat on the mat", "the cat is red"), ("paris is the capital of france", "paris is a city")]
    got = v.score(pairs)
    for (p, h), g in zip(pairs, got):
        enc = tok(f"premise: {p} hypothesis: {h}", return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc, decoder_input_ids=torch.tensor([[0]])).logits[0, 0]
        one, zero = tok.convert_tokens_to_ids("1"), tok.convert_tokens_to_ids("0")
        expected = _softmax([logits[one].item(), logits[zero].item()])[0]
        assert g == pytest.approx(expected, abs=1e-4)
        assert abs(g - 0.5) > 1e-3  # the two logits really differ, so swapping them would fail


# ------------------------------------------------------------------------------------------------
# windowing of long premises
# ------------------------------------------------------------------------------------------------
def test_long_premise_is_windowed_and_max_is_taken(tmp_path):
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"}, max_pos=512)
    v = V.get_verifier(f"hf-classifier:{path}", device="cpu", max_length=48, window_overlap=8)
    filler = " ".join(WORDS[i % 17] for i in range(150))  # no "needle" in the filler
    premise = filler + " needle in the hay stack ."
    hyp = "the needle is in the hay ."
    hyp_len = len(v.tokenizer(hyp, add_special_tokens=False)["input_ids"])
    windows = v._windows(premise, hyp_len)
    assert len(windows) > 3
    room = 48 - hyp_len - 3
    for w in windows:
        assert len(v.tokenizer(w, add_special_tokens=False)["input_ids"]) <= room
    assert "needle" in windows[-1] and "needle" not in windows[0]  # truncation alone would lose it
    assert windows[0].split()[0] == premise.split()[0] and premise.endswith(windows[-1])
    per_window = [v._forward([(w, hyp)])[0] for w in windows]
    assert max(per_window) - min(per_window) > 1e-6  # windows really score differently
    assert v.score([(premise, hyp)])[0] == pytest.approx(max(per_window), abs=1e-5)
    assert v.stats.pairs_scored == 1
    assert v.stats.batches == 1  # all windows of the pair in one batch (batch_size 32)


def test_max_windows_scores_only_the_best_overlap_windows(tmp_path):
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"}, max_pos=512)
    v = V.get_verifier(f"hf-classifier:{path}", device="cpu", max_length=48, window_overlap=8, max_windows=1)
    filler = " ".join(WORDS[i % 17] for i in range(150))
    premise = filler + " needle in the hay stack . " + filler
    hyp = "the needle is in the hay ."
    windows = v._windows(premise, len(v.tokenizer(hyp, add_special_tokens=False)["input_ids"]))
    best = V.top_windows(windows, hyp, 1)
    assert len(windows) > 5 and len(best) == 1 and "needle" in best[0]
    assert V.top_windows(windows, hyp, 3) == [w for w in windows if w in V.top_windows(windows, hyp, 3)]  # in order
    assert v.score([(premise, hyp)])[0] == pytest.approx(v._forward([(best[0], hyp)])[0], abs=1e-5)
    assert v.stats.windows_skipped == 1


def test_trained_folder_keeps_its_inference_settings(tmp_path):
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"})
    assert V.get_verifier(f"hf-classifier:{path}").max_length == 128  # the model's own limit
    (path / "inference.json").write_text(json.dumps({"max_length": 40, "max_windows": 1, "window_overlap": 8}))
    V.clear_verifier_cache()
    v = V.get_verifier(f"hf-classifier:{path}")
    assert (v.max_length, v.max_windows, v.window_overlap) == (40, 1, 8)
    assert V.get_verifier(f"hf-classifier:{path}", max_windows=0).max_windows is None  # a call's own setting wins


def test_temperature_scales_the_score_not_the_decision(tmp_path):
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"}, bias=[0.0, 1.2])
    plain = V.get_verifier(f"hf-classifier:{path}").score([("a", "b")])[0]
    assert plain == pytest.approx(_softmax([0.0, 1.2])[1], abs=1e-4)
    (path / "inference.json").write_text(json.dumps({"temperature": 2.0}))
    V.clear_verifier_cache()
    warm = V.get_verifier(f"hf-classifier:{path}").score([("a", "b")])[0]
    assert warm == pytest.approx(_softmax([0.0, 0.6])[1], abs=1e-4) and (warm >= 0.5) == (plain >= 0.5)
    with pytest.raises(Exception, match="temperature must be above 0"):
        V.get_verifier(f"hf-classifier:{path}", temperature=0)


def test_windows_overlap_and_cover(tmp_path):
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"}, max_pos=512)
    v = V.get_verifier(f"hf-classifier:{path}", device="cpu", max_length=64, max_premise_tokens=20, window_overlap=5)
    premise = " ".join(f"{w}" for w in (WORDS * 3)[:70])
    ws = v._windows(premise, 5)
    toks = [v.tokenizer(w, add_special_tokens=False)["input_ids"] for w in ws]
    assert all(len(t) <= 20 for t in toks)
    for a, b in zip(toks, toks[1:]):
        assert a[-5:] == b[:5]  # consecutive windows share `window_overlap` tokens
    full = v.tokenizer(premise, add_special_tokens=False)["input_ids"]
    assert toks[0] == full[:20] and toks[-1] == full[-len(toks[-1]):]
    assert v._windows("a short premise .", 5) == ["a short premise ."]


# ------------------------------------------------------------------------------------------------
# cache, counters, registry
# ------------------------------------------------------------------------------------------------
def _keyword_stub(calls):
    def fn(premise, hypothesis):
        calls.append((premise, hypothesis))
        return 1.0 if all(w in premise.lower() for w in hypothesis.lower().split()) else 0.0

    return V.FunctionVerifier(fn, spec="stub:keyword")


def test_cache_second_call_scores_nothing_new():
    calls = []
    v = _keyword_stub(calls)
    pairs = [("the sky is blue", "sky blue"), ("the sky is blue", "grass green"), ("the sky is blue", "sky blue")]
    assert v.score(pairs) == [1.0, 0.0, 1.0]
    assert len(calls) == 2  # the duplicate inside the call is not scored twice
    assert (v.stats.pairs_scored, v.stats.cache_hits) == (2, 1)
    assert v.score(pairs) == [1.0, 0.0, 1.0]
    assert len(calls) == 2
    assert (v.stats.pairs_scored, v.stats.cache_hits) == (2, 4)
    assert v.entails_many([("the sky is blue", "sky blue"), ("x", "y")]) == [True, False]
    assert v.stats.pairs_scored == 3 and len(calls) == 3
    v.clear_cache()
    v.score(pairs[:1])
    assert v.stats.pairs_scored == 4


def test_with_threshold_shares_model_cache_and_counters():
    calls = []
    v = V.FunctionVerifier(lambda p, h: calls.append((p, h)) or 0.6, spec="stub:0.6")
    strict = V.with_threshold(v, 0.7)
    assert v.entails_many([("a", "b")]) == [True] and strict.entails_many([("a", "b")]) == [False]
    assert strict.entails("a", "b") is False and strict.score([("a", "b")]) == [0.6]
    assert len(calls) == 1 and strict.stats is v.stats and v.stats.cache_hits == 3
    assert V.with_threshold(v, 0) is v and V.with_threshold(v, None) is v


def test_threshold():
    v = V.FunctionVerifier(lambda p, h: 0.6, spec="stub:const")
    assert v.threshold == 0.5
    assert v.entails("a", "b") is True
    assert v.entails("a", "b", threshold=0.7) is False
    v.threshold = 0.65
    assert v.entails_many([("a", "b"), ("c", "d")]) == [False, False]


def test_register_and_get_verifier_caching(tmp_path):
    stub = _keyword_stub([])
    V.register_verifier("stub:keyword", stub)
    assert V.get_verifier("stub:keyword") is stub
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"})
    a = V.get_verifier(f"hf-classifier:{path}", device="cpu")
    assert V.get_verifier(f"hf-classifier:{path}", device="cpu") is a  # loads once per (spec, kw)
    assert V.get_verifier(f"hf-classifier:{path}", device="cpu", batch_size=4) is not a
    with pytest.raises(ValueError, match="unknown verifier spec"):
        V.get_verifier("no-such-backend")


def test_device_auto_is_cpu_fp32_without_cuda(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("CUDA present: auto picks cuda/bf16")
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"})
    v = V.get_verifier(f"hf-classifier:{path}")
    assert v.device == "cpu" and next(v.model.parameters()).dtype == torch.float32


def test_int8_quantized_classifier_stays_close_to_fp32(tmp_path):
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"})
    pairs = [("the cat sat on the mat .", "a cat is on the mat ."), ("dogs bark at night .", "the moon is bright .")]
    full = V.get_verifier(f"hf-classifier:{path}", device="cpu").score(pairs)
    q = V.get_verifier(f"hf-classifier:{path}", device="cpu", quantize="int8")
    assert q.quantized and "quantized.dynamic" in type(q.model.bert.encoder.layer[0].attention.self.query).__module__
    assert q.score(pairs) == pytest.approx(full, abs=0.05)
    with pytest.raises(Exception, match="quantize"):
        V.get_verifier(f"hf-classifier:{path}", device="cpu", quantize="int4")


def test_missing_model_raises_clear_error(tmp_path):
    with pytest.raises(Exception, match="cannot load verifier"):
        V.get_verifier(f"hf-classifier:{tmp_path / 'nope'}")


# ------------------------------------------------------------------------------------------------
# llm-judge backend (with a fake yes_probability)
# ------------------------------------------------------------------------------------------------
def test_llm_judge_uses_models_yes_probability(monkeypatch):
    seen = []

    def fake_yes_probability(chat_spec, prompt):
        seen.append((chat_spec, prompt))
        return 0.9 if "NEEDLE" in prompt.split("Claim:")[0] else 0.1

    import citegraph.tools.verifier.judge as judge

    monkeypatch.setattr(judge, "yes_probability", fake_yes_probability)  # where the judge looks them up
    monkeypatch.setattr(judge, "judge_workers", lambda spec: 1)  # a model in this process: one at a time
    v = V.get_verifier("llm-judge:fake-chat", max_premise_chars=100, window_overlap_chars=10)
    assert v.score([("short premise", "claim one")]) == [pytest.approx(0.1)]
    assert seen[0][0] == "fake-chat"
    assert "short premise" in seen[0][1] and "claim one" in seen[0][1]
    long_premise = "x" * 300 + " NEEDLE " + "y" * 50
    assert v.score([(long_premise, "claim two")]) == [pytest.approx(0.9)]  # max over windows
    assert len(seen) > 3
    assert V.get_verifier("llm-judge").chat_spec == "local"


# ------------------------------------------------------------------------------------------------
# verify_file and the CLI helper
# ------------------------------------------------------------------------------------------------
def _write(path: Path, lines):
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_verify_file_round_trip(tmp_path):
    V.register_verifier("stub:keyword", _keyword_stub([]))
    src = _write(tmp_path / "pairs.jsonl", [
        {"id": "a", "premise": "The sky is blue today", "hypothesis": "sky blue"},
        {"id": "b", "premise": "The sky is blue today", "hypothesis": "grass green"},
        "",
        {"id": "c", "premise": "The sky is blue today", "hypothesis": "sky blue"},
    ])
    out = tmp_path / "sub" / "out.jsonl"
    summary = VC.verify_file(src, out, "stub:keyword")
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    assert [r["entailed"] for r in rows] == [True, False, True]
    assert [r["probability"] for r in rows] == [1.0, 0.0, 1.0]
    assert rows[0]["premise"] == "The sky is blue today"
    assert summary["pairs"] == 3 and summary["entailed"] == 2 and summary["not_entailed"] == 1
    assert summary["pairs_scored"] == 2 and summary["cache_hits"] == 1
    assert summary["verifier"] == "stub:keyword"


def test_verify_file_with_checks_says_why(tmp_path):
    V.register_verifier("stub:yes", V.FunctionVerifier(lambda p, h: 0.9, spec="stub:yes"))
    premise = "The Velmont board approved the merger with Krusto in 2019."
    src = _write(tmp_path / "pairs.jsonl", [
        {"id": "a", "premise": premise, "hypothesis": "The Velmont board approved the merger with Krusto."},
        {"id": "b", "premise": premise, "hypothesis": "The Velmont board rejected the merger with Krusto in 2019."},
    ])
    out = tmp_path / "out.jsonl"
    summary = VC.verify_file(src, out, "stub:yes+checks")
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["entailed"] for r in rows] == [True, False] and rows[1]["probability"] == 0.1
    assert rows[0]["conflicts"] == [] and rows[1]["conflicts"][0].startswith("antonym: the claim has 'rejected'")
    assert summary["verifier"] == "stub:yes+checks" and summary["max_windows"] is None
    plain = tmp_path / "plain.jsonl"
    VC.verify_file(src, plain, "stub:yes")
    assert "conflicts" not in json.loads(plain.read_text().splitlines()[0])


def test_verify_file_to_stdout(tmp_path, capsys):
    V.register_verifier("stub:keyword", _keyword_stub([]))
    src = _write(tmp_path / "p.jsonl", [{"premise": "red fire", "hypothesis": "fire"}])
    VC.verify_file(src, None, "stub:keyword")
    assert json.loads(capsys.readouterr().out.strip())["entailed"] is True


@pytest.mark.parametrize("lines,match", [
    (None, "not found"),
    (['{"premise": "a", "hypothesis": "b"}', "{not json"], r":2: invalid JSON"),
    ([{"premise": "a"}], r":1: missing string field 'hypothesis'"),
    ([{"hypothesis": "a"}], r":1: missing string field 'premise'"),
    (["[1, 2]"], r":1: expected a JSON object"),
    ([{"premise": 3, "hypothesis": "b"}], "premise"),
])
def test_verify_file_bad_input(tmp_path, lines, match):
    V.register_verifier("stub:keyword", _keyword_stub([]))
    src = tmp_path / "bad.jsonl" if lines is None else _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(InputError, match=match) as ei:
        VC.verify_file(src, tmp_path / "o.jsonl", "stub:keyword")
    assert "\n" not in str(ei.value)
    assert not (tmp_path / "o.jsonl").exists()


def test_add_verify_command(tmp_path, capsys):
    V.register_verifier("stub:keyword", _keyword_stub([]))
    parser = argparse.ArgumentParser(prog="citegraph")
    add = VC.register(parser.add_subparsers(dest="command"))
    assert add.prog.endswith("verify")
    src = _write(tmp_path / "p.jsonl", [{"premise": "hot fire", "hypothesis": "cold water"}])
    out = tmp_path / "o.jsonl"
    args = parser.parse_args(["verify", "--pairs", str(src), "--verifier", "stub:keyword", "--output", str(out)])
    assert args.func(args) == 0
    assert json.loads(out.read_text())["entailed"] is False
    err = capsys.readouterr().err.splitlines()
    assert json.loads(err[0])["pairs"] == 1
    assert err[1].startswith("1 pairs, 0 entailed,") and "pairs/s" in err[1]
    defaults = parser.parse_args(["verify", "--pairs", "x.jsonl"])
    assert defaults.verifier == "default" and defaults.output is None


def test_verify_file_max_windows_every_window_or_best_overlap(tmp_path):
    path = make_bert(tmp_path / "m", {0: "not_entailment", 1: "entailment"}, max_pos=48)
    spec = f"hf-classifier:{path}"
    filler = " ".join(WORDS[i % 17] for i in range(150))
    premise, hyp = filler + " needle in the hay stack . " + filler, "the needle is in the hay ."
    src = _write(tmp_path / "p.jsonl", [{"premise": premise, "hypothesis": hyp}])
    every = VC.verify_file(src, tmp_path / "every.jsonl", spec, max_windows=0)
    one = VC.verify_file(src, tmp_path / "one.jsonl", spec, max_windows=1)
    assert (every["max_windows"], every["premises_not_all_windows"]) == (0, 0)
    assert (one["max_windows"], one["premises_not_all_windows"]) == (1, 1)
    p_every, p_one = (json.loads((tmp_path / f).read_text())["probability"] for f in ("every.jsonl", "one.jsonl"))
    v = V.get_verifier(spec, max_windows=0)
    windows = v._windows(premise, len(v.tokenizer(hyp, add_special_tokens=False)["input_ids"]))
    per_window = [v._forward([(w, hyp)])[0] for w in windows]
    assert len(windows) > 5 and max(per_window) - min(per_window) > 1e-6
    assert p_every == pytest.approx(max(per_window), abs=1e-5)
    assert p_one == pytest.approx(v._forward([(V.top_windows(windows, hyp, 1)[0], hyp)])[0], abs=1e-5)
    assert VC.verify_file(src, tmp_path / "x.jsonl", spec)["max_windows"] == 0  # hf-classifier: every window


@pytest.mark.parametrize("spec,max_windows,match", [
    ("llm-judge:local", 1, "applies to default, hf-classifier: and hf-seq2seq:"),
    ("stub:keyword", 0, "not 'stub:keyword'"),
    ("default", -1, "0 \\(every window\\) or more"),
    ("bogus", None, "unknown verifier spec 'bogus'"),
])
def test_verify_file_bad_spec_or_max_windows_refused(tmp_path, spec, max_windows, match):
    V.register_verifier("stub:keyword", _keyword_stub([]))
    src = _write(tmp_path / "p.jsonl", [{"premise": "a", "hypothesis": "b"}])
    with pytest.raises(InputError, match=match):
        VC.verify_file(src, tmp_path / "o.jsonl", spec, max_windows=max_windows)
    assert not (tmp_path / "o.jsonl").exists()


def test_verify_command_max_windows_flag():
    parser = argparse.ArgumentParser(prog="citegraph")
    VC.register(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["verify", "--pairs", "x.jsonl"]).max_windows is None
    assert parser.parse_args(["verify", "--pairs", "x.jsonl", "--max-windows", "0"]).max_windows == 0


# ------------------------------------------------------------------------------------------------
# the shipped default model
# ------------------------------------------------------------------------------------------------
needs_default = pytest.mark.skipif(not (V.ASSET_DIR / "config.json").exists(),
                                   reason="trained model missing in citegraph/assets/verifier")

# (premise, entailed hypothesis, unrelated hypothesis, contradicting hypothesis)
TRIPLES = [
    ("Paris is the capital and most populous city of France.", "Paris is the capital of France.",
     "The moon landing happened in 1969.", "Berlin is the capital of France."),
    ("The Eiffel Tower was completed in 1889 for the World's Fair in Paris.", "The Eiffel Tower was finished in 1889.",
     "Bananas are rich in potassium.", "The Eiffel Tower was completed in 1925."),
    ("Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",
     "Marie Curie won a Nobel Prize in Chemistry.", "The stock market fell sharply on Monday.",
     "Marie Curie never won a Nobel Prize."),
    ("A man is playing a guitar on stage in front of a large crowd.", "A man is playing a guitar.",
     "A woman is sleeping at home.", "Nobody is playing music."),
    ("Water boils at 100 degrees Celsius at sea level.", "At sea level, water boils at 100 degrees Celsius.",
     "The football team won the championship.", "Water boils at 50 degrees Celsius at sea level."),
    ("The company reported revenue of $5 billion in 2020, up 10% from 2019.",
     "The company reported revenue of $5 billion in 2020.", "Penguins live in Antarctica.",
     "The company went bankrupt in 2020."),
]


def _triple_scores(v):
    pairs = [(p, h) for p, *hs in TRIPLES for h in hs]
    s = v.score(pairs)
    return [tuple(s[3 * i: 3 * i + 3]) for i in range(len(TRIPLES))]


@needs_default
def test_default_model_hand_written_pairs():
    v = V.get_verifier("default")
    assert v.num_labels == 2 and v.entail_idx == 1
    scores = _triple_scores(v)
    for (p, e, u, c), (se, su, sc) in zip(TRIPLES, scores):
        assert se > su, (e, se, u, su)  # the supported claim outranks an unrelated one
        assert se > sc, (e, se, c, sc)  # ... and a contradicting one
    assert all(se >= 0.5 for se, _, _ in scores), scores  # clear entailments accepted
    assert all(su < 0.5 for _, su, _ in scores), scores  # unrelated claims rejected


@needs_default
def test_default_model_rejects_high_overlap_contradictions():
    # the first weights (0.61 balanced accuracy) failed this; the current ones pass it
    scores = _triple_scores(V.get_verifier("default"))
    assert all(sc < 0.5 for _, _, sc in scores), scores


@needs_default
def test_default_weights_are_fp16_and_small():
    from safetensors import safe_open

    files = list(V.ASSET_DIR.glob("*.safetensors"))
    assert files and sum(f.stat().st_size for f in V.ASSET_DIR.rglob("*") if f.is_file()) < 50e6
    with safe_open(str(files[0]), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    assert (V.ASSET_DIR / "MODEL_CARD.md").exists()


# ------------------------------------------------------------------------------------------------
# reproducibility of the held-out split (needs ../shared/data)
# ------------------------------------------------------------------------------------------------
@needs_default
@pytest.mark.skipif(not (SHARED / "nli_train" / "attribution_pairs.jsonl").exists(),
                    reason="../shared/data/nli_train absent")
def test_heldout_split_is_reproducible_and_excludes_expertqa():
    spec = importlib.util.spec_from_file_location("train_verifier", REPO / "scripts" / "train_verifier.py")
    tv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tv)
    saved = json.loads((V.ASSET_DIR / "heldout_split.json").read_text())
    attr = tv.read_jsonl(SHARED / "nli_train" / "attribution_pairs.jsonl")
    held = tv.heldout_split(attr, saved["heldout_frac"], saved["seed"])
    assert sorted(held) == saved["lines"]
    assert not any(attr[i]["source"] == "attributionbench/ExpertQA" for i in held)
    assert len({attr[i]["source"] for i in held}) == len({r["source"] for r in attr}) - 1  # every source


def test_bf16_is_native_only_with_amx_or_avx512_bf16(tmp_path):
    spec = importlib.util.spec_from_file_location("train_verifier", REPO / "scripts" / "train_verifier.py")
    tv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tv)
    info = tmp_path / "cpuinfo"
    info.write_text("flags\t: fpu sse2 avx2 avx512f avx512bw\n")
    assert not tv.cpu_has_bf16(str(info))  # AVX-512 alone emulates bf16: 0.13 against fp32's 0.48 steps/s here
    info.write_text("flags\t: fpu avx512f avx512_bf16 amx_tile amx_bf16\n")
    assert tv.cpu_has_bf16(str(info))
    assert tv.cpu_has_bf16(str(tmp_path / "absent"))  # unknown: the user's flag is trusted


def test_synthetic_hard_negatives_change_one_detail_of_an_entailed_pair():
    spec = importlib.util.spec_from_file_location("train_verifier", REPO / "scripts" / "train_verifier.py")
    tv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tv)
    premise = "In 2019 Oslo hosted 1200 runners. Bergen was planned and rejected."
    rows = [{"premise": premise, "hypothesis": "In 2019 Oslo hosted 1200 runners.", "y": 1},
            {"premise": premise, "hypothesis": "The race was planned.", "y": 1},
            {"premise": "x", "hypothesis": "ok", "y": 1},  # nothing to change: skipped
            {"premise": "Bergen hosted 30 runners in 2020.", "hypothesis": "Bergen hosted 31 runners.", "y": 0}]
    seen = collections.Counter()
    for seed in range(40):
        out, by_rule = tv.hard_negatives(rows, 5, random.Random(seed))
        assert len(out) == 2 and sum(by_rule.values()) == 2
        for r in out:
            seen[r["source"]] += 1
            # from an entailed pair only (the not-entailed one has another premise)
            assert r["y"] == 0 and r["premise"] == premise and r["source"].startswith("synthetic/")
            original = {"In 2019 Oslo hosted 1200 runners.", "The race was planned."}
            assert r["hypothesis"] not in original
    # every rule fires on these pairs: a number, a name from the premise, a same-ending word, a negation
    assert set(seen) == {"synthetic/number", "synthetic/name", "synthetic/word", "synthetic/negation"}
    assert tv.hard_negatives(rows, 5, random.Random(7)) == tv.hard_negatives(rows, 5, random.Random(7))


def test_soup_averages_sibling_runs_and_refuses_unrelated_ones(tmp_path):
    from safetensors.torch import load_file

    spec = importlib.util.spec_from_file_location("soup_verifier", REPO / "scripts" / "soup_verifier.py")
    sv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sv)
    runs = []
    for i, bias in enumerate(([0.0, 1.0], [2.0, 5.0])):
        run = make_bert(tmp_path / f"run{i}", {0: "not_entailment", 1: "entailment"}, bias=bias)
        (run / "training_info.json").write_text(json.dumps(
            {"base_model": "tiny", "continued_from": {"steps": 7}, "train_seconds": 10.0 + i}))
        (run / "heldout_split.json").write_text(json.dumps({"seed": 13, "lines": [1, 5]}))
        (run / "inference.json").write_text(json.dumps({"max_length": 64, "max_windows": 1}))
        runs.append(run)
    out = tmp_path / "soup"
    assert sv.main(["--out", str(out), *map(str, runs)]) == 0
    a, b, m = (load_file(str(d / "model.safetensors")) for d in (*runs, out))
    assert m["classifier.bias"].tolist() == [1.0, 3.0]
    w = "bert.encoder.layer.0.attention.self.query.weight"
    assert m[w].dtype == torch.float16 and not torch.equal(a[w], b[w])
    assert torch.allclose(m[w].float(), (a[w] + b[w]) / 2, atol=1e-3)
    info = json.loads((out / "training_info.json").read_text())
    assert len(info["runs"]) == 2 and info["train_seconds"] == 21.0
    # the soup loads through the real loading code; constant logits (the classifier weight is zero)
    v = V.get_verifier(f"hf-classifier:{out}", device="cpu")
    assert v.score([("alpha beta", "gamma")])[0] == pytest.approx(1 / (1 + math.exp(-2.0)), abs=1e-3)
    # runs continuing different parents, or holding out other pairs, do not average
    (runs[1] / "training_info.json").write_text(json.dumps(
        {"base_model": "tiny", "continued_from": {"steps": 8}, "train_seconds": 1.0}))
    assert sv.main(["--out", str(tmp_path / "bad"), *map(str, runs)]) == 2
    (runs[1] / "training_info.json").write_text(json.dumps(
        {"base_model": "tiny", "continued_from": {"steps": 7}, "train_seconds": 1.0}))
    (runs[1] / "heldout_split.json").write_text(json.dumps({"seed": 14, "lines": [2]}))
    assert sv.main(["--out", str(tmp_path / "bad"), *map(str, runs)]) == 2
    assert not (tmp_path / "bad").exists()
    # a run and the parent it continued (WiSE-FT): the first input is the parent
    parent_info = {"base_model": "tiny", "continued_from": {"steps": 7}, "train_seconds": 10.0}
    (runs[0] / "training_info.json").write_text(json.dumps(parent_info))
    (runs[1] / "training_info.json").write_text(json.dumps(
        {"base_model": "tiny", "continued_from": parent_info, "train_seconds": 3.0}))
    (runs[1] / "heldout_split.json").write_text(json.dumps({"seed": 13, "lines": [1, 5]}))
    assert sv.main(["--out", str(tmp_path / "wise"), *map(str, runs)]) == 0
    info = json.loads((tmp_path / "wise" / "training_info.json").read_text())
    assert "WiSE-FT" in info["soup"] and info["train_seconds"] == 13.0
    assert load_file(str(tmp_path / "wise" / "model.safetensors"))["classifier.bias"].tolist() == [1.0, 3.0]
    assert sv.main(["--out", str(tmp_path / "bad2"), str(runs[1]), str(runs[0])]) == 2  # child first: refused


def test_empty_premise_is_never_entailed_and_costs_no_model_call():
    calls = []
    v = V.FunctionVerifier(lambda p, h: calls.append((p, h)) or 0.9)
    assert v.score([("", "claim"), ("   ", "claim"), ("evidence", "claim")]) == [0.0, 0.0, 0.9]
    assert calls == [("evidence", "claim")]


def test_pairs_are_reported_to_the_active_usage_tracker():
    from citegraph.tools.usage import UsageTracker

    v = V.FunctionVerifier(lambda p, h: 0.7)
    t = UsageTracker()
    with t.active():
        v.score([("a", "b"), ("a", "b"), ("c", "d")])
        v.score([("a", "b")])
    v.score([("e", "f")])  # outside the tracker: not counted
    assert (t.verifier_pairs, t.verifier_cache_hits) == (2, 2)
