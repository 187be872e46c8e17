"""The decoding core (editspec/decoding/core.py) and its drafters: greedy equals transformers' generate, speculative
equals greedy for every drafter at slot counts 1, 7 and 32 with refill; sampling keeps T5's
distribution; the window policy; the drafters."""

import random
import time
from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from editspec.decoding import core, drafters
from editspec.decoding.costs import LOOSE, measure
from editspec.decoding.window import WIDTHS, WindowPolicy
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
    if kind == "cheapest":  # probes 5 of every 20 sentences: picks, replays and refills all occur
        return drafters.Cheapest([drafters.Follow([wrong(r) for r in ref]), drafters.Copy()],
                                 drafters.DraftCosts(["wrong", "copy"], probe=5, period=20), lambda w: 1e-3)
    draft = {"perfect": lambda r: r, "empty": lambda r: [], "wrong": wrong,
             "longer": lambda r: r + r + [5] * 30,  # beyond the output and its EOS
             "corrupted": lambda r: [t for t in r if rng.random() < 0.8] + wrong(r)[:2]}[kind]
    return drafters.Follow([draft(r) for r in ref], resync=rng.random() < 0.8)


KINDS = ["perfect", "empty", "wrong", "longer", "corrupted", "copy", "ngram", "mix", "cheapest"]


def test_speculative_equals_greedy():
    """236 random inputs of very different lengths, every drafter, slots 1, 7 and 32 (refilled
    as rows finish), windows of 1, 3 or 48 tokens: speculative output is greedy output. One slot
    decodes its 16 inputs one by one, each alone (40 took half the test's time, the same path)."""
    vocab = 40
    model = random_t5(0, vocab=vocab)
    rng, gen = random.Random(0), torch.Generator().manual_seed(2)
    accepted = Counter()
    for n, slots in [(120, 32), (100, 7), (16, 1)]:
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
    mix.finish(0, [2, 3, 4, 5, 6])


def test_replay_takes_the_live_passes():
    """``replay`` on the verifier's output takes exactly the passes the drafter took live, at the
    same window: the cost ``Cheapest`` charges a drafter it did not run (rows that end with EOS,
    far from their token budget, which shortens live windows)."""
    model = random_t5(0, vocab=40)
    gen, rng = torch.Generator().manual_seed(3), random.Random(3)
    sources = mixed_lengths(gen, 24, 40)
    ref, _ = core.generate(model, sources, 6, max_new_tokens=200)
    ended = [i for i, r in enumerate(ref) if len(r) < 200 - 49]
    assert len(ended) > 12
    drafts = [[t for t in r if rng.random() < 0.7] for r in ref]
    plain = [s[:-1] for s in sources]
    for window in (1, 4, 48):
        for make_drafter in (lambda: drafters.Follow(drafts), drafters.Copy,
                             lambda: drafters.Mix(drafters.Copy(), drafters.Ngram())):
            out, stats = core.generate(model, sources, 6, make_drafter(), 200, window=window)
            fresh = make_drafter()
            fresh.prepare(plain, EOS)
            assert [len(drafters.replay(fresh, i, out[i], EOS, [window])) for i in ended] \
                == [stats.row_passes[i] for i in ended]
    perfect = drafters.Follow(ref)
    perfect.prepare(plain, EOS)
    short = next(i for i in ended if 5 < len(ref[i]) < 47)
    assert drafters.replay(perfect, short, ref[short], EOS, [48]) == [48]  # the whole output and EOS at once
    assert drafters.replay(perfect, short, ref[short], EOS, [0]) == [0] * (len(ref[short]) + 1)


class Slow(drafters.Follow):
    """A perfect drafter that costs 20 ms per batch it drafts."""

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        self.batches = getattr(self, "batches", 0) + 1
        time.sleep(0.02)


