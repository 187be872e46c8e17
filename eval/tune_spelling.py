"""Score the spelling step alone (no model) on a dev set, for the settings of ``Speller``.

    python -m eval.tune_spelling --m2 ../shared/data/fce/fce.dev.gold.bea19.m2 \
        [--distance2-letters 6 8 99] [--slip-prior 1 4]

``editspec.pre.spelling.Speller`` respells words no dictionary holds; this prints ERRANT P/R/F0.5 (as
``editspec eval`` scores) of its output alone for each pair of settings: words of
``--distance2-letters`` letters or more may be two edits from their candidate (99: one edit only),
and ``--slip-prior`` weighs candidates that differ by letters left out, added or swapped (1: no
prior), and a word wordfreq counts at ``--common-zipf`` or more is left alone though
symspellpy's dictionary lacks it (0: off). What the models then add is ``editspec eval --spelling`` against ``--no-spelling``. Tune on
a set you do not report (FCE dev).

With ``--model DIR`` (a bundle, or one checkpoint) the model whose output the bundle returns
chooses each word's respelling among the rule's first ``--choices`` (the rule's own choice
included): the one whose sentence it scores highest (``Corrector.scorer``: log P of the respelled
sentence given the sentence as written), each word judged with the others at the rule's choice.
``--margin`` nats more than the rule's choice are needed to override it.
"""

from __future__ import annotations

import argparse
import itertools

from editspec.corrector import Corrector
from editspec.evaluation.errant import ErrantEvaluator
from editspec.pre.spelling import Choose, Slot, Speller, fill


def model_choice(model_dir: str, margin: float) -> Choose:
    """A ``Choose`` that asks the model of ``model_dir`` (see the module docstring)."""
    corrector = Corrector.from_pretrained(model_dir)
    score = corrector.scorer()

    def choose(written: str, text: str, slots: list[Slot]) -> list[str]:
        rule = [slot.options[0] for slot in slots]
        tried = [(i, option) for i, slot in enumerate(slots) for option in slot.options[1:]]
        if not tried:
            return rule
        variants = [fill(text, slots, rule)] + [fill(text, slots, rule[:i] + [option] + rule[i + 1:])
                                                for i, option in tried]
        scores = score([written] * len(variants), variants)
        if None in scores:
            return rule
        chosen, best = list(rule), [scores[0] + margin] * len(slots)
        for (i, option), value in zip(tried, scores[1:]):
            if value > best[i]:
                chosen[i], best[i] = option, value
        return chosen

    return choose


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m2", required=True)
    p.add_argument("--limit", type=int, default=None, help="first N sentences")
    p.add_argument("--distance2-letters", type=int, nargs="+", default=[6, 8, 99])
    p.add_argument("--slip-prior", type=float, nargs="+", default=[1.0, 4.0])
    p.add_argument("--common-zipf", type=float, nargs="+", default=[0.0, 3.3])
    p.add_argument("--model", help="a model chooses among the rule's candidates (see above)")
    p.add_argument("--choices", type=int, default=6, help="candidates per word the model sees")
    p.add_argument("--margin", type=float, default=0.0, help="nats over the rule's choice to override it")
    args = p.parse_args()

    evaluator = ErrantEvaluator.from_m2(args.m2, limit=args.limit)
    speller = Speller(choices=args.choices)
    choose = model_choice(args.model, args.margin) if args.model else None
    for letters, prior, zipf in itertools.product(args.distance2_letters, args.slip_prior, args.common_zipf):
        speller.distance2_letters, speller.slip_prior, speller.common_zipf = letters, prior, zipf
        outputs = [speller.respell(s, choose=choose) for s in evaluator.sources]
        result = evaluator.score(outputs)
        p_, r, f = result.scores()
        changed = sum(o != s for o, s in zip(outputs, evaluator.sources))
        print(f"distance2_letters {letters:3d}  slip_prior {prior:4.1f}  common_zipf {zipf:3.1f}: P {p_:.4f}  R {r:.4f}  F0.5 {f:.4f}  "
              f"TP {result.tp}  FP {result.fp}  sentences changed {changed}", flush=True)


if __name__ == "__main__":
    main()
