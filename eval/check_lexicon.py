"""Whether the spelling step respells alike from its on-disk index and from symspellpy's
dictionaries built in memory (``editspec.pre.lexicon``), on every line of a set::

    python -m eval.check_lexicon --m2 ../shared/data/wi_locness/ABCN.dev.gold.bea19.m2
    4384 lines, 0 respelled differently

Prints the first lines that differ, and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import sys

from editspec.profiling.sentences import read_data
from editspec.pre.spelling import Speller


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m2", required=True, help="M2 file (its sources), source<TAB>target lines, or plain lines")
    args = p.parse_args()
    lines = read_data(args.m2)[0]
    indexed, memory = Speller(), Speller(index=False)
    differ = [(line, a, b) for line in lines if (a := indexed.respell(line)) != (b := memory.respell(line))]
    for line, a, b in differ[:10]:
        print(f"{line!r}\n  index:  {a!r}\n  memory: {b!r}")
    print(f"{len(lines)} lines, {len(differ)} respelled differently")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
