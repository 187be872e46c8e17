"""The decoding core (editspec/decoding/core.py): greedy equals transformers' generate, speculative
equals greedy for every drafter at slot counts 1, 7 and 32 with refill; sampling keeps T5's
distribution; the window policy; the drafters."""

import random
from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from editspec.decoding import core, drafters
from editspec.decoding.window import WindowPolicy, measure
from editspec.errors import EditspecError
from tests.helpers import random_batch, random_t5

EOS = 1


def hf_ids(sequences: torch.Tensor) -> list[list[int]]:
    rows = [row[1:] for row in sequences.tolist()]
    return [row[: row.index(EOS)] if EOS in row else row for row in rows]


def mixed_lengths(gen: torch.Generator, n: int, vocab: int) -> list[list[int]]:
    """Inputs of very different lengths (2 to 40 ids), shuffled: refilled slots differ a lot."""
    rows = []
    for k in range(n):
        length = [2, 5, 12, 40][k % 4]
        rows.append(torch.randint(2, vocab, (length - 1,), generator=gen).tolist() + [EOS])
    random.Random(n).shuffle(rows)
    return rows


@pytest.mark.parametrize("size", [dict(vocab=40, d_model=32, layers=2),
                                  dict(vocab=24, d_model=16, layers=1, heads=2),
                                  dict(vocab=60, d_model=48, layers=3, heads=6)])
def test_greedy_equals_generate(size):
    model = random_t5(0, **size)
    gen = torch.Generator().manual_seed(1)
    ids, mask = random_batch(gen, 40, size["vocab"], max_len=30)
    ref = hf_ids(model.generate(input_ids=ids, attention_mask=mask, do_sample=False, num_beams=1,
                                max_new_tokens=20))
    assert len(set(map(len, ref))) > 3  # EOS and the max_new_tokens cut both occur
    for slots in (1, 7, 32, 40):
        assert core.greedy(model, ids, mask, 20, slots=slots) == ref


def make(kind: str, ref, sources, rng: random.Random, vocab: int):
    wrong = lambda r: [rng.randrange(2, vocab) for _ in range(rng.randint(0, 20))]
    if kind == "copy":
        return drafters.Copy(resync=rng.random() < 0.8)
    if kind == "ngram":
        return drafters.Ngram()
    if kind == "mix":
        return drafters.Mix(drafters.Copy(), drafters.Ngram(), drafters.Follow([wrong(r) for r in ref]))
    draft = {"perfect": lambda r: r, "empty": lambda r: [], "wrong": wrong,
             "longer": lambda r: r + r + [5] * 30,  # beyond the output and its EOS
             "corrupted": lambda r: [t for t in r if rng.random() < 0.8] + wrong(r)[:2]}[kind]
    return drafters.Follow([draft(r) for r in ref], resync=rng.random() < 0.8)


KINDS = ["perfect", "empty", "wrong", "longer", "corrupted", "copy", "ngram", "mix"]


def test_speculative_equals_greedy():
    """260 random inputs of very different lengths, every drafter, slots 1, 7 and 32 (refilled
    as rows finish), windows of 1, 3 or 48 tokens: speculative output is greedy output."""
    vocab = 40
    model = random_t5(0, vocab=vocab)
    rng, gen = random.Random(0), torch.Generator().manual_seed(2)
    accepted = Counter()
    for n, slots in [(120, 32), (100, 7), (40, 1)]:
        sources = mixed_lengths(gen, n, vocab)
        max_new = [rng.choice([3, 12, 30]) for _ in sources]
        ref, stats = core.generate(model, sources, slots, max_new_tokens=max_new)
        assert stats.passes >= max(map(len, ref)) and stats.acceptance_rate == 0.0
        plain = [s[:-1] for s in sources]
        for kind in KINDS:
            window = rng.choice([1, 3, 48])
            out, stats = core.generate(model, sources, slots, make(kind, ref, plain, rng, vocab),
                                       max_new, window=window)
            assert out == ref, (kind, slots, window)
            for i, row in enumerate(out):
                assert stats.tokens[i] == len(row) + (len(row) < max_new[i])  # + EOS unless cut
                assert 0 <= stats.accepted[i] <= stats.proposed[i]
            accepted[kind] += sum(stats.accepted)
    assert accepted["perfect"] > accepted["corrupted"] > 0


