"""What one text may cost the server: over-long units are left as written, the rest corrected.

    text    "She go home. 😀😀😀…(20,000 emoji, no space)… i like scool."
    pieces  (0, 13, correct)  (13, 20013, as written)  (20013, 20028, correct)
    model   "She go home. " and " i like scool." (two texts); the emoji run is never read

A writing assistant's user expects a sentence it cannot read to be left alone, not a refusal of
the whole document. Two kinds of unit are left as written: a run of more than ``MAX_RUN_CHARS``
characters without whitespace (no word is that long; spaCy's tokenizer, which both sentence
splitting and ERRANT use, takes time quadratic in such a run: 20,000 emoji or brackets cost
30-60 s), found by a regex before spaCy sees the text; and a sentence longer than
``max_sentence_chars`` (the model would read it in many chunks and no learner's sentence is
that long). A text with neither is corrected whole, exactly as ``Corrector.correct_detailed``
corrects it; otherwise the pieces between the long units are corrected as separate texts (the
Corrector corrects each sentence on its own, so only a piece's first and last sentence can see a
difference: they begin or end a text) and the results joined back.

Hand-written: no library bounds spaCy's input; the rule is ours.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, NamedTuple, Sequence

from editspec.post import error_types

from editspec.pre import segment
from editspec.post.diff import Correction, Edit

MAX_RUN_CHARS = 200  # a URL fits; spaCy on 200 characters without a space takes about a millisecond
_LONG_RUN = re.compile(r"\S{%d,}" % (MAX_RUN_CHARS + 1))


class Piece(NamedTuple):
    start: int
    end: int
    correct: bool  # False: left as written


class Checked(NamedTuple):
    """What the batcher returns for one text: its correction, the ERRANT type of each edit, and
    the sentence spans the matches cite (``/v2``'s ``sentence``)."""

    correction: Correction
    types: list[str]
    sentences: list[tuple[int, int]]


def pieces(text: str, max_sentence_chars: int) -> list[Piece]:
    """``text`` cut into pieces to correct and pieces left as written (in order, covering it)."""
    if len(text) <= max_sentence_chars and not _LONG_RUN.search(text):
        return [Piece(0, len(text), True)]
    long: list[tuple[int, int]] = []
    at = 0
    for run in _LONG_RUN.finditer(text):
        long += _long_sentences(text, at, run.start(), max_sentence_chars)
        long.append(run.span())
        at = run.end()
    long += _long_sentences(text, at, len(text), max_sentence_chars)
    out, at = [], 0
    for a, b in long:
        if a > at:
            out.append(Piece(at, a, True))
        out.append(Piece(a, b, False))
        at = b
    if at < len(text):
        out.append(Piece(at, len(text), True))
    return out


def _long_sentences(text: str, a: int, b: int, limit: int) -> list[tuple[int, int]]:
    if b - a <= limit:
        return []
    return [(a + s, a + e) for s, e in segment.sentences(text[a:b]) if e - s > limit]


def checker(correct_detailed: Callable[[list[str]], list[Correction]],
            max_sentence_chars: int) -> Callable[[list[str]], list[Checked]]:
    """``texts -> [Checked]``, what the batcher runs on its worker thread: the pieces to correct
    of every text in one ``correct_detailed`` call, their edits typed by ERRANT piece by piece."""

    def run(texts: list[str]) -> list[Checked]:
        plans = [pieces(t, max_sentence_chars) for t in texts]
        todo = [t[p.start:p.end] for t, plan in zip(texts, plans) for p in plan
                if p.correct and t[p.start:p.end].strip()]
        done = correct_detailed(todo) if todo else []
        typed = iter(zip(done, error_types.classify(done)))
        out = []
        for text, plan in zip(texts, plans):
            output, edits, types, spans = [], [], [], []
            for p in plan:
                piece = text[p.start:p.end]
                if not (p.correct and piece.strip()):
                    output.append(piece)
                    if not p.correct:
                        spans.append((p.start, p.end))
                    continue
                c, kinds = next(typed)
                output.append(c.output)
                edits += [dataclasses.replace(e, start=e.start + p.start, end=e.end + p.start) for e in c.edits]
                types += [e.type or k for e, k in zip(c.edits, kinds)]  # the grammar step's edits come typed
                if c.edits:
                    spans += [(p.start + s, p.start + e) for s, e in segment.sentences(piece)]
            out.append(Checked(Correction(text, "".join(output), edits), types, sorted(spans)))
        return out

    return run


def sentence_of(sentences: Sequence[tuple[int, int]], start: int, end: int, text: str) -> str:
    """The sentence an edit ``[start, end)`` lies in ("" if none holds it)."""
    for a, b in sentences:
        if a <= start < b or a < end <= b:
            return text[a:b]
    return ""
