"""editspec/profiling/ct2.py: CTranslate2 on the same T5 weights, converted once, its fp32 greedy
output our T5 greedy output token for token (on the tiny random T5 of the profiling bundle)."""

import sys

import pytest

from editspec.modeling.tensors import model_inputs
from editspec.decoding import core
from editspec.modeling.t5 import load_t5
from editspec.profiling import ct2
from editspec.tokenization.tokens import encode
from tests.helpers import sentences


def test_fp32_greedy_equals_our_greedy(bundle, tmp_path):
    t5, tok = load_t5(bundle / "t5", device="cpu")  # float32, as the profile loads it
    peer = ct2.CT2Peer.load(bundle / "t5", "cpu", 1, cache=tmp_path)
    eos = tok.eos_token_id
    rows = [e.ids for e in encode(tok, sentences(12, seed=5))]
    lengths = set()
    for batch in (rows[:1], rows[1:5], rows[5:]):  # batch 1 and padded batches
        ids, mask = model_inputs(batch, eos, tok.pad_token_id, "cpu")
        max_new = 2 * ids.shape[1] + 16
        ours = core.greedy(t5, ids, mask, max_new_tokens=max_new)
        assert peer.translate("ct2-greedy", [r + [eos] for r in batch], max_new) == ours
        int8 = peer.translate("ct2-int8", [r + [eos] for r in batch], max_new)
        assert len(int8) == len(batch) and all(isinstance(t, int) for row in int8 for t in row)
        lengths |= {len(o) for o in ours}
    assert len(lengths) > 1  # outputs of several lengths: not one degenerate output


def test_converted_once_per_weights(bundle, tmp_path, monkeypatch):
    first = ct2.converted(bundle / "t5", tmp_path)
    assert (first / "model.bin").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary folder left

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(ct2, "_converter", no_conversion)
    assert ct2.converted(bundle / "t5", tmp_path) == first
    assert ct2.weights_key(bundle / "t5") != ct2.weights_key(bundle / "t5-draft")  # other weights, other key


def test_missing_ctranslate2_is_a_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import fails as if not installed
    assert "pip install" in ct2.missing()


def test_not_a_directory(tmp_path):
    with pytest.raises(ct2.EditspecError, match="local T5 directory"):
        ct2.converted(tmp_path / "nowhere", tmp_path)
