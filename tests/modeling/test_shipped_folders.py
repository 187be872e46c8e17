"""Issue 71: each folder of the shipped bundle loads and converts as it is, as the README promises
of "any T5ForConditionalGeneration directory": transformers' AutoTokenizer gives the bundle's
tokenizer (not a placeholder vocabulary of <extra_id_N> tokens), T5ForConditionalGeneration loads
the weights, and CTranslate2's TransformersConverter, run on the folder with no help, writes the
bundle's vocabulary and decodes what our T5 decodes."""

import json

import pytest
import torch

from editspec.modeling.loading import DEFAULT_MODEL
from editspec.tokenization.tokens import load_tokenizer

T5_DIR = DEFAULT_MODEL / "t5"
SENTENCES = ["He have two brothers .", "I recieve your letter yesterday .", "She go to school every day ."]


def bundle_vocabulary() -> list[str]:
    tok = load_tokenizer(T5_DIR)
    return tok.convert_ids_to_tokens(list(range(len(tok))))


@pytest.mark.parametrize("kind", ["t5", "edit5"])
def test_auto_tokenizer_reads_the_bundle_s_tokenizer_from_each_model_folder(kind):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(DEFAULT_MODEL / kind))
    assert tok.convert_ids_to_tokens(list(range(len(tok)))) == bundle_vocabulary()
    ids = tok("He have two brothers.").input_ids
    assert ids[-1] == tok.eos_token_id and tok.unk_token_id not in ids  # real pieces, not unknowns
    assert tok.decode(ids, skip_special_tokens=True) == "He have two brothers."


def test_transformers_loads_the_t5_folder_and_corrects_with_it():
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    tok = AutoTokenizer.from_pretrained(str(T5_DIR))
    model = T5ForConditionalGeneration.from_pretrained(str(T5_DIR), dtype=torch.float32).eval()
    batch = tok(["He have two brothers."], return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**batch, max_new_tokens=20, num_beams=1, do_sample=False)
    assert tok.decode(out[0], skip_special_tokens=True) == "He has two brothers."


def test_ctranslate2_converts_the_t5_folder_as_it_is(tmp_path):
    ctranslate2 = pytest.importorskip("ctranslate2")
    from ctranslate2.converters import TransformersConverter

    out = TransformersConverter(str(T5_DIR)).convert(str(tmp_path / "ct2"), quantization="float32")
    vocab = json.loads((tmp_path / "ct2" / "shared_vocabulary.json").read_text(encoding="utf-8"))
    assert vocab == bundle_vocabulary()
    from tokenizers import Tokenizer  # the 12-line script's way: tokens in, tokens out

    text = Tokenizer.from_file(str(T5_DIR / "tokenizer.json"))
    translator = ctranslate2.Translator(out, device="cpu", compute_type="float32", intra_threads=1)
    results = translator.translate_batch([text.encode(s).tokens for s in SENTENCES], beam_size=1)
    outputs = [text.decode([text.token_to_id(t) for t in r.hypotheses[0]]) for r in results]
    assert outputs[0] == "He has two brothers."
    assert all(len(o.split()) <= len(s.split()) + 2 for o, s in zip(outputs, SENTENCES))  # no runaway output


LONG = ("Yesterday I go to the market with my freinds and we buyed many vegetables and fruits for the "
        "party that we was planning to have in the weekend at my house near the river .")


def test_the_t5_folder_generates_a_whole_correction_with_its_saved_settings():
    """Issue 78: ``generate(**inputs)`` with no length given completes a long sentence's correction
    (it ends with EOS) instead of stopping at transformers' default of 20 tokens; the EdiT5 folder
    is a model of our own (``model_type`` edit5) with no ``generate`` of transformers' (its three
    greedy steps are ``edit5_inference``'s), so it has no generation settings to save."""
    from transformers import AutoTokenizer, GenerationConfig, GenerationMixin, T5ForConditionalGeneration

    from editspec.modeling.modeling_edit5 import EdiT5Model

    assert GenerationConfig.from_pretrained(str(T5_DIR)).max_length > 2 * 128
    assert not issubclass(EdiT5Model, GenerationMixin) and not (DEFAULT_MODEL / "edit5" / "generation_config.json").exists()
    tok = AutoTokenizer.from_pretrained(str(T5_DIR))
    model = T5ForConditionalGeneration.from_pretrained(str(T5_DIR), dtype=torch.float32).eval()
    batch = tok([LONG], return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**batch)[0].tolist()
    assert len(out) > 40 and out[-1] == tok.eos_token_id
    text = tok.decode(out, skip_special_tokens=True)
    assert text.endswith("near the river.") and "we were planning" in text  # an edit past token 20


def test_shipping_a_t5_writes_its_generation_length(tmp_path, tokenizer_dir):
    """training.ship (and a run's exports) write the length beside the weights."""
    from transformers import GenerationConfig, T5Config, T5ForConditionalGeneration

    from training import ship

    tok = load_tokenizer(tokenizer_dir)
    T5ForConditionalGeneration(T5Config(vocab_size=len(tok), d_model=16, d_kv=4, d_ff=32, num_layers=1,
                                        num_decoder_layers=1, num_heads=2)).save_pretrained(tmp_path / "src")
    tok.save_pretrained(tmp_path / "src")
    (tmp_path / "src" / "training.json").write_text(json.dumps({"step": 1, "max_length": 64}))
    ship.ship(tmp_path / "src", tmp_path / "bundle" / "t5")
    assert GenerationConfig.from_pretrained(str(tmp_path / "bundle" / "t5")).max_length == 2 * 64 + 16 + 1
