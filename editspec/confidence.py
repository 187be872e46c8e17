"""A confidence on every edit: how sure the output model is of it, in [0, 1].

    input    "He go to school yesterday."          (the unit as written)
    model    "He go to school yesterday."          (what the model read: after the spelling step)
    output   "He went to school yesterday."
    edits    (3, 5) "go" -> "went"
    margin   log P(output | model input) - log P("He go to school yesterday." | model input) = 2.1
    conf.    calibrated(2.1)                       (``corrector_config.json`` "confidence": knots)

The margin is the score rescoring already compares (``decoding.rescoring``: an edit stays when its
margin is >= 0), computed by the same scorer (the T5's teacher-forced log P on the decoding core;
in edit5 mode EdiT5's log P of the edits), each edit undone with all the others kept. It is read
against the unit as written, so the spelling step's respellings have one too. The map from margin
to confidence is an isotonic regression of "ERRANT finds this edit in the gold" on the margin, fitted
on FCE dev (``eval/confidence.py fit``): the confidence estimates the share of such edits that are right.
A margin the scorer cannot give (an EdiT5 that cannot express a variant) counts as 0.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace
from typing import Sequence

from editspec.post.diff import Correction, Edit, apply

MAX_MARGIN = 50.0  # nats; beyond this the sigmoid is 0 or 1 at any fitted slope


@dataclass(frozen=True)
class Calibration:
    """margin -> confidence: through ``knots`` ((margin, confidence) pairs, margins rising,
    confidences not falling), linearly between them and flat beyond them, as fitted on a dev set
    (isotonic regression, ``eval/confidence.py fit``); without knots, sigmoid(scale * margin + bias)."""

    scale: float = 1.0
    bias: float = 0.0
    knots: tuple[tuple[float, float], ...] = ()

    @classmethod
    def of(cls, value) -> Calibration:
        """From ``corrector_config.json``'s "confidence" entry: [scale, bias] or [[margin, confidence], ...]."""
        if value and isinstance(value[0], (list, tuple)):
            return cls(knots=tuple((float(m), float(c)) for m, c in value))
        return cls(*value) if value else cls()

    def __call__(self, margin: float | None) -> float:
        m = 0.0 if margin is None or math.isnan(margin) else max(-MAX_MARGIN, min(MAX_MARGIN, margin))
        if self.knots:
            at = bisect.bisect_right([k for k, _ in self.knots], m)
            if at == 0:
                return self.knots[0][1]
            if at == len(self.knots):
                return self.knots[-1][1]
            (m0, c0), (m1, c1) = self.knots[at - 1], self.knots[at]
            return c0 + (c1 - c0) * (m - m0) / (m1 - m0) if m1 > m0 else c1
        z = self.scale * m + self.bias
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def variants(unit: str, output: str) -> tuple[Correction, list[str]]:
    """The unit's correction and what the scorer reads: the output, then the output with each edit
    undone (all the others kept)."""
    c = Correction.of(unit, output)
    return c, [output] + [apply(unit, c.edits[:k] + c.edits[k + 1:]) for k in range(len(c.edits))]


def margins(scores: Sequence[float | None]) -> list[float | None]:
    """Each edit's margin from the scores of ``variants``' texts (None where one is missing)."""
    full, undone = scores[0], scores[1:]
    return [None if full is None or s is None else full - s for s in undone]


def with_confidence(c: Correction, values: Sequence[float]) -> Correction:
    return Correction(c.input, c.output, [replace(e, confidence=round(v, 4)) for e, v in zip(c.edits, values)])


def spread(shown: Sequence[Edit], scored: Sequence[tuple[int, Edit]]) -> list[Edit]:
    """``shown`` (a line's edits, as ``Correction.shown`` finds them) each with a confidence: that
    of the scored unit edit (line offset, unit edit) it covers, the least sure where it covers
    several; one that covers none (the line's diff paired words across units) takes the least sure
    of the edits it touches, else of its line."""
    out = []
    placed = [(at + e.start, at + e.end, e.confidence) for at, e in scored]
    fallback = min((v for _, _, v in placed if v is not None), default=None)
    for e in shown:
        inside = [v for a, b, v in placed if v is not None and (
            (a < e.end and b > e.start) or (a == b and e.start <= a <= e.end) or (e.start == e.end and a <= e.start <= b))]
        out.append(replace(e, confidence=min(inside) if inside else fallback))
    return out
