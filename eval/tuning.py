"""What the tuning scripts (``tune_confidence.py``, ``tune_guard.py``) share: pick the setting
with the best dev F0.5 and store it in the model's config.json, where the loaders read it."""

from __future__ import annotations

import json
from pathlib import Path


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
