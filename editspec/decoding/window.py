"""How many draft tokens a pass sends per row: from a cost model measured on the model itself.

A pass's cost grows with its width w (draft tokens per row) slowly at batch 1, where the weights'
memory traffic dominates, and almost linearly at batch 32, where the arithmetic does. With each
draft token accepted with probability α until the first rejection (Leviathan et al.), a window of
w yields E(w) = (1 - α^(w+1)) / (1 - α) tokens. The policy picks the measured width with the most
tokens per second, E(w) / cost(w), α being the running acceptance of this call. For example,
costs 10, 10.5, 11, 12, 14, 18 ms at w = 0, 1, 2, 4, 8, 16 and α = 0.9: E = 1, 1.9, 2.7, 4.1,
6.1, 8.3 tokens, per ms 0.10, 0.18, 0.25, 0.34, 0.44, 0.46: w = 16. The costs are measured once
per machine, model shape, dtype, threads and slot count (a few passes on a dummy sentence, widening
until a token gets dearer), at powers of two of the slots (interpolated between), kept in the cache
(``decoding.measured``) for the next process and on the model for this one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch

from editspec.decoding import measured
from editspec.decoding.decoder import Decoder

if TYPE_CHECKING:
    from transformers import T5ForConditionalGeneration

WIDTHS = (0, 1, 2, 4, 8, 16, 32, 48)  # 48: the cap on the remaining draft


class WindowPolicy:
    def __init__(self, costs: dict[int, float] | None = None, fixed: int | None = None,
                 prior: tuple[float, float] = (8.0, 2.0)):
        self.costs, self.fixed = costs, fixed
        self.accepted, self.rejected = prior  # pseudo-counts: α starts at 0.8

    @classmethod
    def fixed_size(cls, width: int) -> "WindowPolicy":
        return cls(fixed=max(0, int(width)))

    @classmethod
    def measured(cls, model: T5ForConditionalGeneration, slots: int) -> "WindowPolicy":
        """The policy of ``model``'s pass costs at ``slots`` rows (``pass_costs``)."""
        return cls(pass_costs(model, slots))

    @property
    def alpha(self) -> float:
        return self.accepted / (self.accepted + self.rejected)

    def size(self, active: int) -> int:
        """Draft tokens per row for the next pass."""
        if self.fixed is not None:
            return self.fixed
        a = min(self.alpha, 0.999)
        return max(self.costs, key=lambda w: (1 - a ** (w + 1)) / (1 - a) / self.costs[w])

    def cost(self, width: int) -> float:
        """Seconds of a pass at ``width`` draft tokens per row: the nearest measured width at or
        above it."""
        return self.costs[min((w for w in self.costs if w >= width), default=max(self.costs))]

    def update(self, accepted: int, proposed: int) -> None:
        self.accepted += accepted
        self.rejected += accepted < proposed


def pass_costs(model: T5ForConditionalGeneration, slots: int) -> dict[int, float]:
    """Seconds of a pass of ``slots`` rows per width. Measured at a power of two of slots (kept on
    the model, else in the cache: ``measured``, else measured now and kept in both); between two
    powers, interpolated on the widths both measured: a server's batches of any size cost at most
    log2(max batch) + 1 measurements a machine."""
    low = 1 << (max(1, slots).bit_length() - 1)
    if low == slots:
        return _costs_at(model, slots)
    below, above = _costs_at(model, low), _costs_at(model, 2 * low)
    share = (slots - low) / low
    return {w: below[w] + share * (above[w] - below[w]) for w in below if w in above}


def _costs_at(model: T5ForConditionalGeneration, slots: int) -> dict[int, float]:
    store = model.__dict__.setdefault("_editspec_pass_costs", {})
    key = (slots, next(model.parameters()).dtype, str(model.device), torch.get_num_threads())
    if key not in store:
        kept_key = {**measured.model_key(model), "slots": slots}
        costs = _valid(measured.load("window", kept_key))
        if costs is None:
            costs = measure(model, slots)
            measured.save("window", kept_key, {str(w): c for w, c in costs.items()})
        store[key] = costs
    return store[key]


def _valid(kept: dict | None) -> dict[int, float] | None:
    """Kept costs as ``measure`` returns them, or None if they are not (a damaged or older file)."""
    try:
        costs = {int(w): float(c) for w, c in (kept or {}).items()}
    except (TypeError, ValueError):
        return None
    if 0 not in costs or not set(costs) <= set(WIDTHS) or not all(c > 0 for c in costs.values()):
        return None
    return costs


@torch.inference_mode()
def measure(model: T5ForConditionalGeneration, slots: int, source_length: int = 24,
            repeats: int = 5) -> dict[int, float]:
    """Seconds of one pass of ``slots`` rows, each feeding 1 + w tokens, for w in WIDTHS up to the
    first whose pass makes a token dearer than the width before it at full acceptance: beyond it
    the arithmetic grows with the width and no wider window pays (32 slots: 16 is cheapest per
    token, 48 costs 115 ms a pass). Each the fastest of ``repeats`` passes, and no wider than a
    wider width's (other work on the machine only adds time, and a wider pass costs no less):
    the costs are kept for every later process on the machine."""
    cfg = model.config
    source = [min(5 + i, cfg.vocab_size - 1) for i in range(source_length - 1)] + [cfg.eos_token_id]
    dec = Decoder(model, slots, source_length, max(WIDTHS) + 2)
    dec.admit(list(range(slots)), *dec.encode([source] * slots)[1:])
    rows = list(range(slots))
    costs, previous = {}, 0
    for w in WIDTHS:
        feeds = [[cfg.decoder_start_token_id] + source[:w] + [5] * max(0, w - len(source))] * slots
        times = []
        for _ in range(repeats + 1):  # the first is a warm-up
            start = time.perf_counter()
            dec.forward(rows, feeds)
            times.append(time.perf_counter() - start)
        costs[w] = min(times[1:])
        if w and (w + 1) / costs[w] <= (previous + 1) / costs[previous]:
            break
        previous = w
    for narrower, wider in zip(list(costs)[-2::-1], list(costs)[:0:-1]):
        costs[narrower] = min(costs[narrower], costs[wider])
    return costs