def test_perfect_draft_whole_output_in_one_pass():
    model = random_t5(0)
    ids, mask = random_batch(torch.Generator().manual_seed(5), 8, 40, min_len=6)
    sources = core.inputs(ids, mask)
    ref, _ = core.generate(model, sources, 8, max_new_tokens=40)
    out, stats = core.generate(model, sources, 8, drafters.Follow(ref), 40, window=48)
    assert out == ref and stats.passes == 1 and stats.acceptance_rate == 1.0
    for slots in (1, 3):  # the window from the measured cost model: still exactly greedy
        assert core.generate(model, sources, slots, drafters.Copy(), 40)[0] == ref


def test_ngram_draft_ends_loops():
    ngram = drafters.Ngram()
    loop = [7, 8, 9, 4, 7, 8, 9, 4, 7, 8]
    assert ngram.propose(0, loop, 6) == [9, 4, 7, 8, 9, 4]
    assert ngram.propose(0, [2, 3, 4], 5) == []


def test_mix_follows_the_better_drafter():
    mix = drafters.Mix(drafters.Follow([[2, 3, 9, 4, 5]]), drafters.Follow([[2, 3, 4, 5, 6]]))
    mix.prepare([[2, 3, 4, 5, 6]], EOS)
    assert mix.propose(0, [], 3) == [2, 3, 9]  # ties: the first drafter
    assert mix.propose(0, [2, 3, 4], 3) == [5, 6, EOS]  # the second matched 3 tokens, the first 2
    mix.finish(0)


def test_sampling_keeps_the_distribution():
    """Chi-square: the first two tokens, sampled speculatively with right, wrong and empty drafts
    and slots refilled, follow the distribution of T5's own sampling."""
    vocab, n = 6, 4000
    model = random_t5(2, vocab=vocab, d_model=16, layers=1, heads=2)
    source = [3, 4, 2, 5, EOS]
    with torch.no_grad():
        ids = torch.tensor([source])
        probs = lambda prefix: model(input_ids=ids, decoder_input_ids=torch.tensor([[0, *prefix]])).logits[0, -1].softmax(-1)
        p1 = probs([])
        p2 = Counter({(EOS, None): float(p1[EOS])})
        for x in range(vocab):
            if x != EOS:
                for t, q in enumerate(probs([x]).tolist()):
                    p2[(x, t)] += float(p1[x]) * q
    rng = random.Random(0)
    drafts = [rng.choice([[2, 3], [4], [], [5, 5, 2], [EOS]]) for _ in range(n)]
    out, stats = core.generate(model, [source] * n, 16, drafters.Follow(drafts, resync=False), 2,
                               window=2, do_sample=True, generator=torch.Generator().manual_seed(1))
    assert 0 < stats.acceptance_rate < 1
    seen = Counter((o[0], o[1] if len(o) > 1 else EOS) if o else (EOS, None) for o in out)
    keys = [k for k in p2 if p2[k] * n > 5]
    observed, expected = [seen[k] for k in keys], [n * p2[k] for k in keys]
    observed.append(n - sum(observed))  # the rare pairs together
    expected.append(n - sum(expected))
    assert chisquare(observed, expected).pvalue > 1e-3


def test_window_policy_from_costs():
    flat = WindowPolicy({0: 10.0, 1: 10.0, 4: 10.2, 16: 10.5, 48: 11.0}, prior=(19, 1))  # α 0.95
    assert flat.size(1) == 48  # batch 1: a wider pass costs almost nothing
    steep = WindowPolicy({0: 10.0, 1: 19.0, 4: 50.0, 16: 170.0, 48: 490.0})
    assert steep.size(32) == 0  # every extra token costs a full token's compute
    mid = WindowPolicy({0: 10.0, 1: 11.0, 4: 16.0, 16: 60.0, 48: 200.0})
    assert mid.size(8) == 4
    for _ in range(200):
        mid.update(0, 4)  # every draft rejected: stop drafting
    assert mid.size(8) == 0
    assert WindowPolicy.fixed_size(3).size(32) == 3
    costs = measure(random_t5(0), 2, repeats=1)
    assert set(costs) >= {0, 1, 48} and all(c > 0 for c in costs.values())


def test_drafter_count_must_match():
    with pytest.raises(EditspecError, match="2 drafts for 1 sentences"):
        core.generate(random_t5(0), [[3, EOS]], 1, drafters.Follow([[3], [4]]), 4)
