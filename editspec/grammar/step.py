"""The grammar step after the T5: candidates from the parse (rules.py), each judged by the n-gram
language model of correct English (lm.py) on its whole sentence, kept where its score beats the
original's by a pattern's margin (Bryant and Briscoe 2018), as data:

    step = GrammarStep.load()                        # the LM; spaCy in its own process (parser.py)
    step.correct(["She have two book."])            # -> [[GrammarEdit(4, 8, "has", "R:VERB:SVA",
                                                    #       "the verb should agree with its subject
                                                    #       'She'", 1.0, "sva", 0.24), ...books...]]
    apply_edits("She have two book.", edits)        # -> "She has two books."

Margin = (lp_c - lp_o) / |lp_o|, lp the sentence's ln score: the relative change of its score.
Not per token: a mean per token favours inserting any frequent word ("the": on W&I dev 4,823 of
7,136 missing-article candidates gained by it, against 45 of 119 noun-number ones).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from editspec.errors import EditspecError
from editspec.grammar import DEFAULT_LM, DEFAULT_SETTINGS, Candidate, parser as parsing
from editspec.grammar.lm import NgramLM
from editspec.post.diff import Edit, apply


@dataclass(frozen=True)
class GrammarEdit:
    start: int  # character offsets into the text given
    end: int
    replacement: str
    etype: str  # ERRANT type
    message: str
    confidence: float
    pattern: str = ""
    margin: float = 0.0


@dataclass
class Settings:
    """Each pattern's acceptance margin (a pattern absent is off) and the calibration from margin
    to confidence: per pattern, isotonic knots (margins, precisions) measured on FCE."""

    margins: dict[str, float] = field(default_factory=dict)
    knots: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)

    @classmethod
    def from_file(cls, path: str | Path, level: str = "default") -> "Settings":
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
            margins = {**raw.get("picky", {}), **raw["margins"]} if level == "picky" else raw["margins"]
            return cls({k: float(v) for k, v in margins.items()},
                       {k: (list(v[0]), list(v[1])) for k, v in raw.get("knots", {}).items()})
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            raise EditspecError(f"grammar settings {path}: {e}") from None

    def confidence(self, pattern: str, margin: float) -> float:
        xs, ys = self.knots.get(pattern, ([], []))
        return float(np.interp(margin, xs, ys)) if xs else 0.5


def margin(lp_o: float, lp_c: float) -> float:
    return (lp_c - lp_o) / max(abs(lp_o), 1e-9)


@dataclass(frozen=True)
class Judged:
    candidate: Candidate
    margin: float


class GrammarStep:
    """Built once a process: holds the language model and the parser (``parser.start()``'s
    process of its own unless one is given: ``parser.InProcess`` reads spaCy's docs here)."""

    def __init__(self, lm: NgramLM, settings: Settings, parser: parsing.Child | parsing.InProcess | None = None):
        self.lm, self.settings = lm, settings
        self.parser = parser if parser is not None else parsing.start()

    @classmethod
    def load(cls, settings: Settings | None = None, lm_path: str | Path = DEFAULT_LM,
             level: str = "default") -> "GrammarStep":
        """The shipped step: its LM and settings (``level="picky"`` adds the patterns measured
        below 40% precision on FCE)."""
        return cls(NgramLM.load(lm_path), settings or Settings.from_file(DEFAULT_SETTINGS, level))

    def judge(self, texts: Sequence[str], patterns: set[str] | None = None) -> list[list[Judged]]:
        """Every candidate of every text with its margin (the step's raw findings; tuning reads
        these): the LM scores all of the texts' sentences and variants in one call."""
        return self.judged(self.parser.found(texts, patterns))

    def judged(self, asked: Sequence[parsing.Found]) -> list[list[Judged]]:
        """Each text's candidates with their margins, from what the parser found of each: one LM call."""
        scores = iter(self.lm.scores([t for bases, found in asked for t in [*bases, *(v for _, _, v in found)]]))
        out = []
        for bases, found in asked:
            base = [next(scores) for _ in bases]
            out.append([Judged(c, margin(base[b], next(scores))) for c, b, _ in found])
        return out

    def correct(self, texts: Sequence[str]) -> list[list[GrammarEdit]]:
        """Per text, the accepted edits: a pattern that is on, a margin above its threshold, the
        best of overlapping candidates; sorted by offset."""
        on = set(self.settings.margins)
        return [self._accept(found) for found in self.judge(texts, on)] if on else [[] for _ in texts]

    def _accept(self, found: list[Judged]) -> list[GrammarEdit]:
        margins = self.settings.margins
        ok = sorted((j for j in found if j.margin > margins[j.candidate.pattern]),
                    key=lambda j: -j.margin)
        kept: list[Judged] = []
        for j in ok:
            c = j.candidate
            if all(c.end < k.candidate.start or c.start > k.candidate.end for k in kept):
                kept.append(j)
        return sorted((GrammarEdit(j.candidate.start, j.candidate.end, j.candidate.replacement,
                                   j.candidate.etype, j.candidate.message,
                                   self.settings.confidence(j.candidate.pattern, j.margin),
                                   j.candidate.pattern, j.margin) for j in kept),
                      key=lambda e: e.start)


def apply_edits(text: str, edits: Sequence[GrammarEdit]) -> str:
    """``text`` with the step's edits made (``diff.apply``; they do not overlap)."""
    return apply(text, [Edit(g.start, g.end, text[g.start:g.end], g.replacement)
                        for g in sorted(edits, key=lambda g: g.start)])