def test_cheapest_picks_by_drafting_time_and_passes():
    """Passes expensive: the perfect drafter (one pass a sentence) wins over copying; passes free:
    the copy wins over the slow perfect drafter as soon as a probe has finished. Then the slow one
    drafts the probes alone (sentences 0-7, 24-31, 48-55, ...; the core encodes 4 at a time),
    and the output is greedy's throughout."""
    model = random_t5(0, vocab=40)
    sources = mixed_lengths(torch.Generator().manual_seed(4), 40, 40)
    ref, _ = core.generate(model, sources, 4, max_new_tokens=30)
    for pass_cost, winner in ((1.0, 0), (0.0, 1)):
        costs = drafters.DraftCosts(["slow", "copy"], probe=8, period=24, settled=8)
        slow = []
        for call in range(3):  # three calls of the same 40 sentences: 120 sentences, probes 0-7, 24-31, ...
            candidates = [Slow(ref), drafters.Copy()]
            out, stats = core.generate(model, sources, 4, drafters.Cheapest(candidates, costs, lambda w: pass_cost),
                                       30, window=48)
            assert out == ref
            slow.append(getattr(candidates[0], "batches", 0))
        assert costs.best == winner and costs.probed == 8 * 5  # probes among sentences 0..119
        means = costs.per_sentence()
        if winner == 0:
            assert means["slow"] > 1.0 and means["copy"] > means["slow"] + 1.0  # passes dominate
            assert slow == [10, 10, 10]  # live all along: 40 sentences, 4 per batch
        else:
            assert 0.0 < means["copy"] < means["slow"]
            assert slow == [4, 4, 2]  # batches 0-3 (live: nothing measured yet), 4-7, 24-27, 28-31; ...


def test_a_clear_pick_probes_less():
    """32 probes a period until the runner-up costs 1.25x the best after 8 probes, then 8; a
    close race keeps probing 32."""
    costs = drafters.DraftCosts(["edit5", "copy"], probe=32, period=1024, settled=8)
    assert sum(costs.reserve(1024)) == 32  # nothing measured yet
    for _ in range(8):
        costs.add([0.05, 0.03])
    assert sum(costs.reserve(1024)) == 8 and costs.best == 1
    close = drafters.DraftCosts(["edit5", "copy"], probe=32, period=1024, settled=8)
    for _ in range(8):
        close.add([0.036, 0.030])  # 1.2x: not clear
    assert sum(close.reserve(1024)) == 32


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
                               window=2, sampling=core.Sampling(generator=torch.Generator().manual_seed(1)))
    assert 0 < stats.acceptance_rate < 1
    seen = Counter((o[0], o[1] if len(o) > 1 else EOS) if o else (EOS, None) for o in out)
    keys = [k for k in p2 if p2[k] * n > 5]
    observed, expected = [seen[k] for k in keys], [n * p2[k] for k in keys]
    rest = n - sum(expected)  # the rare pairs together, when there are any: an empty bucket is 0/0
    if rest > 1e-6:
        observed.append(n - sum(observed))
        expected.append(rest)
    else:
        assert sum(observed) == n
        expected = [e * n / sum(expected) for e in expected]  # chisquare wants equal sums to the digit
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
    costs = measure(random_t5(0), 2, repeats=1)  # widening until a token gets dearer (timing: how far varies)
    assert list(costs) == list(WIDTHS[:len(costs)]) and len(costs) >= 2 and all(c > 0 for c in costs.values())
    assert list(costs.values()) == sorted(costs.values())  # a wider pass costs no less (load only adds time)


def test_drafter_count_must_match():
    with pytest.raises(EditspecError, match="2 drafts for 1 sentences"):
        core.generate(random_t5(0), [[3, EOS]], 1, drafters.Follow([[3], [4]]), 4)


def test_rows_accepting_different_lengths():
    """Slots whose rows accept everything, nothing, a part, or a long wrong draft."""
    model = random_t5(0)
    ids, mask = random_batch(torch.Generator().manual_seed(9), 4, 40, min_len=8)
    sources = core.inputs(ids, mask)
    ref, _ = core.generate(model, sources, 4, max_new_tokens=30)
    drafts = [ref[0], [], ref[2][:3] + [7, 7] + ref[2][3:], [5] * 30]
    out, stats = core.generate(model, sources, 4, drafters.Follow(drafts), 30, window=48)
    assert out == ref
    assert stats.row_passes[0] == 1 and stats.accepted[0] == stats.tokens[0]
    assert len(set(stats.row_passes)) > 2


