"""Ray's cost against the local run: ``editspec correct`` on the same rows and threads, whole
processes, in turns, medians.

    python -m eval.ray_scaling --rows 200 2000 --repeats 2 --out reports/ray/scaling.json
    python -m eval.ray_scaling --rows 100 500 --flags "--mode edit5" --out reports/ray/scaling-edit5.json

    rows       the first N non-empty W&I dev sources (detokenized), as a .jsonl table (id, text),
               written in a temporary folder (no corpus text is kept)
    configs    local --threads 1 | --ray --actors 1 --threads 1 | local --threads 2 |
               --ray --actors 2 --threads 1 (local Ray of as many CPUs as the configs need)
    turns      every config once per round, rounds repeated (A B C D A B C D ...): a shared
               machine's load drifts, so each config sees the same drift
    measured   a process's wall time, start to exit; outputs checked equal to the first local
               run's (the table, byte for byte)
    fit        per config, seconds = fixed + rows x per-row (the medians at two sizes): fixed is
               start-up (imports, models, Ray), per-row is the steady rate; Ray's per-block cost
               is (per-row(ray) - per-row(local)) x ``BLOCK_ROWS`` (Ray's blocks are the local run's)

    ray cost   Ray's own cost a block (``--block-cost``): the same pipeline, 2 actors, with a
               callable that loads no model (``PassThrough``); the steady period between blocks
               times the actors, against the same work without Ray
    driver     what the driver alone passes: ``tables.read`` + ``tables.correct_table`` with a
               corrector that changes nothing (no model) + ``tables.write``, rows/s (``--driver``):
               the bound on any number of machines, as the driver reads and writes every row

Prints a Markdown table and the fit; ``--out`` keeps the numbers (reports/ray.md reads them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from editspec.data.corpora import data_dir
from editspec.data.m2 import read_blocks, source_tokens
from editspec.tables import BLOCK_ROWS
from editspec.data.tokenized import detokenize

CONFIGS = {
    "local-1t": ["--threads", "1"],
    "ray-1a-1t": ["--ray", "--actors", "1", "--threads", "1"],
    "local-2t": ["--threads", "2"],
    "ray-2a-1t": ["--ray", "--actors", "2", "--threads", "1"],
}
PEERS = {"ray-1a-1t": "local-1t", "ray-2a-1t": "local-2t"}  # same rows, same threads


def rows(limit: int, data: str | None) -> list[str]:
    path = data_dir(data) / "wi_locness" / "ABCN.dev.gold.bea19.m2"
    texts = [detokenize(" ".join(source_tokens(b))) for b in read_blocks(path)]
    return [t for t in texts if t.strip()][:limit]


def run(source: Path, out: Path, flags: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "editspec", "correct", str(source), "-o", str(out),
                           "--no-progress", *flags], capture_output=True, text=True,
                          env={**os.environ, "RAY_DISABLE_DOCKER_CPU_WARNING": "1"})
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{flags}: exit {done.returncode}: {done.stderr[-2000:]}")
    return seconds


class Unchanged:
    """A corrector that returns every text as it is: the driver's own cost, without a model."""

    def correct_detailed(self, texts, progress=None, types=False):
        from editspec.post.diff import Correction

        return [Correction(t, t, []) for t in texts]


class PassThrough:
    """``CorrectBatch`` without a model: what Ray itself costs a block (transfer, scheduling, order)."""

    def __init__(self, column: str = "text", threads: int | None = None, **options):
        self.column = column

    def __call__(self, table):
        from editspec import tables

        return tables.correct_table(Unchanged(), table, self.column)


