"""A training recipe: defaults, the YAML file, ``--set`` overrides, repository-relative paths.

A recipe has three sections (see configs/ for complete ones; ``--set train.lr=3e-4`` overrides):

    model:  type (t5 | edit5), tokenizer, config (T5Config / EdiT5Config fields), init_from,
            point_markers (EdiT5: markers point at kept tokens, editspec.modeling_edit5),
            marker_gap (with point_markers: a marker's key also sees the token after the gap),
            share_encoder (EdiT5 from a T5 init_from: the heads read that T5's own encoder, frozen;
            the checkpoints store the heads alone and name the T5)
    data:   sources (weighted mixture: m2 | parallel | synthetic; ``respell: true`` on an m2 or
            parallel source, or on dev, passes its sources through ``editspec.pre.spelling`` first, as
            ``Corrector`` does before a model whose config says ``spelling``; ``reverse: true``
            turns the pairs around, for an error model), dev (an M2 file),
            max_length, batch_tokens or batch_size, pool_size, workers (synthetic-data processes;
            with workers, a loader process also pools, cuts and pads the batches: training.data)
    train:  max_steps, lr, schedule (a transformers schedule name: cosine, linear,
            constant_with_warmup for a warmup-stable stage, ...), warmup_steps, grad_accum,
            mixed_precision, save_every, keep_last, eval_every, eval_f05_every (ERRANT F0.5),
            eval_approx_every (the approximate F0.5 of training.dev, no spaCy needed), log_every,
            seed, num_threads, position_bias_lr_scale (lr multiplier of T5's relative attention
            biases), position_prior (initial bias towards neighbouring tokens), max_minutes (a
            wall-clock budget: the schedule is refitted to it, see training.budget), ema_decay
            (an exponential moving average of the weights, exported as ema/), edit_weight (the loss
            weight of target tokens that are part of an edit, T5 only; 1 = plain loss), decay_share
            (with schedule warmup_stable_decay: the last share of the steps decays linearly to 0,
            and the model where the decay starts is exported as stable/, a series' continuation),
            compile (torch.compile the step's forward; eager again if the first compiled step fails),
            loss_chunk_tokens (target tokens per chunk of the T5's loss: training.step), bench_steps
            (time the step's variants while the data starts, training.step_bench; 0: no), keep_best
            (with more than 1, the models of the best ``keep_best`` dev scores are kept in
            ranked/step-N/: a lease brings back more than one candidate), init_wait_minutes (wait this
            long for model.init_from to appear; with model.init_twin, a model of its shape, the run
            sets itself up from the twin meanwhile: training.train's ``awaited_init``),
            eval_approx_times (once a time budget has fitted the steps, the approximate F0.5 is
            evaluated that many times over them, evenly: a stage whose rate is unknown)
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]

DEFAULTS: dict[str, Any] = {
    "model": {"type": "t5", "tokenizer": "editspec/models/default/t5", "init_from": None, "config": {},
              "point_markers": False, "marker_gap": False, "share_encoder": False, "init_twin": None},
    "data": {
        "sources": [], "dev": None, "max_length": 128, "batch_tokens": 4096, "batch_size": None,
        "max_batch_size": 512, "pool_size": 4096, "workers": 0, "prefetch": 64,
    },
    "train": {
        "seed": 0, "max_steps": 1000, "lr": 1e-3, "schedule": "cosine", "warmup_steps": 100,
        "weight_decay": 0.01, "adam_betas": [0.9, 0.999], "max_grad_norm": 1.0, "grad_accum": 1,
        "mixed_precision": "no", "num_threads": None, "save_every": 500, "keep_last": 2,
        "log_every": 10, "eval_every": 500, "eval_f05_every": None, "eval_approx_every": None,
        "select_on": None, "log_batches": False, "position_bias_lr_scale": 1.0, "position_prior": 0.0,
        "max_minutes": None, "ema_decay": None, "edit_weight": 1.0, "decay_share": None,
        "compile": False, "loss_chunk_tokens": 8192, "bench_steps": 0, "keep_best": 1, "init_wait_minutes": 0,
        "eval_approx_times": None,
    },
}


def deep_update(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "config":
            out[key] = deep_update(out[key], value)
        else:
            out[key] = value
    return out


class ConfigLoader(yaml.SafeLoader):
    """YAML as a person writes it: PyYAML follows YAML 1.1, which reads ``1e-3`` (no dot) as a string."""


ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"))


def load_config(path: str | os.PathLike | None, overrides: list[str]) -> dict:
    cfg = copy.deepcopy(DEFAULTS)
    if path is not None:
        with open(path, encoding="utf-8") as f:
            cfg = deep_update(cfg, yaml.load(f, ConfigLoader) or {})
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        node = cfg
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.load(value, ConfigLoader)
    if cfg["train"]["mixed_precision"] in (False, None):  # YAML reads a bare `no` as false
        cfg["train"]["mixed_precision"] = "no"
    for section, keys in DEFAULTS.items():
        unknown = set(cfg.get(section, {})) - set(keys)
        if unknown:
            raise SystemExit(f"unknown {section} option(s): {', '.join(sorted(unknown))}")
    return cfg


def resolve(path: str | os.PathLike) -> Path:
    """A repo-relative path (configs name ``editspec/models/...``) works from any working directory."""
    p = Path(path).expanduser()
    return p if p.is_absolute() or p.exists() or not (REPO_ROOT / p).exists() else REPO_ROOT / p

