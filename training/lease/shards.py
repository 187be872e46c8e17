"""A bundle as at most 8 files of at most 16 MiB (what a device call brings back), and back.

``split`` cuts the bundle's weights into safetensors shards of at most ``MAX_SHARD`` bytes, each
tensor named by its file and key; everything else goes into one tar.xz; a manifest lists every
file with its sha256 and each weights file with its own sha256 and safetensors metadata::

    bundle/t5/model.safetensors (44 MB bf16), bundle/edit5/model.safetensors (3 MB), configs, tokenizers
      -> lease-weights-00.safetensors.xz  {"t5/model.safetensors:shared.weight": ..., ...}   <= 15 MiB before xz
         lease-weights-01.safetensors.xz, ...
         lease-files.tar.xz            t5/config.json, t5/tokenizer.json, ..., corrector_config.json
         lease-manifest.json           {"files": {name: {sha256, bytes}}, "weights": {path: {sha256, metadata, keys}}}

``join`` checks every file's sha256, writes each weights file back from its tensors (safetensors
writes the same bytes for the same tensors and metadata, which the file's own sha256 confirms)
and unpacks the rest.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from editspec.errors import EditspecError

MAX_SHARD = 15 * 2**20
MAX_FILES, MAX_FILE = 8, 16 * 2**20  # what comes back from one device call
MANIFEST, FILES = "lease-manifest.json", "lease-files.tar.xz"
HEADER_ROOM = 256 * 2**10  # a shard's JSON header: names, dtypes, shapes, offsets


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            h.update(block)
    return h.hexdigest()


def split(bundle: Path, out: Path, extra: dict | None = None, max_shard: int = MAX_SHARD) -> dict:
    """Write the bundle's shards, files and manifest into ``out``; the manifest (with ``extra``)."""
    out.mkdir(parents=True, exist_ok=True)
    weights, shards, current, size = {}, [], {}, 0

    def flush() -> None:
        nonlocal current, size
        if current:
            name = f"lease-weights-{len(shards):02d}.safetensors"
            save_file(current, out / name, metadata={"editspec": "lease shard"})
            shards.append(name)
        current, size = {}, 0

    for path in sorted(bundle.rglob("*.safetensors")):
        rel = path.relative_to(bundle).as_posix()
        with safe_open(path, "pt") as f:
            keys = list(f.keys())
            weights[rel] = {"sha256": sha256(path), "metadata": f.metadata(), "keys": keys}
            for key in keys:
                tensor = f.get_tensor(key)
                nbytes = tensor.numel() * tensor.element_size()
                if nbytes + HEADER_ROOM > max_shard:
                    raise EditspecError(f"{rel}: tensor {key} takes {nbytes / 2**20:.1f} MiB, over a shard's "
                                        f"{max_shard / 2**20:.0f} MiB: plan smaller shapes")
                if size + nbytes + HEADER_ROOM > max_shard:
                    flush()
                current[f"{rel}:{key}"] = tensor
                size += nbytes
    flush()
    with ThreadPoolExecutor() as pool:  # lzma releases the GIL: the shards compress side by side
        shards = list(pool.map(lambda name: compress(out / name), shards))
    with tarfile.open(out / FILES, "w:xz") as tar:
        for path in sorted(p for p in bundle.rglob("*") if p.is_file() and p.suffix != ".safetensors"):
            tar.add(path, path.relative_to(bundle).as_posix())
    names = [*shards, FILES]
    manifest = {"files": {n: {"sha256": sha256(out / n), "bytes": (out / n).stat().st_size} for n in names},
                "weights": weights, **(extra or {})}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def compress(path: Path) -> str:
    """``path`` -> ``path.xz`` (preset 0: bf16 weights shrink to ~74% at ~9 MB/s a core), the
    original removed; the new name. Two bf16 T5s of ~33 MB (a candidate and the continuation)
    then fit in what one call brings back."""
    with open(path, "rb") as src, lzma.open(path.with_name(path.name + ".xz"), "wb", preset=0) as dst:
        shutil.copyfileobj(src, dst, 2**20)
    path.unlink()
    return path.name + ".xz"


def check_sizes(out: Path) -> None:
    """What the device call brings back: at most MAX_FILES files of at most MAX_FILE bytes."""
    files = [p for p in out.rglob("*") if p.is_file()]
    big = [p.name for p in files if p.stat().st_size > MAX_FILE]
    if len(files) > MAX_FILES or big:
        raise EditspecError(f"{out} holds {len(files)} files (at most {MAX_FILES} come back)"
                            + (f"; over {MAX_FILE / 2**20:.0f} MiB: {', '.join(big)}" if big else ""))


def join(src: Path, dest: Path) -> dict:
    """Rebuild the bundle from ``src`` (shards, files, manifest) in ``dest``; the manifest."""
    try:
        manifest = json.loads((src / MANIFEST).read_text())
    except (OSError, ValueError) as e:
        raise EditspecError(f"no readable {MANIFEST} in {src}: {e}") from e
    for name, entry in manifest["files"].items():
        if not (src / name).is_file():
            raise EditspecError(f"{src / name} is missing")
        if sha256(src / name) != entry["sha256"]:
            raise EditspecError(f"{src / name}: sha256 differs from the manifest's (damaged in transfer)")
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors: dict[str, dict] = {rel: {} for rel in manifest["weights"]}
    for name in manifest["files"]:
        if name.endswith((".safetensors", ".safetensors.xz")):
            shard = src / name
            if name.endswith(".xz"):
                shard = tmp / name.removesuffix(".xz")
                with lzma.open(src / name) as f, open(shard, "wb") as dst:
                    shutil.copyfileobj(f, dst, 2**20)
            with safe_open(shard, "pt") as f:
                for key in f.keys():
                    rel, _, inner = key.partition(":")
                    tensors[rel][inner] = f.get_tensor(key)
            if shard.parent == tmp:
                shard.unlink()
    for rel, entry in manifest["weights"].items():
        if set(tensors[rel]) != set(entry["keys"]):
            raise EditspecError(f"{rel}: the shards hold other tensors than the manifest lists")
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file(tensors[rel], path, metadata=entry["metadata"])
        if sha256(path) != entry["sha256"]:
            raise EditspecError(f"{rel}: rebuilt with another sha256 than the original's")
    with tarfile.open(src / FILES) as tar:
        tar.extractall(tmp, filter="data")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return manifest
