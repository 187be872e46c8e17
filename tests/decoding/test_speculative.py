"""Speculative T5 decoding (editspec/speculative.py): exactly T5's greedy output for every
drafter, batch size and γ; resynchronisation; the sampling distribution; stats; tokenizers."""

import copy
import random
from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from editspec.modeling import t5
from editspec.tokenization.edits import convert
from editspec.errors import EditspecError
from editspec.decoding.speculative import (
    CopyDrafter, EdiT5Drafter, SmallT5Drafter, StaticDrafter, source_ids, speculative_generate,
)
from tests.helpers import random_batch, random_t5

EOS = 1
SIZES = {"tiny": dict(vocab=24, d_model=16, layers=1, heads=2),
         "small": dict(vocab=40, d_model=32, layers=2),
         "wide": dict(vocab=60, d_model=48, layers=3, heads=6)}
KINDS = ["perfect", "corrupted", "garbage", "empty", "mixed", "copy", "small_t5"]


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)  # tiny models: a second thread only adds synchronisation (slow when busy)


def corrupt(seq: list[int], rng: random.Random, vocab: int) -> list[int]:
    """1-3 random insertions, deletions or substitutions."""
    seq = list(seq)
    for _ in range(rng.randint(1, 3)):
        i, op = rng.randint(0, len(seq)), rng.choice("ids")
        if op == "i" or not seq or i == len(seq):
            seq.insert(i, rng.randrange(2, vocab))
        elif op == "d":
            del seq[i]
        else:
            seq[i] = rng.randrange(2, vocab)
    return seq


def noisy_copy(model, noise: float, seed: int):
    """The model with relative Gaussian noise on every weight: a drafter that agrees in part."""
    other = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * noise * p.std())
    return other


def make_drafter(kind, ref, sources, rng, vocab, small_t5s):
    garbage = lambda: [rng.randrange(0, vocab) for _ in range(rng.randint(0, 15))]  # EOS, pad too
    if kind == "copy":
        return CopyDrafter(resync=rng.random() < 0.8)
    if kind == "small_t5":
        return SmallT5Drafter(rng.choice(small_t5s), max_gamma=rng.choice([2, 5]))
    make = {"perfect": lambda r, s: r, "corrupted": lambda r, s: corrupt(r, rng, vocab),
            "garbage": lambda r, s: garbage(), "empty": lambda r, s: []}
    per_row = [*make.values(), lambda r, s: s]  # each row its own kind, or its source
    make["mixed"] = lambda r, s: rng.choice(per_row)(r, s)
    drafts = [make[kind](r, s) for r, s in zip(ref, sources)]
    return StaticDrafter(drafts, resync=rng.random() < 0.8)


def check_stats(stats, out, max_new):
    assert stats.passes == max(stats.row_passes)
    for r, row in enumerate(out):
        assert 0 <= stats.accepted[r] <= stats.proposed[r]
        assert stats.tokens[r] == len(row) + (len(row) < max_new)  # + EOS unless cut
        # every pass adds the accepted draft tokens and one of T5's own, except a pass that
        # ends on an accepted draft EOS
        assert stats.tokens[r] - stats.accepted[r] in (stats.row_passes[r], stats.row_passes[r] - 1)
        assert 1 <= stats.row_passes[r] <= stats.tokens[r]
    assert 0.0 <= stats.acceptance_rate <= 1.0


@pytest.mark.parametrize("size", list(SIZES))
def test_speculative_greedy_equals_greedy(size):
    """3 batches of 56 and 2 single inputs per size and drafter: 170 inputs x 3 sizes = 510
    random inputs for each of the 7 drafters, with random γ (1, 2, 4, all) and max_gamma."""
    vocab = SIZES[size]["vocab"]
    verifier = random_t5(0, **SIZES[size])
    small_t5s = [noisy_copy(verifier, 0.01, 1), noisy_copy(verifier, 0.05, 2)]  # ~60% / ~25% accepted
    rng, gen = random.Random(size), torch.Generator().manual_seed(len(size))
    covered, accepted = Counter(), Counter()
    for batch in [56] * 3 + [1] * 2:
        ids, mask = random_batch(gen, batch, vocab)
        max_new = rng.choice([6, 12])
        ref = t5.greedy(verifier, ids, mask, max_new)
        sources = source_ids(ids, mask, EOS)
        for kind in KINDS:
            drafter = make_drafter(kind, ref, sources, rng, vocab, small_t5s)
            gamma = rng.choice([1, 2, 4, "all"])
            out, stats = speculative_generate(verifier, ids, mask, drafter, max_new, gamma=gamma,
                                              max_gamma=rng.choice([3, 64]))
            assert out == ref, (kind, gamma)
            check_stats(stats, out, max_new)
            if kind == "perfect" and gamma == "all":
                assert stats.passes == 1
            covered[kind] += batch
            accepted[kind] += sum(stats.accepted)
    assert all(covered[k] == 170 for k in KINDS)
    # the drafts exercise both paths: long accepted runs and rejections
    assert accepted["perfect"] > accepted["corrupted"] > accepted["garbage"] > 0
    assert accepted["small_t5"] > covered["small_t5"]


