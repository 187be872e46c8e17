"""editspec/profiling/architectures.py: random T5/EdiT5 (tiny sizes here) with decoder steps forced
to the gold lengths."""

import pytest
import torch

from editspec.profiling.architectures import profile_architectures, random_architecture
from editspec.tokenization.edits import convert
from editspec.tokenization.tokens import encode, marker_ids

TINY_ARCHITECTURES = {
    "t5-base": ("t5", dict(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=2)),
    "edit5-base": ("edit5", dict(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=1)),
}


def test_architectures_force_gold_lengths(tokenizer):
    """Random weights, but exactly the gold number of decoder steps: T5 len(target) + 1,
    EdiT5 len(insertions) (gold tags and order forced; checked inside against the gold edits)."""
    sources = ["She go to school yesterday.", "I like the music.", "They played football with friends!"]
    targets = ["She went to school yesterday.", "I like music very much.", "They played football with friends!"]
    report = profile_architectures(sources, targets, tokenizer, "cpu", torch.float32, warmup=0,
                                   sizes=TINY_ARCHITECTURES)
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    src, tgt = encode(tokenizer, sources), encode(tokenizer, targets)
    t5_steps = sorted(len(t.ids) + 1 for t in tgt)
    edit5_steps = sorted(len(convert(s.ids, t.ids, markers, eos).insertions) for s, t in zip(src, tgt))
    assert edit5_steps != t5_steps and min(edit5_steps) == 1  # an unchanged sentence: only EOS
    for name, steps in (("t5-base", t5_steps), ("edit5-base", edit5_steps)):
        e = report[name]
        assert e["source"] == "forced-length"
        assert e["decoder_steps"]["median"] == steps[1] and e["decoder_steps"]["mean"] == pytest.approx(sum(steps) / 3)
        assert e["decoder_step_ms"]["n"] == sum(steps)
    assert report["t5-base"]["speedup_vs_t5_base"] == pytest.approx(1.0)


def test_random_architecture_has_the_named_size(tokenizer):
    kind, model = random_architecture("edit5-base", tokenizer, "cpu", torch.float64, sizes=TINY_ARCHITECTURES)
    assert kind == "edit5" and model.config.d_model == 32 and model.config.num_decoder_layers == 1
    assert next(model.parameters()).dtype == torch.float64 and not model.training
    assert model.config.vocab_size >= len(tokenizer)
