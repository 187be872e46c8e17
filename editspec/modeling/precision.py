"""The models' compute type: float32 (``default_dtype``) unless ``--dtype`` asks for another
(``DTYPES``) or ``Corrector.from_pretrained`` finds this machine measured bfloat16 faster:

    CPU with bf16 units              the type a whole correction measured faster on this CPU, kept
    (avx512_bf16 or amx_bf16)        per machine (``from_pretrained`` measures it at the first load:
                                     ``chooses``, ``chosen``, ``keep``).
                                     Measured, not assumed: on an Intel Xeon with avx512_bf16 bf16
                                     verify passes alone were 1.3-1.8x faster, yet a whole
                                     ``editspec correct`` of 500 W&I dev lines took 9.08 s in bf16
                                     against 7.26 s in fp32 (1.25x, issue 71: oneDNN's first use of
                                     each bf16 shape, the casts around T5's layer norms, an encoder
                                     and drafter that gain nothing). So the measurement is a whole
                                     correction from the models' load, the first use of each shape
                                     in it, and bf16 must win by ``MARGIN``
    other CPUs (AVX2 only, ARM)      float32: bf16 is emulated there, and slower
    CUDA                             float32: bf16's speculative == greedy is tested on CPU only
    --quantize int8                  float32: the int8 linears take float activations

fp32 gives one output on every CPU (bf16 rounds by the kernels a CPU has): a machine that chose
bf16 writes its own, within noise of fp32's (the model card: "bf16 by default"). Every command that
loads models through ``Corrector`` follows it (correct, eval, serve, the ``eval/tune_*`` scripts,
``training.lease distill``); training and ``editspec profile`` (its ``--dtype``, fp32 by default)
do not. ``float64`` is accepted too (tests and profiles). Speculative output stays the T5's greedy
output in the type chosen (``editspec.decoding.decoder``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from editspec.decoding import measured
from editspec.errors import EditspecError

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
          "float64": torch.float64}


MARGIN = 1.1  # bf16 is kept only where a whole correction took fp32 this many times its time


def bf16_units() -> bool:
    """Whether this CPU computes bf16 in hardware (``avx512_bf16`` or ``amx_bf16`` among its flags);
    ``EDITSPEC_BF16_UNITS=0`` says no (float32 without measuring: the tests' outputs are fp32's)."""
    if os.environ.get("EDITSPEC_BF16_UNITS") == "0":
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def choice_key(device: torch.device, shape: dict) -> dict:
    """What the faster type depends on: the machine, torch and its threads, the models' shape."""
    return {"machine": measured.device_name(device), "torch": torch.__version__,
            "threads": torch.get_num_threads(), **shape}


def chooses(device: torch.device, quantize: str | None, shape: dict | None) -> bool:
    """Whether the type is this machine's to choose: a CPU with bf16 units, unquantized models of a
    known shape (a hub id's is not read before the load)."""
    return device.type == "cpu" and quantize is None and shape is not None and bf16_units()


def chosen(key: dict) -> torch.dtype | None:
    """The type kept for ``choice_key``'s machine and models (None: not measured yet)."""
    kept = measured.load("dtype", key)
    name = kept.get("dtype") if kept else None
    return DTYPES[name] if name in ("float32", "bfloat16") else None


def keep(key: dict, seconds: dict[str, float]) -> torch.dtype:
    """The faster type by ``seconds`` (a whole correction in each, by name), kept under ``key``
    (``choice_key``, taken before measuring: the measurement's correctors may change the threads)
    for the next process: bfloat16 only where it took under 1/``MARGIN`` of float32's time."""
    dtype = torch.bfloat16 if seconds["bfloat16"] * MARGIN < seconds["float32"] else torch.float32
    measured.save("dtype", key, {"dtype": dtype_name(dtype), "seconds": seconds})
    return dtype


def shape_of(path: str | None) -> dict | None:
    """The shape (``measured.SHAPE``) of the checkpoint directory at ``path``, from its config.json
    (None: no such file, as for a hub id)."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (TypeError, OSError, ValueError):
        return None
    return {"model_type": config.get("model_type"), **{f: config.get(f) for f in measured.SHAPE}}


def default_dtype(device: torch.device, quantize: str | None = None) -> torch.dtype:
    """The compute type when none is asked for or chosen (see the module docstring): float32."""
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
