"""How often a model's edits write a word no dictionary holds, and how often such an edit is right.

``corrector.real_words`` undoes those edits (with the spelling step on); this counts them in a
hypothesis M2 written without that check, against the gold M2, with the check's own rules
(``corrector.made_up_words``: not in the source sentence, unknown to ``Speller.knows``):

    editspec eval --m2 GOLD.m2 --mode t5 --save-m2 hyp.m2      # at commit dae6dd7, before the check
    python eval/made_up_words.py GOLD.m2 hyp.m2 [--list]

An edit is right when the gold M2 holds the same span and correction (annotator 0, as ERRANT's
span-based scores count a single-annotator set).
"""

from __future__ import annotations

import argparse

from editspec.data.m2 import SKIP_TYPES, parse_m2
from editspec.text.guard import made_up_words
from editspec.text.spelling import load_speller


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gold")
    p.add_argument("hyp", help="hypothesis M2 (editspec eval --save-m2)")
    p.add_argument("--list", action="store_true", help="print each such edit")
    args = p.parse_args()
    knows = load_speller().knows
    right = wrong = 0

    def first_annotators(path: str):  # (source tokens, {(start, end, correction)}) per sentence
        with open(path, encoding="utf-8") as f:
            for source, edits in parse_m2(f):
                yield source, {(a, b, " ".join(c)) for a, b, kind, c, who in edits
                               if kind not in SKIP_TYPES and who == 0}

    for (source, gold), (_, hyp) in zip(first_annotators(args.gold), first_annotators(args.hyp), strict=True):
        for start, end, correction in sorted(hyp):
            if made_up_words(" ".join(source), correction, knows):
                ok = (start, end, correction) in gold
                right, wrong = right + ok, wrong + (not ok)
                if args.list:
                    print("right" if ok else "wrong", " ".join(source[start:end]), "->", correction)
    print(f"edits writing a made-up word: {right + wrong}, right {right}, wrong {wrong}")


if __name__ == "__main__":
    main()
