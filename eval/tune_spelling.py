"""Score the spelling step alone (no model) on a dev set, for the settings of ``Speller``.

    python eval/tune_spelling.py --m2 ../shared/data/fce/fce.dev.gold.bea19.m2 \
        [--distance2-letters 6 8 99] [--slip-prior 1 4]

``editspec.spelling.Speller`` respells words no dictionary holds; this prints ERRANT P/R/F0.5 (as
``editspec eval`` scores) of its output alone for each pair of settings: words of
``--distance2-letters`` letters or more may be two edits from their candidate (99: one edit only),
and ``--slip-prior`` weighs candidates that differ by letters left out, added or swapped (1: no
prior), and a word wordfreq counts at ``--common-zipf`` or more is left alone though
symspellpy's dictionary lacks it (0: off). What the models then add is ``editspec eval --spelling`` against ``--no-spelling``. Tune on
a set you do not report (FCE dev).
"""

from __future__ import annotations

import argparse
import itertools

from editspec.evaluation import ErrantEvaluator
from editspec.spelling import Speller


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m2", required=True)
    p.add_argument("--limit", type=int, default=None, help="first N sentences")
    p.add_argument("--distance2-letters", type=int, nargs="+", default=[6, 8, 99])
    p.add_argument("--slip-prior", type=float, nargs="+", default=[1.0, 4.0])
    p.add_argument("--common-zipf", type=float, nargs="+", default=[0.0, 3.3])
    args = p.parse_args()

    evaluator = ErrantEvaluator.from_m2(args.m2, limit=args.limit)
    speller = Speller()
    for letters, prior, zipf in itertools.product(args.distance2_letters, args.slip_prior, args.common_zipf):
        speller.distance2_letters, speller.slip_prior, speller.common_zipf = letters, prior, zipf
        outputs = [speller.respell(s) for s in evaluator.sources]
        result = evaluator.score(outputs)
        p_, r, f = result.scores()
        changed = sum(o != s for o, s in zip(outputs, evaluator.sources))
        print(f"distance2_letters {letters:3d}  slip_prior {prior:4.1f}  common_zipf {zipf:3.1f}: P {p_:.4f}  R {r:.4f}  F0.5 {f:.4f}  "
              f"TP {result.tp}  FP {result.fp}  sentences changed {changed}", flush=True)


if __name__ == "__main__":
    main()
