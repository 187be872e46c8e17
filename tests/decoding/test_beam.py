"""Beam search on the decoding core (editspec/decoding/beam.py): every hypothesis of the n-best
lists equals transformers' ``generate(num_beams=N, num_return_sequences=K)`` on tiny random T5s in
float32 (length penalties, each early stopping, slots refilled); drafted beams equal plain beams
for every drafter; each row's budget is its own; bad settings are one-line errors."""

import random

import pytest
import torch

from editspec.decoding import beam, core
from editspec.errors import EditspecError
from editspec.modeling.tensors import pad
from tests.decoding.test_core import EOS, hf_ids, mixed_lengths
from tests.helpers import random_batch, random_t5

SETTINGS = [  # num_beams, num_return, length_penalty, early_stopping, max_new_tokens
    (4, 4, 1.0, False, 20), (2, 1, 0.5, True, 12), (3, 2, -1.0, "never", 15), (5, 3, 2.0, "never", 20),
    (4, 2, 0.0, True, 20), (6, 6, 1.0, "never", 8), (3, 3, 1.5, False, 25),
]


def hf_beams(model, ids, mask, k, n, lp, es, max_new):
    out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, num_beams=k, num_return_sequences=n,
                         length_penalty=lp, early_stopping=es, max_new_tokens=max_new, output_scores=True,
                         return_dict_in_generate=True)
    return hf_ids(out.sequences), out.sequences_scores.tolist()


@pytest.mark.parametrize("size", [dict(vocab=40, seed=0), dict(vocab=24, d_model=16, layers=1, heads=2, seed=1)])
def test_beams_equal_generate(size):
    """7 settings x 24 random inputs a model, at 5 and 24 slots, and the first 6 at 1 slot (it
    searches them one by one, each alone: 24 took two thirds of the test's time): every returned
    hypothesis is transformers', its score within float32's rounding of a sum."""
    seed = size.pop("seed")
    model = random_t5(seed, dtype=torch.float32, **size)
    gen = torch.Generator().manual_seed(seed)
    ends = set()
    for k, n, lp, es, max_new in SETTINGS:
        ids, mask = random_batch(gen, 24, size["vocab"], max_len=20)
        ref, ref_scores = hf_beams(model, ids, mask, k, n, lp, es, max_new)
        ends |= {len(r) == max_new for r in ref}
        assert len({tuple(r) for r in ref}) > len(ref) // 2  # the n-best lists hold different outputs
        for slots in (1, 5, 24):
            rows = 6 if slots == 1 else len(ids)
            hyps, _ = beam.generate(model, core.inputs(ids[:rows], mask[:rows]), beam.BeamSettings(k, n, lp, es),
                                    slots, max_new)
            assert [h.ids for hs in hyps for h in hs] == ref[:rows * n], (k, n, lp, es, slots)
            scores = [h.score for hs in hyps for h in hs]
            assert scores == pytest.approx(ref_scores[:rows * n], rel=1e-5, abs=1e-6)
    assert ends == {True, False}  # hypotheses ended by EOS and by the budget


def perfect(plain):
    """Each beam's continuation in the plain search's n-best list, where its output begins one."""
    def propose(i, output, limit):
        for h in plain[i]:
            if h.ids[: len(output)] == output:
                return (h.ids + [EOS])[len(output): len(output) + limit]
        return []
    return propose


def make(kind, plain, sources, rng, vocab):
    wrong = [[rng.randrange(2, vocab) for _ in range(20)] for _ in sources]
    if kind == "source":
        return True
    if kind == "perfect":
        return perfect(plain)
    if kind == "wrong":
        return lambda i, output, limit: wrong[i][:limit]
    if kind == "longer":  # past the output and its EOS
        return lambda i, output, limit: (perfect(plain)(i, output, limit) + [5] * 30)[:limit]
    return lambda i, output, limit: [t for t in perfect(plain)(i, output, limit) if rng.random() < 0.8]  # corrupted


