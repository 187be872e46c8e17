"""Train T5 or EdiT5 for GEC from a YAML recipe, on CPU or on several GPUs with accelerate.

    python -m training.train --config configs/t5-small-cpu-pretrain.yaml --output-dir runs/t5-pre
    python -m training.train --config configs/t5-small-cpu-finetune.yaml --init-from runs/t5-pre/best
    accelerate launch --multi_gpu --num_processes 4 -m training.train --config configs/t5-base.yaml ...
    torchrun --standalone --nproc_per_node 2 -m training.train ...   (also on CPU: gloo)

(``accelerate launch --cpu`` starts ONE process; for several CPU processes use torchrun or
``accelerate launch --multi_gpu --num_processes N``, which work on CPU-only machines too.)

A recipe has three sections (see configs/ for complete ones; ``--set train.lr=3e-4`` overrides):

    model:  type (t5 | edit5), tokenizer, config (T5Config / EdiT5Config fields), init_from,
            point_markers (EdiT5: markers point at kept tokens, editspec.modeling_edit5),
            marker_gap (with point_markers: a marker's key also sees the token after the gap),
            share_encoder (EdiT5 from a T5 init_from: the heads read that T5's own encoder, frozen;
            the checkpoints store the heads alone and name the T5)
    data:   sources (weighted mixture: m2 | parallel | synthetic; ``respell: true`` on an m2 or
            parallel source, or on dev, passes its sources through ``editspec.spelling`` first, as
            ``Corrector`` does before a model whose config says ``spelling``; ``reverse: true``
            turns the pairs around, for an error model), dev (an M2 file),
            max_length, batch_tokens or batch_size, pool_size
    train:  max_steps, lr, schedule, warmup_steps, grad_accum, mixed_precision, save_every,
            keep_last, eval_every, eval_f05_every, log_every, seed, num_threads,
            position_bias_lr_scale (lr multiplier of T5's relative attention biases),
            position_prior (initial bias towards neighbouring tokens, see add_position_prior),
            max_minutes (a wall-clock budget: the schedule is refitted to it, see fit_schedule)

What the output directory holds::

    config.yaml            the resolved recipe
    log.jsonl              one JSON object per log/eval event (step, loss, lr, tokens/s, dev ...)
    checkpoints/step-N/    accelerate state (model, optimizer, scheduler, RNG) + data position
    best/                  model + tokenizer of the best dev score (F0.5 if measured, else loss)
    last/                  model + tokenizer at the end of training (or at --stop-after)

Running the same command again resumes from the newest complete checkpoint: model, optimizer,
scheduler, RNG states and the data position (``data_mixture.Position``) are restored, so the
resumed run sees the same batches, in the same order, as an uninterrupted one.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch
import yaml
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm
from transformers import T5Config, T5ForConditionalGeneration, get_scheduler
from transformers.models.t5.modeling_t5 import T5Attention
from transformers.utils import logging as hf_logging

from editspec.data import corpora, features
from editspec.data.corpora import evenly_spaced
from editspec.data.features import pad
from editspec.data.m2 import read_blocks
from editspec.decoding.core import greedy
from editspec.evaluation.run import evaluate as evaluate_corrections
from editspec.evaluation.stats import detection_auc
from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model, tag_margins
from editspec.text.spelling import respell_all
from editspec.tokenization.tokens import encode, load_tokenizer, marker_ids, render_ids
from training.data_mixture import Batching, MapSource, Mixture, Position, ShardedStream
from training.synthetic.pairs import WIKI_DIR, shard_files, synthetic_pairs

REPO_ROOT = Path(__file__).resolve().parents[1]

DEFAULTS: dict[str, Any] = {
    "model": {"type": "t5", "tokenizer": "editspec/models/default/tokenizer", "init_from": None, "config": {},
              "point_markers": False, "marker_gap": False, "share_encoder": False},
    "data": {
        "sources": [], "dev": None, "max_length": 128, "batch_tokens": 4096, "batch_size": None,
        "max_batch_size": 512, "pool_size": 4096, "workers": 0,
    },
    "train": {
        "seed": 0, "max_steps": 1000, "lr": 1e-3, "schedule": "cosine", "warmup_steps": 100,
        "weight_decay": 0.01, "adam_betas": [0.9, 0.999], "max_grad_norm": 1.0, "grad_accum": 1,
        "mixed_precision": "no", "num_threads": None, "save_every": 500, "keep_last": 2,
        "log_every": 10, "eval_every": 500, "eval_f05_every": None, "select_on": None,
        "log_batches": False, "position_bias_lr_scale": 1.0, "position_prior": 0.0, "max_minutes": None,
    },
}


# ----------------------------------------------------------------------------- config

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


# ----------------------------------------------------------------------------- models

class ModelKind:
    """What differs between T5 and EdiT5: features, collate, target length, model class."""

    def __init__(self, name: str):
        self.name = name
        if name == "t5":
            self.featurize_batch, self.collate = features.t5_features_batch, features.collate_t5
            self.target_key, self.config_cls, self.model_cls = "labels", T5Config, T5ForConditionalGeneration
        elif name == "edit5":
            self.featurize_batch, self.collate = features.edit5_features_batch, features.collate_edit5
            self.target_key, self.config_cls, self.model_cls = "insertion_labels", EdiT5Config, EdiT5Model
        else:
            raise SystemExit(f"unknown model type {name!r} (t5 or edit5)")

    def lengths(self, ex: dict) -> tuple[int, int]:
        return len(ex["input_ids"]), len(ex[self.target_key])

    def build(self, model_cfg: dict, tok) -> torch.nn.Module:
        extra = {}  # EdiT5: pointed markers (new heads when the checkpoint has none)
        if model_cfg.get("point_markers"):
            if self.name != "edit5":
                raise SystemExit("model.point_markers is an EdiT5 option")
            extra["marker_ids"] = marker_ids(tok)
            if model_cfg.get("marker_gap"):  # unset: a checkpoint keeps its own
                extra["marker_gap"] = True
        elif model_cfg.get("marker_gap"):
            raise SystemExit("model.marker_gap needs model.point_markers")
        if model_cfg.get("init_from"):
            path = resolve(model_cfg["init_from"])
            source_type = json.loads((path / "config.json").read_text()).get("model_type")
            if self.name == "edit5" and source_type == "t5":  # the paper's start: a T5 checkpoint
                keep = {k: v for k, v in (model_cfg.get("config") or {}).items()
                        if k in ("num_decoder_layers", "max_order_positions", "tag_embedding_dim",
                                 "loss_weighting", "dropout_rate", "tag_loss_weight",
                                 "pointer_loss_weight", "insertion_loss_weight")}
                if model_cfg.get("share_encoder"):  # the heads on this T5's own encoder, frozen
                    t5 = T5ForConditionalGeneration.from_pretrained(str(path), dtype=torch.float32)
                    return frozen_encoder(self.model_cls.on_t5(t5, t5_encoder=str(path.resolve()), **keep, **extra))
                return self.model_cls.from_t5(str(path), **keep, **extra)
            # fp32 master weights even from a bf16 checkpoint (the shipped ones); the recipe's
            # dropout applies too (a fine-tune regularises a model pre-trained without it), the
            # architecture comes from the checkpoint
            recipe = model_cfg.get("config") or {}
            regularise = {"dropout_rate": recipe["dropout_rate"]} if "dropout_rate" in recipe else {}
            model = self.model_cls.from_pretrained(str(path), dtype=torch.float32, **regularise, **extra)
            return frozen_encoder(model) if getattr(model.config, "t5_encoder", None) else model
        fields = dict(model_cfg.get("config") or {}, **extra)
        fields.update(vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        if self.name == "t5":
            fields.setdefault("decoder_start_token_id", tok.pad_token_id)
        return self.model_cls(self.config_cls(**fields))


def frozen_encoder(model: torch.nn.Module) -> torch.nn.Module:
    """An EdiT5 whose heads sit on a T5's encoder trains the heads alone: the encoder and the
    embeddings stay the T5's, so the T5's output does not change."""
    for p in [*model.encoder.parameters(), *model.shared.parameters()]:
        p.requires_grad_(False)
    return model


def token_counts(batch: dict[str, torch.Tensor], target_key: str) -> int:
    return int(batch["attention_mask"].sum()) + int((batch[target_key] != -100).sum())


def component_losses(output) -> dict[str, torch.Tensor]:
    """Losses the model reports besides the total (EdiT5: tags, pointers, insertions)."""
    items = output.items() if hasattr(output, "items") else vars(output).items()
    return {k: v for k, v in items if k != "loss" and k.endswith("loss") and torch.is_tensor(v)}


# ----------------------------------------------------------------------------- data

def featurized_rows(dataset, kind: ModelKind, tok, max_length: int):
    """Map a (source, target) dataset to model features; pairs the features skip are dropped."""

    def fn(batch):
        feats = [f for f in kind.featurize_batch(tok, batch["source"], batch["target"], max_length) if f]
        keys = feats[0].keys() if feats else ()
        return {k: [f[k] for f in feats] for k in keys}

    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        return dataset.map(fn, batched=True, batch_size=1000, remove_columns=dataset.column_names)
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def read_pairs(spec: dict, data_dir: Path):
    """The (source, target) dataset of a map-style source spec; with ``respell``, the sources as
    ``Corrector`` hands them to a model after its spelling step."""
    kind = spec.get("type", "m2")
    path = lambda key: str(data_dir / spec[key])  # noqa: E731
    if kind == "m2":
        pairs = corpora.read_m2(path("path"), annotator=spec.get("annotator", 0),
                                detokenized=spec.get("detokenized", True))
    elif kind == "parallel":  # a TSV file (path) or two line-aligned files (source, target)
        if "path" in spec:
            pairs = corpora.read_parallel(path("path"), detokenized=spec.get("detokenized", False))
        else:
            pairs = corpora.read_parallel(path("source"), path("target"), detokenized=spec.get("detokenized", False))
    else:
        raise SystemExit(f"unknown data source type {kind!r} (m2, parallel or synthetic)")
    if spec.get("respell") and spec.get("reverse"):
        raise SystemExit(f"data source {spec.get('name', kind)}: respell and reverse together (respell the "
                         "back-translated pairs instead)")
    if spec.get("respell"):
        pairs = pairs.remove_columns("source").add_column("source", respell_all(pairs["source"]))
    if spec.get("reverse"):  # corrected -> learner's text: an error model for training/back_translate.py
        pairs = pairs.rename_columns({"source": "target", "target": "source"})
    return pairs


def synthetic_shard(shard: tuple[str, int, int], start: int, folder: str, seed: int, m2: str | None,
                    tok_path: str, kind_name: str, max_length: int):
    """Featurized synthetic pairs of one part of a Wikipedia shard from item ``start`` on, endlessly.

    ``shard`` is (file name, part, parts): lines n with n % parts == part. Pairs are a function of
    (seed, shard, line) (``training.synthetic.pairs``); after a full pass the part starts again with
    another seed: new errors in the same sentences. Items before ``start`` are regenerated and
    dropped (about 1 ms each), which is how a run resumes.
    """
    tok, featurize = load_tokenizer(tok_path), ModelKind(kind_name).featurize_batch
    name, part, parts = shard

    def endless():
        for epoch in itertools.count():
            yield from synthetic_pairs(folder, seed + 1000 * epoch, [name], m2, part, parts)

    pairs = itertools.islice(endless(), start, None)
    while True:
        chunk = list(itertools.islice(pairs, 256))
        yield from featurize(tok, [e["source"] for e in chunk], [e["target"] for e in chunk], max_length)


def synthetic_source(spec: dict, data_dir: Path, kind: ModelKind, tok_path: Path, max_length: int, seed: int,
                     workers: int) -> ShardedStream:
    """Synthetic errors in the Wikipedia sentence shards, round-robin over the shards' parts.

    A worker process makes whole streams, so ``parts`` (the spec's, default 1) splits each shard
    into that many line-interleaved streams when there are more workers than shards; parts is part
    of the data recipe (it sets the order of the pairs), workers is not.
    """
    folder = data_dir / spec.get("path", WIKI_DIR)
    parts = int(spec.get("parts", 1))
    shards = [(f.name, q, parts) for f in shard_files(folder, spec.get("shards")) for q in range(parts)]
    m2 = str(data_dir / spec["m2_for_rates"]) if spec.get("m2_for_rates") else None
    produce = functools.partial(synthetic_shard, folder=str(folder), seed=int(spec.get("seed", seed)), m2=m2,
                                tok_path=str(tok_path), kind_name=kind.name, max_length=max_length)
    return ShardedStream(spec["name"], shards, produce, chunk=64, workers=workers)


def build_mixture(cfg: dict, kind: ModelKind, tok, data_dir: Path, log, tok_path: Path | None = None) -> Mixture:
    data, seed = cfg["data"], cfg["train"]["seed"]
    if not data["sources"]:
        raise SystemExit("the recipe has no data.sources")
    sources, weights = [], []
    for spec in data["sources"]:
        spec = dict(spec)
        spec.setdefault("name", spec.get("type", "m2") if spec.get("type") == "synthetic"
                        else Path(spec.get("path", spec.get("source", "source"))).stem)
        if spec.get("type") == "synthetic":
            sources.append(synthetic_source(spec, data_dir, kind, tok_path or Path(tok.name_or_path),
                                            data["max_length"], seed, data["workers"]))
            log(f"source {spec['name']}: synthetic errors on {spec.get('path', 'wikipedia_en_sentences')} "
                f"(streaming, weight {spec.get('weight', 1)})")
        else:
            pairs = read_pairs(spec, data_dir)
            rows = featurized_rows(pairs, kind, tok, data["max_length"])
            sources.append(MapSource(spec["name"], rows, seed))
            log(f"source {spec['name']}: {len(rows)} of {len(pairs)} pairs usable (weight {spec.get('weight', 1)})")
        weights.append(float(spec.get("weight", 1.0)))
    batching = Batching(kind.lengths, data["batch_tokens"], data["batch_size"], data["max_batch_size"])
    return Mixture(sources, weights, batching, seed, data["pool_size"])


def build_dev(cfg: dict, kind: ModelKind, tok, data_dir: Path):
    """(dev batches for the loss, dev M2 path and size for F0.5) or None."""
    dev = cfg["data"]["dev"]
    if not dev:
        return None
    spec = {"type": "m2", **dev} if isinstance(dev, dict) else {"type": "m2", "path": dev}
    pairs = read_pairs(spec, data_dir)
    pairs = pairs.select(evenly_spaced(len(pairs), spec.get("max_examples")))
    rows = featurized_rows(pairs, kind, tok, cfg["data"]["max_length"])
    rows = [rows[i] for i in range(len(rows))]
    batching = Batching(kind.lengths, cfg["data"]["batch_tokens"], cfg["data"]["batch_size"],
                        cfg["data"]["max_batch_size"])
    batches = batching.cut(rows, np.random.default_rng(0))
    return {"batches": batches, "m2": str(data_dir / spec["path"]), "f05_max": spec.get("f05_max_examples"),
            "respell": bool(spec.get("respell"))}


# ----------------------------------------------------------------------------- training state

class TrainState:
    """Step, data position and best score: saved with each checkpoint via accelerate."""

    def __init__(self):
        self.step, self.position, self.best, self.best_step = 0, Position(), None, None

    def state_dict(self) -> dict:
        return {"step": self.step, "position": self.position.state_dict(), "best": self.best,
                "best_step": self.best_step}

    def load_state_dict(self, state: dict) -> None:
        self.step, self.position = int(state["step"]), Position.from_state(state["position"])
        self.best, self.best_step = state["best"], state["best_step"]


def checkpoints(out: Path) -> list[Path]:
    """Complete checkpoints (``state.json`` is written last), oldest first."""
    found = [p for p in (out / "checkpoints").glob("step-*") if (p / "state.json").is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def batch_hash(batches: list[list[dict]]) -> str:
    ids = "|".join(",".join(ex["_id"] for ex in b) for b in batches)
    return hashlib.sha1(ids.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- time budget

def fit_schedule(scheduler, step: int, seconds: float, rate_steps: int, rate_seconds: float,
                 budget_seconds: float, max_steps: int, make) -> int:
    """The step count that fills a wall-clock budget, with ``scheduler`` refitted to end there.

    A GPU lease or a session has minutes, not steps: at a quarter of the budget the measured
    rate (steps over seconds, start-up excluded) gives the steps left, and the LR schedule is
    rebuilt (``make(total)``) so that its decay ends with the budget instead of being cut off
    mid-way. Never more than ``max_steps``.
    """
    total = min(max_steps, step + int(rate_steps / max(rate_seconds, 1e-9) * (budget_seconds - seconds)))
    total = max(total, step + 1)
    fitted = make(total)
    scheduler.lr_lambdas = fitted.lr_lambdas  # same optimizer; this scheduler keeps its place
    for group, base, fn in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * fn(scheduler.last_epoch)
    return total


# ----------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="YAML recipe (configs/*.yaml)")
    p.add_argument("--output-dir", help="where checkpoints, logs and best/ go (default runs/<config name>)")
    p.add_argument("--data-dir", help="corpus folder (default $EDITSPEC_DATA or ../shared/data)")
    p.add_argument("--max-steps", type=int, help="override train.max_steps (also the LR schedule length)")
    p.add_argument("--init-from", help="start from this model directory (a previous stage's best/)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe option, e.g. train.lr=3e-4 (repeatable)")
    p.add_argument("--stop-after", type=int, metavar="STEP",
                   help="save a checkpoint and stop after this step (the schedule still runs to "
                        "max_steps; run again to go on)")
    p.add_argument("--no-resume", action="store_true", help="ignore existing checkpoints in the output dir")
    return p.parse_args(argv)


def add_position_prior(model: torch.nn.Module, strength: float) -> int:
    """Add ``strength`` to the relative attention bias of "previous token" (head 0) and, in
    bidirectional layers, "next token" (head 1); returns the number of bias tables changed.

    Copying, most of GEC, needs a head that looks at the neighbouring token (the encoder state
    then says "I follow x", which the decoder's cross-attention matches). T5's only position
    signal is this bias; learned from ~0 it stayed unfocused for 1500 steps of our small T5
    (offset -1 was never a head's clear favourite), so the prior puts those heads in place.
    A copy probe measured it (reports/models.md, "Position prior"): a tiny T5 copies random
    sequences after 200 steps with the prior (loss 0.27) and is still far from it after 600
    without (3.45; 5.29 = chance).
    """
    changed = 0
    for module in model.modules():
        if isinstance(module, T5Attention) and module.has_relative_attention_bias:
            bidirectional = not module.is_decoder
            offsets = [-1, 1] if bidirectional else [-1]
            for head, offset in enumerate(offsets[: module.n_heads]):
                bucket = T5Attention._relative_position_bucket(
                    torch.tensor(offset), bidirectional=bidirectional,
                    num_buckets=module.relative_attention_num_buckets,
                    max_distance=module.relative_attention_max_distance)
                with torch.no_grad():
                    module.relative_attention_bias.weight[bucket, head] += strength
            changed += 1
    return changed


def param_groups(model: torch.nn.Module, lr: float, weight_decay: float,
                 position_bias_lr_scale: float = 1.0) -> list[dict]:
    """AdamW groups: weights decay; biases and norms do not; relative position biases do not
    and learn ``position_bias_lr_scale`` times faster.

    T5 has no position embeddings: position is only its relative attention bias, one scalar per
    (bucket, head). Adam moves each parameter by about lr per step whatever its gradient, so at
    lr 1e-3 these scalars spanned < 0.5 nats after 1000 steps of our small T5 (measured), too
    little for attention to single out the neighbouring token that copying needs.
    """
    def kind(name: str) -> str:
        if "relative_attention_bias" in name:
            return "position"
        return "no_decay" if any(k in name.lower() for k in ("bias", "norm")) else "decay"

    settings = {"decay": (weight_decay, 1.0), "no_decay": (0.0, 1.0), "position": (0.0, position_bias_lr_scale)}
    named = [(kind(n), p) for n, p in model.named_parameters() if p.requires_grad]
    return [{"params": [p for k, p in named if k == group], "weight_decay": wd, "lr": lr * scale}
            for group, (wd, scale) in settings.items() if any(k == group for k, _ in named)]


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    overrides = list(args.set)
    if args.max_steps is not None:
        overrides.append(f"train.max_steps={args.max_steps}")
    if args.init_from:
        overrides.append(f"model.init_from={args.init_from}")
    cfg = load_config(args.config, overrides)
    out = Path(args.output_dir or REPO_ROOT / "runs" / Path(args.config).stem)
    return train(cfg, out, args.data_dir, stop_after=args.stop_after, resume=not args.no_resume)


def train(cfg: dict, out: Path, data_dir: str | None = None, stop_after: int | None = None,
          resume: bool = True) -> dict:
    tc = cfg["train"]
    hf_logging.disable_progress_bar()  # "Writing model shards" bars at every export
    use_cpu = not torch.cuda.is_available()
    accelerator = Accelerator(cpu=use_cpu, mixed_precision=tc["mixed_precision"])
    world, rank, main_proc = accelerator.num_processes, accelerator.process_index, accelerator.is_main_process
    threads = tc["num_threads"] or (max(1, (os.cpu_count() or 1) // world) if use_cpu and world > 1 else None)
    if threads:
        torch.set_num_threads(int(threads))
    set_seed(tc["seed"])

    def log(msg: str) -> None:
        if main_proc:
            tqdm.write(f"[train] {msg}", file=sys.stderr)

    out.mkdir(parents=True, exist_ok=True)
    saved = out / "config.yaml"
    if main_proc:
        if resume and checkpoints(out) and saved.is_file():
            before = yaml.load(saved.read_text(encoding="utf-8"), ConfigLoader)
            changed = [f"{section}.{key}" for section in cfg for key in cfg[section]
                       if before.get(section, {}).get(key) != cfg[section][key]]
            if changed:  # the data position means the same batches only under the same data recipe
                log(f"warning: resuming with changed options {', '.join(changed)}")
        saved.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")

    init_from = cfg["model"].get("init_from")
    tok_path = resolve(init_from) if init_from and (resolve(init_from) / "tokenizer_config.json").exists() \
        else resolve(cfg["model"]["tokenizer"])
    tok = load_tokenizer(tok_path)
    kind = ModelKind(cfg["model"]["type"])
    model = kind.build(cfg["model"], tok)
    if tc["position_prior"] and init_from:
        log("position prior skipped: it initialises a model trained from scratch, not one loaded from init_from")
    elif tc["position_prior"]:  # before a resume loads the saved weights, so applied once
        log(f"position prior {tc['position_prior']} on {add_position_prior(model, tc['position_prior'])} bias tables")
    if len(tok) > model.config.vocab_size:
        raise SystemExit(f"tokenizer {tok_path} has {len(tok)} tokens, the model {model.config.vocab_size}")
    log(f"{kind.name}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, "
        f"{world} process(es), device {accelerator.device}, mixed precision {tc['mixed_precision']}, "
        f"{torch.get_num_threads()} thread(s)")

    data_root = corpora.data_dir(data_dir)
    with accelerator.main_process_first():  # the first process fills the datasets cache, the rest read it
        mixture = build_mixture(cfg, kind, tok, data_root, log, tok_path)
        dev = build_dev(cfg, kind, tok, data_root)

    groups = param_groups(model, tc["lr"], tc["weight_decay"], tc["position_bias_lr_scale"])
    optimizer = torch.optim.AdamW(groups, lr=tc["lr"], betas=tuple(tc["adam_betas"]))
    # The scheduler is not prepared: accelerate would step it once per process per step.
    def make_scheduler(total: int):
        return get_scheduler(tc["schedule"], optimizer, num_warmup_steps=tc["warmup_steps"],
                             num_training_steps=total)

    scheduler = make_scheduler(tc["max_steps"])
    model, optimizer = accelerator.prepare(model, optimizer)
    state = TrainState()
    accelerator.register_for_checkpointing(scheduler, state)

    found = checkpoints(out) if resume else []
    if found:
        accelerator.load_state(str(found[-1]))
        log(f"resumed from {found[-1]} (step {state.step})")

    select_on = tc["select_on"] or ("f05" if tc["eval_f05_every"] else "loss")
    log_file = open(out / "log.jsonl", "a", encoding="utf-8") if main_proc else None

    def record(entry: dict) -> None:
        if log_file:
            log_file.write(json.dumps(entry) + "\n")
            log_file.flush()

    def export(dest: Path) -> None:
        if main_proc:
            tmp = dest.with_name(dest.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            accelerator.unwrap_model(model).save_pretrained(tmp)
            tok.save_pretrained(tmp)
            (tmp / "training.json").write_text(json.dumps({"step": state.step, "best": state.best,
                                                           "select_on": select_on}) + "\n")
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)

    def evaluate(f05: bool) -> dict:
        result: dict[str, Any] = {"step": state.step}
        if main_proc and dev is not None:
            net = accelerator.unwrap_model(model)
            net.eval()
            total, weight, parts, margins, deleted = 0.0, 0, Counter(), [], []
            with torch.no_grad(), accelerator.autocast():
                for examples in dev["batches"]:
                    batch = {k: v.to(accelerator.device) for k, v in kind.collate(examples, tok.pad_token_id).items()}
                    output = net(**batch)
                    total += float(output.loss) * len(examples)
                    weight += len(examples)
                    for k, v in component_losses(output).items():
                        parts[k] += float(v) * len(examples)
                    if getattr(output, "tag_logits", None) is not None:  # EdiT5: delete margin per token
                        margin, gold = tag_margins(output.tag_logits, batch["tags"])
                        margins.append(margin.cpu())
                        deleted.append(gold.cpu())
            result["dev_loss"] = total / max(weight, 1)
            result.update({f"dev_{k}": v / max(weight, 1) for k, v in parts.items()})
            if margins:
                result["dev_tag_auc"] = detection_auc(torch.cat(margins), torch.cat(deleted))
            if f05:
                result.update(dev_f05(net, kind, tok, dev, accelerator, cfg["data"]["max_length"]))
            net.train()
        accelerator.wait_for_everyone()
        return result

    def maybe_select(result: dict) -> None:
        key = "dev_f05" if select_on == "f05" else "dev_loss"
        if key not in result:
            return
        score = result[key] if select_on == "f05" else -result[key]
        if state.best is None or score > state.best:
            state.best, state.best_step = score, state.step
            export(out / "best")
            result["new_best"] = True

    def save_checkpoint() -> None:
        ckpt = out / "checkpoints" / f"step-{state.step}"
        accelerator.save_state(str(ckpt))
        if main_proc:
            (ckpt / "state.json").write_text(json.dumps(state.state_dict()) + "\n")
            for old in checkpoints(out)[:-max(1, tc["keep_last"])]:
                shutil.rmtree(old, ignore_errors=True)
        accelerator.wait_for_everyone()

    stream = mixture.batches(state.position)
    per_step = world * tc["grad_accum"]
    max_steps = tc["max_steps"]
    end = min(max_steps, stop_after) if stop_after is not None else max_steps
    bar = tqdm(total=end, initial=state.step, disable=not main_proc, desc="train", dynamic_ncols=True)
    window = {"loss": 0.0, "n": 0, "tokens": 0, "examples": 0, "time": 0.0, "parts": Counter()}
    model.train()
    last = {}
    budget = 60 * tc["max_minutes"] if tc["max_minutes"] else None
    started, mark, fitted = time.perf_counter(), None, False
    while state.step < end:
        t0 = time.perf_counter()
        global_batches, position = [], None
        for _ in range(per_step):
            b, position = next(stream)
            global_batches.append(b)
        mine = global_batches[rank::world]
        tokens = 0
        for i, examples in enumerate(mine):
            batch = {k: v.to(accelerator.device) for k, v in kind.collate(examples, tok.pad_token_id).items()}
            tokens += token_counts(batch, kind.target_key)
            sync = i == len(mine) - 1
            with (contextlib.nullcontext() if sync else accelerator.no_sync(model)):
                output = model(**batch)
                accelerator.backward(output.loss / len(mine))
            window["loss"] += float(output.loss.detach()) / len(mine)
            for k, v in component_losses(output).items():
                window["parts"][k] += float(v.detach()) / len(mine)
        if tc["max_grad_norm"]:
            accelerator.clip_grad_norm_(model.parameters(), tc["max_grad_norm"])
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        state.step += 1
        state.position = position
        window["n"] += 1
        window["tokens"] += tokens
        window["examples"] += sum(len(b) for b in mine)
        window["time"] += time.perf_counter() - t0
        bar.update(1)

        if budget is not None:
            # every process takes the same decision: the slowest clock
            elapsed = float(accelerator.gather(torch.tensor([time.perf_counter() - started],
                                                            device=accelerator.device)).max())
            if mark is None and elapsed > 0.05 * budget:  # rate measured from here (warm caches, full pool)
                mark = (state.step, elapsed)
            elif mark is not None and not fitted and elapsed > 0.25 * budget:
                total = fit_schedule(scheduler, state.step, elapsed, state.step - mark[0], elapsed - mark[1],
                                     budget, max_steps, make_scheduler)
                fitted = True
                max_steps, end = total, min(end, total)
                log(f"time budget {tc['max_minutes']} min: schedule refitted to {total} steps")
            elif elapsed > budget and state.step < end:
                max_steps = end = state.step  # slower than measured (evaluations, saves): stop on time
                log(f"time budget {tc['max_minutes']} min spent at step {state.step}")
        if tc["log_batches"]:
            record({"step": state.step, "batches": batch_hash(global_batches), "n_batches": len(global_batches),
                    "loss_local": float(output.loss.detach())})
        if state.step % tc["log_every"] == 0 or state.step == end:
            stats = torch.tensor([window["loss"], window["tokens"], window["examples"]], dtype=torch.float64,
                                 device=accelerator.device)
            stats = accelerator.reduce(stats, reduction="sum")
            n, secs = window["n"], max(window["time"], 1e-9)
            last = {"step": state.step, "loss": float(stats[0]) / world / n,
                    **{k: v / n for k, v in window["parts"].items()},
                    "lr": scheduler.get_last_lr()[0], "tokens_per_s": float(stats[1]) / secs,
                    "examples_per_s": float(stats[2]) / secs, "steps_per_s": n / secs,
                    "position": position.state_dict()}
            record(last)
            bar.set_postfix(loss=f"{last['loss']:.3f}", tok_s=f"{last['tokens_per_s']:.0f}")
            window = {"loss": 0.0, "n": 0, "tokens": 0, "examples": 0, "time": 0.0, "parts": Counter()}
        do_f05 = bool(tc["eval_f05_every"]) and (state.step % tc["eval_f05_every"] == 0 or state.step == max_steps)
        do_loss = bool(tc["eval_every"]) and (state.step % tc["eval_every"] == 0 or state.step == max_steps)
        if dev is not None and (do_loss or do_f05):
            result = evaluate(do_f05)
            if main_proc:
                maybe_select(result)
                record(result)
                log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()))
        if state.step % tc["save_every"] == 0 or state.step in (max_steps, stop_after):
            save_checkpoint()
    bar.close()
    if state.step >= end:
        export(out / "last")  # also at --stop-after: a model directory of the newest weights
    if state.step >= max_steps:
        if dev is None or not (out / "best").exists():
            export(out / "best")  # nothing to select on: the final model is the best we know
    accelerator.wait_for_everyone()
    if log_file:
        log_file.close()
    accelerator.end_training()
    return {"step": state.step, "last": last, "best": state.best, "best_step": state.best_step}


# ----------------------------------------------------------------------------- dev F0.5

def correct_fn_for(net, kind: ModelKind, tok, max_length: int, respell: bool = False):
    """list[str] -> list[str] with the model being trained (greedy), for ``editspec.evaluation``;
    with ``respell``, after the spelling step (``editspec.text.spelling``)."""
    def correct(texts: list[str]) -> list[str]:
        if respell:
            texts = respell_all(texts)
        if kind.name == "edit5":
            return net.correct(tok, texts)
        encoded = encode(tok, texts)
        rows = [e.ids[: max_length - 1] + [tok.eos_token_id] for e in encoded]
        ids = pad(rows, tok.pad_token_id).to(net.device)
        mask = pad([[1] * len(r) for r in rows], 0).to(net.device)
        return [render_ids(tok, e, out) for e, out in zip(encoded, greedy(net, ids, mask, max_length))]

    return correct


def f05_evaluator(m2_path: str, limit: int | None):
    """ERRANT scorer of (an evenly spaced subset of) a gold M2 file; sources parsed once."""
    # ERRANT (spaCy) only where F0.5 is measured: a lent GPU machine has neither (training.lease)
    from editspec.evaluation.errant import ErrantEvaluator

    blocks = read_blocks(m2_path)
    return ErrantEvaluator([blocks[i] for i in evenly_spaced(len(blocks), limit)])


def dev_f05(net, kind: ModelKind, tok, dev: dict, accelerator, max_length: int) -> dict:
    if dev.get("evaluator") is None:
        dev["evaluator"] = f05_evaluator(dev["m2"], dev["f05_max"])
    with accelerator.autocast():
        correct = correct_fn_for(net, kind, tok, max_length, respell=dev.get("respell", False))
        result, _, seconds = evaluate_corrections(correct, dev["evaluator"])
    p, r, f = result.scores()
    return {"dev_f05": float(f), "dev_precision": float(p), "dev_recall": float(r), "dev_f05_seconds": seconds}


if __name__ == "__main__":
    main()
