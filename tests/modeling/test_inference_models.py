"""Inference without transformers (modeling/t5_layers.py, modeling_t5.py, edit5_inference.py): the
same numbers as transformers' T5 and ``EdiT5Model``, bit for bit, on random models and the shipped
ones, in float32 and bfloat16; and an ``editspec correct`` of the shipped bundle imports no
transformers at all."""

import subprocess
import sys
from dataclasses import fields

import pytest
import torch
from transformers import T5Config, T5ForConditionalGeneration
from transformers.models.t5.modeling_t5 import T5Attention

from editspec.modeling.features import collate_edit5, edit5_features_batch
from editspec.decoding import core
from editspec.modeling import edit5_inference, modeling_t5
from editspec.modeling.configuration_edit5 import EdiT5Config
from editspec.modeling.edit5_inference import InferenceEdiT5
from editspec.modeling.loading import DEFAULT_MODEL, load_edit5
from editspec.modeling.modeling_edit5 import EdiT5Model
from editspec.modeling.modeling_t5 import InferenceT5
from editspec.modeling.t5 import load_t5
from editspec.modeling.t5_layers import relative_position_bucket
from editspec.tokenization.edits import Edits
from editspec.tokenization.tokens import marker_ids
from tests.helpers import pairs, random_batch, save, tiny_edit5

DTYPES = [torch.float32, torch.bfloat16]


def tied_t5(vocab: int, seed: int = 0, act: str = "gated-gelu", scaled: bool = True) -> T5ForConditionalGeneration:
    torch.manual_seed(seed)
    return T5ForConditionalGeneration(T5Config(
        vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=3, num_heads=4,
        feed_forward_proj=act, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
        tie_word_embeddings=scaled)).eval()  # transformers 5 ties the head either way; False: no scaling


def test_relative_position_bucket_is_transformers():
    rel = torch.arange(-300, 300)[None, :] - torch.arange(40)[:, None]
    for bidirectional in (True, False):
        for buckets, distance in ((32, 128), (8, 20)):
            assert torch.equal(relative_position_bucket(rel, bidirectional, buckets, distance),
                               T5Attention._relative_position_bucket(rel, bidirectional, buckets, distance))


def test_defaults_are_the_configs():
    t5 = T5Config()
    assert {k: getattr(t5, k) for k in modeling_t5.T5_DEFAULTS if k not in ("num_decoder_layers",
                                                                            "decoder_start_token_id")} == \
        {k: v for k, v in modeling_t5.T5_DEFAULTS.items() if k not in ("num_decoder_layers", "decoder_start_token_id")}
    edit5 = EdiT5Config()
    assert {k: getattr(edit5, k) for k in edit5_inference.EDIT5_DEFAULTS} == edit5_inference.EDIT5_DEFAULTS
    assert set(edit5_inference.EDIT5_DEFAULTS) >= {f.name for f in fields(EdiT5Config) if not f.name.startswith("_")} - {
        "architectures", "dtype", "transformers_version"} - set(dir(T5Config()))  # every EdiT5-only field


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act,scaled", [("gated-gelu", True), ("relu", True), ("gated-gelu", False)])
def test_t5_equals_transformers(tmp_path, tokenizer, dtype, act, scaled):
    reference = tied_t5(len(tokenizer), act=act, scaled=scaled)
    save(reference, tokenizer, tmp_path / "t5")
    assert modeling_t5.supported(tmp_path / "t5") is None
    ours, tok = load_t5(tmp_path / "t5", device="cpu", dtype=dtype)
    assert isinstance(ours, InferenceT5) and type(tok).__name__ == "FastTokenizer"
    reference = reference.to(dtype)
    gen = torch.Generator().manual_seed(0)
    for batch in (1, 5):
        ids, mask = random_batch(gen, batch, len(tokenizer), max_len=20)
        with torch.inference_mode():
            states = ours.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
            expected = reference.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        assert torch.equal(states, expected)
        rows = core.inputs(ids, mask)
        assert core.generate(ours, rows, 3, max_new_tokens=12) == core.generate(reference, rows, 3, max_new_tokens=12)
        targets = [r[::-1] for r in rows]
        assert core.score(ours, rows, targets) == core.score(reference, rows, targets)


