"""Rescoring (editspec/rescoring.py): the algorithm with stated scores, each model's log-likelihood
against its own decoding, and an overfitted T5 keeping its right edits and undoing a wrong one
(the EdiT5's counterpart is in test_modeling_edit5.py, beside its overfitted fixture)."""

import pytest
import torch

from editspec.decoding import core
from editspec.modeling import t5
from editspec.text.diff import diff
from editspec.data.features import collate_t5, label_log_probs
from editspec.decoding.rescoring import rescore, scorer
from tests.helpers import random_batch, random_t5

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

    assert rescore([SOURCE, "Yes."], [OUTPUT, "Yes."], score) == [NO_THE, "Yes."]
    assert seen == [(SOURCE, OUTPUT), (SOURCE, NO_THE), (SOURCE, NO_TO)]  # unchanged units cost nothing


def test_ties_keep_and_an_unscored_unit_stays():
    assert rescore([SOURCE], [OUTPUT], lambda s, t: [0.0] * len(t)) == [OUTPUT]  # s >= s_k keeps
    assert rescore([SOURCE], [OUTPUT], lambda s, t: [None] + [1.0] * (len(t) - 1)) == [OUTPUT]
    assert rescore([SOURCE], [OUTPUT], lambda s, t: [-1.0] + [0.0] * (len(t) - 1)) == [SOURCE]  # both go
    assert rescore([], [], lambda s, t: 1 / 0) == []


def test_variants_are_scored_a_group_at_a_time():
    """A long text's variants are scored in groups (memory bounded, issue 45), with the result of
    one call: each unit's variants stay in one call, whatever the group size."""
    scores = {OUTPUT: -10.0, NO_THE: -8.0, NO_TO: -12.0, SOURCE: -9.0, "Yes!": -1.0, "Yes.": -2.0}
    calls = []

    def score(sources, targets):
        calls.append(len(targets))
        return [scores[t] for t in targets]

    sources, outputs = [SOURCE, "Yes.", SOURCE, "Yes."] * 5, [OUTPUT, "Yes!", NO_TO, "Yes."] * 5
    whole = rescore(sources, outputs, score)
    assert calls == [35] and whole == [NO_THE, "Yes!", SOURCE, "Yes."] * 5
    calls.clear()
    assert rescore(sources, outputs, score, group=4) == whole
    assert max(calls) <= 4 + 2 and sum(calls) == 35 and len(calls) > 5


def test_t5_log_likelihood_is_the_sum_of_its_greedy_step_log_probs():
    model = random_t5(3)
    ids, mask = random_batch(torch.Generator().manual_seed(3), 6, model.config.vocab_size)
    outputs = core.greedy(model, ids, mask, max_new_tokens=10)
    expected = []
    for row, out in enumerate(outputs):  # one token at a time, each from a pass over its prefix
        labels = out + [1] if len(out) < 10 else out  # an output cut by max_new_tokens has no EOS
        total, prefix = 0.0, [0]
        for token in labels:
            with torch.no_grad():
                logits = model(input_ids=ids[row:row + 1], attention_mask=mask[row:row + 1],
                               decoder_input_ids=torch.tensor([prefix])).logits
            total += logits[0, -1].log_softmax(-1)[token].item()
            prefix.append(token)
        expected.append(total)
    labels = [o + [1] if len(o) < 10 else o for o in outputs]
    padded = collate_t5([{"input_ids": [], "labels": label} for label in labels])["labels"]
    assert t5.log_likelihood(model, ids, mask, padded).tolist() == pytest.approx(expected, abs=1e-9)
    # with rows, the encoder reads each input once and row i reads input rows[i]
    rows = torch.tensor([2, 0, 2, 5])
    assert t5.log_likelihood(model, ids, mask, padded[rows], rows=rows).tolist() == \
        pytest.approx([expected[i] for i in rows.tolist()], abs=1e-9)


def test_an_overfitted_t5_keeps_its_right_edits_and_undoes_a_wrong_one(tokenizer, overfitted_t5):
    model, sources, targets = overfitted_t5
    score = scorer(model, tokenizer, batch_size=5)
    changed = [(s, t) for s, t in zip(sources, targets) if s != t]
    assert len(changed) >= 12
    assert rescore([s for s, _ in changed], [t for _, t in changed], score) == [t for _, t in changed]
    # the target with a word the training pairs never had, away from the right edits
    wrong = [t.replace(" ", " very ", 1) for _, t in changed]
    apart = [k for k, (s, _) in enumerate(changed) if len(diff(s, wrong[k])) == len(diff(s, changed[k][1])) + 1]
    assert len(apart) >= 4
    assert rescore([changed[k][0] for k in apart], [wrong[k] for k in apart], score) == [changed[k][1] for k in apart]


def test_t5_log_likelihood_is_bit_for_bit_the_labels_pass():
    """The decoder input given directly (no loss computed) gives the very logits that passing
    ``labels`` to transformers gives: the same scores, bit for bit (float32, padded labels)."""
    model = random_t5(4, dtype=torch.float32)
    ids, mask = random_batch(torch.Generator().manual_seed(4), 5, model.config.vocab_size)
    outputs = core.greedy(model, ids, mask, max_new_tokens=12)
    padded = collate_t5([{"input_ids": [], "labels": o + [1]} for o in outputs])["labels"]
    with torch.inference_mode():
        hidden = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        logits = model(encoder_outputs=(hidden,), attention_mask=mask, labels=padded).logits
        expected = label_log_probs(logits, padded)
        assert torch.equal(t5.log_likelihood(model, ids, mask, padded), expected)
