"""``editspec profile --processes``: whole processes, start to exit, as a user waits for them.

For each size (the first N lines of the data), three commands run as separate processes, taking
turns ``turns`` times (the order rotating each turn, so that a change in machine load hits all of
them alike), and the report keeps every wall time, its median and the process's CPU time::

    default   editspec correct FILE -o OUT --threads T        the bundle's mode and settings
    t5        the same with --mode t5                           (its output must be the default's)
    ct2       python ct2_script.py ... (profiling/ct2_script.py): tokenizers + CTranslate2's
              translate_batch(max_batch_size=32), float32, T threads, on the shipped T5 converted
              once (the conversion is not timed)
    ct2-1     the same script on 1 thread (when T > 1): on a small model and a busy or virtual
              CPU, CTranslate2's second thread can cost more than it gives (measured: 200 W&I
              lines 6.1 s on 1 thread, 10-12 s on 2), so the peer is the faster of the two

and, each turn, ``python -c "import torch"``: the floor under any process of editspec's (the
1-line figure is mostly this).

What editspec measures once per machine (the spelling index, the pass and draft costs in
``editspec.cache``) is made by untimed warm-up processes first: one of each command on the first
64 lines of each size; the report says so, and times a first process on a machine apart only if
asked (``cold``: 1 line, an empty cache). Before timing, the peer's output is checked: each size's
lines as the script writes them against the T5's raw greedy output (``--mode t5`` without the
spelling step, the guard or rescoring: the same model, decoded alike), untimed; the report gives
the share that is the same. The goals of issue 71 are checked on the medians, against the faster
CTranslate2 script: 1 line within ``import torch`` + 0.4 s, 500 lines at least as fast as the
script, 2,000 lines 1.5x it and 2x ``--mode t5``, a first process within 2x a warm one.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import torch

from editspec.decoding.measured import device_name
from editspec.data.corpora import shown
from editspec.errors import EditspecError
from editspec.modeling.loading import resolve_models
from editspec.profiling.ct2 import converted, missing
from editspec.profiling.sentences import read_data
from editspec.tokenization.tokens import tokenizer_path

SCRIPT = Path(__file__).with_name("ct2_script.py")
WARMUP_LINES = 64  # a warm-up input of 64 lines fills every slot count a size uses (batch size 16)
GOALS = {1: "1 line within `import torch` + 0.4 s", 500: "500 lines at least as fast as the CTranslate2 script",
         2000: "2,000 lines at 1.5x the CTranslate2 script and 2x --mode t5",
         "cold": "a first process (empty cache, 1 line) within 2x a warm one"}
RAW = ["--mode", "t5", "--no-spelling", "--no-rescore", "--no-grammar", "--max-edit-words", "0", "--rounds", "1",
       "--beam", "1"]  # the T5's bare greedy output


def commands(input_file: Path, output_file: Path, threads: int, ct2_dir: Path | None, tokenizer: Path,
             model_args: Sequence[str]) -> dict[str, list[str]]:
    """The command of each way for one input (see the module docstring)."""
    correct = [sys.executable, "-m", "editspec", "correct", str(input_file), "--no-progress",
               "--threads", str(threads), *model_args]
    ways = {"default": [*correct, "-o", f"{output_file}.default"],
            "t5": [*correct, "--mode", "t5", "-o", f"{output_file}.t5"]}
    if ct2_dir is not None:
        script = [sys.executable, str(SCRIPT), str(ct2_dir), str(tokenizer), str(input_file)]
        ways["ct2"] = [*script, f"{output_file}.ct2", str(threads)]
        if threads > 1:
            ways["ct2-1"] = [*script, f"{output_file}.ct2-1", "1"]
    return ways


def peer(median: dict[str, float]) -> float | None:
    """The CTranslate2 script's median at its faster thread count (None: not run)."""
    times = [median[name] for name in ("ct2", "ct2-1") if name in median]
    return min(times) if times else None


def same_lines(a: Path, b: Path) -> tuple[int, int]:
    """(lines of ``a`` equal to ``b``'s, spacing aside: the script decodes ids to text its own way; lines)."""
    ours, theirs = (f.read_text(encoding="utf-8").splitlines() for f in (a, b))
    return sum(" ".join(x.split()) == " ".join(y.split()) for x, y in zip(ours, theirs)), len(ours)


