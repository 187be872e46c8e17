"""The default compute type, the CPU's bf16 units read from its flags (``editspec.modeling.precision``)."""

from __future__ import annotations

import pytest
import torch

from editspec.errors import EditspecError
from editspec.modeling import precision

AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n"
AVX512_NO_BF16 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512_vnni\n"
AVX512_BF16 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512_vnni avx512_bf16\n"
AMX = "processor\t: 0\nflags\t\t: fpu avx2 amx_tile amx_bf16 amx_int8\n"


@pytest.mark.parametrize("text, native", [(AVX2, False), (AVX512_NO_BF16, False), (AVX512_BF16, True),
                                          (AMX, True), ("", False)])
def test_bf16_units_are_read_from_the_cpu_flags(tmp_path, text, native):
    info = tmp_path / "cpuinfo"
    info.write_text(text)
    assert precision.cpu_has_bf16(info) is native


def test_no_cpuinfo_means_no_bf16_units(tmp_path):
    assert precision.cpu_has_bf16(tmp_path / "missing") is False


@pytest.mark.parametrize("native", [False, True])
def test_the_default_is_float32_on_every_cpu(monkeypatch, native):
    """bf16 units or not: a whole process is faster in fp32 where measured (issue 71)."""
    monkeypatch.setattr(precision, "cpu_has_bf16", lambda: native)
    cpu = torch.device("cpu")
    assert precision.default_dtype(cpu) == torch.float32
    assert precision.default_dtype(cpu, quantize="int8") == torch.float32  # int8 linears take fp32
    assert precision.default_dtype(torch.device("cuda")) == torch.float32
    assert precision.resolve_dtype(None, cpu) == precision.default_dtype(cpu)
    assert precision.resolve_dtype("float32", cpu) == torch.float32  # asked for: never overridden
    assert precision.resolve_dtype("bf16") == torch.bfloat16
    assert precision.dtype_name(precision.resolve_dtype(torch.bfloat16)) == "bfloat16"


def test_an_unknown_dtype_is_a_one_line_error():
    with pytest.raises(EditspecError, match="unknown dtype 'int8'; choose one of float32"):
        precision.resolve_dtype("int8")
