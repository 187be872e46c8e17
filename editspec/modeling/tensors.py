"""Tensor helpers that the models, the decoding and training's features share: padding, model
inputs, the ignored label value and label log-probabilities. Their own home, below ``modeling``
and ``decoding``, so that neither reads training data code to pad a batch."""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import torch

IGNORE = -100  # label value that CrossEntropyLoss(ignore_index=-100) skips


def pad(sequences: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    """Right-pad to the longest sequence: a (batch, length) long tensor.

    One vectorized fill (the rows' ids flattened, written where a row-major mask says a row has a
    token), not a tensor per row: the training loader pads ~1,000 rows a batch, and per-row
    ``torch.as_tensor`` took 90% of its time."""
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    width = int(lengths.max()) if len(sequences) else 0
    out = np.full((len(sequences), width), value, dtype=np.int64)
    out[np.arange(width) < lengths[:, None]] = np.fromiter(
        itertools.chain.from_iterable(sequences), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(out)


def model_inputs(sequences: Sequence[Sequence[int]], eos: int, pad_id: int,
                 device) -> tuple[torch.Tensor, torch.Tensor]:
    """Model inputs ``ids + [EOS]``, right-padded, and the attention mask."""
    rows = [list(s) + [eos] for s in sequences]
    return pad(rows, pad_id).to(device), pad([[1] * len(r) for r in rows], 0).to(device)


def label_log_probs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per row [batch], the summed log-probabilities of the label tokens (``logits`` [batch,
    length, classes], ``labels`` [batch, length], IGNORE skipped), computed in >= float32."""
    log_probs = logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)
    picked = log_probs.gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    return picked.masked_fill(labels == IGNORE, 0.0).sum(-1)
