"""How sure a score is: the paired bootstrap of two systems' F0.5, and a detection AUC.

``paired_bootstrap`` resamples a set's sentences with replacement and scores both systems on each
draw. Two systems on three sentences, counts (tp, fp, fn) as ERRANT chose them::

    sentence      1          2          3          whole set F0.5
    A          (1, 0, 1)  (0, 1, 1)  (1, 0, 0)     0.6250
    B          (1, 0, 1)  (1, 0, 0)  (1, 0, 0)     0.9375      delta +0.3125
    a draw: sentences 3, 3, 1   A (3, 0, 1), B (3, 0, 1)       delta 0
    a draw: sentences 2, 2, 3   A (1, 2, 2), B (3, 0, 0)       delta > 0

Over many draws, ``p`` is the share where B does not beat A and the 2.5th and 97.5th percentiles
of the deltas bound the gain: a gain with p < 0.05 is beyond the set's noise.

``detection_auc`` scores a ranking rather than decisions: the chance that a random positive
(a token the gold deletes) gets a higher score (EdiT5's delete margin) than a random negative.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from editspec.errors import EditspecError

if TYPE_CHECKING:  # for hints only: errant's import takes seconds, and training needs only the AUC
    from editspec.evaluation.errant import ErrantResult


def paired_bootstrap(a: ErrantResult, b: ErrantResult, samples: int = 1000, seed: int = 0) -> dict:
    """How sure is "b scores a higher F than a" on this set? Paired bootstrap over sentences
    (Koehn 2004; Berg-Kirkpatrick et al. 2012): draw the set's sentences with replacement, score
    both systems on the same draw, repeat. Returns b's F minus a's on the whole set, the 2.5th and
    97.5th percentiles of that difference over the draws, and ``p``, the share of draws where b
    does not beat a. Each sentence keeps the annotator ERRANT chose for it on the whole set.
    """
    if len(a.sentences) != len(b.sentences) or not a.sentences:
        raise EditspecError("paired bootstrap needs per-sentence counts of both systems on one set")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(a.sentences), size=(samples, len(a.sentences)))

    def f_scores(result: ErrantResult) -> np.ndarray:
        tp, fp, fn = np.asarray(result.sentences, dtype=np.float64)[draws].sum(1).T  # (samples,) each
        p = np.divide(tp, tp + fp, out=np.ones_like(tp), where=tp + fp > 0)
        r = np.divide(tp, tp + fn, out=np.ones_like(tp), where=tp + fn > 0)
        beta2 = a.beta ** 2
        return np.divide((1 + beta2) * p * r, beta2 * p + r, out=np.zeros_like(p), where=p + r > 0)

    delta = f_scores(b) - f_scores(a)
    low, high = np.percentile(delta, [2.5, 97.5])
    return {"delta": round(b.f - a.f, 4), "ci95": [round(float(low), 4), round(float(high), 4)],
            "p": float((delta <= 0).mean()), "samples": samples}


def detection_auc(scores: torch.Tensor, positive: torch.Tensor) -> float:
    """ROC AUC of ``scores`` for the boolean ``positive``: the chance that a random positive
    scores above a random negative (ties count half). EdiT5's dev tag loss hides detection
    skill behind calibration (a tagger that never dares to delete sits at the prior's loss
    either way); the AUC of its delete margin over deleted vs kept tokens does not."""
    pos, neg = scores[positive].float(), scores[~positive].float().sort().values
    if not len(pos) or not len(neg):
        return float("nan")
    below = torch.searchsorted(neg, pos, right=False).double()
    at_or_below = torch.searchsorted(neg, pos, right=True).double()
    return float(((below + at_or_below) / 2).sum() / (len(pos) * len(neg)))
