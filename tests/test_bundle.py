"""editspec/bundle.py: the loaded models, built once, and what each bundle keeps for itself."""

import pytest

from editspec.bundle import Bundle
from editspec.config import CorrectorConfig
from editspec.corrector import Corrector
from editspec.decoding import core
from editspec.tokenization.tokens import CODEC, Codec, encode, load_tokenizer
from tests.helpers import sentences, tiny_bundle


@pytest.fixture(scope="module")
def models(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer) / "bundle"


def test_load_takes_the_kinds_asked_for(models):
    both = Bundle.load(models / "edit5", models / "t5", device="cpu", dtype="float32")
    assert both.t5 is not None and both.edit5 is not None and both.shared_vocab and both.markers
    assert both.paths == {"edit5": str(models / "edit5"), "t5": str(models / "t5")}
    alone = Bundle.load(models / "edit5", models / "t5", kinds=("t5",), device="cpu")
    assert alone.edit5 is None and alone.markers == [] and not alone.shared_vocab
    assert alone.costs.drafts_key(4) is None and both.costs.drafts_key(4)["slots"] == 4  # drafts: EdiT5 reading T5's ids


def test_only_shares_the_models_and_their_decoders(models):
    both = Bundle.load(models / "edit5", models / "t5", device="cpu", dtype="float32")
    t5 = both.only("t5")
    assert t5.t5 is both.t5 and t5.edit5 is None and t5.decoders is both.decoders
    assert t5.costs.drafts is not both.costs.drafts  # a mode without drafts measures none
    # a corrector of a mode that uses fewer models takes them alone, on the same decoders
    c = Corrector(both, CorrectorConfig("t5"), batch_size=2)
    assert c.bundle.edit5 is None and c.bundle.t5 is both.t5 and c.bundle.decoders is both.decoders


def test_each_bundle_keeps_its_own_decoders(models):
    """A model's decoder is kept by the bundle that decodes with it, not by the process: two
    bundles of one model decode alike, each on its own decoder."""
    a = Bundle.load(t5=models / "t5", device="cpu", dtype="float32")
    b = Bundle(a.t5, a.t5_tokenizer)
    rows = [e.ids + [a.t5_tokenizer.eos_token_id] for e in encode(a.t5_tokenizer, sentences(5))]
    outputs = [core.generate(x.t5, rows, 2, max_new_tokens=8, decoders=x.decoders)[0] for x in (a, b)]
    assert outputs[0] == outputs[1] == core.generate(a.t5, rows, 2, max_new_tokens=8)[0]
    assert a.decoders._kept[a.t5] is not b.decoders._kept[b.t5]


def test_a_tokenizer_carries_its_codec(tokenizer_dir):
    """Loading a tokenizer makes its codec once (the backend copy that reads "</s>" as text);
    one loaded elsewhere gets a new one each time, with the same ids."""
    tok = load_tokenizer(tokenizer_dir)
    assert Codec.of(tok) is getattr(tok, CODEC) is Codec.of(tok)
    bare = type(tok).from_pretrained(str(tokenizer_dir))
    assert Codec.of(bare) is not Codec.of(bare)
    text = ["a </s> b <extra_id_3>"]
    assert encode(bare, text)[0].ids == encode(tok, text)[0].ids
    assert tok.eos_token_id not in encode(tok, text)[0].ids
    assert tok("a </s>")["input_ids"].count(tok.eos_token_id) == 2  # the tokenizer's own calls are its own
    assert tok.eos_token_id not in encode(tok, text)[0].ids
