"""Our T5 decoding loop (editspec/t5.py) against transformers' generate, and checkpoint loading."""

import math

import pytest
import torch
from transformers import T5Config, T5ForConditionalGeneration

from editspec.modeling import t5
from editspec.errors import EditspecError
from tests.helpers import random_batch, random_t5


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)  # tiny models: a second thread only adds synchronisation (slow when busy)


def hf_ids(sequences: torch.Tensor, eos: int = 1) -> list[list[int]]:
    """generate()'s output rows without the start token, cut at EOS."""
    rows = [row[1:] for row in sequences.tolist()]
    return [row[: row.index(eos)] if eos in row else row for row in rows]


@pytest.mark.parametrize("size", [dict(vocab=40, d_model=32, layers=2),
                                  dict(vocab=24, d_model=16, layers=1, heads=2),
                                  dict(vocab=60, d_model=48, layers=3, heads=6)])
def test_greedy_equals_generate(size):
    model = random_t5(0, **size)
    gen = torch.Generator().manual_seed(1)
    lengths = set()
    for _ in range(2):
        ids, mask = random_batch(gen, 16, size["vocab"])
        ours = t5.greedy(model, ids, mask, max_new_tokens=16)
        ref = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, num_beams=1,
                             max_new_tokens=16)
        assert ours == hf_ids(ref)
        lengths.update(map(len, ours))
    assert len(lengths) > 3  # outputs of many lengths: EOS and the max_new_tokens cut both occur


def test_greedy_batch_equals_one_by_one():
    model = random_t5(3)
    ids, mask = random_batch(torch.Generator().manual_seed(4), 4, 40)
    batched = t5.greedy(model, ids, mask, 12)
    for i in range(4):
        n = int(mask[i].sum())
        assert t5.greedy(model, ids[i: i + 1, :n], mask[i: i + 1, :n], 12) == [batched[i]]
    assert t5.greedy(model, ids, mask, 0) == [[]] * 4


def test_sample_equals_generate_sampling():
    model = random_t5(5, dtype=torch.float32)  # generate() samples from float32 probabilities
    ids, mask = random_batch(torch.Generator().manual_seed(6), 5, 40)
    for temperature, top_p in [(1.0, 1.0), (0.7, 0.9), (1.5, 0.5)]:
        torch.manual_seed(7)
        ref = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, top_k=0, num_beams=1,
                             temperature=temperature, top_p=top_p, max_new_tokens=10)
        torch.manual_seed(7)
        assert t5.sample(model, ids, mask, 10, temperature, top_p) == hf_ids(ref)
    a = t5.sample(model, ids, mask, 10, generator=torch.Generator().manual_seed(1))
    b = t5.sample(model, ids, mask, 10, generator=torch.Generator().manual_seed(1))
    c = t5.sample(model, ids, mask, 10, generator=torch.Generator().manual_seed(2))
    assert a == b != c


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
    assert t5.greedy(loaded, ids, mask, 8) == t5.greedy(model, ids, mask, 8)
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