def test_drafted_beams_equal_plain_beams():
    """200 random inputs of very different lengths, every drafter at one or two of the slot counts
    1, 7 and 32 (refilled as sentences end), windows of 1, 3 or 16 tokens: the drafted search's
    n-best lists are the plain search's, never in more passes, and perfect drafts feed fewer rows."""
    vocab = 40
    model = random_t5(0, vocab=vocab)
    rng, gen = random.Random(0), torch.Generator().manual_seed(2)
    settings = beam.BeamSettings(4, 3, 1.0, False)
    kinds = {32: ("source", "perfect", "wrong"), 7: ("longer", "corrupted", "perfect"), 1: ("source", "corrupted")}
    for n, slots in [(100, 32), (70, 7), (30, 1)]:
        sources = mixed_lengths(gen, n, vocab)
        max_new = [rng.choice([3, 12, 30]) for _ in sources]
        plain, plain_stats = beam.generate(model, sources, settings, slots, max_new)
        for kind in kinds[slots]:
            window = rng.choice([1, 3, 16])
            out, stats = beam.generate(model, sources, settings, slots, max_new,
                                       make(kind, plain, sources, rng, vocab), window)
            assert [[h.ids for h in hs] for hs in out] == [[h.ids for h in hs] for hs in plain], (kind, slots)
            assert [h.score for hs in out for h in hs] == pytest.approx([h.score for hs in plain for h in hs])
            assert all(0 <= a <= p for a, p in zip(stats.accepted, stats.proposed))
            assert stats.passes <= plain_stats.passes
            if kind == "perfect":  # random models branch at almost every step: fewer rows fed, not passes
                assert sum(stats.row_passes) < sum(plain_stats.row_passes) and sum(stats.accepted) > 0


def test_source_drafts_cut_the_passes_of_a_trained_t5(tokenizer, overfitted_t5):
    """A trained T5 (it copies most of its source): source drafts, same n-best lists as
    transformers' and the plain search's, with fewer rows fed; the best hypothesis is the target."""
    model, sources, targets = overfitted_t5
    ids = [tokenizer(s).input_ids for s in sources]
    settings = beam.BeamSettings(4, 2, 1.0, False)
    plain, plain_stats = beam.generate(model, ids, settings, 8, 40)
    drafted, stats = beam.generate(model, ids, settings, 8, 40, drafter=True)
    assert [[h.ids for h in hs] for hs in drafted] == [[h.ids for h in hs] for hs in plain]
    # beams branch: a new beam off its row's draft waits for a pass, so passes fall less than rows fed
    assert stats.passes <= plain_stats.passes and sum(stats.row_passes) < 0.7 * sum(plain_stats.row_passes)
    assert [tokenizer.decode(hs[0].ids, skip_special_tokens=True) for hs in plain] == list(targets)
    # padded here: padding=True would leave padding switched on in the session tokenizer's backend
    mask = pad([[1] * len(i) for i in ids], 0)
    ref, _ = hf_beams(model, pad(ids, tokenizer.pad_token_id), mask, 4, 2, 1.0, False, 40)
    assert [h.ids for hs in plain for h in hs] == ref


def test_each_row_its_own_budget_and_alone():
    """A sentence's n-best list is the one it gets alone with its own budget, whatever the rows beside it."""
    model = random_t5(3, dtype=torch.float32)
    sources = mixed_lengths(torch.Generator().manual_seed(4), 12, 40)
    max_new = [3, 30, 12, 0] * 3
    settings = beam.BeamSettings(3, 2, 1.0, "never")
    together, _ = beam.generate(model, sources, settings, 4, max_new)
    for i, src in enumerate(sources):
        alone, _ = beam.generate(model, [src], settings, 1, max_new[i])
        assert [h.ids for h in together[i]] == [h.ids for h in alone[0]]
        # float32: the scores up to the last bits of a wider pass (``decoding.decoder``)
        assert [h.score for h in together[i]] == pytest.approx([h.score for h in alone[0]], rel=1e-6)
        assert all(len(h.ids) <= max_new[i] for h in together[i])
    assert together[3] == [beam.Hypothesis([], 0.0)] * 2  # no budget: nothing decoded


@pytest.mark.parametrize("bad", [dict(num_beams=0), dict(num_beams=2, num_return=3), dict(num_return=0),
                                 dict(early_stopping="sometimes"), dict(num_beams=True)])
def test_bad_settings_one_line(bad):
    with pytest.raises(EditspecError) as e:
        beam.BeamSettings(**bad)
    assert "\n" not in str(e.value)
