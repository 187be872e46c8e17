"""The models' compute type: bfloat16 where the CPU has bf16 units, else float32.

``--dtype`` names one (``DTYPES``); without it, ``default_dtype`` chooses by the machine:

    CPU with avx512_bf16 or amx_bf16     bfloat16   oneDNN runs bf16 dot products natively: a verifier
                                                    pass of the shipped T5 costs 1.3-1.8x less
                                                    (reports/speed.md, "bf16 on these CPUs")
    other CPUs (AVX2 only, ARM, macOS)   float32    bf16 is emulated there, and slower than fp32
    CUDA                                 float32    bf16's speculative == greedy is tested on CPU only
    --quantize int8                      float32    the int8 linears take float activations

Every command that loads models through ``Corrector`` follows it (correct, eval, serve, profile,
the ``eval/tune_*`` scripts, ``training.lease distill``); training does not. ``float64`` is
accepted too (tests and profiles), never a default.

torch says whether oneDNN *can* run bf16 (``torch.ops.mkldnn._is_mkldnn_bf16_supported`` is true
on any AVX-512 CPU, emulated or not), not whether the CPU has the units, so the flags come from
``/proc/cpuinfo`` (Linux; elsewhere float32). Speculative output stays the T5's greedy output in
the type chosen (``editspec.decoding.decoder``); bf16 scored within noise of float32, or above it
(JFLEG), on all four evaluation sets (the model card, "bf16 by default").
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from editspec.errors import EditspecError

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
          "float64": torch.float64}
BF16_FLAGS = {"avx512_bf16", "amx_bf16"}  # /proc/cpuinfo's names of the native bf16 units
CPUINFO = Path("/proc/cpuinfo")


@functools.cache
def cpu_has_bf16(cpuinfo: Path = CPUINFO) -> bool:
    """Whether the CPU computes bf16 dot products natively (its ``flags`` name a bf16 unit)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:  # not Linux
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return bool(BF16_FLAGS & set(flags))


def default_dtype(device: torch.device, quantize: str | None = None) -> torch.dtype:
    """The compute type when none is asked for (see the module docstring)."""
    if device.type == "cpu" and quantize is None and cpu_has_bf16():
        return torch.bfloat16
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
