"""A resumable, weighted mixture of training sources, cut into length-sorted token-budget batches.

The order of training data is a pure function of the seed and a small *position*, so a run that
is killed and resumed from a checkpoint trains on exactly the batches an uninterrupted run would::

    sources   wi (weight 1), fce (weight 1), wiki (weight 4)
    draws     block b of 4096 draws = rng(seed, b).choice(3, p=[1/6, 1/6, 4/6])
              -> wiki wiki wi wiki fce wiki ...   the k-th draw takes the next example of that source
    source    map-style (M2, TSV): epoch e visits its rows in permutation rng(seed, source, e);
              sharded streams (synthetic): chunks taken round-robin from the shards, each shard
              a deterministic endless stream (``ShardedStream``), resumed by regenerating
    pool      pool_size draws -> sorted by (source length, target length), ties at random
              -> cut into batches of at most batch_tokens padded tokens (or batch_size examples)
              -> batch order shuffled with rng(seed, pool start)
    position  (draws before the pool, examples taken from each source before the pool,
               batches of the pool already trained on)

Sorting a pool by length before cutting it wastes little on padding (GEC sentences run from 3 to
100+ tokens), and shuffling the batches keeps the model from seeing lengths in order. A checkpoint
stores the position; resuming rebuilds the pool from its start and skips the batches done.
Under DDP every rank builds the same pools and takes every world_size-th batch.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

Example = dict[str, Any]
DRAW_BLOCK = 4096


def rng(*key: int) -> np.random.Generator:
    """An independent generator per key: the same numbers whenever the same key comes again."""
    return np.random.default_rng([int(k) for k in key])


@dataclass
class Position:
    drawn: int = 0  # mixture draws before the current pool
    consumed: dict[str, int] = field(default_factory=dict)  # examples taken per source before it
    batches_done: int = 0  # batches of the current pool already handed out

    def state_dict(self) -> dict:
        return {"drawn": self.drawn, "consumed": dict(self.consumed), "batches_done": self.batches_done}

    @classmethod
    def from_state(cls, state: dict) -> "Position":
        return cls(int(state["drawn"]), {k: int(v) for k, v in state["consumed"].items()},
                   int(state["batches_done"]))


class MapSource:
    """Featurized rows of a ``datasets.Dataset`` (or list), endlessly, a fresh permutation per epoch."""

    def __init__(self, name: str, rows, seed: int, shuffle: bool = True, chunk: int = 512):
        if len(rows) == 0:
            raise ValueError(f"training source {name!r} has no usable examples")
        self.name, self.rows, self.seed, self.shuffle, self.chunk = name, rows, seed, shuffle, chunk

    def __len__(self) -> int:
        return len(self.rows)

    def stream(self, start: int) -> Iterator[Example | None]:
        n = len(self.rows)
        epoch, i = divmod(start, n)
        name_key = int.from_bytes(self.name.encode()[:8].ljust(8, b"\0"), "little")
        while True:
            order = rng(self.seed, name_key, epoch).permutation(n) if self.shuffle else np.arange(n)
            for a in range(i, n, self.chunk):
                idx = [int(j) for j in order[a:a + self.chunk]]
                got = self.rows[idx] if hasattr(self.rows, "column_names") else [self.rows[j] for j in idx]
                if isinstance(got, dict):  # a datasets batch: columns -> rows
                    got = [dict(zip(got, values)) for values in zip(*got.values())]
                yield from got
            epoch, i = epoch + 1, 0


class ShardedStream:
    """Round-robin chunks of several endless shard streams, optionally made by worker processes.

    Item k of the stream is item ``(j // S) * chunk + k % chunk`` of shard ``j % S``, where
    ``j = k // chunk`` and S is the number of shards: the order depends on neither the number
    of workers nor their timing. ``produce(shard, start)`` (picklable) yields the shard's items
    from ``start`` on; worker p makes the chunks of shards p, p + workers, ... in stream order
    and hands them over through its own queue, so the main process reads them in order.
    """

    def __init__(self, name: str, shards: Sequence, produce: Callable[[Any, int], Iterator[Example | None]],
                 chunk: int = 64, workers: int = 0):
        self.name, self.shards, self.produce, self.chunk, self.workers = name, list(shards), produce, chunk, workers

    def _shard_starts(self, j: int) -> list[int]:
        """Item index in each shard where global chunk j (and the chunks after it) begin."""
        S = len(self.shards)
        return [(j // S + (1 if s < j % S else 0)) * self.chunk for s in range(S)]

    def stream(self, start: int) -> Iterator[Example | None]:
        j, drop = divmod(start, self.chunk)
        chunks = self._in_process(j) if self.workers <= 0 else self._from_workers(j)
        first = True
        for chunk in chunks:
            yield from (chunk[drop:] if first else chunk)
            first = False

    def _in_process(self, j: int) -> Iterator[list]:
        S, starts = len(self.shards), self._shard_starts(j)
        gens = [self.produce(shard, starts[s]) for s, shard in enumerate(self.shards)]
        while True:
            yield list(itertools.islice(gens[j % S], self.chunk))
            j += 1

    def _from_workers(self, j: int) -> Iterator[list]:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # fork after torch has started threads can deadlock
        n = min(self.workers, len(self.shards))
        # deep queues: workers keep producing while the trainer works through a full pool (a
        # shallow one stalled a GPU run at every pool refill, ~3% GPU use)
        queues = [ctx.Queue(maxsize=256) for _ in range(n)]
        procs = [ctx.Process(target=_shard_worker, daemon=True,
                             args=(self.produce, self.shards, self.chunk, j, p, n, queues[p]))
                 for p in range(n)]
        for proc in procs:
            proc.start()
        try:
            while True:
                p = (j % len(self.shards)) % n
                got_j, items = queues[p].get()
                if isinstance(items, BaseException):
                    raise RuntimeError(f"data worker {p} of source {self.name!r} failed") from items
                assert got_j == j, (got_j, j)
                yield items
                j += 1
        finally:
            for proc in procs:
                proc.kill()


def _shard_worker(produce, shards, chunk, j, p, n, queue) -> None:
    S = len(shards)
    mine = [s for s in range(S) if s % n == p]
    starts = [(j // S + (1 if s < j % S else 0)) * chunk for s in range(S)]
    gens = {s: produce(shards[s], starts[s]) for s in mine}
    try:
        while True:
            s = j % S
            if s % n == p:
                queue.put((j, list(itertools.islice(gens[s], chunk))))
            j += 1
    except BaseException as e:  # let the main process report it
        queue.put((j, e))


@dataclass
class Batching:
    lengths: Callable[[Example], tuple[int, int]]  # (source tokens, target tokens) of an example
    batch_tokens: int | None = 4096  # padded source + target tokens per batch
    batch_size: int | None = None  # or a fixed number of examples
    max_batch_size: int = 512

    def cut(self, pool: Sequence[Example], generator: np.random.Generator) -> list[list[Example]]:
        lens = [self.lengths(ex) for ex in pool]
        tiebreak = generator.permutation(len(pool))
        order = sorted(range(len(pool)), key=lambda k: (lens[k][0], lens[k][1], tiebreak[k]))
        batches, current, src_max, tgt_max = [], [], 0, 0
        for k in order:
            s, t = lens[k]
            n = len(current) + 1
            if self.batch_size is not None:
                full = n > self.batch_size
            else:
                full = n > self.max_batch_size or n * (max(src_max, s) + max(tgt_max, t)) > self.batch_tokens
            if full and current:
                batches.append(current)
                current, src_max, tgt_max = [], 0, 0
            current.append(pool[k])
            src_max, tgt_max = max(src_max, s), max(tgt_max, t)
        if current:
            batches.append(current)
        return [batches[j] for j in generator.permutation(len(batches))]


class Mixture:
    """Weighted draws from several sources, pooled and batched; see the module docstring."""

    def __init__(self, sources: Sequence[MapSource | ShardedStream], weights: Sequence[float],
                 batching: Batching, seed: int, pool_size: int = 4096):
        if len(sources) != len(weights) or not sources:
            raise ValueError("need one weight per source and at least one source")
        if len({s.name for s in sources}) != len(sources):
            raise ValueError("training source names must be unique")
        w = np.asarray(weights, dtype=np.float64)
        if (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"source weights must be >= 0 and not all 0, got {list(weights)}")
        self.sources, self.p = list(sources), w / w.sum()
        self.batching, self.seed, self.pool_size = batching, seed, pool_size

    def _choices(self, start: int, n: int) -> np.ndarray:
        """Source index of draws start .. start + n - 1."""
        out = []
        for block in range(start // DRAW_BLOCK, (start + n - 1) // DRAW_BLOCK + 1):
            out.append(rng(self.seed, 7, block).choice(len(self.sources), DRAW_BLOCK, p=self.p))
        offset = start - (start // DRAW_BLOCK) * DRAW_BLOCK
        return np.concatenate(out)[offset:offset + n]

    def batches(self, position: Position | None = None,
                log: Callable[[str], None] | None = None) -> Iterator[tuple[list[Example], Position]]:
        """Endless (batch, position after it); examples carry ``_id`` = "source:index". ``log``
        hears how long the first pools took to draw and cut (a lease's start-up: issue 53)."""
        position = position or Position()
        consumed = {s.name: position.consumed.get(s.name, 0) for s in self.sources}
        streams = {s.name: s.stream(consumed[s.name]) for s in self.sources}
        drawn, skip = position.drawn, position.batches_done
        t0 = time.perf_counter()
        for pools in itertools.count():
            start = Position(drawn, dict(consumed), 0)
            pool = []
            for choice in self._choices(drawn, self.pool_size):
                name = self.sources[choice].name
                while True:  # the draw takes the source's next usable example
                    ex = next(streams[name])
                    consumed[name] += 1
                    if ex is not None:
                        break
                pool.append({**ex, "_id": f"{name}:{consumed[name] - 1}"})
            drawn += self.pool_size
            t1 = time.perf_counter()
            batches = self.batching.cut(pool, rng(self.seed, 11, start.drawn))
            if log and (pools < 3 or pools % 50 == 0):
                log(f"pool {pools}: {len(pool)} drawn in {t1 - t0:.1f} s, cut into {len(batches)} batches in "
                    f"{time.perf_counter() - t1:.1f} s")
            for k in range(skip, len(batches)):
                yield batches[k], Position(start.drawn, start.consumed, k + 1)
            skip, t0 = 0, time.perf_counter()


def take(stream: Iterator, n: int) -> list:
    return list(itertools.islice(stream, n))