def ray_block_cost(source: Path, out: Path, actors: int = 2) -> dict:
    """Seconds a block costs through Ray's pipeline (``PassThrough`` actors) in the steady state,
    and the same blocks through ``correct_table`` without Ray."""
    import ray

    from editspec import ray_data, tables

    plan = tables.plan(str(source), str(out), "text")
    ray.init(num_cpus=actors, include_dashboard=False, log_to_driver=False)
    try:
        stamps = [time.perf_counter() for _ in ray_data.corrected_blocks(plan.jobs, "text", {}, actors, 1,
                                                                            fn=PassThrough)]
    finally:
        ray.shutdown()
    blocks = len(stamps)
    steady = statistics.median(b - a for a, b in zip(stamps[blocks // 4:], stamps[blocks // 4 + 1:]))
    started = time.perf_counter()
    local = sum(1 for block in tables.read(plan.jobs[0].source)
                if tables.correct_table(Unchanged(), block, "text") is not None)
    alone = (time.perf_counter() - started) / local
    return {"blocks": blocks, "ray_period_s": round(steady, 4), "ray_per_block_s": round(steady * actors, 4),
            "without_ray_per_block_s": round(alone, 4)}


def driver_rate(source: Path, out: Path, column: str = "text") -> float:
    """Rows per second through read, correct_table (no model) and write, in this process."""
    from editspec import tables

    plan = tables.plan(str(source), str(out), column)
    started = time.perf_counter()
    tables.write(plan.jobs, ((0, tables.correct_table(Unchanged(), block, column))
                             for block in tables.read(plan.jobs[0].source)))
    return plan.rows / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[200, 2000], help="table sizes (default: 200 2000)")
    p.add_argument("--repeats", type=int, default=2, help="rounds of every config (default: 2)")
    p.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS),
                   help="which runs (default: all four; none: only --driver, --block-cost)")
    p.add_argument("--data-dir", default=None, help="corpus folder (default: $EDITSPEC_DATA, ../shared/data)")
    p.add_argument("--flags", default="", help="more editspec correct flags for every config, e.g. \"--mode edit5\"")
    p.add_argument("--out", default=None, help="write the numbers here as JSON")
    p.add_argument("--block-cost", type=int, default=0, metavar="ROWS",
                   help="also time Ray's own cost a block on ROWS rows (no model)")
    p.add_argument("--driver", type=int, default=0, metavar="ROWS",
                   help="also time the driver alone on ROWS rows (W&I dev repeated), 3 times, median")
    args = p.parse_args(argv)
    times: dict[str, dict[int, list[float]]] = {c: {n: [] for n in args.rows} for c in args.configs}
    driver = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.driver:
            texts = rows(10 ** 6, args.data_dir)
            source = Path(tmp) / "driver.jsonl"
            source.write_text("".join(json.dumps({"id": i, "text": texts[i % len(texts)]}) + "\n"
                                      for i in range(args.driver)), encoding="utf-8")
            driver = statistics.median(driver_rate(source, Path(tmp) / "driver.parquet") for _ in range(3))
            print(f"driver alone: {driver:,.0f} rows/s ({args.driver} rows, read + write, no model)")
        block_cost = None
        if args.block_cost:
            texts = rows(10 ** 6, args.data_dir)
            source = Path(tmp) / "blocks.jsonl"
            source.write_text("".join(json.dumps({"id": i, "text": texts[i % len(texts)]}) + "\n"
                                      for i in range(args.block_cost)), encoding="utf-8")
            block_cost = ray_block_cost(source, Path(tmp) / "blocks.parquet")
            print(f"Ray's own cost: {block_cost}")
        for n in args.rows:
            source = Path(tmp) / f"rows{n}.jsonl"
            source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                                      for i, t in enumerate(rows(n, args.data_dir))), encoding="utf-8")
            reference = None
            for r in range(args.repeats):
                for config in args.configs:
                    out = Path(tmp) / f"{config}-{n}-{r}.parquet"
                    seconds = run(source, out, [*CONFIGS[config], *args.flags.split()])
                    reference = reference or out.read_bytes()
                    if out.read_bytes() != reference:
                        raise SystemExit(f"{config} wrote another table than the first run on {n} rows")
                    times[config][n].append(round(seconds, 2))
                    print(f"{n} rows  {config:10s} {seconds:7.1f} s  (load {os.getloadavg()[0]:.1f})",
                          file=sys.stderr, flush=True)
                    if args.out:  # as it goes: a run cut short keeps what it measured
                        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                        Path(args.out).write_text(json.dumps({"partial": True, "times": times}, indent=1) + "\n")
    medians = {c: {n: statistics.median(v) for n, v in by.items()} for c, by in times.items()}
    fit = {}
    if len(args.rows) >= 2:
        small, large = min(args.rows), max(args.rows)
        for c, m in medians.items():
            per_row = (m[large] - m[small]) / (large - small)
            fit[c] = {"fixed_s": round(m[small] - small * per_row, 2), "per_row_ms": round(1000 * per_row, 2),
                      "rows_per_s": round(1 / per_row, 1) if per_row > 0 else None}
    print(f"| config | {' | '.join(f'{n} rows, s (median)' for n in args.rows)} | fixed s | ms/row | rows/s |")
    print(f"|---|{'---:|' * (len(args.rows) + 3)}")
    for c, m in medians.items():
        f = fit.get(c, {})
        print(f"| {c} | {' | '.join(f'{m[n]:.1f}' for n in args.rows)} | {f.get('fixed_s', '')} | "
              f"{f.get('per_row_ms', '')} | {f.get('rows_per_s', '')} |")
    overhead = {}
    for ray_config, local_config in PEERS.items():
        if ray_config in medians and local_config in medians:
            n = max(args.rows)
            whole = medians[ray_config][n] / medians[local_config][n] - 1
            entry = {"whole_process": round(whole, 3)}
            if fit:
                steady = fit[ray_config]["per_row_ms"] / fit[local_config]["per_row_ms"] - 1
                block_ms = (fit[ray_config]["per_row_ms"] - fit[local_config]["per_row_ms"]) * BLOCK_ROWS
                entry.update(steady=round(steady, 3), per_block_ms=round(block_ms, 1))
            overhead[ray_config] = entry
            print(f"{ray_config} vs {local_config} at {n} rows: whole process {whole:+.1%}"
                  + (f", steady rate {entry['steady']:+.1%}, {entry['per_block_ms']} ms a block of "
                     f"{BLOCK_ROWS} rows" if fit else ""))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"rows": args.rows, "repeats": args.repeats, "times": times,
                                              "medians": medians, "fit": fit, "overhead": overhead,
                                              "block_rows": BLOCK_ROWS, "cores": os.cpu_count(),
                                              "flags": args.flags, "driver_rows_per_s": driver, "ray_block_cost": block_cost, "load_at_end": os.getloadavg()}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
