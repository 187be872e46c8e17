"""The training pipeline's own costs on CPU, measured before a lease (the pipeline is tuned here,
not on the GPU): the loop's overhead per step with a tiny model, and the data workers' rates.

    python -m training.bench loop [--steps 200]         ms per step: the whole loop (training.train
                                                        on ready batches) against the bare forward,
                                                        backward and optimizer step on the same batches
    python -m training.bench workers [--seconds 20]     synthetic pairs/s of one worker process (one
                                                        core: corrupt + featurize), and ready-batch
                                                        examples/s of the loader's pooling and padding

On the lent GPU a step of the recipe's model takes milliseconds; the loop's overhead must stay a
small part of that, and workers x pairs/s per core must exceed the GPU's pairs/s (the 16-core
machine runs 12 workers and the loader).
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import torch

from editspec.data import corpora
from editspec.tokenization.tokens import load_tokenizer
from training import train as loop
from training.config import REPO_ROOT, load_config
from training.data import Errors, Featurizing, ready, ready_batches, synthetic_shard
from training.data_mixture import Batching, Position
from training.models import ModelKind, param_groups
from training.synthetic.pairs import WIKI_DIR, shard_files

TINY = REPO_ROOT / "configs" / "t5-tiny-test.yaml"


def synthetic_recipe(data_root: Path, sets: list[str]) -> dict:
    cfg = load_config(TINY, ["data.dev=null", "data.max_length=128", "data.batch_tokens=1024",
                             "data.pool_size=4096", *sets])
    cfg["data"]["sources"] = [{"name": "synthetic", "type": "synthetic", "path": WIKI_DIR, "shards": [0],
                               "m2_for_rates": "wi_locness/ABC.train.gold.bea19.m2"}]
    return cfg


def bench_loop(data_root: Path, steps: int) -> dict:
    torch.set_num_threads(1)
    cfg = synthetic_recipe(data_root, [f"train.max_steps={steps}", "train.log_every=10", "train.eval_every=0",
                                       f"train.save_every={steps}", "train.warmup_steps=0"])
    made = list(itertools.islice(ready_batches(cfg, data_root, Position(), log=lambda m: None), steps))

    class Premade:  # the loop's data source, with the data's own cost taken out
        def __init__(self, *_args, **_kwargs):
            self.it = iter(made)

        def next(self):
            return next(self.it), 0.0

        def close(self):
            pass

    with tempfile.TemporaryDirectory() as out, mock.patch.object(loop, "Batches", Premade):
        t0 = time.perf_counter()
        loop.Trainer(cfg, Path(out) / "run", str(data_root), resume=False).run()
        entries = [json.loads(x) for x in (Path(out) / "run" / "log.jsonl").read_text().splitlines()]
        whole = time.perf_counter() - t0
    loop_ms = 1000 / (sum(e["steps_per_s"] for e in entries[1:]) / max(len(entries) - 1, 1))

    model = ModelKind("t5").build(cfg["model"], load_tokenizer(REPO_ROOT / cfg["model"]["tokenizer"]))
    tc = cfg["train"]  # the loop's own optimizer settings, so that only the loop differs
    optimizer = torch.optim.AdamW(param_groups(model, tc["lr"], tc["weight_decay"], tc["position_bias_lr_scale"]),
                                  lr=tc["lr"], betas=tuple(tc["adam_betas"]))
    times = []
    for batch in made:
        t = time.perf_counter()
        inputs = batch.to(torch.device("cpu"))
        model(**inputs).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t)
    bare_ms = 1000 * sum(times[10:]) / max(len(times) - 10, 1)
    return {"steps": steps, "loop_ms_per_step": loop_ms, "bare_ms_per_step": bare_ms,
            "overhead_ms_per_step": loop_ms - bare_ms, "examples_per_batch": sum(b.examples for b in made) / len(made),
            "whole_run_s": whole}


def bench_workers(data_root: Path, seconds: float) -> dict:
    folder = data_root / WIKI_DIR
    shard = (shard_files(folder, [0])[0].name, 0, 1)
    tok_path = REPO_ROOT / "editspec/models/default/t5"
    pairs = synthetic_shard(shard, 0, Errors(str(folder), 0, str(data_root / "wi_locness/ABC.train.gold.bea19.m2")),
                            Featurizing(str(tok_path), "t5", 128))
    next(pairs)  # the lexicon and calibration load once per worker
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        next(pairs)
        n += 1
    per_core = n / (time.perf_counter() - t0)

    cfg = synthetic_recipe(data_root, ["data.batch_tokens=65536", "data.max_batch_size=2048", "data.pool_size=65536"])
    examples = [ex for ex in itertools.islice(pairs, 20000) if ex]
    kind = ModelKind("t5")
    batching = Batching(kind.lengths, cfg["data"]["batch_tokens"], None, cfg["data"]["max_batch_size"])
    t0 = time.perf_counter()
    for k, ex in enumerate(examples):
        ex["_id"] = f"s:{k}"
    cut = batching.cut(examples, np.random.default_rng(0))
    made = [ready(b, Position(), kind, 0, edits=False) for b in cut]
    loader = len(examples) / (time.perf_counter() - t0)
    return {"synthetic_pairs_per_s_per_core": per_core, "loader_examples_per_s": loader,
            "batches": len(made), "note": "12 workers on the lease machine give ~12x the first figure"}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m training.bench", description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("loop", "workers"))
    p.add_argument("--data-dir", help="corpus folder (default $EDITSPEC_DATA or ../shared/data)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seconds", type=float, default=20.0)
    args = p.parse_args(argv)
    data_root = corpora.data_dir(args.data_dir)
    result = bench_loop(data_root, args.steps) if args.what == "loop" else bench_workers(data_root, args.seconds)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