def test_rows_accepting_different_lengths():
    """A batch whose rows accept everything, nothing, or a part, with a long output."""
    verifier = random_t5(0, **SIZES["small"])
    ids, mask = random_batch(torch.Generator().manual_seed(9), 4, 40, min_len=8)
    ref = t5.greedy(verifier, ids, mask, 30)
    drafts = [ref[0], [], ref[2][:3] + [7, 7] + ref[2][3:], [5] * 30]
    out, stats = speculative_generate(verifier, ids, mask, StaticDrafter(drafts), 30, gamma="all")
    assert out == ref
    assert stats.row_passes[0] == 1 and stats.accepted[0] == stats.tokens[0]
    assert len(set(stats.row_passes)) > 2


def test_resync_rejoins_the_draft():
    verifier = random_t5(0, **SIZES["wide"])
    ids, mask = random_batch(torch.Generator().manual_seed(3), 64, 60, min_len=6)
    for i, y in enumerate(t5.greedy(verifier, ids, mask, 12)):
        m = next((j for j in range(1, len(y)) if y[j] in y[:j]), len(y))
        y, k, source = y[:m], m // 2, ids[i].tolist()  # distinct tokens; y[k] not in the source
        if m >= 8 and y[k] not in source:
            break
    else:
        pytest.fail("no suitable random output")
    ids, mask = ids[i: i + 1], mask[i: i + 1]
    z = next(t for t in range(2, 60) if t not in y and t not in source)
    drafts = {"inserted": y[:k] + [z] + y[k:], "substituted": y[:k] + [z] + y[k + 1:],
              "deleted": y[:k] + y[k + 1:]}
    for name, draft in drafts.items():
        passes = {}
        for resync in (True, False):
            out, stats = speculative_generate(verifier, ids, mask, StaticDrafter([draft], resync=resync),
                                              m, gamma="all")  # max_new_tokens m: y is the output
            assert out == [y]
            passes[resync] = stats.passes
        assert passes[False] == stats.tokens[0] - k  # gives up: one token per pass after the edit
        assert passes[True] == (3 if name == "deleted" else 2), name


def first_two(out: list[list[int]]) -> tuple[Counter, Counter]:
    """Counts of the first output token and of the second (EOS: ended, -1: ended before)."""
    first = Counter(row[0] if row else EOS for row in out)
    second = Counter((row[1] if len(row) > 1 else EOS) if row else -1 for row in out)
    return first, second


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.8, 0.85)])
def test_speculative_sampling_matches_verifier(temperature, top_p):
    """Chi-square: the speculative sampler's first and second tokens follow T5's sampling
    distribution, whatever the drafts (right, wrong, empty)."""
    vocab, n = 6, 5000
    verifier = random_t5(2, vocab=vocab, d_model=16, layers=1, heads=2)
    ids = torch.tensor([[3, 4, 2, 5, EOS]]).repeat(n, 1)
    mask = torch.ones_like(ids)
    with torch.no_grad():  # exact distributions, from full teacher-forced passes
        probs = lambda prefix: t5.token_probs(verifier(input_ids=ids[:1], attention_mask=mask[:1],
                                              decoder_input_ids=torch.tensor([[0, *prefix]])).logits[0, -1],
                                              temperature, top_p)
        p1 = probs([])
        p2 = {-1: float(p1[EOS])} | {t: 0.0 for t in range(vocab)}
        for x in range(vocab):
            if x != EOS:
                for t, q in enumerate(probs([x]).tolist()):
                    p2[t] += float(p1[x]) * q
    rng = random.Random(0)
    drafts = [rng.choice([[2, 3], [4], [], [5, 5, 2], [EOS]]) for _ in range(n)]
    out, stats = speculative_generate(verifier, ids, mask, StaticDrafter(drafts, resync=False), 2,
                                      do_sample=True, temperature=temperature, top_p=top_p,
                                      generator=torch.Generator().manual_seed(1))
    assert 0 < stats.acceptance_rate < 1
    first, second = first_two(out)
    support = [t for t in range(vocab) if p1[t] > 0]
    assert all(first[t] == 0 for t in range(vocab) if t not in support)
    observed = [first[t] for t in support]
    assert chisquare(observed, [n * float(p1[t]) for t in support]).pvalue > 1e-3
    keys = [t for t in p2 if p2[t] > 0]
    assert sum(second[t] for t in p2 if p2[t] == 0) == 0
    assert chisquare([second[t] for t in keys], [n * p2[t] for t in keys]).pvalue > 1e-3
    # the test has power: resampling from p (not p without the rejected token) is detectably wrong
    draft_of = Counter(d[0] if d else None for d in drafts)
    wrong = [sum(c / n * (float(p1[t]) + (1 - float(p1[x])) * float(p1[t]) if x == t
                          else (1 - float(p1[x])) * float(p1[t]) if x is not None else float(p1[t]))
                 for x, c in draft_of.items()) for t in support]
    assert chisquare(observed, [n * w / sum(wrong) for w in wrong]).pvalue < 1e-3