def test_resync_rejoins_the_draft():
    """A draft with one token inserted, substituted or deleted: with resync the output re-joins it
    after the edit (2 or 3 passes), without it decoding goes on one token per pass."""
    model = random_t5(0, vocab=60, d_model=48, layers=3, heads=6)
    ids, mask = random_batch(torch.Generator().manual_seed(3), 64, 60, min_len=6)
    sources = core.inputs(ids, mask)
    for i, y in enumerate(core.generate(model, sources, 64, max_new_tokens=12)[0]):
        m = next((j for j in range(1, len(y)) if y[j] in y[:j]), len(y))
        y, k, source = y[:m], m // 2, sources[i]  # distinct tokens; y[k] not in the source
        if m >= 8 and y[k] not in source:
            break
    else:
        pytest.fail("no suitable random output")
    z = next(t for t in range(2, 60) if t not in y and t not in source)
    drafts = {"inserted": y[:k] + [z] + y[k:], "substituted": y[:k] + [z] + y[k + 1:],
              "deleted": y[:k] + y[k + 1:]}
    for name, draft in drafts.items():
        passes = {}
        for resync in (True, False):
            out, stats = core.generate(model, [source], 1, drafters.Follow([draft], resync=resync), m,
                                       window=48)  # max_new_tokens m: y is the output
            assert out == [y]
            passes[resync] = stats.passes
        assert passes[False] == stats.tokens[0] - k  # gives up: one token per pass after the edit
        assert passes[True] == (3 if name == "deleted" else 2), name


def test_passes_are_decoder_forward_calls(monkeypatch):
    """SpecStats.passes counts the core's decoder passes (what the profiler times); greedy takes
    one pass per token and EOS, speculative fewer, with windows of several tokens."""
    model = random_t5(0, vocab=24, d_model=16, layers=1, heads=2)
    ids, mask = random_batch(torch.Generator().manual_seed(1), 8, 24)
    sources = core.inputs(ids, mask)
    calls, forward = [], core.Decoder.forward
    monkeypatch.setattr(core.Decoder, "forward", lambda self, rows, feeds: calls.append(feeds) or
                        forward(self, rows, feeds))
    ref, stats = core.generate(model, sources, 8, max_new_tokens=12)
    assert len(calls) == stats.passes == min(12, max(map(len, ref)) + 1)
    calls.clear()
    rng = random.Random(0)
    drafts = [[t for t in r if rng.random() < 0.8] for r in ref]
    out, stats = core.generate(model, sources, 8, drafters.Follow(drafts), 12, window=3)
    assert out == ref and len(calls) == stats.passes < min(12, max(map(len, ref)) + 1)
    assert max(len(f) for feeds in calls for f in feeds) > 1


def test_greedy_rows_do_not_depend_on_the_batch():
    model = random_t5(3)
    ids, mask = random_batch(torch.Generator().manual_seed(4), 4, 40)
    batched = core.greedy(model, ids, mask, 12)
    for i in range(4):
        n = int(mask[i].sum())
        assert core.greedy(model, ids[i: i + 1, :n], mask[i: i + 1, :n], 12) == [batched[i]]
    assert core.greedy(model, ids, mask, 0) == [[]] * 4


def test_sample_one_row_equals_generate_sampling():
    """One sentence at a time, the core samples exactly as transformers' generate (same random
    stream: one multinomial per token); with a generator, reproducibly."""
    model = random_t5(5, dtype=torch.float32)  # generate() samples from float32 probabilities
    ids, mask = random_batch(torch.Generator().manual_seed(6), 5, 40)
    for temperature, top_p in [(1.0, 1.0), (0.7, 0.9), (1.5, 0.5)]:
        for i in range(5):
            row, m = ids[i: i + 1, : int(mask[i].sum())], mask[i: i + 1, : int(mask[i].sum())]
            torch.manual_seed(7)
            ref = model.generate(input_ids=row, attention_mask=m, do_sample=True, top_k=0, num_beams=1,
                                 temperature=temperature, top_p=top_p, max_new_tokens=10)
            torch.manual_seed(7)
            assert core.sample(model, row, m, 10, temperature, top_p) == hf_ids(ref)
    a = core.sample(model, ids, mask, 10, generator=torch.Generator().manual_seed(1))
    b = core.sample(model, ids, mask, 10, generator=torch.Generator().manual_seed(1))
    c = core.sample(model, ids, mask, 10, generator=torch.Generator().manual_seed(2))
    assert a == b != c


