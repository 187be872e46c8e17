"""Look at synthetic pairs, measure their ERRANT types against the corpus's, or time the generators.

    python -m training.synthetic --n 4                 # print 4 pairs ("* " marks a changed one)
    * src: The BlueZ stack is included with most Linux kernels and were originaly developed with Qualcomm!
      tgt: The BlueZ stack is included with most Linux kernels and was originally developed by Qualcomm.
    python -m training.synthetic --measure 2000        # ERRANT types: W&I train, the rules, the patterns
    python -m training.synthetic --bench 20000         # pairs per CPU-second: the rules, the patterns

Rates come from W&I train's M2 file when the data directory has it (``--m2 none``: the rough
built-in table). The learners' patterns are replayed from the table ``python -m
training.synthetic.patterns build`` wrote (``--patterns``, default runs/synthetic/patterns.json.xz
when it exists; ``none``: the rules alone). --measure and --bench run both generators, the rules
alone (the generator before the patterns) and the patterns with the rules, on the same sentences.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

from editspec.data.corpora import data_dir
from editspec.errors import EditspecError
from training.synthetic.lexicon import lexicon
from training.synthetic.measuring import comparison_table, m2_pairs, measure, type_distance
from training.synthetic.pairs import WI_TRAIN_M2, WIKI_DIR, _calibration, generator, read_lines, sentence_rng, \
    shard_files, synthetic_pairs
from training.synthetic.patterns import DEFAULT_TABLE
from training.synthetic.profile import profile_of
from training.synthetic.replay import Replayer


def _lines(folder: str, shards: list | None, n: int) -> list[tuple[str, int, str]]:
    """The first n non-empty lines of the shards as (file name, line number, text)."""
    out = ((f.name, k, line) for f in shard_files(folder, shards) for k, line in enumerate(read_lines(f))
           if line.strip())
    return list(itertools.islice(out, n))


WARM_PASSES = 3


def bench(generators: dict, lines: list[tuple[str, int, str]], seed: int, rounds: int) -> None:
    """Pairs per CPU-second of each generator over the same lines, in turns (A B A B ...), medians;
    a pattern replayer twice: its first pass over the lines (finding each sentence's sites and the
    rules' places), and a pass after ``WARM_PASSES`` more (reusing them, as in a run's later epochs)."""
    def timed(g, s: int) -> float:
        c0 = time.process_time()
        for name, k, line in lines:
            g.pair(line, sentence_rng(s, name, k))
        return len(lines) / (time.process_time() - c0)

    rates: dict[str, list[float]] = {}
    for r in range(rounds):
        for label, g in generators.items():
            if isinstance(g, Replayer):
                g.cache.clear()
                rates.setdefault(f"{label}, first pass", []).append(timed(g, seed + r))
                for warm in range(1, WARM_PASSES + 1):
                    for name, k, line in lines:
                        g.pair(line, sentence_rng(seed + r + 1000 * warm, name, k))
                rates.setdefault(f"{label}, pass {WARM_PASSES + 2} (sites reused)", []).append(
                    timed(g, seed + r + 1000 * (WARM_PASSES + 1)))
            else:
                rates.setdefault(label, []).append(timed(g, seed + r))
    base = statistics.median(next(iter(rates.values())))
    print(f"{len(lines)} pairs x {rounds} rounds, one core, CPU time (medians; min-max):")
    for label, xs in rates.items():
        m = statistics.median(xs)
        print(f"  {label}: {m:.0f} pairs per CPU-second ({min(xs):.0f}-{max(xs):.0f}), {m / base:.2f}x")


def main(argv: list[str] | None = None) -> int:
    try:
        base = data_dir()
    except EditspecError:
        base = Path(".")
    p = argparse.ArgumentParser(prog="python -m training.synthetic",
                                description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20, help="pairs to print")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=str(base / WIKI_DIR), help="folder of sentence shards (*.txt.xz)")
    p.add_argument("--shards", nargs="*", default=None, help="shard indices or file names")
    p.add_argument("--m2", default=str(base / WI_TRAIN_M2) if (base / WI_TRAIN_M2).exists() else None,
                   help="M2 file for the error rates (default: W&I train if present; 'none': the "
                        "built-in rough table)")
    p.add_argument("--patterns", default=str(DEFAULT_TABLE) if DEFAULT_TABLE.exists() else None,
                   help="pattern table to replay (default: runs/synthetic/patterns.json.xz if built; 'none': "
                        "the rules alone)")
    p.add_argument("--error-rate", type=float, default=1.0, help="edits per token, times the profile's")
    p.add_argument("--measure", type=int, default=0, metavar="N",
                   help="run ERRANT on N pairs of each generator and compare their type distributions with "
                        "the M2 file's")
    p.add_argument("--bench", type=int, default=0, metavar="N", help="time generating N pairs with each generator")
    p.add_argument("--rounds", type=int, default=3, help="--bench: turns per generator")
    args = p.parse_args(argv)
    m2 = None if (args.m2 or "none").lower() == "none" else args.m2
    patterns = None if (args.patterns or "none").lower() == "none" else args.patterns
    shards = [int(x) if x.isdigit() else x for x in args.shards] if args.shards is not None else None
    if args.bench or args.measure:
        calibration = _calibration(args.data_dir)
        generators = {"rules": generator(m2, calibration, args.error_rate)}
        if patterns:
            generators["patterns + rules"] = generator(m2, calibration, args.error_rate, patterns)
            print(f"patterns: {patterns}; beta {generators['patterns + rules'].beta:.2f}")
    if args.bench:
        lexicon()
        bench(generators, _lines(args.data_dir, shards, args.bench), args.seed, args.rounds)
    if args.measure:
        lines = _lines(args.data_dir, shards, args.measure)
        columns = {"corpus (M2 gold)" if m2 else "fallback table": profile_of(m2).scaled(args.error_rate)}
        if m2:  # the corpus's own pairs through ERRANT too: what the same measurement says of them
            columns["corpus via ERRANT"], _ = measure(m2_pairs(m2, args.measure, args.seed), tokenized=True)
        for label, g in generators.items():
            columns[f"{label} via ERRANT"], n = measure(g.pair(line, sentence_rng(args.seed, name, k))
                                                        for name, k, line in lines)
        print(f"ERRANT types of {n} synthetic pairs" + (f" and {n} sentences of {m2}:" if m2 else ":"))
        print(comparison_table(columns))
        print("\nDistance between ERRANT type distributions (total variation: half the sum of the shares' "
              "differences; 0 = the same mix):")
        refs = [r for r in ("corpus (M2 gold)", "corpus via ERRANT") if r in columns]
        for label in [c for c in columns if c not in refs or c != refs[0]]:
            print(f"  {label}: " + "; ".join(f"{type_distance(columns[label], columns[r]):.3f} from {r}"
                                             for r in refs if r != label))
    if not (args.bench or args.measure):
        pairs = synthetic_pairs(args.data_dir, args.seed, shards, m2, error_rate=args.error_rate, patterns=patterns)
        for pair in itertools.islice(pairs, args.n):
            mark = "  " if pair["source"] == pair["target"] else "* "
            print(f"{mark}src: {pair['source']}\n  tgt: {pair['target']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