def test_sampling_with_small_t5_drafter():
    vocab, n = 6, 3000
    verifier = random_t5(2, vocab=vocab, d_model=16, layers=1, heads=2)
    drafter = SmallT5Drafter(noisy_copy(verifier, 0.3, 0), max_gamma=3)
    ids = torch.tensor([[3, 4, 2, 5, EOS]]).repeat(n, 1)
    mask = torch.ones_like(ids)
    out, stats = speculative_generate(verifier, ids, mask, drafter, 2, do_sample=True,
                                      generator=torch.Generator().manual_seed(2))
    assert 0.2 < stats.acceptance_rate < 0.9
    with torch.no_grad():
        p1 = t5.token_probs(verifier(input_ids=ids[:1], attention_mask=mask[:1],
                                     decoder_input_ids=torch.tensor([[0]])).logits[0, -1])
    first, _ = first_two(out)
    assert chisquare([first[t] for t in range(vocab)], (n * p1).tolist()).pvalue > 1e-3


def test_small_t5_drafter_cache_follows_the_verifier():
    """The drafter's cache survives partial acceptance: a drafter identical to the verifier
    proposes exactly the verifier's continuation, so every window is accepted."""
    verifier = random_t5(0, **SIZES["small"])
    ids, mask = random_batch(torch.Generator().manual_seed(8), 16, 40, min_len=6)
    ref = t5.greedy(verifier, ids, mask, 30)
    drafter = SmallT5Drafter(copy.deepcopy(verifier), max_gamma=3)
    out, stats = speculative_generate(verifier, ids, mask, drafter, 30, gamma=2, max_gamma=3)
    assert out == ref and stats.acceptance_rate == 1.0
    # rows drafting different lengths: row 0's drafter cache runs two tokens past its output
    rows = [i for i, y in enumerate(ref) if len(y) >= 9 and len(set(y[:9])) >= 5][:2]
    ids, mask = ids[rows], mask[rows]
    a, b = [ref[i] for i in rows]
    drafter = SmallT5Drafter(copy.deepcopy(verifier), max_gamma=8)
    drafter.begin(ids, mask, EOS)
    assert drafter.propose([0, 1], [[], []], [1, 4]) == [a[:1], b[:4]]
    assert drafter.propose([0, 1], [a[:2], b[:5]], [3, 3]) == [a[2:5], b[5:8]]
    assert drafter.propose([1], [b[:6]], [2]) == [b[6:8]]  # row 0 finished