@pytest.mark.parametrize("temperature,top_p", [(0.8, 0.85)])
def test_sampling_with_temperature_and_top_p_keeps_the_distribution(temperature, top_p):
    """Chi-square on the first token with right, wrong and empty drafts; and the test has power:
    resampling from p (not p without the rejected token) is detectably wrong."""
    from editspec.modeling import t5

    vocab, n = 6, 5000
    model = random_t5(2, vocab=vocab, d_model=16, layers=1, heads=2)
    source = [3, 4, 2, 5, EOS]
    with torch.no_grad():
        p1 = t5.token_probs(model(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([[0]])).logits[0, -1],
                            temperature, top_p)
    rng = random.Random(0)
    drafts = [rng.choice([[2, 3], [4], [], [5, 5, 2], [EOS]]) for _ in range(n)]
    out, stats = core.generate(model, [source] * n, 16, drafters.Follow(drafts, resync=False), 2, window=4,
                               sampling=core.Sampling(temperature, top_p, torch.Generator().manual_seed(1)))
    assert 0 < stats.acceptance_rate < 1
    first = Counter(row[0] if row else EOS for row in out)
    support = [t for t in range(vocab) if p1[t] > 0]
    assert all(first[t] == 0 for t in range(vocab) if t not in support)
    observed = [first[t] for t in support]
    assert chisquare(observed, [n * float(p1[t]) for t in support]).pvalue > 1e-3
    draft_of = Counter(d[0] if d else None for d in drafts)
    wrong = [sum(c / n * (float(p1[t]) + (1 - float(p1[x])) * float(p1[t]) if x == t
                          else (1 - float(p1[x])) * float(p1[t]) if x is not None else float(p1[t]))
                 for x, c in draft_of.items()) for t in support]
    assert chisquare(observed, [n * w / sum(wrong) for w in wrong]).pvalue < 1e-3


class FakeEdiT5:
    """Stands in for EdiT5Model: predicts the edits of given targets, keyed by source."""

    encoder = None

    def __init__(self, targets: dict, markers):
        self.targets, self.markers = targets, markers

    def generate_edits(self, input_ids, attention_mask, max_insertion_tokens=64, encoder_hidden_states=None):
        from editspec.tokenization.edits import convert

        rows = core.inputs(input_ids, attention_mask)
        return [convert(r[:-1], self.targets[tuple(r[:-1])], self.markers, EOS) for r in rows]


def test_edit5_drafter_realizes_edits():
    model = random_t5(0, vocab=60, d_model=48, layers=3, heads=6)
    ids, mask = random_batch(torch.Generator().manual_seed(2), 6, 50)
    sources, markers = core.inputs(ids, mask), list(range(50, 60))
    ref, _ = core.generate(model, sources, 6, max_new_tokens=20)
    targets = {tuple(s[:-1]): [t for t in r if t < 50] for s, r in zip(sources, ref)}  # no markers inserted
    drafter = drafters.EdiT5(FakeEdiT5(targets, markers), markers)
    drafter.prepare([s[:-1] for s in sources], EOS)
    drafter.encoded(list(range(6)), ids, mask, None, None)
    assert [drafter.propose(i, [], 60) for i in range(6)] == [targets[tuple(s[:-1])] + [EOS] for s in sources]
    for slots in (1, 4):
        assert core.generate(model, sources, slots, drafters.EdiT5(FakeEdiT5(targets, markers), markers), 20,
                             window=48)[0] == ref
    with pytest.raises(EditspecError, match="marker"):
        drafters.EdiT5(FakeEdiT5(targets, []), [])


def tiny_edit5(t5_model=None, vocab: int = 60):
    from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model

    torch.manual_seed(0)
    if t5_model is not None:  # heads on the T5's own encoder
        return EdiT5Model.on_t5(t5_model, marker_ids=list(range(40, 60)), max_order_positions=32).to(
            next(t5_model.parameters()).dtype).eval()
    return EdiT5Model(EdiT5Config(vocab_size=vocab, d_model=16, d_kv=8, d_ff=32, num_heads=2, num_layers=1,
                                  max_order_positions=32, dropout_rate=0.0)).double().eval()


