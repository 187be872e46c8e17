"""Training data: sources -> mixture -> length-bucketed batches -> padded tensors, ready for the loop.

    sources     m2 / parallel files (featurized once, ``datasets`` cache) and synthetic errors in
                Wikipedia shards (made endlessly by worker processes, ``data.workers``)
    mixture     ``training.data_mixture.Mixture``: weighted draws, pools sorted by length and cut
                into token-budget batches, a resumable position
    tensors     ``Ready``: each batch padded (``ModelKind.collate``), its token counts taken on the
                host (no device sync in the loop), optionally the edit mask of its labels

With ``data.workers`` > 0 all of that runs in a loader process (``loader_process``), which hands
the loop ready numpy arrays through a queue ``data.prefetch`` batches deep: the loop's own process
only copies them to the device and steps. A lease measured the loop, not the GPU, setting the
pace when the main process pooled, sorted and padded itself (reports/models.md). With no workers
(tests, CPU runs) the same generator runs in-process: the batches are the same either way.
"""

from __future__ import annotations

import functools
import itertools
import contextlib
import multiprocessing as mp
import os
import queue
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import datasets
import numpy as np
import torch

from editspec.data import corpora
from editspec.data.corpora import evenly_spaced
from editspec.tokenization.edits import align
from editspec.tokenization.tokens import encode, load_tokenizer
from training.data_mixture import Batching, MapSource, Mixture, Position, ShardedStream
from training.config import REPO_ROOT, resolve
from training.respelling import respelled
from training.models import ModelKind
from training.synthetic.pairs import WIKI_DIR, shard_files, synthetic_pairs


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
    ``Corrector`` hands them to a model after its spelling step (``training.respelling``: from the
    data directory's table where a lease carried one)."""
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
        pairs = pairs.remove_columns("source").add_column("source", respelled(pairs["source"], data_dir))
    if spec.get("reverse"):  # corrected -> learner's text: an error model for training/back_translate.py
        pairs = pairs.rename_columns({"source": "target", "target": "source"})
    return pairs


@dataclass(frozen=True)
class Errors:
    """A synthetic stream's errors in the Wikipedia shards of ``folder``: made with ``seed``, at the
    rates of ``m2`` (None: the rules' own) times ``error_rate``, replaying ``patterns`` (a
    ``training.synthetic.patterns`` table; None: the rules alone)."""

    folder: str
    seed: int
    m2: str | None = None
    error_rate: float = 1.0
    patterns: str | None = None


@dataclass(frozen=True)
class Featurizing:
    """How pairs become a model's features: ``kind_name``'s, with the tokenizer at ``tok_path``,
    pairs longer than ``max_length`` ids dropped."""

    tok_path: str
    kind_name: str
    max_length: int


def synthetic_shard(shard: tuple[str, int, int], start: int, errors: Errors, featurizing: Featurizing):
    """Featurized synthetic pairs of one part of a Wikipedia shard from item ``start`` on, endlessly.

    ``shard`` is (file name, part, parts): lines n with n % parts == part. Pairs are a function of
    (seed, shard, line) (``training.synthetic.pairs``); after a full pass the part starts again with
    another seed: new errors in the same sentences (a pattern replayer finds each sentence's sites
    once), so a T5's target ids are tokenized once and kept (``TargetIds``). Items before ``start``
    are regenerated and dropped (well under 1 ms each), which is how a run resumes.
    """
    tok, kind = load_tokenizer(featurizing.tok_path), ModelKind(featurizing.kind_name)
    featurize = TargetIds(tok).t5_features if kind.name == "t5" else functools.partial(kind.featurize_batch, tok)
    name, part, parts = shard
    endless = synthetic_pairs(errors.folder, errors.seed, [name], errors.m2, part, parts, errors.error_rate,
                              errors.patterns, passes=None)
    pairs = itertools.islice(endless, start, None)
    while True:
        chunk = list(itertools.islice(pairs, 256))
        yield from featurize([e["source"] for e in chunk], [e["target"] for e in chunk], featurizing.max_length)


class TargetIds:
    """``features.t5_features_batch`` with each target's ids tokenized once: a synthetic stream's
    targets are the same sentences pass after pass (only the errors in the sources change)."""

    def __init__(self, tok):
        self.tok, self.ids = tok, {}

    def t5_features(self, sources: list[str], targets: list[str], max_length: int) -> list[dict | None]:
        new = [t for t in dict.fromkeys(targets) if t not in self.ids]
        self.ids.update(zip(new, (e.ids for e in encode(self.tok, new))))
        eos, out = self.tok.eos_token_id, []
        for src, tgt in zip(encode(self.tok, sources), (self.ids[t] for t in targets)):
            too_long = len(src.ids) + 1 > max_length or len(tgt) + 1 > max_length
            out.append(None if too_long else {"input_ids": src.ids + [eos], "labels": tgt + [eos]})
        return out


def pattern_table(path: str, data_dir: Path) -> Path:
    """A synthetic source's ``patterns``: a relative path is looked up in the data directory (where
    a lease carries the table), then in runs/ (where ``python -m training.synthetic.patterns build``
    writes it here)."""
    p = Path(path)
    for candidate in [p] if p.is_absolute() else [data_dir / p, REPO_ROOT / "runs" / p]:
        if candidate.is_file():
            return candidate
    raise SystemExit(f"no pattern table {path} in {data_dir} or {REPO_ROOT / 'runs'}: build it with "
                     f"`python -m training.synthetic.patterns build --out {REPO_ROOT / 'runs' / path}`")


def synthetic_source(spec: dict, data_dir: Path, kind: ModelKind, tok_path: Path, max_length: int, seed: int,
                     workers: int) -> ShardedStream:
    """Synthetic errors in the Wikipedia sentence shards, round-robin over the shards' parts.

    A worker process makes whole streams, so ``parts`` (the spec's, default 1) splits each shard
    into that many line-interleaved streams when there are more workers than shards; parts is part
    of the data recipe (it sets the order of the pairs), workers is not. With ``patterns`` (a table
    of ``training.synthetic.patterns``, see ``pattern_table``) the errors are the learners' patterns
    replayed at their rates and the rules for the rest; without it, the rules alone.
    """
    folder = data_dir / spec.get("path", WIKI_DIR)
    parts = int(spec.get("parts", 1))
    shards = [(f.name, q, parts) for f in shard_files(folder, spec.get("shards")) for q in range(parts)]
    m2 = str(data_dir / spec["m2_for_rates"]) if spec.get("m2_for_rates") else None
    patterns = str(pattern_table(spec["patterns"], data_dir)) if spec.get("patterns") else None
    errors = Errors(str(folder), int(spec.get("seed", seed)), m2, float(spec.get("error_rate", 1.0)), patterns)
    produce = functools.partial(synthetic_shard, errors=errors,
                                featurizing=Featurizing(str(tok_path), kind.name, max_length))
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
            "respell": bool(spec.get("respell")), "sources": list(pairs["source"]), "targets": list(pairs["target"])}



