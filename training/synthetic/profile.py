"""Error profiles: which ERRANT types a learner corpus has, and how often, read from its M2 file.

Only the first annotator of each sentence counts; edits that change nothing (``noop``, ``UNK``:
an error marked without a correction) count as none. A two-sentence M2 file::

    S This are a test .                          5 tokens, 2 edits
    A 1 2|||R:VERB:SVA|||is|||REQUIRED|||-NONE-|||0
    A 2 3|||U:DET||||||REQUIRED|||-NONE-|||0
    S Fine .                                     2 tokens, no edit: a clean sentence
    A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0

    error_profile(path) -> ErrorProfile(rates={"R:VERB:SVA": 1/7, "U:DET": 1/7}, clean_fraction=0.5)
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from editspec.data.m2 import SKIP_TYPES, Edit, parse_block, read_blocks
from editspec.errors import EditspecError


@dataclass(frozen=True)
class ErrorProfile:
    rates: dict[str, float]  # ERRANT type -> edits per source token
    clean_fraction: float  # share of sentences whose correction is the sentence itself

    @property
    def total_rate(self) -> float:
        return sum(self.rates.values())

    def scaled(self, factor: float) -> "ErrorProfile":
        """The same types in the same proportions, ``factor`` times as many edits per token (a
        recall lever: more errors per sentence than the learners made); clean sentences as many."""
        return self if factor == 1 else replace(self, rates={t: r * factor for t, r in self.rates.items()})


# Used only when no M2 file is given. Rough, hand-chosen round numbers (edits per token) in the
# spirit of learner essays -- punctuation, prepositions, determiners, verb forms and spelling
# dominate -- NOT measured from any corpus; pass an M2 file for a faithful mix.
FALLBACK_PROFILE = ErrorProfile(
    rates={
        "M:PUNCT": 0.010, "R:OTHER": 0.008, "R:PREP": 0.006, "M:DET": 0.005, "U:DET": 0.004,
        "R:DET": 0.002, "R:ORTH": 0.005, "R:SPELL": 0.005, "R:VERB:TENSE": 0.004,
        "R:VERB": 0.004, "R:NOUN:NUM": 0.004, "R:NOUN": 0.003, "R:VERB:FORM": 0.003,
        "R:VERB:SVA": 0.002, "R:PUNCT": 0.003, "U:PUNCT": 0.001, "M:PREP": 0.002, "U:PREP": 0.001,
        "R:MORPH": 0.002, "R:WO": 0.002, "R:ADJ": 0.001, "R:ADV": 0.001, "R:PRON": 0.001,
        "M:PRON": 0.001, "M:OTHER": 0.001, "U:OTHER": 0.001, "M:VERB:TENSE": 0.001,
        "U:VERB:TENSE": 0.0005, "M:VERB": 0.001, "R:PART": 0.0005, "M:CONJ": 0.0005,
        "R:CONTR": 0.0002, "R:ADJ:FORM": 0.0003, "M:NOUN:POSS": 0.0003,
    },
    clean_fraction=0.35,
)


def profile_of(m2_for_rates: str | Path | None) -> ErrorProfile:
    """The profile of an M2 file, or without one ``FALLBACK_PROFILE``."""
    return error_profile(str(m2_for_rates)) if m2_for_rates else FALLBACK_PROFILE


def first_annotator_edits(edits: list[Edit]) -> list[Edit]:
    """The edits of a block's first annotator that change something."""
    first = edits[0].annotator if edits else None
    return [e for e in edits if e.annotator == first and e.type not in SKIP_TYPES]


@functools.lru_cache(maxsize=8)
def error_profile(m2_path: str | Path) -> ErrorProfile:
    """Edits per token per ERRANT type, and the share of unchanged sentences, of an M2 file."""
    counts: Counter[str] = Counter()
    tokens = sentences = clean = 0
    for block in read_blocks(m2_path):
        source, edits = parse_block(block)
        kept = first_annotator_edits(edits)
        sentences += 1
        tokens += len(source)
        counts.update(e.type for e in kept)
        clean += not kept
    if not tokens:
        raise EditspecError(f"no sentences in M2 file {m2_path}")
    return ErrorProfile({t: c / tokens for t, c in counts.most_common()}, clean / sentences)