@pytest.mark.filterwarnings("error::FutureWarning")  # e.g. a cache keyword transformers renamed
def test_edit5_drafter_with_a_random_edit5_model():
    """EdiT5's drafts are its realized edits, and speculative output is T5's; the core calls
    transformers without its deprecation warnings, which `editspec correct` would print."""
    from editspec.tokenization.edits import realize

    edit5, model, markers = tiny_edit5(), random_t5(0, vocab=60, d_model=48, layers=3, heads=6), list(range(40, 60))
    ids, mask = random_batch(torch.Generator().manual_seed(2), 8, 40)
    sources = core.inputs(ids, mask)
    drafter = drafters.EdiT5(edit5, markers)
    drafter.prepare([s[:-1] for s in sources], EOS)
    drafter.encoded(list(range(8)), ids, mask, None, None)
    expected = [realize(s[:-1], e, markers, EOS) + [EOS] for s, e in zip(sources, edit5.generate_edits(ids, mask))]
    assert [drafter.propose(i, [], 60) for i in range(8)] == expected
    out, _ = core.generate(model, sources, 3, drafters.EdiT5(edit5, markers), 20)
    assert out == core.generate(model, sources, 3, max_new_tokens=20)[0]


def test_shared_encoder_runs_once_per_sentence():
    """EdiT5 heads on the T5's own encoder (issue 42): the EdiT5 drafter reads the states the core
    computed, so the encoder runs once per sentence (in batches of ``slots``), and the output is
    greedy's; its drafts are those of EdiT5 encoding by itself."""
    model = random_t5(0, vocab=60, d_model=32, layers=2)
    edit5 = tiny_edit5(model)
    assert edit5.encoder is model.encoder
    ids, mask = random_batch(torch.Generator().manual_seed(4), 10, 40, min_len=4)
    sources = core.inputs(ids, mask)
    ref, _ = core.generate(model, sources, 4, max_new_tokens=20)
    LOOSE.passes(4, model)  # the window's cost model (a dummy sentence) before counting
    seen = []
    hook = model.encoder.register_forward_hook(lambda m, args, kwargs, out: seen.append(kwargs["input_ids"].shape[0]),
                                               with_kwargs=True)
    try:
        out, stats = core.generate(model, sources, 4, drafters.Mix(drafters.EdiT5(edit5, list(range(40, 60))),
                                                                   drafters.Ngram()), 20)
    finally:
        hook.remove()
    assert out == ref and sum(seen) == len(sources) and max(seen) == 4
    # the same drafts as EdiT5 running its own encoder pass
    alone = drafters.EdiT5(edit5, list(range(40, 60)))
    alone.prepare([s[:-1] for s in sources], EOS)
    alone.encoded(list(range(10)), ids, mask, None, None)
    shared = drafters.EdiT5(edit5, list(range(40, 60)))
    shared.prepare([s[:-1] for s in sources], EOS)
    with torch.inference_mode():
        hidden = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    shared.encoded(list(range(10)), ids, mask, hidden, model.encoder)
    assert shared.drafts == alone.drafts


def test_speculative_equals_greedy_in_bfloat16():
    """Lossless means the same numerics: in bf16, speculative output (every drafter, windows of
    1 to 48, slot refill) equals the core's greedy output in bf16."""
    vocab = 40
    model = random_t5(0, vocab=vocab, dtype=torch.bfloat16)
    rng, gen = random.Random(1), torch.Generator().manual_seed(7)
    for n, slots in [(60, 16), (20, 1)]:
        sources = mixed_lengths(gen, n, vocab)
        ref, _ = core.generate(model, sources, slots, max_new_tokens=24)
        for kind in ("perfect", "corrupted", "copy", "mix"):
            out, _ = core.generate(model, sources, slots, make(kind, ref, None, rng, vocab), 24,
                                   window=rng.choice([1, 4, 48]))
            assert out == ref, (kind, slots)


