"""Is one system's F0.5 really higher than another's on an M2 set? A paired bootstrap.

Shipping decisions here often turn on a few tenths of W&I dev F0.5 (two averages of the same runs
can differ by that much). This scores two output files against one gold M2 with ERRANT, as
``editspec eval --hyp`` does, and resamples the set's sentences
(``editspec.evaluation.stats.paired_bootstrap``)::

    editspec eval --m2 GOLD.m2 --model A --mode t5 --save-hyp a.txt     # and b.txt
    python -m eval.significance GOLD.m2 a.txt b.txt [--samples 1000] [--seed 0]

prints each system's P / R / F0.5, then B's F0.5 minus A's with its 95% interval and ``p``, the
share of resampled sets on which B does not beat A (a small p: B is better beyond the set's noise).
"""

from __future__ import annotations

import argparse
import json

from editspec.errors import EditspecError
from editspec.evaluation.errant import ErrantEvaluator
from editspec.evaluation.whole_set import read_lines
from editspec.evaluation.stats import paired_bootstrap


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gold", help="gold M2 file")
    p.add_argument("a", help="outputs of system A, one line per gold sentence")
    p.add_argument("b", help="outputs of system B")
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    try:
        evaluator = ErrantEvaluator.from_m2(args.gold)
        results = {}
        for name, path in (("A", args.a), ("B", args.b)):
            outputs = read_lines(path)
            if len(outputs) != len(evaluator):
                raise EditspecError(f"{path} has {len(outputs)} lines for {len(evaluator)} gold sentences")
            results[name] = evaluator.score(outputs)
            precision, recall, f05 = results[name].scores()
            print(f"{name} {path}: P {precision:.4f} R {recall:.4f} F0.5 {f05:.4f}")
    except EditspecError as e:
        raise SystemExit(f"significance: {e}") from None
    print(json.dumps(paired_bootstrap(results["A"], results["B"], args.samples, args.seed)))


if __name__ == "__main__":
    main()
