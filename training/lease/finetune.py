"""``finetune`` (here, on CPU): a lease's T5 fine-tuned on W&I + FCE train, chosen by ERRANT, compared.

Since issue 65 the lease fine-tunes on the device (configs/lease-gpu.yaml's t5-ft; ``pick`` judges
its candidates here). This is the CPU route for a T5 that came back without that stage (an interim
collect, or a stage that failed): hours in the background, resumable::

    python -m training.lease finetune runs/lease-bundle/t5            # starts (or resumes) detached
      -> runs/lease-ft/: training.train with configs/lease-t5-cpu-finetune.yaml (W&I + FCE train,
         sources respelled as Corrector respells them, best/ by ERRANT F0.5 on 500 W&I dev
         sentences), its log in runs/lease-ft/finetune.log; the same command again resumes a run
         that was stopped, and says so while one runs
    python -m training.lease finetune --report runs/lease-ft
      -> best/ shipped in bf16 into a copy of the shipped bundle (runs/lease-ft/bundle), both T5s
         through `editspec eval --mode t5` on all of W&I dev (the shipped pipeline: spelling,
         rescoring), the paired bootstrap of candidate minus shipped, and a row in
         reports/lease-finetune.md; ship only when p < 0.05 and the other sets are not worse
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

from editspec.data.corpora import data_dir as default_data_dir
from editspec.errors import EditspecError
from editspec.modeling.loading import DEFAULT_MODEL
from training.lease.pick import WI_DEV, candidate_bundle, evaluate
from training.lease.plan import REPO_ROOT
from training.lease.run import alive, read_json, write_json

CONFIG = "configs/lease-t5-cpu-finetune.yaml"
RECORD = REPO_ROOT / "reports" / "lease-finetune.md"
HEADER = ("| date | from | steps | pairs | best step (ERRANT F0.5 on 500 dev) | W&I dev F0.5 (P / R) | shipped T5 "
          "| candidate - shipped [95%] | p |\n|---|---|---:|---:|---|---|---|---|---:|\n")


def train_command(init_from: Path, out: Path, sets: list[str]) -> list[str]:
    return [sys.executable, "-m", "training.train", "--config", str(REPO_ROOT / CONFIG), "--init-from",
            str(init_from), "--output-dir", str(out), *[a for s in sets for a in ("--set", s)]]


def start(init_from: Path, out: Path, sets: list[str], foreground: bool = False) -> int:
    """The fine-tune, detached in its own session (it outlives this shell); or here with ``foreground``."""
    if not (init_from / "config.json").is_file():
        raise EditspecError(f"{init_from} is not a model directory (no config.json): give the lease's T5, "
                            f"e.g. runs/lease-bundle/t5 after `join`")
    status = read_json(out / "finetune.json")
    if alive(status.get("pid")):
        print(f"the fine-tune runs (pid {status['pid']}), log {out / 'finetune.log'}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    command = train_command(init_from.resolve(), out, sets)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    if foreground:
        return subprocess.run(command, cwd=REPO_ROOT, env=env).returncode
    with open(out / "finetune.log", "ab") as log:
        proc = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    write_json(out / "finetune.json", {"pid": proc.pid, "init_from": str(init_from), "command": command})
    print(f"the fine-tune runs detached (pid {proc.pid}); log {out / 'finetune.log'}; the same command resumes it")
    return 0


def report(out: Path, data: Path | None = None) -> dict:
    """Candidate (best/) against the shipped T5 on W&I dev, paired bootstrap; a row in RECORD."""
    from editspec.evaluation.errant import ErrantEvaluator
    from editspec.evaluation.whole_set import read_lines
    from editspec.evaluation.stats import paired_bootstrap

    best = out / "best"
    if not (best / "config.json").is_file():
        raise EditspecError(f"{out} has no best/ yet: the fine-tune has not evaluated a checkpoint")
    bundle = candidate_bundle(best, out / "bundle")
    gold = default_data_dir(data) / WI_DEV
    shipped_hyp, candidate_hyp = REPO_ROOT / "runs" / "eval-shipped" / "wi_dev.t5.txt", out / "eval" / "wi_dev.t5.txt"
    evaluate(DEFAULT_MODEL, shipped_hyp, gold)
    evaluate(bundle, candidate_hyp, gold)
    evaluator = ErrantEvaluator.from_m2(str(gold))
    results = [evaluator.score(read_lines(h)) for h in (shipped_hyp, candidate_hyp)]
    shipped, candidate = ({k: 100 * v for k, v in zip(("precision", "recall", "f0.5"), r.scores())} for r in results)
    boot = paired_bootstrap(*results)
    trained = json.loads((best / "training.json").read_text())
    log = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if x.strip()]
    steps = [e for e in log if "loss" in e]
    init = read_json(out / "finetune.json").get("init_from", "?")
    row = {"candidate": candidate, "shipped": shipped, "bootstrap": boot, "best_step": trained.get("step"),
           "best_dev_f05": trained.get("best"), "steps": steps[-1]["step"] if steps else 0,
           "pairs": steps[-1].get("examples", 0) if steps else 0, "init_from": init}
    write_row(row)
    print(json.dumps(row, indent=1))
    return row


def write_row(row: dict) -> None:
    c, s, b = row["candidate"], row["shipped"], row["bootstrap"]
    line = (f"| {date.today().isoformat()} | {row['init_from']} | {row['steps']} | {row['pairs']:,} | "
            f"{row['best_step']} ({row['best_dev_f05']}) | {c['f0.5']:.2f} ({c['precision']:.2f} / {c['recall']:.2f}) | "
            f"{s['f0.5']:.2f} | {100 * b['delta']:+.2f} [{100 * b['ci95'][0]:+.2f}, {100 * b['ci95'][1]:+.2f}] | "
            f"{b['p']:.3f} |\n")
    if not RECORD.exists():
        RECORD.write_text("# Gold fine-tunes of the lease series (CPU)\n\nOne row per `python -m training.lease "
                          "finetune --report`: the lease's T5 fine-tuned here on W&I + FCE train, its best/ by "
                          "ERRANT F0.5 on 500 W&I dev sentences, then all of W&I dev through `editspec eval "
                          "--mode t5` (spelling and rescoring as shipped) against the shipped T5; the paired "
                          "bootstrap of candidate minus shipped (`eval.significance`'s).\n\n" + HEADER)
    with open(RECORD, "a", encoding="utf-8") as f:
        f.write(line)