def test_a_bfloat16_window_pass_gives_each_token_the_logits_of_single_steps():
    """In bf16, tokens fed in one pass of width 9 get the same logits, bit for bit, as fed one
    step at a time, at the shipped attention's sizes (4 heads of 64, a 128-token cache). torch's
    bf16 attention kernel failed this (a query row's rounding followed the pass's width): one of
    256 real outputs differed at batch 32. (In float32/64 the kernels differ in the last bits by
    width too, far below a token's margin: there the equality of outputs is what is tested.)"""
    from editspec.decoding.decoder import Decoder

    model = random_t5(3, vocab=40, d_model=256, layers=2, heads=4, dtype=torch.bfloat16)
    gen = torch.Generator().manual_seed(5)
    source = torch.randint(2, 40, (1, 20), generator=gen).tolist()[0] + [1]
    feed = [0] + torch.randint(2, 40, (8,), generator=gen).tolist()  # start token + 8 drafted
    logits = []
    for steps in ([feed], [[t] for t in feed]):  # one pass of width 9; nine single steps
        dec = Decoder(model, slots=2, max_source=32, max_target=128)
        with torch.inference_mode():
            _, mask, hidden = dec.encode([source])
            dec.admit([1], mask, hidden)
            out = []
            for tokens in steps:
                out.append(dec.forward([1], [tokens]))
                dec.length[1] += len(tokens)
        logits.append(torch.cat(out))
    assert torch.equal(logits[0], logits[1])


def test_drafts_retokenized(tokenizer, tmp_path):
    from editspec.tokenization.tokens import encode, train_tokenizer
    from tests.helpers import sentences

    other = train_tokenizer(sentences(500, seed=1), tmp_path / "other", vocab_size=150, extra_ids=8)
    src = ["He go to school 😀 yesterday.", "She like the dogs."]
    tgt = ["He went to school 😀 yesterday.", "She likes the dogs."]
    drafts = [e.ids for e in encode(other, tgt)]
    expected = [e.ids for e in encode(tokenizer, tgt)]
    assert drafts != expected
    assert drafters.retokenize_drafts(drafts, other, tokenizer, sources=src) == expected
    # without the sources, the drafter's <unk> (the emoji) cannot be spelled
    assert drafters.retokenize_drafts(drafts, other, tokenizer)[1] == expected[1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_kept_decoder_gives_a_new_decoders_numbers(dtype):
    """One decoder per model, kept across calls (``Decoders``, a bundle's) and grown for a larger
    one: a call after a larger (and after one of other widths) decodes and scores what a new
    decoder does, bit for bit (log P of every token), greedy and speculative; ``score`` shares it."""
    from editspec.decoding.decoder import Decoders

    model = random_t5(7, vocab=40, d_model=64, layers=2, heads=4, dtype=dtype)
    gen = torch.Generator().manual_seed(8)
    small, large = mixed_lengths(gen, 12, 40), mixed_lengths(gen, 40, 40)
    decoders = Decoders()
    call = lambda rows, slots, drafter=None, decoders=decoders: core.generate(  # noqa: E731
        model, rows, slots, drafter, [12 + len(r) for r in rows], window=4, scores=True, decoders=decoders)
    first = [call(small, 3, decoders=None), call(small, 3, drafters.copy_draft(), decoders=None)]  # new decoders
    forced = core.score(model, small, [r[::-1] for r in small], 5)
    with decoders.lease(model, 1, 1, 1) as kept:
        pass
    call(large, 16)  # grows the kept buffers: more slots, longer sources and budgets
    with decoders.lease(model, 1, 1, 1) as again:
        assert again is kept and kept.k[0].shape == (1, 4, 1, 16)  # views of the kept buffers, reset
    for (out, stats), (out2, stats2) in zip(first, [call(small, 3), call(small, 3, drafters.copy_draft())]):
        assert out == out2 and stats.token_log_probs == stats2.token_log_probs and stats.widths == stats2.widths
    assert core.score(model, small, [r[::-1] for r in small], 5, decoders=decoders) == forced
    model.to(torch.float64)  # another type: a new decoder
    with decoders.lease(model, 1, 1, 1) as other:
        assert other is not kept and other.k[0].dtype == torch.float64
        with decoders.lease(model, 2, 3, 4) as busy:  # held (another thread): one of its own
            assert busy is not other and busy.k[0].shape == (2, 4, 4, 16)
    decoders.release(model)
    with decoders.lease(model, 1, 1, 1) as fresh:
        assert fresh is not other


def test_a_kept_decoder_goes_with_its_model():
    """The kept decoder holds no reference to its model: the model is freed, and its decoder with it."""
    import gc
    import weakref

    from editspec.decoding.decoder import Decoders

    model, decoders = random_t5(0), Decoders()
    core.generate(model, [[5, 6, EOS]], 1, max_new_tokens=3, decoders=decoders)
    kept = weakref.ref(decoders._kept[model])
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None and kept() is None
