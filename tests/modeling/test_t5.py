"""editspec/modeling/t5.py: sampling probabilities and checkpoint loading (decoding: tests/decoding/test_core.py)."""

import pytest
import torch

from editspec.decoding import core
from editspec.modeling import t5
from editspec.errors import EditspecError
from tests.helpers import random_batch, random_t5


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)  # tiny models: a second thread only adds synchronisation (slow when busy)


def test_token_probs_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.allclose(t5.token_probs(logits), torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.allclose(t5.token_probs(logits, top_p=0.7), torch.tensor([[0.625, 0.375, 0, 0]]))
    sharp = t5.token_probs(logits, temperature=0.5)
    assert torch.allclose(sharp, torch.tensor([[0.25, 0.09, 0.0225, 0.0025]]) / 0.365)


def test_load_t5(tmp_path, tokenizer):
    model = random_t5(0, vocab=len(tokenizer), dtype=torch.float32)
    model.save_pretrained(tmp_path / "t5")
    tokenizer.save_pretrained(tmp_path / "t5")
    loaded, tok = t5.load_t5(tmp_path / "t5", device="cpu")
    assert len(tok) == len(tokenizer) and not loaded.training
    ids, mask = random_batch(torch.Generator().manual_seed(0), 3, len(tokenizer))
    assert core.greedy(loaded, ids, mask, 8) == core.greedy(model, ids, mask, 8)
    assert t5.load_t5(tmp_path / "t5", device="cpu", dtype="bfloat16")[0].dtype == torch.bfloat16

    with pytest.raises(EditspecError, match="not a model directory"):
        t5.load_t5(tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    with pytest.raises(EditspecError, match="cannot load a T5 model"):
        t5.load_t5(tmp_path / "broken")
    with pytest.raises(EditspecError, match="unknown dtype"):
        t5.load_t5(tmp_path / "t5", dtype="float8")
    small = random_t5(0, vocab=50, dtype=torch.float32)  # a tokenizer that does not fit the model
    small.save_pretrained(tmp_path / "mismatch")
    tokenizer.save_pretrained(tmp_path / "mismatch")
    with pytest.raises(EditspecError, match="do not belong together"):
        t5.load_t5(tmp_path / "mismatch")
