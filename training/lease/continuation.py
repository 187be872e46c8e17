"""The continuation checkpoint: the stable-phase T5 that one lease hands the next, kept in git.

Each lease starts bare, and what a lease learns is lost unless it ships; so the stable phase of a
warmup-stable-decay schedule (before any decay) travels from lease to lease as one packed file,
replaced, not added, by each lease::

    training/continuation/t5.tar.xz   config.json, model.safetensors (bf16), the tokenizer's files
    training/continuation/t5.json     {"sha256": ..., "bytes": ..., "leases": 3, "examples": pairs
                                       seen in all, "wiki_next": the Wikipedia line the next lease
                                       starts from, "steps": ...}

``verify`` runs in ``prepare`` (here, before any device time) and again in ``start``: a missing,
truncated or mismatched file, or one holding anything but a model's files, is a one-line error, never a silent start from scratch (a new series
starts only when ``prepare --from-scratch`` says so). The optimizer state does not travel: each
lease warms it up again.
"""

from __future__ import annotations

import json
import lzma
import shutil
import tarfile
from pathlib import Path

from editspec.errors import EditspecError
from training.lease.plan import REPO_ROOT
from training.lease.shards import sha256

PACK = REPO_ROOT / "training" / "continuation" / "t5.tar.xz"
MAX_BYTES = 30_000_000  # the bound: one lease's continuation in git
MEMBERS = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
OPTIONAL = ("generation_config.json", "training.json")


def meta_path(pack: Path) -> Path:
    return pack.with_name(pack.name.split(".")[0] + ".json")


def verify(pack: Path = PACK) -> dict:
    """The checkpoint's metadata once its file is whole; ``EditspecError`` (one line) otherwise."""
    meta_file = meta_path(pack)
    if not pack.is_file() or not meta_file.is_file():
        raise EditspecError(f"no continuation checkpoint at {pack} (with {meta_file.name}): restore it from git, "
                            f"or start a new series with `prepare --from-scratch`")
    try:
        meta = json.loads(meta_file.read_text())
        expected, size = meta["sha256"], int(meta["bytes"])
    except (ValueError, KeyError, TypeError) as e:
        raise EditspecError(f"{meta_file} is not a continuation record: {e}") from e
    if pack.stat().st_size != size:
        raise EditspecError(f"{pack} has {pack.stat().st_size} bytes, {meta_file.name} says {size}: truncated or replaced")
    if sha256(pack) != expected:
        raise EditspecError(f"{pack}: sha256 differs from {meta_file.name}'s: damaged or mismatched")
    members(pack)
    return meta


def pack_model(model_dir: Path, meta: dict, pack: Path = PACK) -> dict:
    """Pack ``model_dir`` (a shipped bf16 T5) into ``pack`` with ``meta``; the full record."""
    missing = [m for m in MEMBERS if not (model_dir / m).is_file()]
    if missing:
        raise EditspecError(f"{model_dir} lacks {', '.join(missing)}: not a model directory to continue from")
    pack.parent.mkdir(parents=True, exist_ok=True)
    tmp = pack.with_name(pack.name + ".tmp")
    with lzma.open(tmp, "wb", preset=6) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for name in [*MEMBERS, *(m for m in OPTIONAL if (model_dir / m).is_file())]:
            tar.add(model_dir / name, name)
    if tmp.stat().st_size > MAX_BYTES:
        size = tmp.stat().st_size
        tmp.unlink()
        raise EditspecError(f"the continuation checkpoint takes {size / 1e6:.1f} MB, over {MAX_BYTES / 1e6:.0f} MB")
    record = {**meta, "sha256": sha256(tmp), "bytes": tmp.stat().st_size}
    tmp.replace(pack)
    meta_path(pack).write_text(json.dumps(record, indent=1) + "\n")
    return record


def members(pack: Path) -> list[str]:
    """The files in ``pack``; a one-line error for any that is not a model's (``MEMBERS``,
    ``OPTIONAL``): the pack is a trained model, never data."""
    with tarfile.open(pack, "r:xz") as tar:
        names = tar.getnames()
    foreign = sorted(set(names) - {*MEMBERS, *OPTIONAL})
    if foreign or not set(MEMBERS) <= set(names):
        raise EditspecError(f"{pack} is not a model checkpoint: it holds {', '.join(foreign) or 'too little'} "
                            f"(expected {', '.join(MEMBERS)}, optionally {', '.join(OPTIONAL)})")
    return names


def unpack(pack: Path, dest: Path) -> Path:
    """The checked checkpoint as a model directory ``dest``."""
    verify(pack)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(pack, "r:xz") as tar:
        tar.extractall(dest, filter="data")
    return dest
