"""Look at synthetic pairs, measure their ERRANT types against the corpus's, or time the generator.

    python -m training.synthetic --n 4                 # print 4 pairs ("* " marks a changed one)
    * src: The BlueZ stack is included with most Linux kernels and were originaly developed with Qualcomm!
      tgt: The BlueZ stack is included with most Linux kernels and was originally developed by Qualcomm.
    python -m training.synthetic --measure 2000        # ERRANT types, synthetic vs W&I train
    python -m training.synthetic --bench 20000         # pairs per CPU-second

Rates come from W&I train's M2 file when the data directory has it (``--m2 none``: the rough
built-in table).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

from editspec.data.corpora import data_dir
from editspec.errors import EditspecError
from training.synthetic.lexicon import lexicon
from training.synthetic.measuring import comparison_table, m2_pairs, measure
from training.synthetic.pairs import WI_TRAIN_M2, WIKI_DIR, synthetic_pairs
from training.synthetic.profile import profile_of


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
    p.add_argument("--measure", type=int, default=0, metavar="N",
                   help="run ERRANT on N pairs and compare its type distribution with the M2 file's")
    p.add_argument("--bench", type=int, default=0, metavar="N", help="time generating N pairs")
    args = p.parse_args(argv)
    m2 = None if (args.m2 or "none").lower() == "none" else args.m2
    shards = [int(x) if x.isdigit() else x for x in args.shards] if args.shards is not None else None
    pairs = synthetic_pairs(args.data_dir, args.seed, shards, m2)
    if args.bench:
        lexicon()
        next(pairs)
        t0, c0 = time.perf_counter(), time.process_time()
        changed = sum(p["source"] != p["target"] for p in itertools.islice(pairs, args.bench))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        # CPU time is the fair measure on a shared machine; wall time is what this run took
        print(f"{args.bench} pairs: {args.bench / cpu:.0f} pairs per CPU-second on one core "
              f"({args.bench / wall:.0f}/s wall clock); {changed / args.bench:.1%} changed")
    if args.measure:
        columns = {"corpus (M2 gold)" if m2 else "fallback table": profile_of(m2)}
        if m2:  # the corpus's own pairs through ERRANT too: what the same measurement says of them
            corpus_pairs = m2_pairs(m2, args.measure, args.seed)
            columns["corpus via ERRANT"], _ = measure(corpus_pairs, tokenized=True)
        columns["synthetic via ERRANT"], n = measure(itertools.islice(pairs, args.measure))
        print(f"ERRANT types of {n} synthetic pairs" + (f" and {n} sentences of {m2}:" if m2 else ":"))
        print(comparison_table(columns))
    if not (args.bench or args.measure):
        for pair in itertools.islice(pairs, args.n):
            mark = "  " if pair["source"] == pair["target"] else "* "
            print(f"{mark}src: {pair['source']}\n  tgt: {pair['target']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