def test_t5_transformers_loads_what_ours_does_not(tmp_path, tokenizer):
    from safetensors.torch import load_file, save_file

    save(tied_t5(len(tokenizer)), tokenizer, tmp_path / "t5")
    assert isinstance(load_t5(tmp_path / "t5", device="cpu", transformers=True)[0], T5ForConditionalGeneration)
    save(tied_t5(len(tokenizer)), tokenizer, tmp_path / "head")  # a head of its own (older T5 1.1 files)
    state = load_file(tmp_path / "head" / "model.safetensors")
    save_file({**state, "lm_head.weight": state["shared.weight"].clone()}, tmp_path / "head" / "model.safetensors",
              metadata={"format": "pt"})
    assert "untied" in modeling_t5.supported(tmp_path / "head")
    assert isinstance(load_t5(tmp_path / "head", device="cpu")[0], T5ForConditionalGeneration)
    (tmp_path / "hub").mkdir()
    assert "no config.json" in modeling_t5.supported(tmp_path / "hub")


def edit5_batch(tokenizer, n: int = 12):
    sources, targets = zip(*pairs(n, seed=4))
    rows = [r for r in edit5_features_batch(tokenizer, sources, targets, 64) if r is not None]
    return collate_edit5(rows, tokenizer.pad_token_id)


def assert_same_edit5(ours, reference, batch):
    with torch.inference_mode():
        a, b = ours(**batch), reference(**batch)
    for name in ("loss", "tag_logits", "pointer_logits", "insertion_logits"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert torch.equal(ours.log_likelihood(**batch), reference.log_likelihood(**batch))
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert ours.generate_edits(ids, mask, 16) == reference.generate_edits(ids, mask, 16)
    assert ours.generate_edits(ids[:1, :int(mask[0].sum())], None, 16) == \
        reference.generate_edits(ids[:1, :int(mask[0].sum())], None, 16)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pointed", [None, "markers", "gap"])
def test_edit5_equals_transformers(tmp_path, tokenizer, dtype, pointed):
    torch.manual_seed(0)
    extra = {} if pointed is None else {"marker_ids": marker_ids(tokenizer), "marker_gap": pointed == "gap"}
    reference = EdiT5Model(EdiT5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=1,
        dropout_rate=0.0, max_order_positions=64, tag_embedding_dim=16, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id, **extra)).eval()
    if pointed == "gap":  # a trained gap key is not zero
        torch.nn.init.normal_(reference.insertion.marker_gap_key.weight)
    save(reference, tokenizer, tmp_path / "edit5")
    ours, tok = load_edit5(str(tmp_path / "edit5"), torch.device("cpu"))
    assert isinstance(ours, InferenceEdiT5) and type(tok).__name__ == "FastTokenizer"
    assert_same_edit5(ours.to(dtype), reference.to(dtype), edit5_batch(tokenizer))


def test_edit5_on_a_t5_encoder(tmp_path, tokenizer):
    t5 = tied_t5(len(tokenizer))
    save(t5, tokenizer, tmp_path / "bundle" / "t5")
    reference = EdiT5Model.on_t5(t5, marker_ids=marker_ids(tokenizer), max_order_positions=64).eval()
    save(reference, tokenizer, tmp_path / "bundle" / "edit5")
    ours_t5, _ = load_t5(tmp_path / "bundle" / "t5", device="cpu")
    shared, _ = load_edit5(str(tmp_path / "bundle" / "edit5"), torch.device("cpu"), ours_t5,
                           str(tmp_path / "bundle" / "t5"))
    assert isinstance(shared, InferenceEdiT5) and shared.encoder is ours_t5.encoder  # one encoder for both
    alone, _ = load_edit5(str(tmp_path / "bundle" / "edit5"), torch.device("cpu"))  # loads the T5 it names
    for ours in (shared, alone):
        assert_same_edit5(ours, reference, edit5_batch(tokenizer))


def test_edit5_untied_head(tmp_path, tokenizer):
    reference = tiny_edit5(tokenizer).eval()
    save(reference, tokenizer, tmp_path / "edit5")
    ours = InferenceEdiT5.from_pretrained(tmp_path / "edit5")
    assert_same_edit5(ours, reference, edit5_batch(tokenizer))


