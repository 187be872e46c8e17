"""The models' compute type: float32 unless ``--dtype`` asks for another (``DTYPES``).

``default_dtype`` is float32 on every device:

    CPU with avx512_bf16 (no AMX)    a whole ``editspec correct`` process of 500 W&I dev lines took
                                     7.26 s in fp32 against 9.08 s in bf16 (1.25x, 5 pairs, Intel
                                     Xeon, 2 threads; issue 71, reports/speed.md). bf16 verify
                                     passes alone measured faster there (1.3-1.8x, "bf16 on these
                                     CPUs"); the process around them is not: T5's layer norms and
                                     the scores cast back and forth, and the encoder, rescoring and
                                     the EdiT5 drafter gain nothing
    other CPUs (AVX2 only, ARM)      bf16 is emulated there, and slower than fp32
    CUDA                             bf16's speculative == greedy is tested on CPU only
    --quantize int8                  the int8 linears take float activations

fp32 also gives one output on every CPU (bf16 rounds by the kernels a CPU has). ``--dtype
bfloat16`` stays for CPUs with AMX tiles (``amx_bf16``; none measured here): time both there.
Every command that loads models through ``Corrector`` follows it (correct, eval, serve, profile,
the ``eval/tune_*`` scripts, ``training.lease distill``); training does not. ``float64`` is
accepted too (tests and profiles). Speculative output stays the T5's greedy output in the type
chosen (``editspec.decoding.decoder``); bf16 scored within noise of float32 on all four evaluation
sets (the model card).
"""

from __future__ import annotations

import torch

from editspec.errors import EditspecError

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
          "float64": torch.float64}


def default_dtype(device: torch.device, quantize: str | None = None) -> torch.dtype:
    """The compute type when none is asked for: float32 (see the module docstring)."""
    return torch.float32


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device | None = None,
                  quantize: str | None = None) -> torch.dtype:
    """The torch dtype of a ``--dtype`` name (or a dtype); for None, ``default_dtype`` on
    ``device`` (default: the CPU). A one-line error for an unknown name."""
    if dtype is None:
        return default_dtype(device or torch.device("cpu"), quantize)
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise EditspecError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[dtype]


def dtype_name(dtype: torch.dtype) -> str:
    """"bfloat16" for torch.bfloat16 (reports name the type a run computed in)."""
    return str(dtype).removeprefix("torch.")