def timed(command: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall seconds from start to exit, CPU seconds) of one process; its failure is an error."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise EditspecError(f"{' '.join(command[:5])} ... failed: {done.stderr.strip().splitlines()[-1:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def prepare(work: Path, sources: Sequence[str], sizes: Sequence[int],
            ways: Callable[[Path, Path], dict[str, list[str]]]) -> tuple[dict[int, Path], dict[int, dict]]:
    """Each size's input file in ``work``, every way (``ways(input, output)``: ``commands``) run
    once on its first lines (warm caches), and the peer's output checked against the T5's raw
    greedy output on the whole input, untimed: (inputs, checked)."""
    inputs, checked = {}, {}
    for n in sizes:
        inputs[n] = work / f"lines-{n}.txt"
        inputs[n].write_text("\n".join(sources[:n]) + "\n", encoding="utf-8")
        warm = work / f"warm-{n}.txt"
        warm.write_text("\n".join(sources[:min(n, WARMUP_LINES)]) + "\n", encoding="utf-8")
        for command in ways(warm, work / f"warm-{n}").values():
            timed(command)
        check = ways(inputs[n], work / f"check-{n}")
        if "ct2" in check or "ct2-1" in check:  # is the peer right? its output on the whole input
            timed([*check["default"][:-2], *RAW, "-o", str(work / f"check-{n}.raw")])
            timed(check["ct2-1" if "ct2-1" in check else "ct2"])
            same, total = same_lines(work / f"check-{n}.raw", Path(check.get("ct2-1", check["ct2"])[-2]))
            checked[n] = {"same": same, "lines": total}
    return inputs, checked


def processes(data: str | os.PathLike, sizes: Sequence[int] = (1, 500, 2000), turns: int = 3, threads: int = 2,
              model: str | None = None, model_args: Sequence[str] = (), ct2_cache: str | None = None,
              cold: bool = False, progress: bool = False) -> dict:
    """The report of whole processes (see the module docstring): every run, medians, ratios, goals."""
    sources = read_data(data)[0]
    sizes = sorted({min(n, len(sources)) for n in sizes})
    why = missing()
    _, t5_dir = resolve_models(model)
    ct2_dir = converted(t5_dir, ct2_cache) if why is None and t5_dir is not None else None
    tokenizer = Path(tokenizer_path(t5_dir or "")) / "tokenizer.json"  # the T5 folder's own
    args = [*(("--model", model) if model else ()), *model_args]
    load: list[float] = []
    floor: list[float] = []  # python -c "import torch", once a turn
    runs: dict[int, dict[str, list[float]]] = {}
    cpu: dict[int, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="editspec-processes-") as tmp:
        work = Path(tmp)
        inputs, checked = prepare(work, sources, sizes,
                                  lambda text, out: commands(text, out, threads, ct2_dir, tokenizer, args))
        first = None
        if cold:  # a first process on a machine: the caches empty
            with tempfile.TemporaryDirectory(prefix="editspec-cache-") as empty:
                env = {**os.environ, "EDITSPEC_CACHE": empty}
                first = timed(commands(inputs[sizes[0]], work / "cold", threads, None, tokenizer, args)["default"], env)
        for turn in range(turns):
            floor.append(timed([sys.executable, "-c", "import torch"])[0])
            for n in sizes:
                ways = list(commands(inputs[n], work / f"out-{n}", threads, ct2_dir, tokenizer, args).items())
                ways = ways[turn % len(ways):] + ways[:turn % len(ways)]  # the order rotates each turn
                for name, command in ways:
                    load.append(os.getloadavg()[0])
                    wall, seconds = timed(command)
                    runs.setdefault(n, {}).setdefault(name, []).append(wall)
                    cpu.setdefault(n, {}).setdefault(name, []).append(seconds)
                    if progress:
                        print(f"turn {turn + 1} {n} lines {name}: {wall:.2f} s", file=sys.stderr, flush=True)
        same = {n: (work / f"out-{n}.default").read_bytes() == (work / f"out-{n}.t5").read_bytes() for n in sizes}
    median = {n: {name: statistics.median(w) for name, w in ways.items()} for n, ways in runs.items()}
    report = {
        "device": device_name(torch.device("cpu")), "threads": threads, "turns": turns, "sizes": sizes, "data": shown(data),
        "model": model, "ct2": ct2_dir is not None, "ct2_unavailable": why, "runs": runs, "cpu_seconds": cpu,
        "median": median, "default_equals_t5": same, "load_average": {"mean": statistics.mean(load), "max": max(load)},
        "cold_1_line": None if first is None else {"wall": first[0], "cpu": first[1]},
        "import_torch": {"runs": floor, "median": statistics.median(floor)}, "peer_checked": checked,
    }
    report["ratios"] = {n: {f"{name}_over_default": m[name] / m["default"] for name in m if name != "default"}
                        for n, m in median.items()}
    for n, m in median.items():
        if peer(m) is not None:
            report["ratios"][n]["peer_over_default"] = peer(m) / m["default"]
    report["goals"] = goals(median, report["import_torch"]["median"], report["cold_1_line"])
    return report


def goals(median: dict[int, dict[str, float]], import_torch: float, cold: dict | None = None) -> list[dict]:
    """Issue 71's goals on the medians: what each asks, what was measured, met or not."""
    out = []
    if 1 in median:
        s = median[1]["default"]
        out.append({"goal": GOALS[1], "measured": f"{s:.2f} s ({import_torch:.2f} + {s - import_torch:.2f})",
                    "met": s <= import_torch + 0.4})
        if cold is not None:
            r = cold["wall"] / s
            out.append({"goal": GOALS["cold"], "measured": f"{cold['wall']:.2f} s, {r:.2f}x", "met": r <= 2.0})
    if 500 in median and peer(median[500]) is not None:
        r = peer(median[500]) / median[500]["default"]
        out.append({"goal": GOALS[500], "measured": f"{r:.2f}x the script", "met": r >= 1.0})
    if 2000 in median and peer(median[2000]) is not None:
        m = median[2000]
        r, t = peer(m) / m["default"], m["t5"] / m["default"]
        out.append({"goal": GOALS[2000], "measured": f"{r:.2f}x the script, {t:.2f}x --mode t5",
                    "met": r >= 1.5 and t >= 2.0})
    return out


def markdown(r: dict) -> list[str]:
    """The report's markdown: the table of medians, the goals, and how it was measured."""
    lines = ["# Whole processes: editspec correct against --mode t5 and a CTranslate2 script", "",
             f"{r['device']}, {r['threads']} threads, {r['turns']} turns taking turns (medians of wall seconds, "
             f"start to exit), first lines of {Path(r['data']).name}; load average {r['load_average']['mean']:.1f} "
             f"(max {r['load_average']['max']:.1f}) while timing.", "",
             f"| lines | `editspec correct` | `--mode t5` | CTranslate2 fp32 script, {r['threads']} threads | "
             "the script, 1 thread | faster script / default | t5 / default |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in r["sizes"]:
        m, ratio = r["median"][n], r["ratios"][n]
        ct2, ct2_1 = (f"{m[name]:.2f} s" if name in m else "–" for name in ("ct2", "ct2-1"))
        over = f"{ratio['peer_over_default']:.2f}×" if "peer_over_default" in ratio else "–"
        lines.append(f"| {n:,} | {m['default']:.2f} s | {m['t5']:.2f} s | {ct2} | {ct2_1} | {over} | "
                     f"{ratio['t5_over_default']:.2f}× |")
    lines += ["", "| goal | measured | met |", "|---|---|---|"]
    lines += [f"| {g['goal']} | {g['measured']} | {'yes' if g['met'] else 'no'} |" for g in r["goals"]]
    same = all(r["default_equals_t5"].values())
    lines += ["", f"Default output {'equals' if same else 'DIFFERS FROM'} --mode t5's at every size. Before timing, "
              f"one untimed process of each command on the first {WARMUP_LINES} lines of each size fills what "
              "editspec measures once per machine (the spelling index, pass and draft costs)."]
    if r.get("import_torch"):
        lines.append(f"`python -c \"import torch\"` alone, the floor under any editspec process: "
                     f"{r['import_torch']['median']:.2f} s (median of {len(r['import_torch']['runs'])}).")
    if r.get("cold_1_line"):
        c = r["cold_1_line"]
        lines.append(f"A first process on a machine (empty cache, 1 line): {c['wall']:.2f} s ({c['cpu']:.2f} s CPU).")
    for n, c in r.get("peer_checked", {}).items():
        lines.append(f"The script's output at {int(n):,} lines: {c['same']:,} of {c['lines']:,} the same as the T5's raw "
                     f"greedy output (`--mode t5` without spelling, guard, rescoring; spacing aside; the rest: "
                     f"a line of several sentences, which editspec decodes one by one and the script whole, "
                     f"and degenerate outputs that loop, cut at editspec's budget, at 256 tokens by the script).")
    if r.get("ct2_unavailable"):
        lines.append(f"CTranslate2 not run: {r['ct2_unavailable']}.")
    return lines + [""]
