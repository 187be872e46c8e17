"""Train the project tokenizer: a SentencePiece unigram model with T5 sentinels as EdiT5 markers.

It learns from natural text, the form every model sees (``editspec.text``): the W&I+LOCNESS and
FCE training sets, sources and targets detokenized, so learner spellings get pieces too, plus N
Wikipedia sentences for clean, broad vocabulary. Dev and test sets are left out.

    python -m training.train_tokenizer                       # -> runs/tokenizer/ (models trained on it ship it: training.ship)
    python -m training.train_tokenizer --wiki-sentences 50000 --out runs/tok
"""

from __future__ import annotations

import argparse
import itertools
import lzma
import time
from pathlib import Path

from editspec.data.corpora import data_dir, read_m2
from editspec.tokenization.tokens import marker_ids, train_tokenizer
from training.synthetic.pairs import WIKI_DIR

REPO = Path(__file__).resolve().parents[1]

LEARNER_TRAIN = ["wi_locness/ABC.train.gold.bea19.m2", "fce/fce.train.gold.bea19.m2"]


def wikipedia(root: Path, n: int):
    """The first ``n`` sentences of the (already shuffled) Wikipedia shards, in shard order."""
    def lines():
        for shard in sorted((root / WIKI_DIR).glob("enwiki_sentences.*.txt.xz")):
            with lzma.open(shard, "rt", encoding="utf-8") as f:
                yield from (line.rstrip("\n") for line in f)
    return itertools.islice(lines(), n)


def learner(root: Path):
    for rel in LEARNER_TRAIN:
        for row in read_m2(root / rel):
            yield row["source"]
            if row["target"] != row["source"]:
                yield row["target"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="corpus folder (default: $EDITSPEC_DATA or ../shared/data)")
    parser.add_argument("--out", default=str(REPO / "runs" / "tokenizer"))
    parser.add_argument("--vocab-size", type=int, default=16000)
    parser.add_argument("--extra-ids", type=int, default=256, help="T5 sentinels = EdiT5 position markers")
    parser.add_argument("--wiki-sentences", type=int, default=300_000)
    args = parser.parse_args(argv)

    start = time.time()
    root = data_dir(args.data_dir)
    texts = list(learner(root))
    n_learner = len(texts)
    texts.extend(wikipedia(root, args.wiki_sentences))
    print(f"{n_learner} learner sentences + {len(texts) - n_learner} Wikipedia sentences "
          f"({time.time() - start:.0f} s)", flush=True)
    tok = train_tokenizer(texts, args.out, vocab_size=args.vocab_size, extra_ids=args.extra_ids)
    print(f"saved {args.out}: {len(tok)} tokens, {len(marker_ids(tok))} markers "
          f"({time.time() - start:.0f} s in all)")


if __name__ == "__main__":
    main()
