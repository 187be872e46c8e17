"""Each line's K best corrections with their scores, and each edit's alternatives: read from the
hypotheses of the T5's beam search that the corrector's round keeps on each unit (``Unit.hypotheses``).

``Corrector.correct_detailed(texts, nbest=K)`` (``editspec correct --beam N --nbest K``):

    line       "He go home.  I likes it."
    units      "He go home." | "I likes it."        (the corrector's segmenting and limits)
    beams      each unit's K best hypotheses, scored log P / length ** length_penalty
    lines      hypothesis k: each unit's k-th, rejoined with the line's own spacing; its score the
               units' scores summed (a line of one sentence: exactly the beam search's n-best)

The hypotheses are the model's, as it scores them, of each unit as it read it (after the spelling
step, in the round that decoded it last): the guard and rescoring shape the one output, not these
lists. A unit the model cannot read whole (over its limit) is every hypothesis as read, scored 0.
The edits' ``alternatives`` read the same hypotheses: with a greedy decode, the round runs a beam
search of ``ALTERNATIVES`` beams on the units it changed (``Corrector.correct_round``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from editspec.chain import Hyps, Unit
from editspec.post.checks import made_up_words
from editspec.post.diff import Correction, Edit, apply, diff
from editspec.pre import segment


def rejoined(texts: Sequence[str], spans: Sequence[Sequence[segment.Span]], units: Sequence[Unit],
             k: int) -> list[Hyps]:
    """Per line, its ``k`` hypotheses: the k-th, its units' k-th (``Unit.nbest``, ``units`` in
    ``segment.unit_texts`` order) rejoined with the line's own spacing, scored their sum."""
    hyps = [u.nbest(k) for u in units]
    texts_k = [segment.rejoin_lines(texts, spans, [h[j][0] for h in hyps]) for j in range(k)]
    out, at = [], 0
    for n, line_spans in enumerate(spans):
        mine = hyps[at: at + len(line_spans)]
        out.append(tuple((texts_k[j][n], sum(h[j][1] for h in mine)) for j in range(k)))
        at += len(line_spans)
    return out


ALTERNATIVES = 4  # beams whose n-best gives an edit's alternatives


def alternatives(corrections: Sequence[Correction], hypotheses: Sequence[Sequence[tuple[str, float]]],
                 limit: int = 2, knows: Callable[[str], bool] | None = None) -> list[Correction]:
    """Each edit with up to ``limit`` other replacements of its span, best first: the n-best
    hypotheses (``Unit.hypotheses``) whose edits there (whole words, ``diff(words=True)``) lie
    within the edit's span and write something else there than the edit and than the text as
    written (``_plausible``), in real words: with ``knows`` (the spelling step's dictionary), none
    that writes a word neither the span holds nor ``knows`` knows ("to themorow", "ofmorow" for
    "tomorow"; ``post.checks.made_up_words``). A hypothesis that changes more than the span, or
    leaves it as written, gives none."""
    out = []
    for c, hyps in zip(corrections, hypotheses):
        found = [diff(c.input, text, words=True) for text, _ in hyps]
        edits = []
        for e in c.edits:
            alts: list[str] = []
            for theirs in found:
                near = [x for x in theirs if _touches(x, e)]
                if not near or any(x.start < e.start or x.end > e.end for x in near):
                    continue
                region = apply(c.input[e.start:e.end], [replace(x, start=x.start - e.start, end=x.end - e.start)
                                                        for x in near])
                if region not in (e.correction, e.original) and region not in alts and _plausible(region, e) and \
                        not (knows and made_up_words(e.original, region, knows)):
                    alts.append(region)
            edits.append(replace(e, alternatives=tuple(alts[:limit])))
        out.append(replace(c, edits=edits))  # its other fields (``nbest``) kept
    return out


def _plausible(region: str, e: Edit) -> bool:
    """Not a lost place of the beam (as the guard judges the output): at most one word more than
    the edit's longer side, and no word written twice in a row ("received received")."""
    words = region.lower().split()
    most = max(len(e.original.split()), len(e.correction.split()))
    return len(words) <= most + 1 and all(a != b for a, b in zip(words, words[1:]))


def _touches(x: Edit, e: Edit) -> bool:
    """Whether edit ``x`` acts on ``e``'s span: overlaps it; an insertion, strictly inside it (at
    its ends it adds to the text beside it), or at the same place as an insertion ``e``."""
    if e.start == e.end:
        return x.start <= e.start <= x.end
    if x.start == x.end:
        return e.start < x.start < e.end
    return x.start < e.end and x.end > e.start
