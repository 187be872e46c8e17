"""The Corruptor: how many errors one sentence gets, of which types, and where.

For one sentence (worked example, seed fixed)::

    target: "In 2013, the total housing area in Kazakhstan amounted to 336.1 million square meters."

1. The caller seeds the RNG from (seed, shard file name, line number) (``pairs.sentence_rng``), so
   a sentence's corruption does not depend on which shards were selected, the order they were
   read in, or how many workers read them.
2. With probability ``clean_fraction`` (the corpus's share of sentences without edits, ~1/3 for
   W&I) the sentence is left as it is.
3. Otherwise the number of errors is k = 1 + Poisson(rate * n / (1 - clean_fraction) - 1), where
   ``rate`` is the corpus's edits per token and n the sentence's token count: in expectation the
   synthetic data has the corpus's edits per token AND its share of clean sentences (k is capped
   at n/4 so that long sentences do not turn into word salad).
4. k times: draw an ERRANT type with probability proportional to its rate (say M:PUNCT, R:PREP,
   R:SPELL) and apply that type's corruption (``corruptions.py``) at a random place where it
   applies::

    M:PUNCT  "In 2013, the"            -> "In 2013 the"
    R:PREP   "amounted to 336.1"       -> "amounted for 336.1"
    R:SPELL  "housing"                 -> "housnig"

    source: "In 2013 the total housnig area in Kazakhstan amounted for 336.1 million square meters."

   A type with no place in the sentence is redrawn, and so is a corruption that would touch a
   word an earlier one changed (errors stay apart, as ERRANT then counts them). Redrawing favours
   the types that nearly always apply (typos), so each type's weight is divided by the share of
   some calibration sentences (the first lines of the data) it applies to.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Sequence

from training.synthetic.corruptions import CORRUPTIONS, drop_punct, misspell
from training.synthetic.lexicon import Lexicon, lexicon
from training.synthetic.profile import FALLBACK_PROFILE, ErrorProfile
from training.synthetic.sentence import Sentence


def poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    k, p, limit = 0, rng.random(), math.exp(-lam)
    while p > limit:
        k += 1
        p *= rng.random()
    return k


class Corruptor:
    """Corrupts one sentence at a time following an ErrorProfile (see the module docstring).

    A drawn type that has no place in the sentence is redrawn, so types that rarely apply (there
    is no "n't" to mangle in most sentences) would come out rarer than the profile says. Given
    calibration sentences, each type's weight is divided by the share of them it applies to, which
    restores the profile's proportions.
    """

    def __init__(self, profile: ErrorProfile = FALLBACK_PROFILE, lex: Lexicon | None = None,
                 calibration: Sequence[str] = ()) -> None:
        self.profile = profile
        self.lex = lex or lexicon()
        # Types without a corruption (M:PART, ...) keep their share only through the total rate.
        self.types = [t for t in profile.rates if t in CORRUPTIONS and profile.rates[t] > 0]
        if not self.types:
            raise ValueError("the error profile has no type that training.synthetic can produce")
        self.applicability = {t: self._applicability(t, calibration) if calibration else 1.0
                              for t in self.types}
        self.cum = list(itertools.accumulate(profile.rates[t] / max(self.applicability[t], 0.05)
                                             for t in self.types))
        self.total = profile.total_rate

    def _applicability(self, t: str, sentences: Sequence[str]) -> float:
        hits = sum(CORRUPTIONS[t](Sentence(x, self.lex), random.Random(f"calibrate/{t}/{j}"))
                   for j, x in enumerate(sentences))
        return hits / len(sentences)

    def corrupt(self, text: str, rng: random.Random) -> str:
        if rng.random() < self.profile.clean_fraction:
            return text
        s = Sentence(text, self.lex)
        if not s.w:
            return text
        wanted = self.total * len(s) / max(1e-6, 1 - self.profile.clean_fraction)
        k = min(1 + poisson(rng, wanted - 1), max(1, len(s) // 4))  # no word salad
        done = tries = 0
        while done < k and tries < 3 * k + 5:
            tries += 1
            t = self.types[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]
            snap = s.snapshot()
            s.step, s.conflict = tries, False
            if CORRUPTIONS[t](s, rng) and not s.conflict:
                done += 1
            else:  # no place for it, or it would overlap an earlier error: undo it
                s.restore(snap)
        out = str(s)
        if out == text:  # corruptions that cancelled out, or none applied: one typo instead
            s = Sentence(text, self.lex)
            misspell(s, rng) or drop_punct(s, rng)
            out = str(s)
        return out if out.strip() else text

    def pair(self, text: str, rng: random.Random) -> dict[str, str]:
        return {"source": self.corrupt(text, rng), "target": text}
