"""Synthetic pairs per second that a recipe's data workers deliver to the trainer.

A GPU trains the small models faster than the CPU makes their data (one H100 run drew 2,200
pairs/s and sat at ~3% use), so this is the number to check before a lease:

    python training/data_speed.py --config configs/t5-small-gpu-pretrain.yaml --workers 2 --parts 2

Counts featurized pairs taken from the recipe's first synthetic source for ``--seconds``, after a
warm-up that starts the workers; ``--workers``/``--parts`` override the recipe's.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train as T  # noqa: E402


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True)
    p.add_argument("--data-dir", default=None, help="default: $EDITSPEC_DATA or ../shared/data")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--parts", type=int, default=None)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--warmup", type=int, default=2000, help="pairs taken before the clock starts")
    args = p.parse_args(argv)

    from editspec.data.corpora import data_dir

    cfg = T.load_config(args.config, [])
    spec = dict(next(s for s in cfg["data"]["sources"] if s.get("type") == "synthetic"))
    if args.parts is not None:
        spec["parts"] = args.parts
    workers = cfg["data"]["workers"] if args.workers is None else args.workers
    kind = T.ModelKind(cfg["model"]["type"])
    source = T.synthetic_source(spec, data_dir(args.data_dir), kind, T.resolve(cfg["model"]["tokenizer"]),
                                cfg["data"]["max_length"], cfg["train"]["seed"], workers)
    stream = source.stream(0)
    for _ in itertools.islice(stream, args.warmup):
        pass
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < args.seconds:
        next(stream)
        n += 1
    rate = n / (time.perf_counter() - start)
    print(f"{kind.name}: {rate:.0f} pairs/s ({workers} workers, {len(source.shards)} streams: "
          f"{spec.get('parts', 1)} parts per shard)")
    return rate


if __name__ == "__main__":
    main()
