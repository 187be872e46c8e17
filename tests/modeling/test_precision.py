"""The default compute type and ``--dtype`` names (``editspec.modeling.precision``)."""

from __future__ import annotations

import pytest
import torch

from editspec.errors import EditspecError
from editspec.modeling import precision


def test_the_default_is_float32_on_every_device():
    """bf16 units or not: a whole process is faster in fp32 where measured (issue 71)."""
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
