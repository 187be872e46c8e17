"""editspec/profiling/modes.py: the corrector's modes first, T5 leading; every mode's needs."""

import pytest

from editspec.config import MODES as CORRECTOR_MODES
from editspec.errors import EditspecError
from editspec.profiling.modes import BATCH_ONE, MODES, NEEDS, SPECULATIVE, check_modes


def test_modes_extend_the_correctors():
    assert MODES[0] == "t5" and set(CORRECTOR_MODES) == set(MODES[:len(CORRECTOR_MODES)])
    assert len(set(MODES)) == len(MODES) and set(NEEDS) == set(MODES)
    assert set(SPECULATIVE) | set(BATCH_ONE) <= set(MODES)
    assert all("t5" in NEEDS[m] for m in MODES if m != "edit5")  # T5 verifies or decodes


def test_check_modes():
    assert check_modes(["speculative", "t5", "speculative"]) == ["speculative", "t5"]
    with pytest.raises(EditspecError, match="unknown mode.*beam"):
        check_modes(["t5", "beam"])
