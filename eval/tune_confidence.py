"""Pick EdiT5's keep, order or stop bias (GECToR's "confidence bias") on a dev set, and optionally store it.

    python -m eval.tune_confidence MODEL_DIR --m2 ../shared/data/fce/fce.dev.gold.bea19.m2 \
        --limit 2000 --keep-bias -2 -1 0 1 2 [--write]
    python -m eval.tune_confidence MODEL_DIR --m2 ... --stop-bias -2 -1 0 1 [--write]
    python -m eval.tune_confidence MODEL_DIR --m2 ... --order-bias 0 1 2 4 [--write]

A from-scratch EdiT5 can over-edit (F0.5 weighs precision twice as much as recall: a positive
bias on the KEEP logit gives fewer, surer edits) or, early in training, keep everything (a
negative bias lets its few confident deletions through). The stop bias does the same for
the insertion decoder: it is added to the EOS logit, so a negative one lets more insertions
through. The order bias is added to the pointer logit of each kept token's source-order successor:
a positive one lets the pointer network reorder only when it is sure. This script decodes the first ``--limit`` sentences once per value of the one bias
given (the other stays as configured), scores them with ERRANT (as ``editspec eval``), prints
P/R/F0.5 per value with what the bias governs: the word-order edits (ERRANT's R:WO) and the
deletions (U:*) made, and how many of them the gold edits contain, and with ``--write`` stores the best in MODEL_DIR/config.json
(``keep_bias``, ``order_bias`` or ``stop_bias``), which ``generate_edits`` uses by default. Tune on a set you do
not report (the README's numbers: FCE dev for tuning; W&I dev, FCE test, CoNLL-2013 and JFLEG
dev reported).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from editspec.corrector import Corrector
from editspec.evaluation.errant import ErrantEvaluator, ErrantResult
from editspec.evaluation.whole_set import evaluate
from eval.tuning import pick_best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", type=Path, help="an EdiT5 checkpoint directory")
    p.add_argument("--m2", required=True)
    p.add_argument("--limit", type=int, default=2000)
    knob = p.add_mutually_exclusive_group()
    knob.add_argument("--keep-bias", type=float, nargs="+", help="values (default 0 0.5 1 1.5 2 3)")
    knob.add_argument("--stop-bias", type=float, nargs="+", help="values of the insertion EOS bias")
    knob.add_argument("--order-bias", type=float, nargs="+", help="values of the source-order pointer bias")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--write", action="store_true", help="store the best value in config.json")
    args = p.parse_args()
    key, values = ("stop_bias", args.stop_bias) if args.stop_bias else \
        ("order_bias", args.order_bias) if args.order_bias else \
        ("keep_bias", args.keep_bias or [0.0, 0.5, 1.0, 1.5, 2.0, 3.0])

    corrector = Corrector.from_pretrained(edit5=args.model, mode="edit5", batch_size=args.batch_size)
    evaluator = ErrantEvaluator.from_m2(args.m2, limit=args.limit)
    scores = {}
    for bias in values:
        setattr(corrector.bundle.edit5.config, key, bias)
        result, _, seconds = evaluate(corrector.correct, evaluator)
        scores[bias] = result.scores()
        p_, r, f = scores[bias]
        print(f"{key} {bias:5.2f}: P {p_:.4f}  R {r:.4f}  F0.5 {f:.4f}  {governed(result)}  ({seconds:.0f} s)",
              flush=True)
    pick_best(scores, key, len(evaluator), args.model if args.write else None)


def governed(result: ErrantResult) -> str:
    """"reorderings 12 (gold 3), deletions 140 (gold 61)": the edits of the kinds the biases
    hold back, made (true + false positives) and in the gold edits (true positives)."""
    types = result.per_type(cat=3)
    made = lambda names: sum(types[n]["tp"] + types[n]["fp"] for n in names)
    right = lambda names: sum(types[n]["tp"] for n in names)
    reorder, delete = [n for n in types if n == "R:WO"], [n for n in types if n.startswith("U:")]
    return (f"reorderings {made(reorder)} (gold {right(reorder)}), "
            f"deletions {made(delete)} (gold {right(delete)})")


if __name__ == "__main__":
    main()