# ----------------------------------------------------------------------------- ready tensors

@dataclass
class Ready:
    """One step's batch as the loop takes it: padded arrays, counts taken on the host."""

    arrays: dict[str, np.ndarray]
    position: Position  # the mixture's position after this batch
    examples: int
    tokens: int  # real (unpadded) source + target tokens
    source_tokens: int
    target_tokens: int
    ids: list[str] = field(default_factory=list)  # the examples' "_id"s (recipe checks, train.log_batches)

    def to(self, device: torch.device) -> dict[str, torch.Tensor]:
        """On the device; to a GPU from pinned memory, so that the copy does not wait for it."""
        pin = device.type == "cuda"
        return {k: (torch.from_numpy(v).pin_memory() if pin else torch.from_numpy(v)).to(device, non_blocking=True)
                for k, v in self.arrays.items()}


def edit_mask(source: list[int], labels: list[int]) -> list[bool]:
    """Which label tokens are part of an edit: not kept from the source (``tokenization.edits.align``:
    an exact longest common subsequence by rapidfuzz, in C, then moves of equal leftover tokens)."""
    return [kept is None for kept in align(source, labels)]


def ready(examples: list[dict], position: Position, kind: ModelKind, pad_id: int, edits: bool) -> Ready:
    arrays = {k: v.numpy() for k, v in kind.collate(examples, pad_id).items()}
    source = sum(len(ex["input_ids"]) for ex in examples)
    target = sum(len(ex[kind.target_key]) for ex in examples)
    if edits and kind.name == "t5":  # the T5's labels: edit tokens (EOS is never one: it aligns)
        mask = np.zeros(arrays["labels"].shape, dtype=bool)
        for row, ex in enumerate(examples):
            mask[row, :len(ex["labels"])] = edit_mask(ex["input_ids"], ex["labels"])
        arrays["edit_mask"] = mask
    return Ready(arrays, position, len(examples), source + target, source, target, [ex["_id"] for ex in examples])


