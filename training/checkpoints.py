"""What a run keeps: its resumable state, checkpoints, exported model directories, the EMA."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from editspec.decoding.budgets import complete_generation
from training.data_mixture import Position


class TrainState:
    """Step, data position, pairs seen and best score: saved with each checkpoint via accelerate."""

    def __init__(self):
        self.step, self.position, self.best, self.best_step, self.examples = 0, Position(), None, None, 0
        self.budget: dict = {}  # the time budget's clock and fitted schedule (training.budget)
        self.ranked: list[list] = []  # [score, step] of the models kept in ranked/ (train.keep_best), best first

    def state_dict(self) -> dict:
        return {"step": self.step, "position": self.position.state_dict(), "best": self.best,
                "best_step": self.best_step, "examples": self.examples, "budget": self.budget, "ranked": self.ranked}

    def load_state_dict(self, state: dict) -> None:
        self.step, self.position = int(state["step"]), Position.from_state(state["position"])
        self.best, self.best_step = state["best"], state["best_step"]
        self.examples = int(state.get("examples", 0))
        self.budget = dict(state.get("budget") or {})
        self.ranked = [list(r) for r in state.get("ranked", [])]


def checkpoints(out: Path) -> list[Path]:
    """Complete checkpoints (``state.json`` is written last), oldest first."""
    found = [p for p in (out / "checkpoints").glob("step-*") if (p / "state.json").is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def batch_hash(ids: list[list[str]]) -> str:
    """A short hash of the examples' ids of one step's batches (the recipe's order, checked by tests)."""
    return hashlib.sha1("|".join(",".join(b) for b in ids).encode()).hexdigest()[:16]


def export(model: torch.nn.Module, tok, dest: Path, info: dict) -> None:
    """``dest``: model + tokenizer + training.json, replaced whole (written beside, then renamed)."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    complete_generation(model, info.get("max_length"))  # a T5's generate() completes its corrections
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "training.json").write_text(json.dumps(info) + "\n")
    old = dest.with_name(dest.name + ".old")  # aside, not deleted first: a reader (a lease's collect, a stop
    shutil.rmtree(old, ignore_errors=True)   # mid-export) finds dest/ missing for two renames at most
    if dest.exists():
        dest.rename(old)
    tmp.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


def ema_of(model: torch.nn.Module, decay: float | None) -> AveragedModel | None:
    """An exponential moving average of the trainable weights (torch's own), or None."""
    if not decay:
        return None
    return AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(float(decay)), use_buffers=False)
