"""editspec/timing.py: exclusive step times that add up to the whole, per round; OFF does nothing."""

import itertools

from editspec import timing


def test_exclusive_times_add_up(monkeypatch):
    clock = itertools.count(0.0, 0.001)  # every reading 1 ms after the last
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))
    t = timing.Timings()
    with t("round"):  # reads at 0 ms ...
        with t("encoder"):  # 1 ms, 2 ms
            assert t.inside("round") and t.inside("encoder")
        t.next_round()  # 3 ms
        with t("encoder"):  # 4 ms, 5 ms
            pass
    # ... and 6 ms: round's own time is 1 + 1 ms in round 1, 1 + 1 ms in round 2
    assert dict(t.ms) == {("encoder", 1): 1.0, ("round", 1): 2.0, ("encoder", 2): 1.0, ("round", 2): 2.0}
    assert t.totals() == {"round": 4.0, "encoder": 2.0} and sum(t.totals().values()) == 6.0
    assert t.later_rounds() == {"encoder": 1.0, "round": 2.0}
    assert t.calls[("encoder", 1)] == t.calls[("encoder", 2)] == 1 and not t.inside("round")


def test_off_is_one_shared_null_context():
    assert timing.OFF("a") is timing.OFF("b")
    with timing.OFF("segment"):
        timing.OFF.next_round()
