"""editspec/profiling/architectures.py: random T5/EdiT5 (tiny sizes here) with decoder steps forced
to the gold lengths."""

import pytest
import torch

from editspec.decoding import drafters
from editspec.profiling.architectures import Oracle, Sweep, profile_architectures, random_architecture
from editspec.profiling.report import markdown
from tests.profiling.test_report import HEAD
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
    report = profile_architectures(sources, targets, tokenizer, "cpu", torch.float32,
                                   Sweep(sizes=TINY_ARCHITECTURES, warmup=0))
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


def test_forced_verification_decodes_the_gold_targets_from_either_draft(tokenizer):
    """Each T5 verifies two drafts with its choices forced to the gold target (the run checks the
    output is the target, token for token): the gold draft is all accepted, the copy is not where
    the target differs from the source, and neither takes more passes than greedy takes steps."""
    sources = ["She go to school yesterday.", "I like the music.", "They played football with friends!"]
    targets = ["She went to school yesterday.", "I like music very much.", "They played football with friends!"]
    for batch_size in (1, 2):
        report = profile_architectures(sources, targets, tokenizer, "cpu", torch.float32,
                                       Sweep(sizes=TINY_ARCHITECTURES, batch_size=batch_size, warmup=1))
        assert set(report) == {"t5-base", "edit5-base", "t5-base+gold", "t5-base+copy"}
        gold, copy = report["t5-base+gold"], report["t5-base+copy"]
        assert gold["acceptance_rate"] == 1.0 and copy["acceptance_rate"] < 1.0
        for e in (gold, copy):
            assert e["decoder_steps"]["mean"] < report["t5-base"]["decoder_steps"]["mean"]
            assert e["draft_ms"]["n"] == e["decoder_steps"]["n"]
    md = markdown({**HEAD, "batch_size": 2, "modes": {}, "architectures": report})
    assert "| `t5-base+gold` |" in md and "- t5-base: a perfect edit-model draft" in md


def test_oracle_refuses_a_pass_it_did_not_see(tokenizer):
    oracle = Oracle(drafters.Follow([[5, 6]]), [[5, 6]])
    oracle.prepare([[7, 8]], tokenizer.eos_token_id)
    assert oracle.propose(0, [], 4) == [5, 6, tokenizer.eos_token_id]
    forced = oracle.force(torch.zeros(4, 10))  # the pending token, then 3 drafted
    assert forced.argmax(-1).tolist() == [5, 6, tokenizer.eos_token_id, tokenizer.eos_token_id]
    with pytest.raises(RuntimeError, match="gold tokens"):
        oracle.force(torch.zeros(4, 10))  # no proposal since the last pass
