"""int8 linears (editspec/modeling/quantization.py): an overfitted T5 keeps its corrections in int8,
greedy and speculative; bad requests fail with one line; the Corrector and the CLI pass it on."""

import copy

import pytest
import torch
from torch.ao.nn.quantized.dynamic import Linear as DynamicQuantizedLinear

from editspec.corrector import Corrector
from editspec.decoding import core, drafters
from editspec.errors import EditspecError
from editspec.modeling.quantization import quantize
from editspec.tokenization.tokens import encode
from tests.helpers import tiny_bundle


def test_an_overfitted_t5_keeps_its_corrections_in_int8(tokenizer, overfitted_t5):
    model, sources, targets = overfitted_t5
    q = quantize(copy.deepcopy(model), "int8")
    assert not any(isinstance(m, torch.nn.Linear) for m in q.modules())
    assert isinstance(q.lm_head, DynamicQuantizedLinear) and q.shared.weight.dtype == torch.float32
    ids = [e.ids + [tokenizer.eos_token_id] for e in encode(tokenizer, list(sources))]
    wanted = [e.ids for e in encode(tokenizer, list(targets))]
    greedy, _ = core.generate(q, ids, slots=7)
    assert greedy == wanted
    # the margins of an overfitted model survive int8's per-pass activation scales: the whole
    # source as one draft gives the greedy output too
    drafted, stats = core.generate(q, ids, slots=7, drafter=drafters.Copy(), window=48)
    assert drafted == wanted and stats.passes < max(map(len, wanted))


def test_bad_requests_are_one_line_errors(overfitted_t5):
    model = overfitted_t5[0]
    with pytest.raises(EditspecError, match="unknown quantization 'int4'"):
        quantize(copy.deepcopy(model), "int4")
    with pytest.raises(EditspecError, match="drop --dtype bfloat16"):
        quantize(copy.deepcopy(model).to(torch.bfloat16), "int8")


def test_corrector_quantizes_both_models(tmp_path, tokenizer):
    root = tiny_bundle(tmp_path, tokenizer)
    fp32 = Corrector.from_pretrained(root / "bundle", mode="speculative")
    int8 = Corrector.from_pretrained(root / "bundle", mode="speculative", quantize="int8")
    for m in (int8.bundle.t5, int8.bundle.edit5):
        assert any(isinstance(x, DynamicQuantizedLinear) for x in m.modules())
        assert not any(isinstance(x, torch.nn.Linear) for x in m.modules())
    assert not any(isinstance(x, DynamicQuantizedLinear) for x in fp32.bundle.t5.modules())
    texts = ["He go to school .", "", "A b c d e f g ."]
    assert len(int8.correct(texts)) == 3
