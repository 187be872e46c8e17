"""JFLEG's GLEU (Napoles et al. 2015, 2016 update): n-gram precision that penalises kept errors.

A hypothesis n-gram counts when the reference has it, and counts against the hypothesis when the
source has it but the reference does not (an error the system left in). One sentence, one
reference, tokens::

    source      the cat sat on mat
    reference   the cat sat on the mat
    hypothesis  the cat sat on a mat

    n   in h & r          minus h & (s - r)      of |h| + 1 - n
    1   the cat sat on mat   -                   5 of 6
    2   the cat, cat sat, sat on  -              3 of 5
    3   the cat sat, cat sat on   -              2 of 4
    4   the cat sat on            -              1 of 3
    GLEU = exp(min(0, 1 - |r| / |h|)) * (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = 0.537

The unchanged source would keep "on mat", "sat on mat" and "cat sat on mat", which the reference
rewrote: its 4-gram precision is 0 of 2 and its GLEU 0. A corpus sums the sentences' counts
before scoring; with several references per sentence, each of 500 rounds draws one per sentence
and GLEU is the mean over rounds.

It is written out here (40 lines): PyPI's one package for it (``gleu`` 1.1.0, a single-author
command-line tool with module-global settings) is no library to call. It reproduces keisks/jfleg's
eval/gleu.py to the last digit (JFLEG dev sources: 38.21, the published figure).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Sequence

import numpy as np

from editspec.errors import EditspecError


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) + 1 - n))


def gleu_stats(source: Sequence[str], reference: Sequence[str], hypothesis: Sequence[str],
               order: int = 4) -> list[int]:
    """[|h|, |r|, then per n: matches, |h| + 1 - n] for one sentence and one reference.

    Matches are GLEU's n-gram precision numerator: n-grams of h also in r, minus n-grams of h that
    are in the source but not in r (a kept error is penalised): ``max(|h & r| - |h & (s - r)|, 0)``
    with clipped (multiset) counts.
    """
    stats = [len(hypothesis), len(reference)]
    for n in range(1, order + 1):
        h, s, r = _ngrams(hypothesis, n), _ngrams(source, n), _ngrams(reference, n)
        s_not_r = Counter({g: c for g, c in s.items() if g not in r})
        stats.append(max(sum((h & r).values()) - sum((h & s_not_r).values()), 0))
        stats.append(max(len(hypothesis) + 1 - n, 0))
    return stats


def gleu_from_stats(stats: Sequence[int]) -> float:
    """exp(min(0, 1 - r/c) + mean_n log p_n); 0 when any count is 0 (no smoothing at corpus level)."""
    if any(x == 0 for x in stats):
        return 0.0
    c, r = stats[:2]
    precisions = [x / y for x, y in zip(stats[2::2], stats[3::2])]
    return math.exp(min(0.0, 1 - r / c) + sum(map(math.log, precisions)) / len(precisions))


def gleu(sources: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]],
         hypotheses: Sequence[Sequence[str]], iterations: int = 500) -> float:
    """Corpus GLEU with multiple references, as JFLEG reports it (keisks/jfleg eval/gleu.py).

    ``references[k][i]`` is the k-th reference of sentence i (all token lists). Each of
    ``iterations`` rounds draws one reference per sentence, sums the sentence statistics and
    scores the corpus; the result is the mean over rounds. The draws replay gleu.py's: round j
    seeds Python's Mersenne Twister with j * 101 and draws ``randint(0, k - 1)``, which Python 2
    computed as ``int(random() * k)``, so the numbers match the published script's.
    """
    k, count = len(references), len(hypotheses)
    if any(len(refs) != count for refs in references) or len(sources) != count:
        raise EditspecError("GLEU needs one source and one line per reference file per hypothesis")
    if count == 0:
        return 0.0
    stats = np.array([[gleu_stats(sources[i], refs[i], hypotheses[i]) for refs in references]
                      for i in range(count)], dtype=np.int64)  # (sentences, references, 10)
    rows = np.arange(count)
    scores = []
    for j in range(iterations):
        rng = random.Random(j * 101)
        choice = np.array([int(rng.random() * k) for _ in range(count)])
        scores.append(gleu_from_stats(stats[rows, choice].sum(0).tolist()))
    return float(np.mean(scores))
