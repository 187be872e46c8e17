"""A bundle as at most 8 files of at most 16 MiB (what a device call brings back), and back.

``split`` writes the bundle (the shipped T5, the second-ranked candidates, the continuation: three
bf16 T5s of 33 MB each, their configs and tokenizers) as one tar, xz-compressed in chunks side by
side (each chunk an xz stream of its own: ``lzma`` releases the GIL, so the machine's cores share
the work, and concatenated streams read back as one file), and cuts the compressed bytes into
pieces of at most ``MAX_FILE``; the manifest lists each piece's sha256 and each bundle file's::

    bundle/t5/model.safetensors, bundle/t5-2/..., bundle/continuation/..., configs, tokenizers
      -> lease-bundle.tar.xz.00 ... .04     the compressed tar, cut into <= 16 MiB pieces
         lease-manifest.json               {"pieces": {name: {sha256, bytes}}, "bundle": {path: {sha256, bytes}}, ...}

bf16 weights compress to ~74% at preset 0 (measured on the continuation; 71% at preset 6, at a
fifth of the speed), so three T5s take ~71 MiB: five pieces, which leave room for the logs' file
and the manifest. Pieces are cut
by compressed size, so the count follows what the weights compress to, not a guess of it.

``join`` checks every piece's sha256, reads the pieces back as one stream, unpacks the tar into a
temporary folder, checks each file's sha256, and renames it into place. Hand-written because no
library splits an archive into size-capped pieces of a call's transfer limit; tar and xz are
Python's own.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import shutil
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from editspec.errors import EditspecError

MAX_FILES, MAX_FILE = 8, 16 * 2**20  # what comes back from one device call
MANIFEST, PIECES = "lease-manifest.json", "lease-bundle.tar.xz"
CHUNK = 8 * 2**20  # uncompressed bytes per xz stream: enough streams to keep 16 cores busy
PRESET = 0  # 74% on bf16 weights against preset 6's 71%: the same five pieces for three T5s, at ~5x the speed
THREADS = 8  # of the machine's 16 cores: call 1's interim collect runs beside training


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            h.update(block)
    return h.hexdigest()


def bundle_tar(bundle: Path) -> bytes:
    """The bundle's files as one uncompressed tar, in sorted order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
            tar.add(path, path.relative_to(bundle).as_posix())
    return buf.getvalue()


def compressed(data: bytes, chunk: int = CHUNK) -> bytes:
    """``data`` as concatenated xz streams of ``chunk`` bytes each, compressed in parallel."""
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)] or [b""]
    with ThreadPoolExecutor(THREADS) as pool:
        return b"".join(pool.map(lambda c: lzma.compress(c, preset=PRESET), chunks))


def split(bundle: Path, out: Path, extra: dict | None = None, piece: int = MAX_FILE) -> dict:
    """Write the bundle's pieces and manifest (with ``extra``) into ``out``; the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    files = {p.relative_to(bundle).as_posix(): {"sha256": sha256(p), "bytes": p.stat().st_size}
             for p in sorted(bundle.rglob("*")) if p.is_file()}
    packed = compressed(bundle_tar(bundle))
    names = []
    for k, start in enumerate(range(0, len(packed), piece)):
        name = f"{PIECES}.{k:02d}"
        (out / name).write_bytes(packed[start:start + piece])
        names.append(name)
    manifest = {"pieces": {n: {"sha256": sha256(out / n), "bytes": (out / n).stat().st_size} for n in names},
                "bundle": files, **(extra or {})}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def check_sizes(out: Path) -> None:
    """What the device call brings back: at most MAX_FILES files of at most MAX_FILE bytes."""
    files = [p for p in out.rglob("*") if p.is_file()]
    big = [p.name for p in files if p.stat().st_size > MAX_FILE]
    if len(files) > MAX_FILES or big:
        raise EditspecError(f"{out} holds {len(files)} files (at most {MAX_FILES} come back)"
                            + (f"; over {MAX_FILE / 2**20:.0f} MiB: {', '.join(big)}" if big else ""))


def join(src: Path, dest: Path) -> dict:
    """Rebuild the bundle from ``src`` (pieces, manifest) in ``dest``; the manifest."""
    try:
        manifest = json.loads((src / MANIFEST).read_text())
        pieces, files = manifest["pieces"], manifest["bundle"]
    except (OSError, ValueError, KeyError) as e:
        raise EditspecError(f"no readable {MANIFEST} in {src}: {e}") from e
    for name, entry in pieces.items():
        if not (src / name).is_file():
            raise EditspecError(f"{src / name} is missing")
        if sha256(src / name) != entry["sha256"]:
            raise EditspecError(f"{src / name}: sha256 differs from the manifest's (damaged in transfer)")
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    packed = b"".join((src / name).read_bytes() for name in sorted(pieces))
    with lzma.open(io.BytesIO(packed)) as xz, tarfile.open(fileobj=xz, mode="r|") as tar:
        tar.extractall(tmp, filter="data")
    found = {p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file()}
    if found != set(files):
        raise EditspecError(f"the pieces hold other files than the manifest lists: {sorted(found ^ set(files))[:5]}")
    for rel, entry in files.items():
        if sha256(tmp / rel) != entry["sha256"]:
            raise EditspecError(f"{rel}: unpacked with another sha256 than the original's")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return manifest
