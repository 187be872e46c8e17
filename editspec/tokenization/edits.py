"""EdiT5 edits: (source ids, target ids) <-> (tags, order, insertions), exactly.

EdiT5 factorises a correction into three steps, decoded in this order:

  tags        keep (1) or delete (0) for every source token;
  order       the kept source tokens, in their order in the target (the pointer network
              predicts it as "each kept token points to its successor");
  insertions  one decoder sequence ``<marker p> span <marker p'> span ... </s>``, where
              marker p means "insert after the p-th kept token of the new order" (p = 0: at
              the start). Markers are T5 sentinels (``<extra_id_p>``), as in the paper.

Worked example (token ids written as words):

  source      he  go  to  school  yesterday  .          (indices 0..5)
  target      yesterday  he  went  to  the  school  .

  1. Monotone alignment: the longest common subsequence (LCS) keeps in place
     ``he to school .`` (source 0, 2, 3, 5).
  2. Moves: an unaligned target token that equals an unaligned source token is kept and moved
     instead of deleted and re-inserted: ``yesterday`` (source 4). This is the only reason to
     reorder, and it saves one inserted token each time.
     Together 1+2 keep the multiset intersection of source and target, which is the most that
     any edit can keep, so the inserted tokens are as few as possible.
  3. Everything else in the source is deleted: ``go`` (source 1).

  tags        he:1  go:0  to:1  school:1  yesterday:1  .:1
  order       [4, 0, 2, 3, 5]                 yesterday he to school .
  insertions  <extra_id_2> went <extra_id_3> the </s>
              ("went" after the 2nd kept token ``he``, "the" after the 3rd, ``to``)

``realize`` inverts this: walk the kept tokens in ``order``, emitting each position's inserted
span before the kept token that follows it. ``realize(s, convert(s, t)) == t`` for every pair
whose insertions need no more markers than exist (``TooFewMarkers`` says so otherwise).

``realize`` is lenient with model predictions (a trained model may emit markers out of order or
out of range): spans before the first marker are dropped, a marker past the last kept token
inserts at the end, and repeated markers concatenate their spans. Each realized token also
reports which source token it came from (``None`` for inserted ones), so the text of a kept token
is copied from the source characters, byte for byte (see ``editspec.tokenization.tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rapidfuzz.distance import Indel

KEEP, DELETE = 1, 0


class TooFewMarkers(ValueError):
    """The pair inserts after a kept-token position that has no marker token."""


@dataclass(frozen=True)
class Edits:
    tags: list[int]  # KEEP / DELETE, one per source token
    order: list[int]  # kept source indices, in target order
    insertions: list[int]  # <marker> span ... </s>, the insertion decoder's target

    @property
    def reordered(self) -> bool:
        return any(a > b for a, b in zip(self.order, self.order[1:]))


def align(source: Sequence[int], target: Sequence[int]) -> list[int | None]:
    """For each target token, the source index it is kept from, or None if it is inserted.

    LCS first (kept in place), then moves of equal leftover tokens (see module docstring).
    rapidfuzz's Indel opcodes give an exact LCS alignment in C (difflib's does not: its
    junk heuristics can miss the longest subsequence).
    """
    aligned: list[int | None] = [None] * len(target)
    used = [False] * len(source)
    for op in Indel.opcodes(list(source), list(target)):
        if op.tag == "equal":
            for k in range(op.src_end - op.src_start):
                aligned[op.dest_start + k] = op.src_start + k
                used[op.src_start + k] = True
    leftovers: dict[int, list[int]] = {}
    for i, tok in enumerate(source):
        if not used[i]:
            leftovers.setdefault(tok, []).append(i)
    for j, tok in enumerate(target):
        if aligned[j] is None and leftovers.get(tok):
            aligned[j] = leftovers[tok].pop(0)
    return aligned


def convert(
    source: Sequence[int], target: Sequence[int], markers: Sequence[int], eos: int
) -> Edits:
    """The minimal edits that turn ``source`` into ``target`` (token ids, no EOS)."""
    aligned = align(source, target)
    order = [i for i in aligned if i is not None]
    tags = [DELETE] * len(source)
    for i in order:
        tags[i] = KEEP
    special = {*markers, eos}
    insertions: list[int] = []
    kept_so_far, open_position = 0, -1
    for j, i in enumerate(aligned):
        if i is not None:
            kept_so_far += 1
            continue
        if open_position != kept_so_far:  # a new span starts here
            if kept_so_far >= len(markers):
                raise TooFewMarkers(
                    f"insertion after kept token {kept_so_far} needs marker "
                    f"#{kept_so_far}, but only {len(markers)} exist"
                )
            insertions.append(markers[kept_so_far])
            open_position = kept_so_far
        tok = target[j]
        if tok in special:
            raise ValueError(f"target token {tok} is a marker or EOS and cannot be inserted")
        insertions.append(tok)
    insertions.append(eos)
    return Edits(tags=tags, order=order, insertions=insertions)


def insertion_spans(insertions: Sequence[int], markers: Sequence[int], eos: int) -> dict[int, list[int]]:
    """Parse ``<marker p> span ... </s>`` into {p: span}; lenient, see module docstring."""
    position_of = {m: p for p, m in enumerate(markers)}
    spans: dict[int, list[int]] = {}
    current: list[int] | None = None
    for tok in insertions:
        if tok == eos:
            break
        if tok in position_of:
            current = spans.setdefault(position_of[tok], [])
        elif current is not None:
            current.append(tok)
    return spans


def realize_aligned(
    source: Sequence[int], edits: Edits, markers: Sequence[int], eos: int
) -> list[tuple[int, int | None]]:
    """(token, source index or None) for every token of the realized target."""
    spans = insertion_spans(edits.insertions, markers, eos)
    n = len(edits.order)
    out: list[tuple[int, int | None]] = []
    for p in range(n + 1):
        out.extend((tok, None) for tok in spans.get(p, []))
        if p < n:
            out.append((source[edits.order[p]], edits.order[p]))
    for p in sorted(q for q in spans if q > n):  # past the last kept token: at the end
        out.extend((tok, None) for tok in spans[p])
    return out


def realize(source: Sequence[int], edits: Edits, markers: Sequence[int], eos: int) -> list[int]:
    """The target token ids that ``edits`` make of ``source``."""
    return [tok for tok, _ in realize_aligned(source, edits, markers, eos)]
