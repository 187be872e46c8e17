"""The chain's data: what a round makes of each unit, and how a line's edits are made of its units'.

    line     "  He go home.  I likes it."
    units    Unit("He go home.")  Unit("I likes it.")    (``segment``: sentences, or chunks a model reads whole)
    read     the unit after the spelling step: what the model reads
    round    each unit -> its ``Unit`` after the round (``Corrector.correct_round``): the round's
             ``Correction`` (of what the round read, to the unit's output so far, each edit's margin
             where rescoring kept every edit), the tokens the model read, the texts rescoring
             scored with their log P, and the beam search's hypotheses where asked for
    line     each unit's edits, from the unit as written (``confidence.score_units``: margins and
             confidences), lifted to the line's offsets (``lift``): a sentence's edits are its own,
             whatever stands beside it

A step after the model (the checks, rescoring; a next one) reads a unit's ``correction`` and hands
on a ``Unit`` with its own (``Unit.after``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from editspec.post.diff import Correction, Edit
from editspec.pre import segment
from editspec.tokenization.tokens import Encoded

Hyps = tuple[tuple[str, float], ...]  # (text, score) of a beam search, best first


@dataclass(frozen=True)
class Unit:
    """One unit of a line as the chain carries it (see the module docstring).

    text         the unit as written
    read         after the spelling step: what the first round reads
    correction   the last round's: ``input`` what it read (``read`` in the first round), ``output``
                 the unit's output so far, its edits (with ``margins`` where rescoring found them)
    encoded      the last round's tokens of ``correction.input`` (the output model's, after the
                 prefix); None before a round read it
    scores       log P of texts given ``correction.input``: the variants rescoring scored
                 (``rescoring.score_variants``), which confidence reads instead of scoring again
    hypotheses   the last round's beam search, rendered, best first (``--nbest``, alternatives)
    """

    text: str
    read: str
    correction: Correction
    encoded: Encoded | None = None
    scores: Mapping[str, float | None] = field(default_factory=dict)
    hypotheses: Hyps = ()

    @classmethod
    def of(cls, text: str, read: str) -> Unit:
        """A unit before any round: its output is what the model will read."""
        return cls(text, read, Correction(read, read))

    @property
    def output(self) -> str:
        return self.correction.output

    def after(self, correction: Correction, **changes) -> Unit:
        """This unit after a step that made ``correction`` of what it read (``changes``: other fields)."""
        return replace(self, correction=correction, **changes)

    def nbest(self, k: int) -> Hyps:
        """Its ``k`` hypotheses: a unit no search read (over a limit) has its text as read, scored 0."""
        return self.hypotheses[:k] if self.hypotheses else ((self.read, 0.0),) * k


def lift(texts: Sequence[str], spans: Sequence[Sequence[segment.Span]], outputs: Sequence[str],
         unit_edits: Sequence[Sequence[Edit]]) -> list[Correction]:
    """Each line's ``Correction`` (``outputs``: the lines corrected): its units' edits
    (``unit_edits``, in ``segment.unit_texts`` order, offsets in the unit as written) moved to
    the line's offsets; no diff of the line."""
    it = iter(unit_edits)
    out = []
    for text, output, line_spans in zip(texts, outputs, spans):
        edits = [replace(e, start=a + e.start, end=a + e.end) for a, _ in line_spans for e in next(it)]
        out.append(Correction(text, output, edits))
    return out


@dataclass(frozen=True)
class Corrected:
    """What the chain made of lines (``Corrector._correct``): the corrected ``lines``, each line's
    unit ``spans``, and per unit (``segment.unit_texts`` order) its ``Unit`` after the rounds, its
    final output (after a level's ``min_confidence`` and the grammar step) and its ``scored``
    correction from the unit as written to the model chain's output (``confidence.score_units``;
    None where left as written or not asked for); ``grammar``: the grammar step's correction of
    that output, to the final output (``editspec.grammar.chain``; None where it changed nothing
    or is off)."""

    lines: list[str]
    spans: list[list[segment.Span]]
    units: list[Unit]
    outputs: list[str]
    scored: list[Correction | None]
    grammar: list[Correction | None] = field(default_factory=list)
