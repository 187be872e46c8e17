"""editspec/profiling/modes.py: the corrector's modes first, T5 leading; every mode's needs, and one
object per mode that runs it (profiling/timed.py)."""

import pytest

from editspec import modes as corrector_modes
from editspec.config import MODES as CORRECTOR_MODES
from editspec.decoding import modes as decoding_modes
from editspec.errors import EditspecError
from editspec.profiling.modes import ALL, MODES, NEEDS, check_modes
from editspec.profiling.timed import TIMED, Core


def test_modes_extend_the_correctors():
    assert MODES[0] == "t5" and set(CORRECTOR_MODES) == set(MODES[:len(CORRECTOR_MODES)])
    assert len(set(MODES)) == len(MODES) and set(NEEDS) == set(MODES) == set(TIMED)
    assert all(TIMED[m.name].mode is m for m in ALL)
    assert all("t5" in NEEDS[m] for m in MODES if m != "edit5")  # T5 verifies or decodes
    assert [m for m in MODES if TIMED[m].batch_one] == ["hf-assisted", "hf-prompt-lookup"]


def test_the_profilers_corrector_modes_are_the_correctors():
    """One object per corrector mode: the profiler times the corrector's own (what it needs and
    uses, its drafter, its budgets), so the two cannot drift apart."""
    for name in CORRECTOR_MODES:
        assert TIMED[name].mode is corrector_modes.CORRECTOR[name] is decoding_modes.MODES[name].mode
        assert NEEDS[name] == corrector_modes.CORRECTOR[name].needs
    for name in ("t5", "speculative"):
        timed = TIMED[name]
        assert isinstance(timed, Core) and timed.runner is decoding_modes.MODES[name] and timed.draft is None


def test_check_modes():
    assert check_modes(["speculative", "t5", "speculative"]) == ["speculative", "t5"]
    with pytest.raises(EditspecError, match="unknown mode.*beam"):
        check_modes(["t5", "beam"])
