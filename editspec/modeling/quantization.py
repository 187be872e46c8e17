"""int8 weights on CPU (``--quantize int8``): every ``nn.Linear`` of a model becomes PyTorch's
dynamically quantized linear (fbgemm): weights stored int8 with one scale per output channel,
activations quantized to int8 on the fly, int32 accumulation, float output. Embeddings,
layer norms and attention stay float32. Example, one T5 feed-forward::

    DenseReluDense.wi_0  Linear(256 -> 1024, fp32)  ->  DynamicQuantizedLinear(256 -> 1024, qint8)

Why this kernel and what it costs (measured on this project's 2-core CPU, one thread, a 256 ->
1024 -> 256 feed-forward; /tmp scratch benchmark, 2026-11-25):

    tokens in a pass         1        8        64
    fp32 (MKL)            0.29 ms  0.68 ms  2.76 ms
    torch.ao dynamic      0.29 ms  0.46 ms  1.35 ms    <- used here
    torchao w8a8 (eager)  3.89 ms  11.8 ms  62.8 ms    per-token scales, no CPU kernel without compile
    torchao int8 weights  0.49 ms  1.17 ms  3.55 ms
    torch._int_mm         1.68 ms  12.9 ms  91.5 ms    (hand-written per-token scales)

Only fbgemm's dynamic linear is faster than fp32 here, and it picks ONE activation scale per call
from the whole input's range. So in int8 a token's logits depend on the other tokens of the same
pass: the rows packed beside it, and the draft tokens verified with it. Two promises of the float
types do not hold in int8, and the CLI says so: the output of a sentence can change with the
batch, and speculative output is T5's int8 greedy output only where the margins are large enough
(how often it differs is measured by ``editspec profile --quantize int8``'s ``identical_to_t5``).
Hand-writing a per-token int8 matmul was 6-30x slower than fp32 (last row), so no exact int8
exists on this CPU.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from editspec.config import QUANTIZATIONS
from editspec.errors import EditspecError


def quantize(model: nn.Module, scheme: str) -> nn.Module:
    """``model`` (float32, on the CPU) with its linears in ``scheme`` (see the module docstring), in place."""
    if scheme not in QUANTIZATIONS:
        raise EditspecError(f"unknown quantization {scheme!r}; choose one of {', '.join(QUANTIZATIONS)}")
    p = next(model.parameters())
    if p.device.type != "cpu":
        raise EditspecError(f"--quantize {scheme} runs on the CPU only (fbgemm), not on {p.device}; "
                            f"on a GPU use --dtype bfloat16")
    if p.dtype != torch.float32:
        raise EditspecError(f"--quantize {scheme} needs float32 activations; drop --dtype {str(p.dtype)[6:]}")
    with warnings.catch_warnings():  # torch 2.13 says torch.ao.quantization is deprecated (for torchao,
        warnings.simplefilter("ignore")  # whose int8 has no CPU kernel: see above); it still ships it
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic  # only when asked

        return quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)
