"""What a process measures about the machine is kept for the next (editspec/decoding/measured.py):
the window's pass costs and the drafters' costs, read back instead of measured again, measured
again when the kept file is missing, damaged or another key's, and never a failure."""

import collections

import pytest
import torch

from editspec.decoding import costs, drafters, measured
from editspec.decoding.costs import Costs
from editspec.decoding.window import WIDTHS, WindowPolicy
from tests.helpers import random_t5


def policy(model, slots: int) -> WindowPolicy:
    """The window policy a new process's bundle of ``model`` starts with."""
    return Costs(model).window(slots)


@pytest.fixture(autouse=True)
def load(monkeypatch):
    """The machine's load per core as these tests see it (``costs.busy``): quiet unless a test says;
    no other work holding a core (``costs.contended``) unless a test says."""
    now = [0.25]
    monkeypatch.setattr(costs, "busy", lambda: now[0])
    monkeypatch.setattr(costs, "contended", lambda: False)
    return now


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

    monkeypatch.setattr(costs, "measure", measure)
    return calls


def test_window_costs_are_measured_once_per_machine(cache, counted):
    assert policy(random_t5(0), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2} and counted == [4]
    assert policy(random_t5(1), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2}  # another process's model
    assert counted == [4]  # same shape, dtype, threads, machine: read back
    policy(random_t5(1), 8)  # other slots: measured
    policy(random_t5(1, d_model=64), 4)  # another shape: measured
    torch.set_num_threads(2)
    try:
        policy(random_t5(1), 4)  # other threads: measured
    finally:
        torch.set_num_threads(1)
    assert counted == [4, 8, 4, 4]


@pytest.mark.parametrize("damage", [b"{not json", b'{"key": {}, "values": {"0": 1.0}}',
                                    b'{"key": null, "values": {"x": "y"}}'])
def test_damaged_or_foreign_costs_are_measured_again(cache, counted, damage):
    policy(random_t5(0), 4)
    [kept] = (cache / "measured").iterdir()
    kept.write_bytes(damage)
    assert policy(random_t5(1), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2} and counted == [4, 4]


def test_kept_costs_that_are_not_costs_are_measured_again(cache, counted):
    model = random_t5(0)
    key = {**measured.model_key(model), "slots": 4}
    measured.save("window", key, {"costs": {"0": -1.0, "1": 2.0}})
    policy(model, 4)
    assert counted == [4] and measured.load("window", key) == {"costs": {"0": 1.0, "1": 1.1, "2": 1.2}, "busy": 0.25,
                                                               "contended": False}


def test_an_unwritable_cache_only_costs_the_measuring(tmp_path, monkeypatch, counted):
    (tmp_path / "file").write_text("a file where the cache folder should be")
    monkeypatch.setenv("EDITSPEC_CACHE", str(tmp_path / "file"))
    assert policy(random_t5(0), 4).costs == {0: 1.0, 1: 1.1, 2: 1.2}
    assert policy(random_t5(1), 4).costs and counted == [4, 4]


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
    assert first.bundle.costs.drafts.probed == 0
    first.correct(sentences(12))
    assert first.bundle.costs.drafts.probed > 0
    assert [p.name.split("-")[0] for p in (cache / "measured").iterdir()].count("drafts") == 1
    second = Corrector.from_pretrained(bundle, mode="speculative")  # a new process's start
    assert second.bundle.costs.drafts.probed == min(first.bundle.costs.drafts.probed, second.bundle.costs.drafts.probe)
    assert second.bundle.costs.drafts.per_sentence() == pytest.approx(first.bundle.costs.drafts.per_sentence())
    assert Corrector.from_pretrained(bundle, mode="t5").bundle.costs.drafts.probed == 0  # no drafts: none kept


