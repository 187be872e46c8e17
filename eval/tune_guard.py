"""Pick the guard's ``max_edit_words`` on a dev set, and optionally store it with the model.

    python -m eval.tune_guard editspec/models/default --m2 ../shared/data/fce/fce.dev.gold.bea19.m2 \
        [--mode speculative] [--limits 0 1 2 3 4 5 6 8 10] [--write]

The guard (``editspec.post.checks.guard``) keeps a sentence as written when the model's output
rewrites more than N words in one edit: a small model that loses its place repeats a phrase or
skips half the sentence, and its other edits in that sentence are then unreliable too. This
script corrects the dev set's sentence units once without the guard, then applies it for each N
(0 = off) exactly as ``Corrector`` does (per unit, before rejoining; with the spelling step, the
made-up-word check after it), scores each with ERRANT as
``editspec eval`` does, and prints P/R/F0.5, the number of units kept as written, and what the
guard would cost a perfect corrector: the share of gold-corrected sentences (annotator 0, whole
sentences) it would keep as written. ``--write`` stores the
best N as ``max_edit_words`` in the bundle's ``corrector_config.json``, which
``Corrector.from_pretrained`` reads. It
tunes one round of correction, without rescoring, which comes after the guard
(``eval.tune_rounds`` tunes more rounds, with the guard it finds). Tune
on a set you do not report (the README: FCE dev for tuning; W&I dev, FCE test, CoNLL-2013 and
JFLEG dev reported).
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Callable, Iterator
from unittest import mock

from editspec.pre import segment
from editspec.data.corpora import read_m2
from editspec.corrector import Corrector
from editspec.post.diff import Correction
from editspec.post.checks import guard, keep_content_words, real_words
from editspec.evaluation.errant import ErrantEvaluator
from editspec.evaluation.whole_set import correct_all
from editspec.pre.spelling import load_speller, respell_all
from eval.tuning import bundle_options, pick_best


def apply_guard(sources: list[str], spans: list[list[tuple[int, int]]], units: list[str],
                raw: list[str], limit: int, knows: Callable[[str], bool] | None = None) -> tuple[list[str], int]:
    """(the sources' outputs with the guard applied per unit as ``Corrector`` does, units kept);
    with ``knows`` (the spelling step's dictionary), made-up words are undone after it, likewise."""
    kept = [guard(Correction.of(u, o), limit) for u, o in zip(units, raw)]
    held = sum(k.output != o for k, o in zip(kept, raw))
    kept = [keep_content_words(k) for k in kept]  # after the guard, as the corrector checks
    if knows is not None:
        kept = [real_words(k, knows) for k in kept]
    return segment.rejoin_lines(sources, spans, [k.output for k in kept]), held


@contextlib.contextmanager
def model_edits() -> Iterator[None]:
    """A corrector's outputs with the model's own edits, content-word deletions too: the guard
    judges those, and the checks after it (``keep_content_words``) are ``apply_guard``'s."""
    with mock.patch("editspec.steps.keep_content_words", lambda c: c):
        yield


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bundle_options(p)
    p.add_argument("--limits", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5, 6, 8, 10],
                   help="values of max_edit_words to try (0: no guard)")
    args = p.parse_args()

    corrector = Corrector.from_pretrained(args.model, mode=args.mode, batch_size=args.batch_size,
                                          max_edit_words=0, rounds=1, rescore=False)
    evaluator = ErrantEvaluator.from_m2(args.m2, limit=args.limit)
    spans = segment.segment_lines(evaluator.sources, corrector.limits)
    units = segment.unit_texts(evaluator.sources, spans)
    knows = None
    if corrector.config.spelling:  # the guard compares the model's output with its (respelled) input
        units = respell_all(units, segment.places(evaluator.sources, spans))
        corrector.config = corrector.config.replace(spelling=False)
        knows = load_speller().knows
    with model_edits():
        raw, seconds = correct_all(corrector.correct_units, units, args.batch_size * 4, progress=True,
                                   desc=corrector.mode)
    print(f"{len(evaluator)} sentences, {len(units)} units, mode {corrector.mode}: {seconds:.0f} s")
    gold = [(row["source"], row["target"]) for row in read_m2(args.m2).select(range(len(evaluator)))]
    gold = [(s, t) for s, t in gold if s != t]

    scores = {}
    for limit in args.limits:
        outputs, held = apply_guard(evaluator.sources, spans, units, raw, limit, knows)
        result = evaluator.score(outputs)
        scores[limit] = result.scores()
        gold_held = sum(guard(Correction.of(s, t), limit).output != t for s, t in gold) / max(len(gold), 1)
        print(f"max_edit_words {limit:3d}: P {scores[limit][0]:.4f}  R {scores[limit][1]:.4f}  "
              f"F0.5 {scores[limit][2]:.4f}  TP {result.tp}  FP {result.fp}  units kept as written {held}  "
              f"gold corrections it would keep as written {gold_held:.1%}", flush=True)
    pick_best(scores, "max_edit_words", len(evaluator), args.model if args.write else None)


if __name__ == "__main__":
    main()
