"""What the tuning scripts (``tune_confidence.py``, ``tune_guard.py``, ``tune_rounds.py``) share:
their common options, and picking the setting with the best dev F0.5 to store in the model's
config.json, where the loaders read it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def bundle_options(p: argparse.ArgumentParser) -> None:
    """The options of a script that tunes a bundle or checkpoint on an M2 dev set."""
    p.add_argument("model", type=Path, help="a bundle (edit5/, t5/) or one checkpoint directory")
    p.add_argument("--m2", required=True)
    p.add_argument("--mode", default=None, help="edit5, t5 or speculative (default: the bundle's)")
    p.add_argument("--limit", type=int, default=None, help="first N sentences")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--write", action="store_true", help="store the best in the output model's config.json")


def pick_best(scores: dict, key: str, sentences: int, model_dir: Path | str | None = None):
    """The value in ``scores`` ({value: (P, R, F0.5)}) with the best F0.5 (the first on a tie),
    printed; written as ``key`` into ``model_dir/config.json`` when ``model_dir`` is given."""
    best = max(scores, key=lambda value: scores[value][2])
    print(f"best {key} {best} (F0.5 {scores[best][2]:.4f} on {sentences} sentences)")
    if model_dir is not None:
        path = Path(model_dir) / "config.json"
        config = json.loads(path.read_text())
        config[key] = best
        path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        print(f"wrote {key} {best} to {path}")
    return best
