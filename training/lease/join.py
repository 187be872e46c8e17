"""``join`` (here): the collect call's files -> a bundle directory, checked, loaded, summarised.

    python -m training.lease join /work/.device/.../files runs/lease-bundle
      sha256 of every file as the manifest says; t5/model.safetensors and edit5/model.safetensors
      rebuilt byte for byte; Corrector.from_pretrained(runs/lease-bundle) loads; the dev losses
      measured on the GPU and the stages' last steps are printed
"""

from __future__ import annotations

import json
from pathlib import Path

from editspec.corrector import Corrector
from training.lease.shards import join


def main(src: Path, dest: Path) -> Corrector:
    manifest = join(src, dest)
    corrector = Corrector.from_pretrained(dest, device="cpu")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"{dest}: {len(manifest['files'])} files checked, bundle {size / 1e6:.1f} MB, loads "
          f"(mode {corrector.mode})")
    print(json.dumps({"eval": manifest.get("eval"), "stages": manifest.get("stages")}, indent=1))
    return corrector
