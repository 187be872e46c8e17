"""Build the grammar step's n-gram language model (editspec/grammar/lm.py) from the Wikipedia
sentences and the corrected sides of W&I train and FCE train:

    python -m training.grammar_lm --data ../shared/data --out editspec/models/default/grammar_lm.bin

Counts every 1..4-gram exactly (64-bit hashes, per shard, merged), keeps those at or above each
order's count threshold, and writes 32-bit keys with one-byte log counts. ``--counts DIR`` keeps
the merged counts so that other thresholds can be tried with ``--from-counts``.
"""

from __future__ import annotations

import argparse
import lzma
import re
import time
import tempfile
from pathlib import Path

import numpy as np

from editspec.data.m2 import apply_edits, parse_block, read_blocks
from editspec.data.tokenized import detokenize
from editspec.grammar import lm as lmlib

LEARNER = ("wi_locness/ABC.train.gold.bea19.m2", "fce/fce.train.gold.bea19.m2")
_TOKEN_NL = re.compile(lmlib._TOKEN.pattern + r"|\n")


class Counter:
    """Exact n-gram counts over shards of text (one sentence a line)."""

    def __init__(self, order: int):
        self.order = order
        self.vocab: dict[str, int] = {lmlib.BOS: 0, lmlib.EOS: 1, "\n": 2}
        self.word_hashes = [lmlib.word_hash(lmlib.BOS), lmlib.word_hash(lmlib.EOS), 0]
        self.parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(order)]
        self.sentences = 0

    def add_text(self, text: str) -> None:
        vocab = self.vocab
        toks = _TOKEN_NL.findall(text.lower().replace("\u2019", "'"))
        ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in toks), np.int64, len(toks))
        new = list(vocab)[len(self.word_hashes):]
        self.word_hashes += [lmlib.word_hash(w) for w in new]
        nl = np.flatnonzero(ids == 2)
        self.sentences += len(nl)
        ids[nl] = 1  # "\n" -> </s>, then <s> begins the next sentence
        ids = np.insert(ids, np.concatenate([[0], nl + 1]), 0)[:-1] if len(nl) else ids
        self._count(np.asarray(self.word_hashes, np.uint64)[ids], ids == 1)

    def _count(self, hashes: np.ndarray, eos: np.ndarray) -> None:
        cs = np.concatenate([[0], np.cumsum(eos)])
        for n in range(1, self.order + 1):
            h = lmlib.ngram_hashes(hashes, n)
            if n > 1:  # no </s> before an n-gram's last word: it would cross into the next line
                h = h[cs[n - 1:n - 1 + len(h)] - cs[:len(h)] == 0]
            keys, counts = np.unique(h, return_counts=True)
            self.parts[n - 1].append((keys, counts.astype(np.uint32)))
            if len(self.parts[n - 1]) >= 4:  # merge as we go: common n-grams recur in every shard
                self.parts[n - 1] = [self.merged(n)]

    def merged(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        keys = np.concatenate([k for k, _ in self.parts[n - 1]])
        counts = np.concatenate([c for _, c in self.parts[n - 1]])
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        return keys[starts], np.add.reduceat(counts, starts, dtype=np.uint64).astype(np.uint32)


def learner_targets(data: Path) -> str:
    lines = []
    for rel in LEARNER:
        for block in read_blocks(data / rel):
            source, edits = parse_block(block)
            edits = [e for e in edits if str(e[4]) == "0"]
            lines.append(detokenize(" ".join(apply_edits(source, edits))))
    return "\n".join(lines) + "\n"


def count(data: Path, order: int, shards: int | None, out: Path) -> None:
    counter = Counter(order)
    files = sorted((data / "wikipedia_en_sentences").glob("enwiki_sentences.*.txt.xz"))[:shards]
    t0 = time.time()
    counter.add_text(learner_targets(data))
    for f in files:
        with lzma.open(f, "rt", encoding="utf-8") as fh:
            counter.add_text(fh.read())
        print(f"{f.name}: {counter.sentences:,} sentences, {len(counter.vocab):,} words, "
              f"{time.time() - t0:.0f} s", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1, order + 1):
        keys, counts = counter.merged(n)
        np.save(out / f"keys{n}.npy", keys)
        np.save(out / f"counts{n}.npy", counts)
        print(f"{n}-grams: {len(keys):,} distinct, {counts.sum():,} in all", flush=True)


def prune(counts_dir: Path, thresholds: list[int]) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    merged = [(np.load(counts_dir / f"keys{n}.npy"), np.load(counts_dir / f"counts{n}.npy"))
              for n in range(1, len(thresholds) + 1)]
    return tables(merged, thresholds)


def tables(merged: list[tuple[np.ndarray, np.ndarray]], thresholds: list[int]
           ) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    """The stored tables from exact (64-bit hash, count) per order: n-grams at or above each
    order's threshold, 32-bit keys, a collision keeping the larger count; and the token total."""
    out, total = [], int(merged[0][1].sum())
    for n, ((keys, counts), t) in enumerate(zip(merged, thresholds), 1):
        keep = counts >= t
        k32 = (keys[keep] >> np.uint64(32)).astype(np.uint32)
        v = np.minimum(np.round(lmlib.QUANT * np.log(counts[keep])), 255).astype(np.uint8)
        order = np.lexsort((-v.astype(np.int16), k32))
        k32, v = k32[order], v[order]
        first = np.concatenate([[True], k32[1:] != k32[:-1]])
        out.append((k32[first], v[first]))
        print(f"{n}-grams >= {t}: {first.sum():,} kept", flush=True)
    return out, total


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data")
    p.add_argument("--out", type=Path, default=Path("editspec/models/default/grammar_lm.bin"))
    p.add_argument("--counts", type=Path, default=Path(tempfile.gettempdir()) / "editspec-grammar-counts",
                   help="folder for the merged counts (about 2 GB for all shards)")
    p.add_argument("--from-counts", action="store_true", help="prune counts already in --counts")
    p.add_argument("--order", type=int, default=4)
    p.add_argument("--shards", type=int, default=None, help="first N Wikipedia shards (default: all)")
    p.add_argument("--min-count", type=int, nargs="+", default=[2, 3, 4, 4],
                   help="count thresholds per order, 1-gram first")
    a = p.parse_args(argv)
    if not a.from_counts:
        count(a.data, a.order, a.shards, a.counts)
    tables, total = prune(a.counts, a.min_count)
    lmlib.write_store(a.out, tables, total, {"min_count": a.min_count, "shards": a.shards})
    print(f"{a.out}: {a.out.stat().st_size / 1e6:.1f} MB, {total:,} tokens")


if __name__ == "__main__":
    main()
