"""editspec/profiling/side_steps.py: spelling and rescoring, timed apart from the modes."""

from editspec.corrector import Corrector
from editspec.profiling.side_steps import time_rescoring, time_spelling


def test_spelling_is_timed_apart_from_the_modes():
    timed = time_spelling(["I recieve your leter.", "Fine."] * 3, warmup=1)
    assert timed["n"] == 6 and 0 < timed["median"] <= timed["p90"] < 1000 and timed["load_seconds"] >= 0


def test_rescoring_is_timed_apart_on_each_models_outputs(bundle):
    corrector = Corrector.from_pretrained(bundle, device="cpu", rescore=True)
    timed = time_rescoring(corrector, ["He go to school.", "I like it very much."] * 3, warmup=1)
    assert set(timed) == {"edit5", "t5"}
    for t in timed.values():
        assert t["n"] == 6 and 0 < t["median"] <= t["p90"] < 10_000 and 0 <= t["changed"] <= 6
    assert timed["t5"]["changed"] > 0  # a random T5 rewrites: there was something to score
    assert all("real_words" not in t for t in timed.values())  # no spelling step, no dictionary check
    corrector.config = corrector.config.replace(spelling=True)
    timed = time_rescoring(corrector, ["He go to school.", "I like it very much."] * 3, warmup=1)
    assert all(t["real_words"]["n"] == 6 and 0 < t["real_words"]["median"] < 1000 for t in timed.values())
