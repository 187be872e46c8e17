"""The character diff of a text and its correction: word-level edits at source character offsets.

    source   "She go to school every days."
    target   "She goes to school every day."
    units    She| |go| |to| |school| |every| |days|.      (words, whitespace runs, punctuation)
    LCS      Indel opcodes on the units; consecutive changed units are one edit
    edits    Edit(4, 6, "go", "goes"), Edit(24, 28, "days", "day")

A long line is diffed in windows of ``WINDOW`` units: an exact LCS of the next window of both
sides, of which only the operations in its first half are kept before the next window starts
there. Corrections are local (a model rewrites a sentence, never moves text across a paragraph),
so this finds the same edits as one LCS of the whole line in memory and time linear in its
length (one LCS of a 1 MB line needs tens of GB: it grows with the square of the length).

``apply(source, edits)`` is the inverse (``apply(s, diff(s, t)) == t``), and with a subset of the
edits gives the text in between: the guard, made-up-word check and rescoring undo edits that way.
They ask for the same (unit, output) pair in turn, and ``correct_detailed`` for a line that is one
unit: a pair is diffed once (the last ``MEMO`` pairs of up to ``MEMO_CHARS`` characters are kept).
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass, field
from typing import Iterator, Sequence

from rapidfuzz.distance import Indel


@dataclass(frozen=True)
class Edit:
    """One change: ``input[start:end]`` (character offsets) became ``correction``. ``type`` is its
    ERRANT error type ("R:VERB:SVA") and ``message`` says it in words, once classified
    (``editspec.post.error_types.typed``; ``Corrector.correct_detailed(..., types=True)``)."""

    start: int
    end: int
    original: str
    correction: str
    type: str | None = None
    message: str | None = None
    # how sure the model is of this edit, in [0, 1] (``editspec.confidence``): the output model's
    # log P of the output against the output with this edit undone, calibrated on FCE dev
    confidence: float | None = None
    # other replacements of the same span from the T5's beam n-best, best first (``editspec.nbest.alternatives``)
    alternatives: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Correction:
    """A text, its correction, and the edits between them (``diff``): a line's (``Corrector.
    correct_detailed``), or a unit's, which the steps after the model pass along, each undoing the
    edits it judges wrong (``keep``)."""

    input: str
    output: str
    edits: list[Edit] = field(default_factory=list)
    # (text, score) of the beam search's best hypotheses, best first, where asked for
    # (``Corrector.correct_detailed(nbest=K)``, ``editspec.nbest``)
    nbest: tuple[tuple[str, float], ...] = ()
    # each edit's margin where a scorer found it (``rescoring.margins``: log P of the output less
    # that of the output without the edit; None where it could not score): rescoring's, confidence's
    margins: tuple[float | None, ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, text: str, output: str) -> Correction:
        """``text`` and its ``output``, with the edits between them."""
        return cls(text, output, diff(text, output))

    def keep(self, edits: Sequence[Edit]) -> Correction:
        """This correction with only ``edits`` (some of its own, in order) made. The edits of what
        is left are found again: a longest common subsequence of the input and the text in between
        need not pair them as the subset did (an edit left can meet its neighbour's)."""
        if len(edits) == len(self.edits):
            return self
        return Correction.of(self.input, apply(self.input, edits))

    @classmethod
    def shown(cls, text: str, output: str) -> Correction:
        """``of``, with whole words as the units (``diff(words=True)``): what a user is shown."""
        return cls(text, output, diff(text, output, words=True))

    def as_dict(self) -> dict:
        out = {"input": self.input, "output": self.output, "edits": [edit_dict(e) for e in self.edits]}
        if self.nbest:
            out["nbest"] = [{"output": text, "score": score} for text, score in self.nbest]
        return out


def edit_dict(e: Edit) -> dict:
    """An edit as JSON holds it (``alternatives`` only where they were asked for)."""
    out = asdict(e)
    if e.alternatives is None:
        del out["alternatives"]
    else:
        out["alternatives"] = list(e.alternatives)
    return out


_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
# what a reader calls a word: "don't", "John's" whole (``words=True``: the edits a user is shown;
# the steps after the model keep ``_WORDS``, so their decisions and the output do not change)
_WHOLE_WORDS = re.compile(r"\s+|\w+(?:['\u2019]\w+)*|[^\w\s]")
WINDOW = 2000  # units per exact LCS: 2000 x 2000 bits of rapidfuzz's matrix, 0.5 MB
MEMO, MEMO_CHARS = 4096, 4096  # pairs kept, and the longest pair kept (a sentence's: a line's can be MBs)


def diff(source: str, target: str, words: bool = False) -> list[Edit]:
    """Word-level edits turning ``source`` into ``target``, as source character offsets.

    Words, whitespace runs and single punctuation marks are the units of an exact LCS
    (rapidfuzz Indel) per window (see the module docstring); a run of consecutive changed
    units is one edit. Word units keep an edit readable ("go" -> "goes") where a character
    diff would give "" -> "es". ``words``: a word with an apostrophe inside is one unit ("don't"
    -> "didn't", not "don" -> "didn"), as a user reads it (``Corrector.correct_detailed``'s edits).
    """
    if source == target:
        return []
    if len(source) + len(target) <= MEMO_CHARS:
        return list(_diff_kept(source, target, words))
    return _diff(source, target, words)


@functools.lru_cache(maxsize=MEMO)
def _diff_kept(source: str, target: str, words: bool = False) -> tuple[Edit, ...]:
    return tuple(_diff(source, target, words))


def _diff(source: str, target: str, words: bool = False) -> list[Edit]:
    units = _WHOLE_WORDS if words else _WORDS
    src, tgt = units.findall(source), units.findall(target)
    src_at = [0]
    for w in src:
        src_at.append(src_at[-1] + len(w))
    edits: list[Edit] = []
    pending: list[int] | None = None  # [src_start, src_end, tgt_start, tgt_end] in units
    for tag, a, b, c, d in _opcodes(src, tgt):
        if tag == "equal":
            if pending:
                edits.append(_edit(src, tgt, src_at, pending))
                pending = None
        elif pending is None:
            pending = [a, b, c, d]
        else:
            pending[1], pending[3] = b, d
    if pending:
        edits.append(_edit(src, tgt, src_at, pending))
    return edits


def _opcodes(src: list[str], tgt: list[str]) -> Iterator[tuple[str, int, int, int, int]]:
    """LCS opcodes (tag, src_start, src_end, dest_start, dest_end), window by window."""
    i = j = 0
    while i < len(src) or j < len(tgt):
        last = len(src) - i <= WINDOW and len(tgt) - j <= WINDOW
        ops = Indel.opcodes(src[i:i + WINDOW], tgt[j:j + WINDOW])
        half = WINDOW // 2
        # the first half's operations (at least one): near the window's end the LCS is blind to
        # what follows it, so the rest is decided again in the next window
        keep = [op for op in ops if last or (op.src_end <= half and op.dest_end <= half)] or [ops[0]]
        for op in keep:
            yield op.tag, i + op.src_start, i + op.src_end, j + op.dest_start, j + op.dest_end
        i, j = i + keep[-1].src_end, j + keep[-1].dest_end


def apply(source: str, edits: Sequence[Edit]) -> str:
    """``source`` with ``edits`` (source offsets, in order, not overlapping) made: the inverse of
    ``diff`` (``apply(s, diff(s, t)) == t``), and with a subset of them, the text in between."""
    parts, cursor = [], 0
    for e in edits:
        parts += [source[cursor:e.start], e.correction]
        cursor = e.end
    return "".join(parts) + source[cursor:]


def output_starts(edits: Sequence[Edit]) -> list[int]:
    """Where each edit (in order, source offsets) starts in the output that ``apply`` makes of
    them all: its source start moved by the length the edits before it added or removed."""
    starts, shift = [], 0
    for e in edits:
        starts.append(e.start + shift)
        shift += len(e.correction) - (e.end - e.start)
    return starts


def _edit(src: list[str], tgt: list[str], src_at: list[int], span: list[int]) -> Edit:
    a, b, c, d = span
    return Edit(src_at[a], src_at[b], "".join(src[a:b]), "".join(tgt[c:d]))


def edit_size(edit: Edit) -> int:
    """Words and punctuation marks (``diff``'s units, spaces not counted) on the longer side of
    an edit ("go" -> "goes": 1)."""
    return max(sum(not u.isspace() for u in _WORDS.findall(side)) for side in (edit.original, edit.correction))
