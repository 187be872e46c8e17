"""The picky level's copy penalty in the decoding core: a step-by-step reference (transformers'
generate with the penalty as a logits processor) gives the same outputs, speculative equals
undrafted at every penalty, and the penalty changes outputs only where it should."""

import random

import pytest
import torch
from transformers import LogitsProcessor, LogitsProcessorList

from editspec.decoding import core, drafters
from tests.decoding.test_core import EOS, make, mixed_lengths
from tests.helpers import random_t5


class Reference(LogitsProcessor):
    """The penalty by its definition: the copying token of each prefix, found afresh each step."""

    def __init__(self, sources, penalty):
        self.sources, self.penalty = sources, penalty

    def __call__(self, input_ids, scores):
        scores = scores.clone()
        for row, prefix in enumerate(input_ids.tolist()):
            tracker = core.CopyTracker([self.sources[row]], EOS, self.penalty)
            token = tracker.next_tokens(0, prefix[1:], [])[0]
            if token is not None:
                scores[row, token] -= self.penalty
        return scores


def copying_t5():
    """A random T5 that mostly copies its source (its logits favour the input's tokens a little)."""
    return random_t5(3, vocab=30)


@pytest.mark.parametrize("penalty", [0.5, 2.0])
def test_copy_penalty_equals_its_definition(penalty):
    model = copying_t5()
    gen = torch.Generator().manual_seed(4)
    sources = mixed_lengths(gen, 24, 30)[:24]
    sources = [s for s in sources if len(s) <= 12]
    got, _ = core.generate(model, sources, 5, max_new_tokens=15, copy_penalty=penalty)
    for src, out in zip(sources, got):
        ids = torch.tensor([src])
        ref = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                             max_new_tokens=15, logits_processor=LogitsProcessorList([Reference([src], penalty)]))
        row = ref[0, 1:].tolist()
        assert out == (row[:row.index(EOS)] if EOS in row else row)


def test_speculative_equals_undrafted_with_a_copy_penalty():
    vocab, rng, gen = 40, random.Random(1), torch.Generator().manual_seed(5)
    model = random_t5(0, vocab=vocab)
    sources = mixed_lengths(gen, 60, vocab)
    plain, _ = core.generate(model, sources, 7, max_new_tokens=20)
    for penalty in (0.3, 1.0, 3.0):
        ref, _ = core.generate(model, sources, 7, max_new_tokens=20, copy_penalty=penalty)
        for kind in ("copy", "perfect", "corrupted", "mix"):
            slots = rng.choice([1, 7, 32])
            rows = len(sources) if slots > 1 else 12  # one slot decodes them one by one: 12 take its path
            out, _ = core.generate(model, sources[:rows], slots, make(kind, ref[:rows], None, rng, vocab),
                                   20, window=rng.choice([1, 3, 16]), copy_penalty=penalty)
            assert out == ref[:rows], (penalty, kind, slots)
        if penalty == 3.0:
            assert ref != plain  # the penalty changes some outputs


def test_scores_stay_the_models_own():
    model = random_t5(0, vocab=40)
    sources = mixed_lengths(torch.Generator().manual_seed(6), 12, 40)
    out, stats = core.generate(model, sources, 4, max_new_tokens=20, copy_penalty=2.0, scores=True)
    forced = core.score(model, sources, [o + [EOS] if len(o) < 20 else o for o in out])
    for o, a, b in zip(out, stats.log_probs, forced):
        if len(o) < 20:
            assert a == pytest.approx(b, abs=1e-9)


def test_the_tracker_follows_the_source():
    t = core.CopyTracker([[5, 6, 7, 8, EOS]], EOS, 1.0)
    assert t.next_tokens(0, [], [5, 6]) == [5, 6, 7]
    assert t.next_tokens(0, [5, 9], []) == [7]  # 9 replaced 6: the copy goes on with 7
    assert t.next_tokens(0, [5, 9, 7, 8], []) == [None]  # the source's end: EOS is never penalized


def test_sampling_refuses_a_copy_penalty():
    model = random_t5(0, vocab=40)
    with pytest.raises(ValueError):
        core.generate(model, [[3, 4, EOS]], 1, max_new_tokens=5, copy_penalty=1.0, sampling=core.Sampling())
