"""The sentences a profile times, and their batches.

``read_data`` reads three formats as natural text. An M2 block (annotator 0's edits give the
target; the spaCy tokens are detokenized)::

    S I do n't like it .
    A 4 5|||R:PRON|||this|||REQUIRED|||-NONE-|||0
    A 4 5|||R:PRON|||that|||REQUIRED|||-NONE-|||1

is the pair ("I don't like it.", "I don't like this."); a line ``a b<TAB>A b.`` is ("a b", "A b.");
a file of plain lines gives sources and no targets. ``limit=10`` keeps the first 10 sentences;
``limit=10, seed=1`` a random 10, in file order (W&I dev lists its CEFR levels in turn, so the
first N are all level A).

``batches([5, 2, 9, 1, 7], 2) == [[5, 2], [9, 1], [7]]``: the callers sort the sentences longest
first, as ``editspec correct`` batches them; ``editspec.modeling.tensors.model_inputs`` then
builds the batch the models read (``model_inputs([[8, 9], [7]], eos=1, pad_id=0, device)``): ids ``[[8, 9, 1], [7, 1, 0]]``, mask ``[[1, 1, 1], [1, 1, 0]]``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Sequence, TypeVar

from editspec.data.m2 import apply_edits, is_m2, parse_m2
from editspec.errors import EditspecError
from editspec.data.tokenized import detokenize

T = TypeVar("T")


def read_data(path: str | os.PathLike, limit: int | None = None,
              seed: int | None = None) -> tuple[list[str], list[str] | None]:
    """(sources, gold targets or None) as natural text: M2 (S lines and annotator 0's edits,
    detokenized), ``source<TAB>target`` lines, or plain text (one sentence a line, no targets).
    ``limit``: the first N sentences, or with ``seed`` a random sample of N (in file order)."""
    p = Path(path)
    if not p.is_file():
        raise EditspecError(f"no such file: {p}")
    sources, targets = [], []
    try:
        if is_m2(p):
            with open(p, encoding="utf-8") as f:
                for tokens, edits in parse_m2(f):
                    if tokens:
                        sources.append(detokenize(" ".join(tokens)))
                        gold = [e for e in edits if e.annotator == 0]
                        targets.append(detokenize(" ".join(apply_edits(tokens, gold))))
        else:
            lines = [line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
            if lines and all("\t" in line for line in lines):
                for line in lines:
                    s, t = line.split("\t", 1)
                    sources.append(s.strip())
                    targets.append(t.strip())
            else:
                sources, targets = [line.strip() for line in lines], None
    except UnicodeDecodeError as e:
        raise EditspecError(f"{p} is not UTF-8 text") from e
    if not sources:
        raise EditspecError(f"{p} holds no sentences")
    if limit is not None:
        n = min(limit, len(sources))
        keep = range(n) if seed is None else sorted(random.Random(seed).sample(range(len(sources)), n))
        sources = [sources[i] for i in keep]
        targets = [targets[i] for i in keep] if targets is not None else None
    return sources, targets


def batches(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` cut into consecutive batches of ``size`` (the last may be smaller)."""
    return [list(items[i:i + size]) for i in range(0, len(items), size)]
