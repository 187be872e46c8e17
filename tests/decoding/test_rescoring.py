"""Rescoring (editspec/rescoring.py): the algorithm with stated scores, each model's log-likelihood
against its own decoding (T5: ``core.score``, and the decode's own scores it stands for), and an
overfitted T5 keeping its right edits and undoing a wrong one (the EdiT5's counterpart is in
test_modeling_edit5.py, beside its overfitted fixture)."""

import pytest
import torch

from editspec.decoding import core, decoder, drafters, rescoring
from editspec.decoding.rescoring import Known, t5_scorer
from editspec.post.diff import apply, diff
from editspec.tokenization.tokens import encode
from tests.helpers import random_batch, random_t5, rescored

SOURCE = "I am 20 years old and I like play football."
OUTPUT = "I am 20 the years old and I like to play football."
NO_THE = "I am 20 years old and I like to play football."
NO_TO = "I am 20 the years old and I like play football."


def test_docstring_example():
    assert [(e.start, e.end, e.correction) for e in diff(SOURCE, OUTPUT)] == [(8, 8, "the "), (28, 28, " to")]
    scores, seen = {OUTPUT: -10.0, NO_THE: -8.0, NO_TO: -12.0}, []

    def score(sources, targets):
        seen.extend(zip(sources, targets))
        return [scores[t] for t in targets]

    assert rescored([SOURCE, "Yes."], [OUTPUT, "Yes."], score) == [NO_THE, "Yes."]
    assert seen == [(SOURCE, OUTPUT), (SOURCE, NO_THE), (SOURCE, NO_TO)]  # unchanged units cost nothing


def test_ties_keep_and_an_unscored_unit_stays():
    assert rescored([SOURCE], [OUTPUT], lambda s, t: [0.0] * len(t)) == [OUTPUT]  # s >= s_k keeps
    assert rescored([SOURCE], [OUTPUT], lambda s, t: [None] + [1.0] * (len(t) - 1)) == [OUTPUT]
    assert rescored([SOURCE], [OUTPUT], lambda s, t: [-1.0] + [0.0] * (len(t) - 1)) == [SOURCE]  # both go
    assert rescored([], [], lambda s, t: 1 / 0) == []


def test_variants_are_scored_a_group_at_a_time():
    """A long text's variants are scored in groups (memory bounded, issue 45), with the result of
    one call: each unit's variants stay in one call, whatever the group size."""
    scores = {OUTPUT: -10.0, NO_THE: -8.0, NO_TO: -12.0, SOURCE: -9.0, "Yes!": -1.0, "Yes.": -2.0}
    calls = []

    def score(sources, targets):
        calls.append(len(targets))
        return [scores[t] for t in targets]

    sources, outputs = [SOURCE, "Yes.", SOURCE, "Yes."] * 5, [OUTPUT, "Yes!", NO_TO, "Yes."] * 5
    whole = rescored(sources, outputs, score)
    assert calls == [35] and whole == [NO_THE, "Yes!", SOURCE, "Yes."] * 5
    calls.clear()
    assert rescored(sources, outputs, score, group=4) == whole
    # a call of at most 4 + 2 rows (a unit's stay together), and a pair scored once is kept for
    # the later calls: the first unit of each kind is scored, the repeats cost nothing
    assert calls == [3 + 2, 1]