def ready_batches(cfg: dict, data_root: Path, position: Position, log=print) -> Iterator[Ready]:
    """Endless ``Ready`` batches of a recipe's training data from ``position`` on (one per micro-step)."""
    kind = ModelKind(cfg["model"]["type"])
    tok_path = tokenizer_path(cfg)
    tok = load_tokenizer(tok_path)
    mixture = build_mixture(cfg, kind, tok, data_root, log, tok_path)
    edits = float(cfg["train"].get("edit_weight", 1.0)) != 1.0
    for examples, after in mixture.batches(position, log):
        yield ready(examples, after, kind, tok.pad_token_id, edits)


def tokenizer_path(cfg: dict) -> Path:
    """The recipe's tokenizer: the init_from checkpoint's own when it has one."""
    init_from = cfg["model"].get("init_from")
    if init_from and (resolve(init_from) / "tokenizer_config.json").exists():
        return resolve(init_from)
    return resolve(cfg["model"]["tokenizer"])


def _loader_main(cfg: dict, data_root: str, position: dict, out) -> None:
    """The loader process: ready batches into ``out`` until SIGTERM, or until the loop's process is gone."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds: the synthetic workers are stopped
    out.cancel_join_thread()  # exit at once with batches still in the pipe: nobody will read them
    parent = os.getppid()
    torch.set_num_threads(1)
    try:
        for batch in ready_batches(cfg, Path(data_root), Position.from_state(position),
                                   log=lambda m: print(f"[loader] {m}", file=sys.stderr, flush=True)):
            while True:
                try:
                    out.put(batch, timeout=5)
                    break
                except queue.Full:
                    if os.getppid() != parent:  # the loop's process died: stop making batches
                        return
    except SystemExit:
        raise
    except BaseException:  # the loop reports it (as text: an exception need not pickle)
        with contextlib.suppress(Exception):
            out.put(RuntimeError(traceback.format_exc()), timeout=5)
        raise


class LoaderProcess:
    """``ready_batches`` in a separate process (non-daemonic: it starts the synthetic workers)."""

    def __init__(self, cfg: dict, data_root: Path, position: Position):
        ctx = mp.get_context("spawn")  # fork after torch has started threads can deadlock
        self.queue = ctx.Queue(maxsize=int(cfg["data"].get("prefetch") or 64))
        self.proc = ctx.Process(target=_loader_main, args=(cfg, str(data_root), position.state_dict(), self.queue))
        self.proc.start()

    def __iter__(self) -> Iterator[Ready]:
        while True:
            try:
                got = self.queue.get(timeout=5)
            except queue.Empty:
                if not self.proc.is_alive():  # killed, or failed before it could say so
                    raise RuntimeError(f"the training data loader exited ({self.proc.exitcode})") from None
                continue
            if isinstance(got, BaseException):
                raise RuntimeError("the training data loader failed") from got
            yield got

    def close(self) -> None:
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


class Batches:
    """The loop's data: ``next()`` gives a ``Ready`` batch and how long the loop waited for it."""

    def __init__(self, cfg: dict, data_root: Path, position: Position, log=print):
        self.loader = LoaderProcess(cfg, data_root, position) if cfg["data"]["workers"] else None
        self.it = iter(self.loader) if self.loader else ready_batches(cfg, data_root, position, log)

    def next(self) -> tuple[Ready, float]:
        t0 = time.perf_counter()
        batch = next(self.it)
        return batch, time.perf_counter() - t0

    def close(self) -> None:
        if self.loader:
            self.loader.close()
