"""Respelled sources for training and dev, with or without the spelling step at hand.

``respell: true`` on a data source (or the dev set) passes its sources through the spelling step
as ``Corrector`` does before a model (``editspec.pre.spelling``). A lent GPU machine has none of
what that step needs (symspellpy, wordfreq, the 44 MB index), so the lease's ``prepare`` respells
the plan's M2 files here and carries what changed, one entry per list of sources::

    respelled.json.xz    {"<sha256 of the sources, one a line>": {"sentences": 34308,
                                                                 "changed": {"17": "the respelled text", ...}}, ...}

``respelled(sources, data_dir)`` looks the list up by its hash in the data directory's table and
runs the spelling step only for a list the table does not hold; so the device trains on exactly
the sources the spelling step gives here, and a list that differs in any line (another annotator,
another file) is never mistaken for one the table holds.
"""

from __future__ import annotations

import hashlib
import json
import lzma
from pathlib import Path
from typing import Sequence

from editspec.pre.spelling import respell_all

TABLE = "respelled.json.xz"  # in the data directory


def key(sources: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sources).encode("utf-8")).hexdigest()


def load(data_dir: Path) -> dict:
    path = data_dir / TABLE
    if not path.is_file():
        return {}
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def respelled(sources: Sequence[str], data_dir: Path) -> list[str]:
    """``sources`` after the spelling step: from the data directory's table when it holds them."""
    entry = load(data_dir).get(key(sources))
    if entry is not None and entry["sentences"] == len(sources):
        changed = entry["changed"]
        return [changed.get(str(i), text) for i, text in enumerate(sources)]
    return respell_all(sources)  # on a lent machine: an import error of what it lacks


def entry(sources: Sequence[str]) -> tuple[str, dict]:
    """The table's entry for ``sources`` (the spelling step runs here)."""
    out = respell_all(sources)
    return key(sources), {"sentences": len(sources),
                          "changed": {str(i): new for i, (old, new) in enumerate(zip(sources, out)) if new != old}}


def save(entries: dict, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(dest, "wt", encoding="utf-8", preset=lzma.PRESET_DEFAULT) as f:
        json.dump(entries, f, ensure_ascii=False)
