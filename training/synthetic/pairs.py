"""Streams of synthetic pairs over the Wikipedia sentence shards, reproducible line by line.

Each line of each shard gets its own RNG, seeded by (seed, shard file name, line number), so a
pair is the same whichever shards are read, in whatever order, by however many workers::

    wikipedia_en_sentences/enwiki_sentences.00.txt.xz   line 0: "In 2013, the total housing ..."
    synthetic_pairs(folder, seed=7, m2_for_rates=W&I train M2)
        -> {"source": "In 2013 the total housnig ...", "target": "In 2013, the total housing ..."}
    synthetic_pairs(folder, 7, shards=[2, 0])           -> shard 2's pairs, then shard 0's, the same
    synthetic_pairs(folder, 7, shards=[1], part=q, parts=3)   -> lines n of shard 1 with n % 3 == q
    synthetic_pairs(folder, 7, patterns=table path)     -> learners' patterns replayed (replay.py)
    synthetic_pairs(folder, 7, passes=None)             -> endlessly: pass k with seed 7 + 1000 k

``synthetic_dataset`` is the same stream as a ``datasets.IterableDataset`` with one shard per
file. The Corruptor's calibration sentences are the first lines of the first shard, the same for
every worker and shard selection.
"""

from __future__ import annotations

import itertools
import lzma
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

from datasets import IterableDataset

from training.synthetic.corruptor import Corruptor
from training.synthetic.patterns import load_table
from training.synthetic.profile import profile_of
from training.synthetic.replay import Replayer

WIKI_DIR = "wikipedia_en_sentences"  # inside the data directory (editspec.data.corpora.data_dir)
WI_TRAIN_M2 = "wi_locness/ABC.train.gold.bea19.m2"
CALIBRATION_SENTENCES = 300
PASS_SEED = 1000  # pass k over the lines draws its errors with seed + 1000 * k


def sentence_rng(seed: int, shard: str, line: int) -> random.Random:
    """The RNG for one sentence: a function of the seed, the shard file name and the line only."""
    return random.Random(f"{seed}/{shard}/{line}")


def shard_files(data_dir: str | Path, shards: Sequence[int | str] | None = None) -> list[Path]:
    """The *.txt.xz (or *.txt) shards of data_dir, sorted; shards selects by index or file name."""
    data_dir = Path(data_dir)
    files = sorted(data_dir.glob("*.xz")) or sorted(data_dir.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no *.xz or *.txt sentence shards in {data_dir}")
    if shards is None:
        return files
    by_name = {f.name: f for f in files}
    return [files[s] if isinstance(s, int) else by_name[Path(s).name] for s in shards]


def read_lines(path: Path) -> Iterator[str]:
    """The lines of a shard (xz-compressed or plain), without their newlines."""
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


def _calibration(data_dir: str | Path) -> list[str]:
    """The first lines of the data's first shard: the same for every worker and shard selection."""
    lines = (x for x in read_lines(shard_files(data_dir)[0]) if x.strip())
    return list(itertools.islice(lines, CALIBRATION_SENTENCES))


def generator(m2_for_rates: str | Path | None, calibration: Sequence[str], error_rate: float = 1.0,
              patterns: str | Path | None = None) -> Corruptor | Replayer:
    """What corrupts the sentences: the rules alone (``Corruptor``), or with a pattern table the
    learners' patterns and the rules for the rest (``Replayer``); rates from the M2 file's profile."""
    profile = profile_of(m2_for_rates).scaled(error_rate)
    if patterns:
        return Replayer(load_table(str(patterns)), profile, calibration=calibration)
    return Corruptor(profile, calibration=calibration)


def _pairs_from_files(files: Sequence[str | Path], seed: int, m2_for_rates: str | Path | None,
                      calibration: Sequence[str], part: int = 0, parts: int = 1,
                      error_rate: float = 1.0, patterns: str | Path | None = None,
                      passes: int | None = 1) -> Iterator[dict[str, str]]:
    corruptor = generator(m2_for_rates, calibration, error_rate, patterns)
    for k in itertools.count() if passes is None else range(passes):
        for f in map(Path, files):
            for n, line in enumerate(read_lines(f)):
                if n % parts == part and line.strip():
                    yield corruptor.pair(line, sentence_rng(seed + PASS_SEED * k, f.name, n))


def synthetic_pairs(data_dir: str | Path, seed: int, shards: Sequence[int | str] | None = None,
                    m2_for_rates: str | Path | None = None, part: int = 0, parts: int = 1,
                    error_rate: float = 1.0, patterns: str | Path | None = None,
                    passes: int | None = 1) -> Iterator[dict[str, str]]:
    """Stream {"source": corrupted, "target": clean} over the shards, one line at a time; with
    ``parts`` > 1 only lines n with n % parts == part (so that more processes than shards can
    share the work: a line's pair is the same in every part split); ``error_rate`` scales the
    profile's edits per token (``ErrorProfile.scaled``); ``patterns``: a pattern table
    (``patterns.py``) to replay. ``passes`` (None: endless) goes over the lines again with seed
    ``seed + 1000 * pass``, with the same generator, so a pattern replayer finds each sentence's
    sites once."""
    yield from _pairs_from_files(shard_files(data_dir, shards), seed, m2_for_rates,
                                 _calibration(data_dir), part, parts, error_rate, patterns, passes)


def synthetic_dataset(data_dir: str | Path, seed: int, shards: Sequence[int | str] | None = None,
                      m2_for_rates: str | Path | None = None,
                      patterns: str | Path | None = None) -> IterableDataset:
    """A streaming ``datasets.IterableDataset`` of the pairs; its shards are the files, so a
    DataLoader's workers split the files between them (the pairs do not depend on that split)."""
    files = [str(f) for f in shard_files(data_dir, shards)]
    return IterableDataset.from_generator(
        _pairs_from_files,
        gen_kwargs={"files": files, "seed": seed,
                    "m2_for_rates": str(m2_for_rates) if m2_for_rates else None,
                    "calibration": tuple(_calibration(data_dir)),
                    "patterns": str(patterns) if patterns else None})
