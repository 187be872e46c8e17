"""Collect the SET.MODE.json reports of eval/run_all.sh into summary.json and summary.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SETS = ("wi_dev", "fce_test", "conll2013", "jfleg_dev")
MODES = ("identity", "edit5", "t5", "speculative")


def _cell(report: dict, key: str, scale: float = 100.0, digits: int = 2) -> str:
    return f"{report[key] * scale:.{digits}f}" if key in report else "–"


def summarize(out: Path, model: str | None = None) -> dict:
    reports = {}
    for path in sorted(out.glob("*.json")):
        name = path.name[:-len(".json")]
        if "." in name and name != "summary":
            try:
                reports[name] = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                print(f"summarize: skipping {path} (not a finished report)", file=sys.stderr)
    order = lambda name: (SETS.index(name.split(".")[0]) if name.split(".")[0] in SETS else 99,
                          MODES.index(name.split(".")[1]) if name.split(".")[1] in MODES else 99)
    rows = [
        "| set | mode | sentences | P | R | F0.5 | TP | FP | FN | GLEU | seconds | sentences/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(reports, key=order):
        r = reports[name]
        data_set, mode = name.split(".", 1)
        speed = f"{r['sentences'] / r['seconds']:.1f}" if r.get("seconds") else "–"
        rows.append(f"| {data_set} | {mode} | {r['sentences']} | {_cell(r, 'precision')} | "
                    f"{_cell(r, 'recall')} | {_cell(r, 'f0.5')} | {r.get('tp', '–')} | "
                    f"{r.get('fp', '–')} | {r.get('fn', '–')} | {_cell(r, 'gleu')} | "
                    f"{r.get('seconds', 0):.1f} | {speed} |")
    title = f"# Dev evaluation of {model}" if model else "# Dev evaluation"
    notes = ("ERRANT 3.0.2 span-based correction (errant_compare numbers), in percent; GLEU as "
             "JFLEG's gleu.py (4 references, 500 samples). identity = unchanged sources. "
             "conll2013 scores ERRANT spans against NUCLE's edits, not M2Scorer. "
             "seconds = time inside the corrector.")
    (out / "summary.md").write_text("\n".join([title, "", notes, "", *rows, ""]), encoding="utf-8")
    summary = {"model": model, "reports": reports}
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path, help="the OUT_DIR of eval/run_all.sh")
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    summarize(args.out, args.model)


if __name__ == "__main__":
    main()
