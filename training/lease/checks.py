"""``checks`` (the lease's second call, on the still-warm machine): the CUDA checks of every lease.

    python3 -m training.lease checks --out "$OUT"
      editspec profile on the GPU with the lease's candidate (runs/lease/bundle), on 200 W&I dev
      sentences drawn with seed 0, at batch 1 and batch 32: t5 greedy, speculative (a T5 alone: the
      source drafts) and transformers' generate, all in float32; the profile itself checks that speculative output equals greedy output sentence by
      sentence (``identical_to_t5``) -> $OUT/lease-checks.tar.xz (both reports) and a summary line
      per mode

It runs ``editspec profile`` as its own process, with the lease's environment (the carried wheels,
the unpacked data, no network), within ``--minutes``; what finished is packed even when time runs out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from training.lease.run import environment

MODES = ("t5", "speculative", "hf-greedy")  # a T5 alone: speculative drafts with the source, as Corrector does


def profile_command(run_dir: Path, out: Path, batch: int, limit: int, device: str) -> list[str]:
    data = run_dir / "data" / "wi_locness" / "ABCN.dev.gold.bea19.m2"
    return [sys.executable, "-m", "editspec", "profile", "--data", str(data), "--limit", str(limit), "--seed", "0",
            "--model", str(run_dir / "bundle"), "--device", device, "--batch-size", str(batch),
            "--warmup", "2", "--modes", *MODES, "--out", str(out),
            "--dtype", "float32"]  # where transformers' generate equals our greedy (bf16 attention rounds otherwise)


def summary(report: dict, batch: int) -> list[str]:
    lines = []
    for mode, entry in report.get("modes", {}).items():
        if entry.get("status") != "ok":
            lines.append(f"[checks] batch {batch} {mode}: {entry.get('status')} ({entry.get('reason', '')})")
            continue
        number = lambda key: entry.get(key) if entry.get(key) is not None else float("nan")  # noqa: E731
        lines.append(f"[checks] batch {batch} {mode}: mean {entry['latency_ms']['mean']:.2f} ms, speedup vs t5 "
                     f"{number('speedup_vs_t5'):.2f}, identical to t5: {number('identical_to_t5'):.0%} of the sentences")
    return lines


def checks(run_dir: Path, out: Path | None, limit: int = 200, device: str = "cuda", minutes: float = 3.0,
           batches: tuple[int, ...] = (1, 32)) -> int:
    """The profiles into run_dir/checks, packed into ``out`` (None: left there, for collect's logs)."""
    deadline, work, failed = time.time() + 60 * minutes, run_dir / "checks", 0
    lines = []
    for batch in batches:
        left = deadline - time.time()
        if left < 20:
            lines.append(f"[checks] batch {batch}: no time left")
            continue
        dest = work / f"profile-b{batch}"
        try:
            rc = subprocess.run(profile_command(run_dir, dest, batch, limit, device), env=environment(run_dir),
                                timeout=left).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        report = dest / "report.json"
        if rc != 0 or not report.is_file():
            failed += 1
            lines.append(f"[checks] batch {batch}: profile ended with {rc}")
            continue
        result = json.loads(report.read_text())
        failed += sum(1 for e in result["modes"].values()  # the share of sentences equal to greedy's
                      if e.get("status") == "ok" and e.get("identical_to_t5") is not None and e["identical_to_t5"] < 1)
        lines += summary(result, batch)
        if out is not None:
            pack(work, out)  # after each profile: a call cut short still brings back what finished
    if out is not None:
        pack(work, out)
    print("\n".join(lines), flush=True)
    return 1 if failed else 0


def pack(work: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "lease-checks.tar.xz.tmp"
    with tarfile.open(tmp, "w:xz") as tar:
        for path in sorted(work.rglob("report.*")) if work.is_dir() else []:
            tar.add(path, path.relative_to(work).as_posix())
    tmp.replace(out / "lease-checks.tar.xz")