def test_slot_counts_between_powers_of_two_are_interpolated(cache, monkeypatch):
    calls = []

    def measure(model, slots):
        calls.append(slots)
        return {0: float(slots), 1: 1.5 * slots, 2: 2.0 * slots} if slots < 8 else {0: float(slots), 1: 1.5 * slots}

    monkeypatch.setattr(costs, "measure", measure)
    bundled = Costs(random_t5(0))
    assert bundled.passes(6) == {0: 6.0, 1: 9.0}  # between 4 and 8, on the widths both have
    assert bundled.passes(5) == {0: 5.0, 1: 7.5} and calls == [4, 8]
    assert bundled.passes(1) == {0: 1.0, 1: 1.5, 2: 2.0} and calls == [4, 8, 1]


def quiet(width: int) -> float:
    """A pass's seconds on a quiet machine: per token ever cheaper, so every width is measured."""
    return 0.05 + 0.004 * width


def clock(monkeypatch, poison=lambda width, n: None):
    """Passes timed by ``quiet``, except the n-th sample at a width where ``poison`` gives seconds."""
    seen = collections.Counter()

    def timed(dec, rows, feeds):
        width = len(feeds[0]) - 1
        seen[width] += 1
        return poison(width, seen[width] - 1) or quiet(width)

    monkeypatch.setattr(costs, "timed_pass", timed)
    return seen


QUIET = {w: quiet(w) for w in WIDTHS}


@pytest.mark.parametrize("poison", [
    lambda width, n: 2.12 if (width, n) == (2, 3) else None,  # one descheduled sample
    lambda width, n: 2.12 if width == 2 and n < 6 else None,  # a burst: all of width 2's first samples
    lambda width, n: 1.0 if width == 0 and n < 6 else None,  # a burst at width 0, caught beside width 1
])
def test_a_bad_sample_leaves_the_costs_and_the_window_a_quiet_machine_measures(monkeypatch, poison):
    clock(monkeypatch, poison)
    measured_costs = costs.measure(random_t5(0), 2)
    assert measured_costs == pytest.approx(QUIET)
    assert WindowPolicy(measured_costs).size(2) == WindowPolicy(QUIET).size(2) == 8


def test_a_width_wrong_every_time_is_bounded_by_its_neighbour(monkeypatch):
    clock(monkeypatch, lambda width, n: 2.12 if width == 2 else None)
    found = costs.measure(random_t5(0), 2)
    assert found[2] == pytest.approx(quiet(1) * 3 / 2 * costs.GROWTH)
    assert costs.kept_costs({"costs": found, "contended": False}) == found
    assert WindowPolicy(found).size(2) in (1, 2)  # not 0: the pass of 2.12 s is not believed


def test_a_file_kept_on_a_busy_machine_is_measured_again(cache, monkeypatch):
    seen = clock(monkeypatch)
    model = random_t5(0)
    key = {**measured.model_key(model), "slots": 4}
    busy = {"0": 0.05, "1": 0.058, "2": 2.12}  # as a user's cache once held it
    assert WindowPolicy({int(w): c for w, c in busy.items()}).size(4) == 1
    measured.save("window", key, {"costs": busy})
    assert Costs(model).window(4).size(4) == 8 and seen  # measured again: the quiet window
    assert measured.load("window", key)["costs"] == pytest.approx({str(w): c for w, c in QUIET.items()})
    seen.clear()
    assert Costs(model).passes(4) == pytest.approx(QUIET) and not seen  # the next process reads it


def test_costs_kept_under_load_are_measured_again_once_the_load_halves(cache, counted, load):
    model = random_t5(0)
    load[0] = 3.0  # a busy machine: 3 runnable processes a core
    policy(model, 4)
    load[0] = 2.0
    policy(model, 4)
    assert counted == [4]  # still busy: read
    load[0] = 0.5
    policy(model, 4)
    assert counted == [4, 4]  # quieter by half: measured again, and kept with its own load
    key = {**measured.model_key(model), "slots": 4}
    assert measured.load("window", key)["busy"] == 0.5
    load[0] = 0.01
    policy(model, 4)
    assert counted == [4, 4]  # measured at a load under BUSY: read whatever the load now