def test_perfect_draft_is_one_pass_and_gamma_grows():
    verifier = random_t5(0, **SIZES["small"])
    ids, mask = random_batch(torch.Generator().manual_seed(5), 8, 40, min_len=6)
    ref = t5.greedy(verifier, ids, mask, 40)
    out, stats = speculative_generate(verifier, ids, mask, StaticDrafter(ref), 40, gamma="all")
    assert out == ref and stats.passes == 1 and stats.acceptance_rate == 1.0
    longest = max(map(len, ref)) + 1
    _, stats = speculative_generate(verifier, ids, mask, StaticDrafter(ref), 40, gamma=1, max_gamma=64)
    assert stats.passes <= (longest - 1).bit_length() + 1  # γ doubles: 1 + 2 + 4 + ...
    _, stats = speculative_generate(verifier, ids, mask, StaticDrafter(ref), 40, gamma=2, max_gamma=2)
    assert stats.passes == -(-longest // 3)  # fixed γ = 2: three tokens per pass


class FakeEdiT5:
    """Stands in for EdiT5Model (another module): predicts the edits of given targets."""

    def __init__(self, targets, markers):
        self.targets, self.markers = targets, markers

    def generate_edits(self, input_ids, attention_mask):
        sources = source_ids(input_ids, attention_mask, EOS)
        return [convert(s, t, self.markers, EOS) for s, t in zip(sources, self.targets)]


def test_edit5_drafter_realizes_edits():
    verifier = random_t5(0, **SIZES["wide"])
    ids, mask = random_batch(torch.Generator().manual_seed(2), 6, 60)
    markers = list(range(50, 60))
    ref = t5.greedy(verifier, ids, mask, 20)
    targets = [[t for t in row if t < 50] for row in ref]  # markers cannot be inserted
    drafter = EdiT5Drafter(FakeEdiT5(targets, markers), markers=markers)
    drafter.begin(ids, mask, EOS)
    assert drafter.propose(list(range(6)), [[]] * 6, [None] * 6) == [t + [EOS] for t in targets]
    out, _ = speculative_generate(verifier, ids, mask, drafter, 20, gamma="all")
    assert out == ref
    with pytest.raises(EditspecError, match="marker"):
        EdiT5Drafter(FakeEdiT5(targets, []))


@pytest.mark.filterwarnings("error::FutureWarning")  # e.g. a cache keyword transformers renamed
def test_edit5_drafter_with_a_random_edit5_model():
    """EdiT5's drafts are its realized edits, and speculative output is T5's; the three decoding
    loops call transformers without its deprecation warnings, which `editspec correct` would print."""
    from editspec.tokenization.edits import realize
    from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model

    torch.manual_seed(0)
    edit5 = EdiT5Model(EdiT5Config(vocab_size=60, d_model=16, d_kv=8, d_ff=32, num_heads=2, num_layers=1,
                                   max_order_positions=32, dropout_rate=0.0)).eval()
    verifier, markers = random_t5(0, **SIZES["wide"]), list(range(40, 60))
    ids, mask = random_batch(torch.Generator().manual_seed(2), 8, 60)
    drafter = EdiT5Drafter(edit5, markers=markers)
    drafter.begin(ids, mask, EOS)
    sources = source_ids(ids, mask, EOS)
    expected = [realize(s, e, markers, EOS) + [EOS]
                for s, e in zip(sources, edit5.generate_edits(ids, mask))]
    assert drafter.propose(list(range(8)), [[]] * 8, [None] * 8) == expected
    out, _ = speculative_generate(verifier, ids, mask, drafter, 20, gamma="all")
    assert out == t5.greedy(verifier, ids, mask, 20)


@pytest.fixture(scope="module")
def other_tokenizer(tmp_path_factory):
    from tests.helpers import sentences
    from editspec.tokenization.tokens import train_tokenizer

    return train_tokenizer(sentences(500, seed=1), tmp_path_factory.mktemp("other"), vocab_size=150,
                           extra_ids=8)


def test_different_tokenizers_refused_or_retokenized(tokenizer, other_tokenizer):
    from editspec.decoding.speculative import retokenize_drafts
    from editspec.tokenization.tokens import encode

    verifier = random_t5(0, vocab=len(tokenizer), d_model=16, layers=1, heads=2)
    src = ["He go to school 😀 yesterday.", "She like the dogs."]
    tgt = ["He went to school 😀 yesterday.", "She likes the dogs."]
    ids = torch.tensor([e.ids + [EOS] for e in encode(tokenizer, src[:1])])
    foreign = StaticDrafter([e.ids for e in encode(other_tokenizer, tgt[:1])], tokenizer=other_tokenizer)
    with pytest.raises(EditspecError, match="different tokenizers"):
        speculative_generate(verifier, ids, torch.ones_like(ids), foreign, 5, tokenizer=tokenizer)
    own = StaticDrafter([[5]], tokenizer=tokenizer)
    speculative_generate(verifier, ids, torch.ones_like(ids), own, 5, tokenizer=tokenizer)  # accepted

    drafts = [e.ids for e in encode(other_tokenizer, tgt)]
    expected = [e.ids for e in encode(tokenizer, tgt)]
    assert drafts != expected
    assert retokenize_drafts(drafts, other_tokenizer, tokenizer, sources=src) == expected
    # without the sources, the drafter's <unk> (the emoji) cannot be spelled
    assert retokenize_drafts(drafts, other_tokenizer, tokenizer)[1] == expected[1]


def test_passes_are_decoder_calls(monkeypatch):
    """SpecStats.passes counts the verifier's decoder calls; profilers can wrap t5.decode_step."""
    verifier = random_t5(0, **SIZES["tiny"])
    ids, mask = random_batch(torch.Generator().manual_seed(1), 8, 24)
    ref = t5.greedy(verifier, ids, mask, 12)
    calls, decode_step = [], t5.decode_step
    monkeypatch.setattr(t5, "decode_step", lambda *a: calls.append(a[1].shape) or decode_step(*a))
    assert t5.greedy(verifier, ids, mask, 12) == ref
    greedy_steps = len(calls)
    assert greedy_steps == min(12, max(map(len, ref)) + 1)  # one step per token, EOS included
    calls.clear()
    drafts = [corrupt(r, random.Random(i), 24) for i, r in enumerate(ref)]
    out, stats = speculative_generate(verifier, ids, mask, StaticDrafter(drafts), 12, gamma=3)
    assert out == ref and len(calls) == stats.passes < greedy_steps
    assert max(shape[1] for shape in calls) > 1  # windows of several tokens
