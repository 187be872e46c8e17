"""What a process measures about the machine is kept for the next (editspec/decoding/measured.py):
the window's pass costs and the drafters' costs, read back instead of measured again, measured
again when the kept file is missing, damaged or another key's, and never a failure."""

import pytest
import torch

from editspec.decoding import drafters, measured, window
from editspec.decoding.window import WindowPolicy
from tests.helpers import random_t5


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITSPEC_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture
def counted(monkeypatch):
    calls = []

    def measure(model, slots):
        calls.append(slots)
        return {0: 1.0, 1: 1.1, 2: 1.2}

    monkeypatch.setattr(window, "measure", measure)
    return calls


def test_window_costs_are_measured_once_per_machine(cache, counted):
    assert WindowPolicy.measured(random_t5(0), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2} and counted == [4]
    assert WindowPolicy.measured(random_t5(1), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2}  # another process's model
    assert counted == [4]  # same shape, dtype, threads, machine: read back
    WindowPolicy.measured(random_t5(1), 8)  # other slots: measured
    WindowPolicy.measured(random_t5(1, d_model=64), 4)  # another shape: measured
    torch.set_num_threads(2)
    try:
        WindowPolicy.measured(random_t5(1), 4)  # other threads: measured
    finally:
        torch.set_num_threads(1)
    assert counted == [4, 8, 4, 4]


@pytest.mark.parametrize("damage", [b"{not json", b'{"key": {}, "values": {"0": 1.0}}',
                                    b'{"key": null, "values": {"x": "y"}}'])
def test_damaged_or_foreign_costs_are_measured_again(cache, counted, damage):
    WindowPolicy.measured(random_t5(0), 4)
    [kept] = (cache / "measured").iterdir()
    kept.write_bytes(damage)
    assert WindowPolicy.measured(random_t5(1), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2} and counted == [4, 4]


def test_kept_costs_that_are_not_costs_are_measured_again(cache, counted):
    model = random_t5(0)
    key = {**measured.model_key(model), "slots": 4}
    measured.save("window", key, {"0": -1.0, "1": 2.0})
    WindowPolicy.measured(model, 4)
    assert counted == [4] and measured.load("window", key) == {"0": 1.0, "1": 1.1, "2": 1.2}


def test_an_unwritable_cache_only_costs_the_measuring(tmp_path, monkeypatch, counted):
    (tmp_path / "file").write_text("a file where the cache folder should be")
    monkeypatch.setenv("EDITSPEC_CACHE", str(tmp_path / "file"))
    assert WindowPolicy.measured(random_t5(0), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2}
    assert WindowPolicy.measured(random_t5(1), 4).costs and counted == [4, 4]


def test_weights_are_part_of_the_drafts_key():
    a, b = random_t5(0), random_t5(1)
    assert measured.model_key(a) == measured.model_key(b)
    assert measured.model_key(a, weights=True) != measured.model_key(b, weights=True)
    assert measured.model_key(a, weights=True) == measured.model_key(random_t5(0), weights=True)


def test_draft_costs_restore_as_means_of_few_probes():
    costs = drafters.DraftCosts(["edit5", "copy"], probe=32, settled=8)
    costs.restore({"names": ["edit5", "copy"], "seconds": [50.0, 10.0], "probed": 100})
    assert costs.probed == 32 and costs.per_sentence() == pytest.approx({"edit5": 0.5, "copy": 0.1})
    assert costs.best == 1 and sum(costs.reserve(1016)) == 0  # clear: this period's probes count as taken
    assert sum(costs.reserve(1024)) == 8  # the next period's first 8
    close = drafters.DraftCosts(["edit5", "copy"], probe=32, settled=8)
    close.restore({"names": ["edit5", "copy"], "seconds": [10.0, 11.0], "probed": 100})
    assert sum(close.reserve(1024)) == 32  # not clear: probed as a new process would
    for broken in (None, {"names": ["copy", "edit5"], "seconds": [1, 2], "probed": 3},
                   {"names": ["edit5", "copy"], "seconds": [1], "probed": 3}, {"names": ["edit5", "copy"]},
                   {"names": ["edit5", "copy"], "seconds": ["x", 1], "probed": 3}):
        fresh = drafters.DraftCosts(["edit5", "copy"])
        fresh.restore(broken)
        assert fresh.probed == 0 and fresh.seconds == [0.0, 0.0]
    assert drafters.DraftCosts(["a", "b"]).state() == {"names": ["a", "b"], "seconds": [0.0, 0.0], "probed": 0}


def test_corrector_keeps_its_draft_costs_for_the_next_process(cache, tmp_path, tokenizer):
    from editspec.corrector import Corrector
    from tests.helpers import sentences, tiny_bundle

    bundle = tiny_bundle(tmp_path / "models", tokenizer) / "bundle"
    first = Corrector.from_pretrained(bundle, mode="speculative")
    assert first.bundle.draft_costs.probed == 0
    first.correct(sentences(12))
    assert first.bundle.draft_costs.probed > 0
    assert [p.name.split("-")[0] for p in (cache / "measured").iterdir()].count("drafts") == 1
    second = Corrector.from_pretrained(bundle, mode="speculative")  # a new process's start
    assert second.bundle.draft_costs.probed == min(first.bundle.draft_costs.probed, second.bundle.draft_costs.probe)
    assert second.bundle.draft_costs.per_sentence() == pytest.approx(first.bundle.draft_costs.per_sentence())
    assert Corrector.from_pretrained(bundle, mode="t5").bundle.draft_costs.probed == 0  # no drafts: none kept


def test_slot_counts_between_powers_of_two_are_interpolated(cache, monkeypatch):
    calls = []

    def measure(model, slots):
        calls.append(slots)
        return {0: float(slots), 1: 1.5 * slots, 2: 2.0 * slots} if slots < 8 else {0: float(slots), 1: 1.5 * slots}

    monkeypatch.setattr(window, "measure", measure)
    model = random_t5(0)
    assert window.pass_costs(model, 6) == {0: 6.0, 1: 9.0}  # between 4 and 8, on the widths both have
    assert window.pass_costs(model, 5) == {0: 5.0, 1: 7.5} and calls == [4, 8]
    assert window.pass_costs(model, 1) == {0: 1.0, 1: 1.5, 2: 2.0} and calls == [4, 8, 1]
