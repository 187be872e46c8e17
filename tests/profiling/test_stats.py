"""editspec/profiling/stats.py: summaries and Leviathan et al.'s expected speedup."""

import pytest

from editspec.profiling.clock import Sample
from editspec.profiling.stats import expected_speedup, expected_tokens_per_pass, summarize, summary


def test_summary_by_nearest_rank():
    assert summary([4.0, 1.0, 2.0, 3.0]) == {"median": 2.5, "p90": 4.0, "p95": 4.0, "mean": 2.5, "n": 4}
    s = summary(list(range(1, 101)))
    assert (s["p90"], s["p95"], s["n"]) == (90, 95, 100)
    assert summary([]) is None


def test_leviathan_formulas():
    # E[tokens] = 1 + α + α² + ... + α^γ
    assert expected_tokens_per_pass(0.9, 4) == pytest.approx(sum(0.9 ** k for k in range(5)))
    assert expected_tokens_per_pass(0.0, 4) == 1.0  # every draft rejected: the verifier's own token
    assert expected_tokens_per_pass(1.0, 4) == 5  # every draft accepted, plus the verifier's token
    assert expected_speedup(0.9, 4, 0.1) == pytest.approx(4.0951 / 1.4)
    assert expected_speedup(0.5, 3, 0.0) == expected_tokens_per_pass(0.5, 3)  # free drafting


def test_summarize_counts_acceptance_per_pass():
    """Two speculative samples: passes (4 proposed, 2 accepted), (4, 4), (3, 0)."""
    def sample(passes, spec):
        return Sample(latency=10.0, encoder=2.0, steps=[3.0] * len(passes), draft=1.0, outputs=[[5] * 6],
                      finished=[True], passes=passes, spec=spec)

    samples = [sample([(4, 2), (4, 4)], {"proposed": 8, "accepted": 6, "tokens": 8, "row_passes": 2}),
               sample([(3, 0)], {"proposed": 3, "accepted": 0, "tokens": 1, "row_passes": 1})]
    e = summarize(samples, [True, False], "trained", t5_latency=20.0, t5_step=0.5)
    assert e["speedup_vs_t5"] == 2.0 and e["identical_to_t5"] == 0.5
    assert e["acceptance_rate"] == pytest.approx(6 / 11) and e["tokens_per_pass"] == 3.0
    assert e["accepted_per_pass"] == {0: 1, 2: 1, 4: 1}
    lv = e["leviathan"]
    assert lv["alpha"] == pytest.approx(6 / 8)  # accepted / (accepted + 2 rejections)
    assert lv["gamma"] == pytest.approx(11 / 3) and lv["c"] == pytest.approx((2.0 / 11) / 0.5)
    assert e["other_ms"]["mean"] == pytest.approx(((10 - 2 - 6 - 1) + (10 - 2 - 3 - 1)) / 2)
