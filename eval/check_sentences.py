"""Whether ``editspec.pre.sentencizer`` finds the sentences spaCy's blank English pipeline and
sentencizer find, on every line of a set (and on paragraphs of its lines joined five at a time)::

    python -m eval.check_sentences --m2 ../shared/data/wi_locness/ABCN.dev.gold.bea19.m2
    4384 lines and 877 paragraphs: 0 differ

Prints the first texts that differ, and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import sys

import spacy

from editspec.profiling.sentences import read_data
from editspec.pre.sentencizer import load


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m2", nargs="+", required=True, help="M2 files (their sources), source<TAB>target or plain lines")
    args = p.parse_args()
    lines = [line for path in args.m2 for line in read_data(path)[0]]
    texts = lines + [" ".join(lines[i:i + 5]) for i in range(0, len(lines), 5)]
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    ours = load()
    differ = [t for t in texts if [(s.start_char, s.end_char) for s in nlp(t).sents] != ours.sentences(t)]
    for text in differ[:10]:
        print(repr(text))
    print(f"{len(lines)} lines and {len(texts) - len(lines)} paragraphs: {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
