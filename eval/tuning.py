"""What the tuning scripts (``tune_confidence.py``, ``tune_guard.py``, ``tune_rounds.py``) share:
their common options, and picking the setting with the best dev F0.5 to store where the loaders
read it: a ``CorrectorConfig`` setting (guard, rounds) in the bundle's ``corrector_config.json``, an
EdiT5 confidence bias in the EdiT5's own ``config.json``."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from editspec.config import CorrectorConfig


def bundle_options(p: argparse.ArgumentParser) -> None:
    """The options of a script that tunes a bundle or checkpoint on an M2 dev set."""
    p.add_argument("model", type=Path, help="a bundle (edit5/, t5/) or one checkpoint directory")
    p.add_argument("--m2", required=True)
    p.add_argument("--mode", default=None, help="edit5, t5 or speculative (default: the bundle's)")
    p.add_argument("--limit", type=int, default=None, help="first N sentences")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--write", action="store_true", help="store the best in the bundle's corrector_config.json")


def pick_best(scores: dict, key: str, sentences: int, model_dir: Path | str | None = None):
    """The value in ``scores`` ({value: (P, R, F0.5)}) with the best F0.5 (the first on a tie),
    printed; stored as ``key`` in ``model_dir`` when it is given (see the module docstring)."""
    best = max(scores, key=lambda value: scores[value][2])
    print(f"best {key} {best} (F0.5 {scores[best][2]:.4f} on {sentences} sentences)")
    if model_dir is not None:
        if key in {f.name for f in dataclasses.fields(CorrectorConfig)}:
            path = CorrectorConfig.from_pretrained(model_dir).replace(**{key: best}).save_pretrained(model_dir)
        else:
            path = Path(model_dir) / "config.json"
            config = json.loads(path.read_text())
            config[key] = best
            path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        print(f"wrote {key} {best} to {path}")
    return best
