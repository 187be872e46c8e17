"""GLEU: the module docstring's worked example by hand, and JFLEG's published source score."""

import math
from pathlib import Path

import pytest

from editspec.errors import EditspecError
from editspec.evaluation.gleu import gleu, gleu_from_stats, gleu_stats


def test_gleu_worked_example():
    """One sentence, one reference; n-gram counts by hand.

    source  the cat sat on mat         reference  the cat sat on the mat
    (a) hypothesis = source: it keeps "on mat", which the reference rewrote: penalised.
        1-grams 5 of 5 in r;  2-grams: 3 in r minus "on mat" (in s, not in r) = 2 of 4;
        3-grams 2 - "sat on mat" = 1 of 3;  4-grams 1 - "cat sat on mat" = 0 of 2  -> GLEU 0
    (b) hypothesis "the cat sat on a mat": 5/6, 3/5, 2/4, 1/3, |h| = |r| (no brevity penalty)
        -> GLEU = (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = (1/12) ** (1/4)
    """
    s, r = "the cat sat on mat".split(), "the cat sat on the mat".split()
    a, b = s, "the cat sat on a mat".split()
    assert gleu_stats(s, r, a) == [5, 6, 5, 5, 2, 4, 1, 3, 0, 2]
    assert gleu_stats(s, r, b) == [6, 6, 5, 6, 3, 5, 2, 4, 1, 3]
    assert gleu([s], [[r]], [a]) == 0.0
    assert gleu([s], [[r]], [b]) == pytest.approx((1 / 12) ** 0.25)
    # a corpus sums the statistics before scoring; a short hypothesis pays exp(1 - r/c)
    s2, r2 = "he go home".split(), "he goes home now".split()
    h2 = "he goes home".split()
    assert gleu_stats(s2, r2, h2) == [3, 4, 3, 3, 2, 2, 1, 1, 0, 0]  # no 4-gram: 0 of 0
    total = [x + y for x, y in zip(gleu_stats(s, r, b), gleu_stats(s2, r2, h2))]
    assert total == [9, 10, 8, 9, 5, 7, 3, 5, 1, 3]
    expected = math.exp(1 - 10 / 9) * (8 / 9 * 5 / 7 * 3 / 5 * 1 / 3) ** 0.25
    assert gleu([s, s2], [[r, r2]], [b, h2]) == pytest.approx(expected)
    assert gleu_from_stats(total) == pytest.approx(expected)
    # with several references each round samples one per sentence; equal references change nothing
    assert gleu([s, s2], [[r, r2], [r, r2]], [b, h2]) == pytest.approx(expected)


def test_gleu_averages_rounds_over_references():
    """Two references, one matched exactly: each round scores 1 or less, so the mean lies between."""
    s, h = "a b c d".split(), "a b c e".split()
    exact, other = h, "x b c d".split()
    mixed = gleu([s], [[exact], [other]], [h])
    assert gleu([s], [[exact]], [h]) == 1.0 and gleu([s], [[other]], [h]) == 0.0
    assert 0 < mixed < 1  # about half the 500 rounds drew the exact reference
    assert gleu([s], [[exact], [other]], [h], iterations=1) in (0.0, 1.0)


def test_gleu_input_errors():
    with pytest.raises(EditspecError, match="one source and one line per reference"):
        gleu([["a"]], [[["a"]], []], [["a"]])
    assert gleu([], [[]], []) == 0.0


JFLEG = Path(__file__).resolve().parents[3] / "shared" / "data" / "jfleg_dev"


@pytest.mark.skipif(not (JFLEG / "dev.src").exists(), reason="shared JFLEG dev data not present")
def test_gleu_reproduces_jfleg_source_score():
    """JFLEG's paper reports GLEU 38.21 for the unchanged dev sources (keisks/jfleg gleu.py)."""
    src = [line.split() for line in (JFLEG / "dev.src").open(encoding="utf-8")]
    refs = [[line.split() for line in (JFLEG / f"dev.ref{k}").open(encoding="utf-8")]
            for k in range(4)]
    assert round(gleu(src, refs, src) * 100, 2) == 38.21
