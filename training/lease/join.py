"""``join`` (here): the collect call's files -> a bundle directory, checked, loaded, summarised;
the new continuation checkpoint packed into the repository; the lease's row in the lease log.

    python -m training.lease join FILES_AT runs/lease-bundle     (FILES_AT: the device call's files, here)
      sha256 of every file as the manifest says; the weights rebuilt byte for byte;
      runs/lease-bundle/continuation -> training/continuation/t5.tar.xz (replaced; its record says
      how many leases and pairs the series has seen, and where the next Wikipedia slice starts);
      the shipped bundle unparked; Corrector.from_pretrained(runs/lease-bundle) loads;
      a row for reports/lease-log.md (its ERRANT column filled after `editspec eval` here)
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

from editspec.corrector import Corrector
from editspec.errors import EditspecError
from training.lease import continuation
from training.lease.park import unpark
from training.lease.shards import join

PENDING = "| pending |"  # the ERRANT column until `python -m training.lease pick` fills it
HEADER = ("| date | plan | device | pairs/s | tokens/s | TFLOP/s | data wait | training minutes | pairs this lease | "
          "pairs seen (series) | candidates: approx F0.5 on the device | ERRANT F0.5 here (W&I dev) |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")


def new_continuation(manifest: dict, bundle: Path, pack: Path) -> dict | None:
    """Pack the lease's stable-phase T5 as the next continuation; its record (None if none came)."""
    stage = manifest.get("continuation")
    folder = bundle / "continuation"
    if not folder.is_dir() and manifest.get("interim"):  # an interim T5 from the stable phase is both
        folder = bundle / "t5"
    if not stage or not folder.is_dir():
        return None
    prepared = manifest.get("prepared") or {}
    before = prepared.get("resumed") or {}
    trained = json.loads((folder / "training.json").read_text()) if (folder / "training.json").is_file() else {}
    meta = {"leases": int(before.get("leases", 0)) + 1,
            "examples": int(before.get("examples", 0)) + int(trained.get("examples", 0)),
            "steps": int(before.get("steps", 0)) + int(trained.get("step", 0)),
            "wiki_next": int(prepared.get("wiki_start", 0)) + int(prepared.get("wiki_sentences", 0)),
            "stage": stage, "date": date.today().isoformat(), "this_lease": int(trained.get("examples", 0))}
    record = continuation.pack_model(folder, meta, pack)
    if folder.name == "continuation":
        shutil.rmtree(folder)
    return record


def lease_row(manifest: dict, record: dict | None) -> str:
    stages = {k: v for k, v in (manifest.get("stages") or {}).items() if v}
    main = max(stages.values(), key=lambda v: v.get("step", 0) * v.get("examples_per_s", 0), default={})
    cands = "; ".join(f"{k} {v['dev_approx_f05']:.2f} (step {v['step']})" for k, v in (manifest.get("eval") or {}).items()
                      if isinstance(v, dict) and "dev_approx_f05" in v) or "none"
    device = next((v.get("device") for v in (manifest.get("eval") or {}).values() if isinstance(v, dict)), "?")
    plan = (manifest.get("prepared") or {}).get("plan", "?")
    seen = f"{record['examples']:,}" if record else "?"
    this = f"{record['this_lease']:,}" if record else f"{main.get('examples') or 0:,}"
    minutes = f"{main['minutes']:.1f}" if main.get("minutes") is not None else "?"
    interim = " (interim: the first call's)" if manifest.get("interim") else ""
    return (f"| {date.today().isoformat()} | {plan}{interim} | {device} | {main.get('examples_per_s', 0):,.0f} | "
            f"{main.get('tokens_per_s', 0):,.0f} | {main.get('tflops', 0):.1f} | {main.get('data_wait', 0):.1%} | "
            f"{minutes} | {this} | {seen} | {cands} {PENDING}\n")


def main(src: Path, dest: Path, pack: Path = continuation.PACK, log: Path | None = None) -> Corrector:
    try:
        manifest = join(src, dest)
        record = new_continuation(manifest, dest, pack)
    finally:  # tracked again whatever happens here: a parked bundle must not meet a commit
        if unpark():
            print("what prepare parked is tracked again")
    corrector = Corrector.from_pretrained(dest, device="cpu")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"{dest}: {len(manifest['pieces'])} pieces, {len(manifest['bundle'])} files checked, "
          f"bundle {size / 1e6:.1f} MB, loads "
          f"(mode {corrector.mode})")
    if record:
        print(f"continuation: {pack} ({record['bytes'] / 1e6:.1f} MB, lease {record['leases']} of the series, "
              f"{record['examples']:,} pairs seen, next Wikipedia line {record['wiki_next']})")
    row = lease_row(manifest, record)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        if not log.exists():
            log.write_text("# Lease log\n\nOne row per GPU lease (`python -m training.lease join` adds it).\n\n" + HEADER)
        elif HEADER.splitlines()[0] not in log.read_text():
            raise EditspecError(f"{log} has no lease table to add the row to")
        with open(log, "a", encoding="utf-8") as f:
            f.write(row)
    print(row, end="")
    print(json.dumps({"eval": manifest.get("eval"), "stages": manifest.get("stages")}, indent=1))
    return corrector
