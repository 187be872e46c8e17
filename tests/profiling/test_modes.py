"""editspec/modes.py, the one table of modes: the corrector's first, T5 leading; every mode's needs,
and one object per mode that runs it (decoding/modes.py for the corrector's, profiling/timed.py for
all), found by the mode it holds."""

import pytest

from editspec import modes
from editspec.config import CorrectorConfig
from editspec.decoding import drafters
from editspec.decoding import runners
from editspec.errors import EditspecError
from editspec.modes import ALL, BY_NAME, CORRECTOR, check_modes
from editspec.profiling.timed import TIMED, Core


def test_one_table_of_modes():
    assert ALL[0] is modes.T5 and [m.name for m in ALL[:len(CORRECTOR)]] == ["t5", "edit5", "speculative"]
    assert len(set(BY_NAME)) == len(ALL) and set(BY_NAME) == set(TIMED)
    assert all(TIMED[m.name].mode is m for m in ALL)  # the profiler's objects hold the table's modes
    assert set(runners.RUNNERS) == set(CORRECTOR) == {m.name for m in ALL if m.corrector}
    assert all(runners.RUNNERS[name].mode is CORRECTOR[name] for name in CORRECTOR)
    assert all("t5" in m.needs for m in ALL if m is not modes.EDIT5)  # T5 verifies or decodes
    assert [m.name for m in ALL if TIMED[m.name].batch_one] == ["hf-assisted", "hf-prompt-lookup"]
    with pytest.raises(EditspecError, match="choose one of t5, edit5, speculative"):  # the profiler's are not
        CorrectorConfig(mode="hf-greedy")


def test_the_profilers_corrector_modes_are_the_correctors():
    """One object per corrector mode: the profiler times the corrector's own (what it needs and
    uses, its drafter, its budgets), so the two cannot drift apart."""
    for name in ("t5", "speculative"):
        timed = TIMED[name]
        assert isinstance(timed, Core) and timed.runner is runners.RUNNERS[name] and timed.draft is None
    assert TIMED["edit5"].runner is runners.EDIT5


def test_drafter_names_come_from_the_drafters():
    """The speculative mode's candidates are built from the classes ``CANDIDATES`` names, in its order."""
    assert drafters.CANDIDATES == ("edit5", "copy")
    built = [d.candidate(object(), [5]) for d in drafters.CANDIDATE_DRAFTERS]
    assert [d.name for d in built] == list(drafters.CANDIDATES)
    assert isinstance(built[0].drafters[0], drafters.EdiT5) and isinstance(built[1].drafters[0], drafters.Copy)


def test_check_modes():
    assert check_modes(["speculative", "t5", "speculative"]) == ["speculative", "t5"]
    with pytest.raises(EditspecError, match="unknown mode.*beam"):
        check_modes(["t5", "beam"])