def test_costs_measured_beside_other_work_are_measured_again_by_a_process_with_its_cores(
        cache, counted, monkeypatch):
    """Costs measured while other work held a core the threads needed are kept as such, read by a
    process in the same state, measured again by one that has its cores to itself."""
    model, key = random_t5(0), {**measured.model_key(random_t5(0)), "slots": 4}
    shared = [True]
    monkeypatch.setattr(costs, "contended", lambda: shared[0])
    policy(model, 4)
    assert counted == [4] and measured.load("window", key)["contended"] is True
    policy(model, 4)
    assert counted == [4]  # still beside other work: read
    shared[0] = False
    policy(model, 4)
    assert counted == [4, 4] and measured.load("window", key)["contended"] is False
    shared[0] = True
    policy(model, 4)
    assert counted == [4, 4]  # measured alone: read whatever runs beside it now
    measured.save("window", key, {"costs": {"0": 1.0, "1": 1.1}, "busy": 0.25})  # an older file: no say
    policy(model, 4)
    assert counted == [4, 4]  # beside other work: read
    shared[0] = False
    policy(model, 4)
    assert counted == [4, 4, 4]  # alone: measured again


def test_contended_counts_the_running_tasks_against_the_threads(monkeypatch):
    """Other work holds a needed core when the running tasks and the threads outnumber the cores."""
    monkeypatch.undo()
    monkeypatch.setattr(costs.threads, "allowed_cores", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    for others, expected in ((0, False), (1, True)):
        monkeypatch.setattr(costs.threads, "busy_cores", lambda others=others: others)
        assert costs.contended() is expected
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert costs.contended() is False  # one thread beside one other task: a core each


@pytest.mark.parametrize("second_thread, chosen", [(0.6, 2), (1.3, 1), (1.0, 2)])
def test_the_thread_count_is_the_one_whose_passes_cost_less_here(cache, monkeypatch, second_thread, chosen):
    """``fastest_threads``: 1 or the most allowed, by the passes measured at each (a tie: the most);
    each count's costs measured once per machine, then read; the process's count left as it was."""
    calls = []

    def measure(model, slots):
        n = torch.get_num_threads()
        calls.append(n)
        scale = second_thread if n == 2 else 1.0
        return {0: 0.05 * scale, 1: 0.06 * scale, 2: 0.08 * scale}

    monkeypatch.setattr(costs, "measure", measure)
    before = torch.get_num_threads()
    assert Costs(random_t5(0)).fastest_threads(4, 2) == chosen and sorted(calls) == [1, 2]
    assert Costs(random_t5(1)).fastest_threads(4, 2) == chosen and len(calls) == 2  # the next process reads them
    assert torch.get_num_threads() == before
    assert Costs(random_t5(0)).fastest_threads(4, 1) == 1 and Costs().fastest_threads(4, 3) == 3 and len(calls) == 2


def test_a_corrector_takes_the_faster_count_only_where_the_count_was_its_own(cache, monkeypatch, tmp_path, tokenizer):
    from editspec import threads
    from editspec.bundle import Bundle
    from editspec.corrector import Corrector
    from tests.helpers import save, tiny_t5

    monkeypatch.setattr(costs, "measure", lambda model, slots: {0: 0.05 * (2.0 if torch.get_num_threads() > 1 else 1.0)})
    t5 = save(tiny_t5(tokenizer), tokenizer, tmp_path / "t5")
    before = torch.get_num_threads()
    try:
        monkeypatch.setattr(threads, "DEFAULT", None)  # --threads 2, or OMP_NUM_THREADS: the user's
        torch.set_num_threads(2)
        Corrector(Bundle.load(None, t5, ("t5",)), batch_size=4)
        assert torch.get_num_threads() == 2
        monkeypatch.setattr(threads, "DEFAULT", 2)  # chosen by ``threads.apply``: 1 is faster here
        Corrector(Bundle.load(None, t5, ("t5",)), batch_size=4)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
