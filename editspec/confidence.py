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

from editspec.chain import Unit
from editspec.decoding import rescoring
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


def score_units(units: Sequence[Unit], outputs: Sequence[str], score: rescoring.Scorer,
                calibrate: Calibration) -> list[Correction | None]:
    """Each changed unit's correction from the unit as written to its output (``outputs``), each
    edit with its margin (``Correction.margins``) and confidence; None for a unit left as written.
    The margins are ``score``'s given the unit as read, of the ``rescoring.variants``: those that
    the unit's rescoring scored (its ``scores``, where its round read ``read``) are read, the
    others scored."""
    changed = [i for i, (u, out) in enumerate(zip(units, outputs)) if u.text != out]
    changes = [Correction.of(units[i].text, outputs[i]) for i in changed]
    given = [units[i].scores if units[i].correction.input == units[i].read else {} for i in changed]
    scored = rescoring.score_variants([units[i].read for i in changed], changes, score, given, whole=False)
    out: list[Correction | None] = [None] * len(units)
    for i, c, values in zip(changed, changes, scored):
        found = rescoring.margins(values)
        out[i] = replace(c, edits=[replace(e, confidence=round(calibrate(m), 4)) for e, m in zip(c.edits, found)],
                         margins=tuple(found))
    return out


def keep_sure(units: Sequence[str], outputs: Sequence[str], scored: Sequence[Correction | None],
              threshold: float) -> tuple[list[str], list[Correction | None]]:
    """The outputs with each edit less sure than ``threshold`` undone; a unit's edits that are
    left keep their confidence (those the diff finds anew take the least sure of the kept)."""
    outputs, scored = list(outputs), list(scored)
    for i, c in enumerate(scored):
        if c is None or all(e.confidence >= threshold for e in c.edits):
            continue
        kept = [e for e in c.edits if e.confidence >= threshold]
        outputs[i] = apply(units[i], kept)
        if not kept:
            scored[i] = None
            continue
        known = {(e.start, e.end, e.original, e.correction): e.confidence for e in kept}
        again = Correction.of(units[i], outputs[i])
        least = min(known.values())
        scored[i] = replace(again, edits=[replace(e, confidence=known.get((e.start, e.end, e.original, e.correction),
                                                                          least)) for e in again.edits])
    return outputs, scored


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
