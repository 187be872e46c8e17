"""The T5 training step's forward (training.step): the same loss and gradients as transformers'
forward, no host read inside it, and compiled equal to eager."""

from __future__ import annotations

import pytest
import torch
from transformers import T5Config, T5ForConditionalGeneration

from editspec.modeling.tensors import IGNORE
from tests.helpers import random_batch
from training.step import T5Loss, chunked_cross_entropy, device_mask, host_reads


def tiny(tied: bool = True, seed: int = 0, layers: int = 2) -> T5ForConditionalGeneration:
    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=50, d_model=32, d_kv=8, d_ff=64, num_layers=layers, num_decoder_layers=1, num_heads=4,
                   dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                   feed_forward_proj="gated-gelu", tie_word_embeddings=tied)
    return T5ForConditionalGeneration(cfg).train()


def batch(seed: int = 0, size: int = 6):
    gen = torch.Generator().manual_seed(seed)
    ids, mask = random_batch(gen, size, 50, min_len=3, max_len=11)
    labels, lmask = random_batch(gen, size, 50, min_len=2, max_len=9)
    labels = labels.masked_fill(lmask == 0, IGNORE)
    edit_mask = torch.rand(labels.shape, generator=gen) < 0.3
    return ids, mask, labels, edit_mask


@pytest.mark.parametrize("tied", [True, False])
def test_loss_and_gradients_equal_transformers(tied):
    model = tiny(tied)
    ids, mask, labels, _ = batch()
    ref = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    ref.backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    ours = T5Loss(model, chunk=7)(ids, mask, labels)  # chunks that split rows: the sum must not care
    ours.backward()
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    for n, p in model.named_parameters():
        if n in ref_grads:
            torch.testing.assert_close(p.grad, ref_grads[n], rtol=1e-4, atol=1e-6, msg=n)


def test_edit_weight_weighs_the_edits_labels():
    model = tiny()
    ids, mask, labels, edit_mask = batch(1)
    logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=model._shift_right(labels)).logits
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE, reduction="none")
    w = (labels != IGNORE).float() * (1 + 2 * edit_mask.float())
    ref = (ce * w).sum() / w.sum()
    ours = T5Loss(model, edit_weight=3.0)(ids, mask, labels, edit_mask)
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(ours, T5Loss(model)(ids, mask, labels))  # the weight does something


def test_the_device_mask_is_the_mask_transformers_builds():
    """The 4D mask changes nothing but who builds it: encoder states equal those of the 2D mask."""
    model = tiny().eval()
    ids, mask, _, _ = batch(2)
    plain = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    ready = model.encoder(input_ids=ids, attention_mask=device_mask(mask)).last_hidden_state
    keep = mask.bool()
    torch.testing.assert_close(ready[keep], plain[keep])


def test_no_host_read_inside_the_step():
    model = tiny()
    ids, mask, labels, edit_mask = batch(3)
    with host_reads():  # the forward and the backward
        T5Loss(model, edit_weight=2.0)(ids, mask, labels, edit_mask).backward()
    with pytest.raises(RuntimeError, match="host read"):  # transformers' own path asks padding_mask.all()
        with host_reads():
            model(input_ids=ids, attention_mask=mask, labels=labels)


def test_chunked_cross_entropy_ignores_padding_and_chunks():
    gen = torch.Generator().manual_seed(4)
    hidden, weight = torch.randn(23, 8, generator=gen), torch.randn(11, 8, generator=gen)
    labels = torch.randint(0, 11, (23,), generator=gen)
    labels[[0, 5, 22]] = IGNORE
    ref = torch.nn.functional.cross_entropy(hidden @ weight.T, labels, ignore_index=IGNORE)
    for chunk in (1, 5, 23, 100):
        torch.testing.assert_close(chunked_cross_entropy(hidden, weight, labels, chunk=chunk), ref)


def test_checkpoints_hold_the_t5s_own_keys():
    """A run resumes from checkpoints written before the loop trained through T5Loss, and back."""
    model, other = tiny(seed=1), tiny(seed=2)
    wrapped = T5Loss(other)
    assert wrapped.state_dict().keys() == model.state_dict().keys()
    wrapped.load_state_dict(model.state_dict())
    ids, mask, labels, _ = batch(6)
    torch.testing.assert_close(wrapped(ids, mask, labels), T5Loss(model)(ids, mask, labels))


def test_compiled_step_equals_eager_in_bf16():
    """The step compiled, forward and backward under bf16 autocast: loss and gradients within bf16's
    tolerance of eager's. Static shapes and one encoder layer keep the compilation to seconds (the
    Trainer compiles with dynamic shapes, which the CPU compiles for minutes; on the GPU the step
    bench times it and a failing first compiled step falls back to eager, test_training)."""
    model = tiny(layers=1)
    loss = T5Loss(model)
    ids, mask, labels, _ = batch(5)
    results = []
    for step in (loss, torch.compile(loss)):
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            value = step(ids, mask, labels)
        value.backward()
        results.append((value.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (eager, eager_grads), (ours, our_grads) = results
    torch.testing.assert_close(ours, eager, rtol=2e-2, atol=2e-2)
    for n, g in eager_grads.items():
        torch.testing.assert_close(our_grads[n], g, rtol=5e-2, atol=5e-3, msg=n)


def test_the_compiled_loss_takes_every_batch_shape_with_one_graph():
    """Under torch.compile(dynamic=True) the loss compiles once for every batch shape: a loop over the
    N target tokens specialised the graph on N, so each batch of the third lease's synthetic stage
    recompiled (~110 s a step on the H200). After the first call a recompile raises here."""
    compiled = torch.compile(chunked_cross_entropy, dynamic=True)
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(50, 8, generator=gen)
    with torch._inductor.config.patch(fx_graph_cache=False):  # a cached graph brings its own guards
        for i, n in enumerate((40, 24, 57, 33)):
            hidden, labels = torch.randn(n, 8, generator=gen), torch.randint(0, 50, (n,), generator=gen)
            labels[::5] = IGNORE
            if i == 1:
                torch.compiler.set_stance("fail_on_recompile")
            try:
                got = compiled(hidden, weight, labels, None, 16)
            finally:
                torch.compiler.set_stance("default")
            torch.testing.assert_close(got, chunked_cross_entropy(hidden, weight, labels, None, 16))