@pytest.mark.parametrize("dtype", DTYPES)
def test_shipped_models_equal_transformers(tokenizer, dtype):
    from editspec.tokenization.tokens import encode, load_tokenizer

    tok = load_tokenizer(DEFAULT_MODEL / "t5")
    texts = ["He go to school yesterday and buyed a apple .", "I recieve your leter.", "Thank you for you help."]
    rows = [e.ids + [tok.eos_token_id] for e in encode(tok, texts)]
    ours, _ = load_t5(DEFAULT_MODEL / "t5", device="cpu", dtype=dtype)
    reference, _ = load_t5(DEFAULT_MODEL / "t5", device="cpu", dtype=dtype, transformers=True)
    assert core.generate(ours, rows, 2, max_new_tokens=40, scores=True)[1].log_probs == \
        core.generate(reference, rows, 2, max_new_tokens=40, scores=True)[1].log_probs
    edit5, _ = load_edit5(str(DEFAULT_MODEL / "edit5"), torch.device("cpu"))
    expected = EdiT5Model.from_pretrained(DEFAULT_MODEL / "edit5", dtype=torch.float32).eval()
    assert_same_edit5(edit5.to(dtype), expected.to(dtype), edit5_batch(tok, 24))


# the shipped EdiT5's float32 outputs, recorded before its heads became modules (issue 61): the
# checkpoint's names still load, into both models, and give them
SHIPPED_TEXTS = ["He go to school yesterday and buyed a apple .", "I recieve your leter.", "Thank you for you help.",
                 "In my opinion , the technology have change our life ."]
SHIPPED_EDITS = [
    Edits(tags=[1] * 12, order=list(range(12)), insertions=[1]),
    Edits(tags=[1, 0, 0, 1, 1, 1, 1], order=[0, 3, 4, 5, 6], insertions=[16254, 562, 562, 562, 562, 1]),
    Edits(tags=[1, 1, 1, 0, 1, 1], order=[0, 1, 2, 4, 5], insertions=[16252, 123, 1]),
    Edits(tags=[1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1, 1], order=[0, 1, 2, 4, 6, 9, 10, 11, 12],
          insertions=[16252, 4, 16250, 52, 782, 1]),
]
# log_likelihood of edit5_batch(tok, 6), one thread (float32's last bits follow the kernels: approx)
SHIPPED_LOG_P = [-7.446105003356934, -4.588901042938232, -26.347042083740234, -24.052568435668945,
                 -0.015276797115802765, -15.826269149780273]


def test_the_shipped_edit5_gives_the_outputs_it_gave():
    from safetensors import safe_open

    from editspec.modeling.tensors import model_inputs
    from editspec.tokenization.tokens import encode, load_tokenizer

    path = DEFAULT_MODEL / "edit5"
    with safe_open(str(path / "model.safetensors"), "pt") as f:  # the shipped weights keep their names
        keys = set(f.keys())
    assert "tag_layer.layer.0.SelfAttention.q.weight" in keys and not any(k.startswith("tagger.") for k in keys)
    tok = load_tokenizer(path)
    encoded = encode(tok, SHIPPED_TEXTS)
    ids, mask = model_inputs([e.ids for e in encoded], tok.eos_token_id, tok.pad_token_id, torch.device("cpu"))
    batch = edit5_batch(tok, 6)
    for model in (EdiT5Model.from_pretrained(path, dtype=torch.float32).eval(),
                  load_edit5(str(path), torch.device("cpu"))[0]):
        assert model.generate_edits(ids, mask, 40) == SHIPPED_EDITS
        # recorded on an AVX-512 Xeon; another CPU's kernels sum in another order (an AVX2 EPYC: ~6e-6
        # nats on the smallest); a wrong tag, pointer or insertion moves a log P by far more
        assert model.log_likelihood(**batch).tolist() == pytest.approx(SHIPPED_LOG_P, rel=1e-5, abs=1e-4)


def test_correct_imports_no_transformers(tmp_path):
    """The shipped bundle corrects without importing transformers (it costs ~2.5 s a process)."""
    code = ("import sys; from editspec import Corrector; c = Corrector.from_pretrained(); "
            "print(c.correct(['He go to school.'])[0]); print('transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[1] == "False", out
