"""Pick how many rounds of correction to run on a dev set, and optionally store it with the model.

    python -m eval.tune_rounds editspec/models/default --m2 ../shared/data/fce/fce.dev.gold.bea19.m2 \
        [--mode speculative] [--rounds 4] [--write]

With ``rounds`` N, ``Corrector`` corrects the units that a round changed again, N rounds at most
(``Corrector.correct_rounds``): "He go to school yesterday." may need "goes" before "went" is
within the model's reach. This script runs the rounds once, scores the output after each with
ERRANT as ``editspec eval`` does, and prints P/R/F0.5 and how many units each round changed.
``--write`` stores the best N as ``rounds`` in the bundle's ``corrector_config.json``, which
``Corrector.from_pretrained`` reads. The guard applies in each round as that file sets it. Tune on a set you do not report (FCE dev; the README reports W&I dev, FCE test, CoNLL-2013
and JFLEG dev).
"""

from __future__ import annotations

import argparse
import time

from tqdm import tqdm

from editspec.pre import segment
from editspec.corrector import Corrector
from editspec.evaluation.errant import ErrantEvaluator
from eval.tuning import bundle_options, pick_best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bundle_options(p)
    p.add_argument("--rounds", type=int, default=3, help="the most rounds to try")
    p.add_argument("--spelling", action=argparse.BooleanOptionalAction, default=None,
                   help="the spelling step before the model (default: the bundle's corrector_config.json)")
    args = p.parse_args()

    corrector = Corrector.from_pretrained(args.model, mode=args.mode, batch_size=args.batch_size,
                                          rounds=args.rounds, spelling=args.spelling)
    evaluator = ErrantEvaluator.from_m2(args.m2, limit=args.limit)
    spans = segment.segment_lines(evaluator.sources, corrector.limits)
    units = segment.unit_texts(evaluator.sources, spans)
    print(f"{len(evaluator)} sentences, {len(units)} units, mode {corrector.mode}, "
          f"guard {corrector.config.max_edit_words}, spelling {'on' if corrector.config.spelling else 'off'}")
    scores, before = {}, units
    started = time.perf_counter()
    with tqdm(total=sum(map(len, units)), unit="char", desc="round 1") as bar:
        rounds = corrector.correct_rounds(units, bar.update, segment.places(evaluator.sources, spans))
        for n, done in enumerate(rounds, 1):
            after = [u.output for u in done]
            bar.close()  # the later rounds read only what changed
            result = evaluator.score(segment.rejoin_lines(evaluator.sources, spans, after))
            scores[n] = result.scores()
            changed = sum(a != b for a, b in zip(after, before))
            before = after
            tqdm.write(f"rounds {n}: P {scores[n][0]:.4f}  R {scores[n][1]:.4f}  F0.5 {scores[n][2]:.4f}  "
                       f"TP {result.tp}  FP {result.fp}  units changed by this round {changed}  "
                       f"({time.perf_counter() - started:.0f} s)")
    pick_best(scores, "rounds", len(evaluator), args.model if args.write else None)


if __name__ == "__main__":
    main()
