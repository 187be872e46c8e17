"""Model features of (source text, target text) pairs for T5 and EdiT5, and collate functions:
what training learns from and what rescoring scores (``editspec.decoding.rescoring``), so they sit
beside the models rather than with the corpora (``editspec.data``).

Both models read ``input_ids = encode(source).ids + [EOS]``. T5 learns ``labels = target + [EOS]``.
EdiT5 learns the three parts of ``editspec.tokenization.edits.convert`` (tags, order, insertions), written
per input position so that the model's three heads can be trained in one teacher-forced pass.
Worked example (ids written as words; ``E`` is EOS at input position 6)::

    input            he  go  to  school  yesterday  .   E      (positions 0..6)
    target           yesterday he went to the school .
    tags             1   0   1   1       1          1   1      (EOS is always kept)
    pointers         2  -100 3   5       0          6   4      successor in the new order
    order_positions  2   0   3   4       1          5   6      1-based new-order position
    insertion_labels <extra_id_2> went <extra_id_3> the E

* pointers: EOS is both start and end of the new order, so ``pointers[E]`` is the first kept
  token (``yesterday``, 4) and the last kept token (``.``) points back to ``E``. Deleted tokens
  point nowhere (-100, ignored by the loss). If everything is deleted, ``E`` points to itself.
* order_positions: the p-th kept token of the new order gets p, which is also the number of the
  marker that inserts after it; EOS gets n + 1; deleted tokens get 0 (no position embedding).

Truncation policy: never. A pair whose input or insertions (or, for T5, target) exceed
``max_length`` with EOS, or that needs more markers than the tokenizer has, is skipped: the
functions return ``None`` and count the reason in ``stats`` (a ``collections.Counter``), so that
T5 and EdiT5 training can report what they dropped. A pair whose insertions would contain
``<unk>`` is skipped too: no model could spell the inserted characters (``render`` drops unk).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

import torch

from editspec.modeling.tensors import IGNORE, pad
from editspec.tokenization.edits import KEEP, TooFewMarkers, convert
from editspec.tokenization.tokens import Codec, encode, encode_ids

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def _skip(stats: Counter | None, reason: str) -> None:
    if stats is not None:
        stats[reason] += 1


def t5_features_batch(
    tok: PreTrainedTokenizerBase, sources: Sequence[str], targets: Sequence[str], max_length: int,
    stats: Counter | None = None,
) -> list[dict[str, list[int]] | None]:
    """``t5_features`` for many pairs (one batched tokenizer call; a source given many times is
    tokenized once)."""
    eos, out = tok.eos_token_id, []
    distinct = list(dict.fromkeys(sources))
    ids = dict(zip(distinct, encode_ids(tok, distinct)))
    for src, tgt in zip((ids[s] for s in sources), encode_ids(tok, targets)):
        if len(src) + 1 > max_length:
            _skip(stats, "source_too_long")
            out.append(None)
        elif len(tgt) + 1 > max_length:
            _skip(stats, "target_too_long")
            out.append(None)
        else:
            out.append({"input_ids": src + [eos], "labels": tgt + [eos]})
    return out


def t5_features(
    tok: PreTrainedTokenizerBase, source_text: str, target_text: str, max_length: int,
    stats: Counter | None = None,
) -> dict[str, list[int]] | None:
    """``{"input_ids": source + [EOS], "labels": target + [EOS]}``, or None (see module docstring)."""
    return t5_features_batch(tok, [source_text], [target_text], max_length, stats)[0]


def edit5_features_from_ids(
    source: Sequence[int], target: Sequence[int], markers: Sequence[int], eos: int, max_length: int,
    unk: int | None = None, stats: Counter | None = None,
) -> dict[str, list[int]] | None:
    """EdiT5 features of token ids (no EOS); see the module docstring for the layout."""
    if len(source) + 1 > max_length:
        _skip(stats, "source_too_long")
        return None
    if len(target) + 1 > max_length:  # the same pairs as T5 training, so the two compare
        _skip(stats, "target_too_long")
        return None
    try:
        edits = convert(source, target, markers, eos)
    except TooFewMarkers:
        _skip(stats, "too_many_markers")
        return None
    if len(edits.insertions) > max_length:
        _skip(stats, "insertions_too_long")
        return None
    if unk is not None and unk in edits.insertions:
        _skip(stats, "unknown_insertion")
        return None
    n, end = len(source), len(source)  # `end` is EOS's input position
    pointers = [IGNORE] * (n + 1)
    order_positions = [0] * (n + 1)
    previous = end
    for p, i in enumerate(edits.order, start=1):
        pointers[previous] = i
        order_positions[i] = p
        previous = i
    pointers[previous] = end
    order_positions[end] = len(edits.order) + 1
    return {
        "input_ids": list(source) + [eos],
        "tags": edits.tags + [KEEP],
        "pointers": pointers,
        "order_positions": order_positions,
        "insertion_labels": edits.insertions,
    }


def edit5_features_batch(
    tok: PreTrainedTokenizerBase, sources: Sequence[str], targets: Sequence[str], max_length: int,
    stats: Counter | None = None,
) -> list[dict[str, list[int]] | None]:
    """``edit5_features`` for many pairs (one batched tokenizer call)."""
    markers, eos, unk = Codec.of(tok).markers, tok.eos_token_id, tok.unk_token_id
    return [
        edit5_features_from_ids(src.ids, tgt.ids, markers, eos, max_length, unk, stats)
        for src, tgt in zip(encode(tok, sources), encode(tok, targets))
    ]


def edit5_features(
    tok: PreTrainedTokenizerBase, source_text: str, target_text: str, max_length: int,
    stats: Counter | None = None,
) -> dict[str, list[int]] | None:
    """EdiT5 features of one text pair, or None (reason counted in ``stats``)."""
    return edit5_features_batch(tok, [source_text], [target_text], max_length, stats)[0]


# What each feature is padded with: ids with the pad id, labels with IGNORE, positions with 0.
_EDIT5_PAD = {"tags": IGNORE, "pointers": IGNORE, "order_positions": 0, "insertion_labels": IGNORE}


def collate_edit5(features: Sequence[dict[str, Any]], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Batch EdiT5 features: the keyword arguments of ``EdiT5Model.forward``."""
    batch = {"input_ids": pad([f["input_ids"] for f in features], pad_token_id)}
    batch["attention_mask"] = pad([[1] * len(f["input_ids"]) for f in features], 0)
    for key, value in _EDIT5_PAD.items():
        batch[key] = pad([f[key] for f in features], value)
    return batch


def collate_t5(features: Sequence[dict[str, Any]], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Batch T5 features: ``input_ids``, ``attention_mask``, ``labels`` (IGNORE-padded)."""
    return {
        "input_ids": pad([f["input_ids"] for f in features], pad_token_id),
        "attention_mask": pad([[1] * len(f["input_ids"]) for f in features], 0),
        "labels": pad([f["labels"] for f in features], IGNORE),
    }
