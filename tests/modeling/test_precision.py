"""The default compute type and ``--dtype`` names (``editspec.modeling.precision``)."""

from __future__ import annotations

import pytest
import torch

from editspec.errors import EditspecError
from editspec.modeling import precision


def test_the_default_is_float32_where_the_type_is_not_the_machine_s_to_choose(monkeypatch):
    """No bf16 units (bf16 emulated), int8 linears, CUDA, a shape unknown before the load: float32."""
    cpu, shape = torch.device("cpu"), {"d_model": 256}
    monkeypatch.setattr(precision, "bf16_units", lambda: False)
    assert not precision.chooses(cpu, None, shape) and precision.default_dtype(cpu) == torch.float32
    monkeypatch.setattr(precision, "bf16_units", lambda: True)
    assert not precision.chooses(cpu, "int8", shape) and not precision.chooses(cpu, None, None)
    assert not precision.chooses(torch.device("cuda"), None, shape) and precision.chooses(cpu, None, shape)
    assert precision.default_dtype(cpu, quantize="int8") == torch.float32
    assert precision.default_dtype(torch.device("cuda")) == torch.float32
    assert precision.resolve_dtype(None, cpu) == torch.float32
    assert precision.resolve_dtype("float32", cpu) == torch.float32  # asked for: never overridden
    assert precision.resolve_dtype("bf16") == torch.bfloat16
    assert precision.dtype_name(precision.resolve_dtype(torch.bfloat16)) == "bfloat16"


@pytest.fixture
def bundle_dir(tmp_path, monkeypatch, tokenizer):
    from tests.helpers import tiny_bundle

    monkeypatch.setenv("EDITSPEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(precision, "bf16_units", lambda: True)
    return tiny_bundle(tmp_path / "models", tokenizer) / "bundle"


@pytest.mark.parametrize("bf16, fp32, kept", [(1.0, 1.5, torch.bfloat16), (1.0, 1.05, torch.float32),
                                              (1.5, 1.0, torch.float32)])
def test_a_cpu_with_bf16_units_keeps_the_type_a_whole_correction_took_less_time_in(bundle_dir, monkeypatch,
                                                                                   bf16, fp32, kept):
    """Measured once per machine (each type's models loaded and a correction made), kept for the
    next process; bf16 only by ``MARGIN``; a ``--dtype`` asked for is never measured nor replaced."""
    from editspec import corrector
    from editspec.corrector import Corrector

    timed = []

    def timed_correction(load, make):
        bundle = load()
        make(bundle)
        timed.append(next(bundle.t5.parameters()).dtype)
        return {torch.bfloat16: bf16, torch.float32: fp32}[timed[-1]]

    monkeypatch.setattr(corrector, "timed_correction", timed_correction)
    loaded = Corrector.from_pretrained(bundle_dir, mode="speculative")
    assert sorted(map(str, timed)) == ["torch.bfloat16", "torch.float32"]
    for model in (loaded.bundle.t5, loaded.bundle.edit5):
        assert next(model.parameters()).dtype == kept
    again = Corrector.from_pretrained(bundle_dir, mode="speculative")  # the next process reads it
    assert next(again.bundle.t5.parameters()).dtype == kept and len(timed) == 2
    asked = Corrector.from_pretrained(bundle_dir, mode="speculative", dtype="float64")
    assert next(asked.bundle.t5.parameters()).dtype == torch.float64 and len(timed) == 2


def test_the_measurement_is_a_real_correction_in_each_type(bundle_dir):
    from editspec.corrector import Corrector
    from editspec.decoding import measured

    Corrector.from_pretrained(bundle_dir, mode="speculative")
    shape = precision.shape_of(str(bundle_dir / "t5"))
    kept = measured.load("dtype", precision.choice_key(torch.device("cpu"), shape))
    assert kept["dtype"] in ("float32", "bfloat16") and set(kept["seconds"]) == {"float32", "bfloat16"}
    assert all(s > 0 for s in kept["seconds"].values())


def test_an_unknown_dtype_is_a_one_line_error():
    with pytest.raises(EditspecError, match="unknown dtype 'int8'; choose one of float32"):
        precision.resolve_dtype("int8")
