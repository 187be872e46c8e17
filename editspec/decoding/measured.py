"""What a process measures about this machine, kept for the next process: measured once per machine,
not once per process.

    window    the decoder pass's cost at each draft width (``costs.measure``: ~1 s at 32 slots on
              2 cores), keyed by the machine, the model's shape, dtype and quantization, the slots
              and the threads (a pass's cost depends on nothing else: not on the weights)
    drafts    what each speculative candidate has cost per sentence (``drafters.DraftCosts``), keyed
              as the window and by both models' weights too (how often a draft is accepted depends
              on what the models write)

``costs.Costs`` reads and writes them, one per bundle. Each is a small JSON file in ``editspec.cache`` (``measured/<kind>-<sha256 of the key>.json``)
holding its key and its values. A file that is missing, damaged or not of this key is measured
again (and written again); a cache that cannot be written only costs the measuring. None of it
changes an output: the window and the draft decide how many passes the same tokens take.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import tempfile
from pathlib import Path

import torch

from editspec.cache import cache_dir

SHAPE = ("vocab_size", "d_model", "d_kv", "d_ff", "num_heads", "num_layers", "num_decoder_layers", "feed_forward_proj")


@functools.lru_cache(maxsize=None)  # read for every kept file's key
def device_name(device: torch.device) -> str:
    """"cuda:0: NVIDIA H100 80GB HBM3", or the CPU's model name and cores."""
    if device.type == "cuda":
        return f"{device}: {torch.cuda.get_device_name(device)}"
    name = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"cpu: {name} ({os.cpu_count()} cores)"


def model_key(model: torch.nn.Module, weights: bool = False) -> dict:
    """What a model's passes cost depends on: its shape, dtype, quantization and device, the
    machine, torch's version and threads; ``weights``: also a fingerprint of its weights (a few
    tensors' bytes: two checkpoints of one shape differ in them)."""
    p = next(model.parameters())
    key = {"machine": device_name(p.device), "torch": torch.__version__, "threads": torch.get_num_threads(),
           "dtype": str(p.dtype), "quantized": any("quantized" in type(m).__module__ for m in model.modules()),
           "type": type(model).__name__, **{f: getattr(model.config, f, None) for f in SHAPE}}
    if weights:
        digest = hashlib.sha256()
        for name, tensor in list(model.state_dict().items())[:: max(1, len(model.state_dict()) // 8)]:
            if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                digest.update(name.encode() + tensor.detach().flatten()[:4096].float().cpu().numpy().tobytes())
        key["weights"] = digest.hexdigest()[:16]
    return key


def _path(kind: str, key: dict) -> Path:
    return cache_dir("measured", f"{kind}-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]}.json")


def load(kind: str, key: dict) -> dict | None:
    """The values kept for ``key``, or None (none kept, or a file that is damaged or another key's)."""
    try:
        kept = json.loads(_path(kind, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != key or not isinstance(kept.get("values"), dict):
        return None
    return kept["values"]


def save(kind: str, key: dict, values: dict) -> None:
    """Keep ``values`` for ``key`` (written whole or not at all; an unwritable cache is skipped)."""
    path = _path(kind, key)
    part = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".part", delete=False, encoding="utf-8") as f:
            part = Path(f.name)
            json.dump({"key": key, "values": values}, f)
        os.replace(part, path)
    except OSError:
        if part is not None:
            with contextlib.suppress(OSError):
                part.unlink()
