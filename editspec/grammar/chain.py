"""The grammar step in the correction chain: once after the last round, on each unit's output.

    units after the rounds (and a level's min_confidence) --step--> each unit ``after`` the step's
    ``Correction`` (of the model chain's output, to the final output; its edits typed, with the
    step's message and confidence)

A user is shown one correction per unit, from the unit as written to the final output
(``Correction.shown``). Its edits that touch what the step changed are the step's: they carry
the step's ERRANT type and message, and its confidence (the least sure of the step's and the
model's where one shown edit covers both); the others keep the model's (``own``). The step's
offsets are in the model's output; ``back`` moves them to the unit as written through the model's
edits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from editspec.chain import Unit
from editspec.grammar.step import GrammarEdit, GrammarStep
from editspec.post.diff import Correction, Edit, apply


@dataclass(frozen=True)
class Span:
    """A step edit moved to the unit as written: ``[start, end)`` there, and the step's edit."""

    start: int
    end: int
    edit: Edit


def as_edit(text: str, g: GrammarEdit) -> Edit:
    return Edit(g.start, g.end, text[g.start:g.end], g.replacement, g.etype, g.message, round(g.confidence, 4))


def run(step: GrammarStep, units: Sequence[Unit], outputs: Sequence[str],
        min_confidence: float = 0.0) -> tuple[list[Unit], list[str], list[Correction | None]]:
    """The step on ``outputs`` (each unit's after the model chain): the units, each changed one
    ``after`` the step's correction, the final outputs, and per unit the step's correction (None
    where it changed nothing). Its edits less sure than ``min_confidence`` are not made, as a
    level treats the model's."""
    found = step.correct(list(outputs))
    units, outputs, made = list(units), list(outputs), [None] * len(units)
    for i, edits in enumerate(found):
        edits = [g for g in edits if round(g.confidence, 4) >= min_confidence]  # as shown, as the model's
        if not edits:
            continue
        text, mine = outputs[i], [as_edit(outputs[i], g) for g in edits]  # sorted, not overlapping
        outputs[i] = apply(text, mine)
        made[i] = Correction(text, outputs[i], mine)
        units[i] = units[i].after(made[i])
    return units, outputs, made


def back(pos: int, edits: Sequence[Edit], end: bool) -> int:
    """Offset ``pos`` of the output of ``edits`` moved to their input; inside a changed span, that
    edit's whole input span (its start, or its end where ``end``)."""
    shift = 0
    for e in edits:
        a = e.start + shift
        b = a + len(e.correction)
        if pos <= a:
            break
        if pos < b:
            return e.end if end else e.start
        shift += len(e.correction) - (e.end - e.start)
    return pos - shift


def spans(made: Correction | None, model: Correction | None) -> list[Span]:
    """The step's edits (``made``, on the model's output) on the unit as written, through the
    model's correction ``model`` (from the unit as written to the step's input; None: unchanged)."""
    if made is None:
        return []
    edits = model.edits if model is not None else []
    return [Span(back(e.start, edits, False), back(e.end, edits, True), e) for e in made.edits]


def _touches(e: Edit, start: int, end: int) -> bool:
    if e.start == e.end or start == end:  # an insertion touches what it stands beside
        return e.start <= end and start <= e.end
    return e.start < end and start < e.end


def own(shown: Sequence[Edit], steps: Sequence[Span], model: Correction | None) -> list[Edit]:
    """``shown`` (a unit's edits from as written to the final output) with those that touch a step
    edit carrying its type, message and confidence (the least sure of it and the model's edits
    the shown edit also covers)."""
    if not steps:
        return list(shown)
    out = []
    for e in shown:
        mine = [s.edit for s in steps if _touches(e, s.start, s.end)]
        if not mine:
            out.append(e)
            continue
        theirs = [m.confidence for m in (model.edits if model else []) if m.confidence is not None
                  and _touches(e, m.start, m.end)]
        sure = min([m.confidence for m in mine] + theirs)
        out.append(replace(e, type=mine[0].type, message=mine[0].message, confidence=sure))
    return out