def test_core_score_is_the_sum_of_greedy_step_log_probs():
    """``core.score`` (a teacher-forced window on the core's decoder) against transformers, one
    token at a time from a pass over its prefix (float64: the same numbers to 1e-9)."""
    model = random_t5(3)
    ids, mask = random_batch(torch.Generator().manual_seed(3), 6, model.config.vocab_size)
    outputs = core.greedy(model, ids, mask, max_new_tokens=10)
    sources = core.inputs(ids, mask)
    labels = [o + [1] if len(o) < 10 else o for o in outputs]  # an output cut by max_new_tokens has no EOS
    expected = []
    for row, label in enumerate(labels):
        total, prefix = 0.0, [0]
        for token in label:
            with torch.no_grad():
                logits = model(input_ids=ids[row:row + 1], attention_mask=mask[row:row + 1],
                               decoder_input_ids=torch.tensor([prefix])).logits
            total += logits[0, -1].log_softmax(-1)[token].item()
            prefix.append(token)
        expected.append(total)
    assert core.score(model, sources, labels, slots=4) == pytest.approx(expected, abs=1e-9)
    # rows sharing a source (a unit's variants): each pair scores what it scores alone
    pairs = [2, 0, 2, 5]
    assert core.score(model, [sources[i] for i in pairs], [labels[i] for i in pairs], slots=3) == \
        pytest.approx([expected[i] for i in pairs], abs=1e-9)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_the_decode_s_scores_are_core_score_s(dtype):
    """``generate(scores=True)`` gives each output the log P that ``core.score`` gives the pair at
    the decode's widths: bit for bit where ``decoder.exact_windows`` (bf16 on a CPU with oneDNN's
    bf16 kernels: the same logits, summed in the same order), speculative or greedy, whatever the
    pairs scored beside it; elsewhere to the kernels' rounding (float32: last bits; bf16 on a CPU
    without bf16 units: ~1%, issue 76). Budgets as the corrector's (2n + 16 per row)."""
    model = random_t5(5, vocab=60, dtype=dtype)
    exact = decoder.exact_windows(model)
    rel = 1e-5 if dtype == torch.float32 else 2e-2
    ids, mask = random_batch(torch.Generator().manual_seed(5), 40, model.config.vocab_size)
    sources = core.inputs(ids, mask)
    budgets = [2 * len(src) + 16 for src in sources]
    for drafter in (None, drafters.copy_draft()):
        outputs, stats = core.generate(model, sources, 8, drafter, max_new_tokens=budgets, window=4, scores=True)
        # what each row generated: EOS included, unless its budget ran out first
        generated = [o + [1] if n == len(o) + 1 else o for o, n in zip(outputs, stats.tokens)]
        assert 3 <= sum(g[-1:] == [1] for g in generated)
        assert [sum_in_order(v) for v in stats.token_log_probs] == stats.log_probs
        # in groups of 5, and a few pairs alone: each group's longest source differs from the call's
        forced = core.score(model, sources, generated, slots=5, widths=stats.widths)
        alone = [core.score(model, [sources[k]], [generated[k]], widths=stats.widths)[0] for k in (0, 17, 39)]
        # a variant (one token changed midway) scores the same with the decode's values of the
        # tokens before the change as given (their logits not computed again)
        rows = [k for k, g in enumerate(generated) if len(g) >= 3]
        variants = [generated[k][:len(generated[k]) // 2] + [7] + generated[k][len(generated[k]) // 2 + 1:]
                    for k in rows]
        given = [stats.token_log_probs[k][:len(generated[k]) // 2] for k in rows]
        with_given = core.score(model, [sources[k] for k in rows], variants, slots=5, widths=stats.widths, given=given)
        computed = core.score(model, [sources[k] for k in rows], variants, slots=5, widths=stats.widths)
        if exact:
            assert stats.log_probs == forced and alone == [forced[k] for k in (0, 17, 39)]
            assert with_given == computed
        else:
            assert stats.log_probs == pytest.approx(forced, rel=rel)
            assert alone == pytest.approx([forced[k] for k in (0, 17, 39)], rel=rel)
            assert with_given == pytest.approx(computed, rel=rel)
    assert core.generate(model, sources, 8, max_new_tokens=30)[1].log_probs is None  # only when asked


def test_exact_windows_is_checked_on_the_host_not_assumed(monkeypatch):
    """Bit for bit only in bf16, on a CPU whose bf16 matmuls are oneDNN's (issue 76: on an AVX2
    CPU ATen's fallback gemm sums a window's products in another order than a step's loop)."""
    bf16, fp32 = random_t5(5, vocab=60, dtype=torch.bfloat16), random_t5(5, vocab=60, dtype=torch.float32)
    for host in (True, False):
        monkeypatch.setattr(decoder, "onednn_bf16", lambda host=host: host)
        assert decoder.exact_windows(bf16) is host and decoder.exact_windows(fp32) is False


def sum_in_order(values):
    total = 0.0
    for v in values:
        total += v
    return total


def test_the_t5_scorer_reads_known_scores_instead_of_a_forced_pass(tokenizer, monkeypatch):
    """With ``known`` (the decode's scores), those pairs are not scored again and the rest are
    forced at its widths; a prefix goes before every source, as the T5 read it."""
    model = random_t5(6, vocab=len(tokenizer))
    forced = []
    real = core.score

    def spy(model, sources, targets, slots, widths, given=None, decoders=None, states=None):
        forced.extend(zip(sources, targets, [widths] * len(targets)))
        return real(model, sources, targets, slots, widths, given, decoders, states)

    monkeypatch.setattr(core, "score", spy)
    eos = tokenizer.eos_token_id
    ids = lambda text: tuple(encode(tokenizer, [text])[0].ids + [eos])  # noqa: E731
    key = lambda s, t: (ids(s), ids(t))  # noqa: E731
    known = Known({key("fix: " + SOURCE, OUTPUT): -1.5}, widths=(40, 70))
    values = t5_scorer(model, tokenizer, known=known, prefix="fix: ")([SOURCE, SOURCE], [OUTPUT, NO_THE])
    # float32: the decode's widths would move only the last bits: the pair's own
    assert values[0] == -1.5 and forced == [(*key("fix: " + SOURCE, NO_THE), (0, 0))]
    assert values[1] == real(model, [forced[0][0]], [forced[0][1]])[0]
    # where a window gives the decode's numbers bit for bit, at the decode's widths
    monkeypatch.setattr(rescoring, "exact_windows", lambda model: True)
    forced.clear()
    values = t5_scorer(model, tokenizer, known=known, prefix="fix: ")([SOURCE, SOURCE], [OUTPUT, NO_THE])
    assert forced == [(*key("fix: " + SOURCE, NO_THE), (40, 70))]
    assert values[1] == real(model, [forced[0][0]], [forced[0][1]], widths=(40, 70))[0]


def test_an_overfitted_t5_keeps_its_right_edits_and_undoes_a_wrong_one(tokenizer, overfitted_t5):
    model, sources, targets = overfitted_t5
    score = t5_scorer(model, tokenizer, batch_size=5)
    changed = [(s, t) for s, t in zip(sources, targets) if s != t]
    assert len(changed) >= 12
    assert rescored([s for s, _ in changed], [t for _, t in changed], score) == [t for _, t in changed]
    # the target with a word the training pairs never had, away from the right edits
    wrong = [t.replace(" ", " very ", 1) for _, t in changed]
    apart = [k for k, (s, _) in enumerate(changed) if len(diff(s, wrong[k])) == len(diff(s, changed[k][1])) + 1]
    assert len(apart) >= 4
    assert rescored([changed[k][0] for k in apart], [wrong[k] for k in apart], score) == [changed[k][1] for k in apart]


def test_the_bound_of_stated_values():
    """log(1 - P(the output's token where they part)) less the output's log P from there on; None
    where the decode did not write the output."""
    import math

    known = Known(tokens={(3, 1): [((5, 6, 1), [-0.1, -0.2, -0.05])]})
    assert known.bound((3, 1), (5, 6, 1), (5, 7, 8, 1)) == pytest.approx(math.log(1 - math.exp(-0.2)) + 0.25)
    assert known.bound((3, 1), (5, 6, 1), (9, 1)) == pytest.approx(math.log(1 - math.exp(-0.1)) + 0.35)
    assert known.bound((3, 1), (5, 6, 2), (5, 7, 1)) is None and known.bound((4, 1), (5, 6, 1), (5, 7, 1)) is None
    assert Known(tokens={(3, 1): [((5, 1), [0.0, -0.5])]}).bound((3, 1), (5, 1), (6, 1)) == -math.inf


def test_the_bound_takes_the_decodes_value_where_the_variant_parts_on_a_source_token():
    """Where the variant's token at the parting is one of the source's, the decode's log P of it
    there replaces log(1 - P(the output's token)); another token keeps the looser bound."""
    import math

    source, output = (7, 3, 1), (5, 6, 1)  # columns: the source's tokens 7, 3, 1 in order
    others = torch.tensor([[-4.0, -5.0, -9.0], [-2.5, -6.0, -7.0], [-8.0, -8.0, -0.01]])
    known = Known(tokens={source: [(output, [-0.1, -0.2, -0.05])]}, sources={(source, output): others})
    assert known.bound(source, output, (5, 7, 1)) == pytest.approx(-2.5 + 0.25)  # parts at 1 on token 7
    assert known.bound(source, output, (3, 1)) == pytest.approx(-5.0 + 0.35)  # parts at 0 on token 3
    assert known.bound(source, output, (5, 9, 1)) == pytest.approx(math.log(1 - math.exp(-0.2)) + 0.25)


def test_the_bound_holds_and_rescoring_with_it_keeps_what_forcing_every_variant_keeps(tokenizer, overfitted_t5):
    """``Known.bound`` (from the decode's values of the output alone) is above every variant's
    forced log P less the output's; rescoring that keeps the edits it clears unscored keeps the
    same edits as rescoring that forces every variant, and forces fewer of them."""
    model, sources, targets = overfitted_t5
    eos = tokenizer.eos_token_id
    ids = lambda text: encode(tokenizer, [text])[0].ids + [eos]  # noqa: E731
    # outputs with wrong words among the right edits: some variants win, some lose
    changed = [(s, t) for s, t in zip(sources, targets) if s != t]
    inputs = [s for s, _ in changed] + [s.replace(" ", " very ", 1) for s, _ in changed]
    outputs, stats = core.generate(model, [ids(s) for s in inputs], 8, scores=True, max_new_tokens=64)
    known = Known()
    known.record([ids(s)[:-1] for s in inputs], outputs, stats, eos)
    texts = [tokenizer.decode(o, skip_special_tokens=True) for o in outputs]
    score = t5_scorer(model, tokenizer, known=known)
    # the same values without the source tokens' log P: the looser bound everywhere
    loose = t5_scorer(model, tokenizer, known=Known(known.log_probs, known.widths, known.tokens))
    checked, tighter = 0, 0
    for s, out in zip(inputs, texts):
        for variant in (v for v in [apply(s, diff(s, out)[:k] + diff(s, out)[k + 1:]) for k in range(len(diff(s, out)))]):
            b = score.bound(s, out, variant)
            if b is not None:
                full, var = core.score(model, [ids(s)] * 2, [ids(out), ids(variant)], widths=known.widths)
                assert var - full <= b + 1e-4 and b <= loose.bound(s, out, variant) + 1e-6
                checked += 1
                tighter += b < loose.bound(s, out, variant) - 1e-3
    assert checked >= 20 and tighter >= checked // 2
    forced = []
    real = core.score

    def spy(*args, **kwargs):
        forced.append(len(args[2]))
        return real(*args, **kwargs)

    core.score = spy
    try:
        with_bound = rescored(inputs, texts, score)
        n_with, forced[:] = sum(forced), []
        without = rescored(inputs, texts, lambda a, b: score(a, b))  # a plain function: no bound
        n_without = sum(forced)
    finally:
        core.score = real
    assert with_bound == without and with_bound != texts  # some edits undone, the same ones
    assert n_with < n_without


def test_a_decode_keeps_the_encoder_states_of_what_it_changed_and_the_forced_passes_read_them(
        tokenizer, overfitted_t5, monkeypatch):
    """``generate(scores=True)`` keeps the encoder states of each sentence whose output changed it
    (an unchanged one has no variants), no more than ``KEPT_STATES`` bytes; ``score`` given them
    encodes nothing and scores as a pass that encodes the source itself."""
    model, sources, _ = overfitted_t5
    eos = tokenizer.eos_token_id
    rows = [encode(tokenizer, [s])[0].ids + [eos] for s in sources]
    outputs, stats = core.generate(model, rows, 8, scores=True, max_new_tokens=64)
    changed = [k for k, (row, out) in enumerate(zip(rows, outputs)) if out != row[:-1]]
    assert 0 < len(changed) < len(rows)
    assert [k for k, states in enumerate(stats.states) if states is not None] == changed
    for k in changed:
        alone = core.t5.encode(model, torch.tensor([rows[k]]), torch.ones(1, len(rows[k]), dtype=torch.long))[0]
        assert stats.states[k].shape == alone.shape and torch.allclose(stats.states[k], alone, atol=1e-5)
    calls = []
    hook = model.encoder.register_forward_hook(lambda *args: calls.append(1))
    try:
        pairs = [rows[k] for k in changed], [outputs[k] + [eos] for k in changed]
        read = core.score(model, *pairs, states=[stats.states[k] for k in changed])
        assert not calls
        encoded = core.score(model, *pairs)
        assert calls and read == pytest.approx(encoded, abs=1e-4)
    finally:
        hook.remove()
    size = stats.states[changed[0]].numel() * 4
    monkeypatch.setattr(core, "KEPT_STATES", 2 * size)  # room for about two
    kept = core.generate(model, rows, 8, scores=True, max_new_tokens=64)[1].states
    assert 1 <= sum(s is not None for s in kept) <= 2
