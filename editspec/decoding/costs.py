"""One bundle's measured costs, ``Costs``: its T5's decoder pass at each draft width (the window's
cost model, ``decoding.window``) and its speculative drafters' cost per sentence
(``drafters.DraftCosts``), each read from what an earlier process kept (``decoding.measured``),
else measured now and kept for the next.

    costs = bundle.costs
    costs.window(slots)        the window policy of the T5's pass costs at ``slots`` rows
    costs.passes(slots)        those costs: seconds of a pass per width
    costs.fresh_drafts(slots)  the drafters' costs as a new process starts them; ``keep_drafts``

Measured on a shared machine, one descheduled sample must not become the cost model that every
later process reads (a pass of width 2 once kept at 2.12 s beside 0.058 s for width 1 made every
later run on the quiet machine ~13% slower). So a width's cost is the median of several passes;
a width whose cost breaks what a pass's cost does (grow with the width, and at most in proportion
to the tokens it feeds, each within ``GROWTH``) is measured again (``RETRIES``) and then bounded by
its neighbour; a kept file whose costs break it is measured again, not read, and so is one
measured under a load (per core, ``busy``) that has since fallen by half, and one measured while
other work held a core its threads needed (``contended``: the kernel's count of running tasks,
before and after) read by a process that has its cores to itself. The 1-minute load misses a job
that starts as the measurement does: 2-thread passes kept at 4-9x their 1-thread cost (AMD EPYC,
2 cores, a test suite beside them) held a 1-line run at no draft (width 0) for every later process.
Hand-written: no library times a model's own decoder passes.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from typing import TYPE_CHECKING

import torch

from editspec import threads
from editspec.decoding import measured
from editspec.decoding.decoder import Decoder
from editspec.decoding.drafters import DraftCosts
from editspec.decoding.window import WIDTHS, WindowPolicy

if TYPE_CHECKING:
    from transformers import T5ForConditionalGeneration

GROWTH = 1.5  # a wider pass costs at least 1/1.5 of a narrower one, at most 1.5x its share of tokens
RETRIES = 2  # measurements again of a width that looks wrong, before it is bounded
BUSY = 1.0  # load per core above which kept costs are measured again once the machine is quieter


class Costs:
    """The measured costs of ``t5``'s passes and, where ``edit5`` drafts for it reading its ids,
    of the speculative drafters (``drafts``); see the module docstring. Shared by a bundle's
    correctors and their threads."""

    def __init__(self, t5: torch.nn.Module | None = None, edit5: torch.nn.Module | None = None):
        self.t5, self.edit5 = t5, edit5
        self.drafts = DraftCosts()
        self._kept_probes = 0
        self._passes: dict[str, dict[int, float]] = {}  # the kept file's key -> its costs
        self._lock = threading.Lock()

    # -- the decoder's passes --

    def window(self, slots: int, model: torch.nn.Module | None = None) -> WindowPolicy:
        """The window policy of ``model``'s (None: the T5's) pass costs at ``slots`` rows."""
        return WindowPolicy(self.passes(slots, model))

    def passes(self, slots: int, model: torch.nn.Module | None = None) -> dict[int, float]:
        """Seconds of a pass of ``slots`` rows per width. Measured at a power of two of slots;
        between two powers, interpolated on the widths both measured: a server's batches of any
        size cost at most log2(max batch) + 1 measurements a machine."""
        model = self.t5 if model is None else model
        low = 1 << (max(1, slots).bit_length() - 1)
        if low == slots:
            return self._at(model, slots)
        below, above = self._at(model, low), self._at(model, 2 * low)
        share = (slots - low) / low
        return {w: below[w] + share * (above[w] - below[w]) for w in below if w in above}

    def _at(self, model: torch.nn.Module, slots: int) -> dict[int, float]:
        key = {**measured.model_key(model), "slots": slots}
        name = json.dumps(key, sort_keys=True)
        with self._lock:  # threads asking at once measure once
            if name not in self._passes:
                costs = kept_costs(measured.load("window", key))
                if costs is None:
                    load, shared = busy(), contended()  # the minute before measuring, which adds its own
                    costs = measure(model, slots)
                    measured.save("window", key, {"costs": {str(w): c for w, c in costs.items()}, "busy": load,
                                                  "contended": shared or contended()})
                self._passes[name] = costs
            return self._passes[name]

    def fastest_threads(self, slots: int, most: int) -> int:
        """1 or ``most`` threads, whichever makes the T5's passes of ``slots`` rows cheaper per
        token at their cheapest width (full acceptance, as the window reads them); ``most`` where
        they tie. Each count's costs are ``passes``', measured once per machine and kept."""
        if most <= 1 or self.t5 is None or self.t5.device.type != "cpu":
            return max(1, most)
        was, per_token = torch.get_num_threads(), {}
        try:
            for n in (most, 1):
                torch.set_num_threads(n)
                per_token[n] = min(c / (1 + w) for w, c in self.passes(slots).items())
        finally:
            torch.set_num_threads(was)
        return 1 if per_token[1] < per_token[most] else most

    # -- the speculative drafters' --

    def drafts_key(self, slots: int) -> dict | None:
        """The key of the kept draft costs at ``slots``, where the speculative mode measures them
        (EdiT5 reading T5's ids: ``drafters.Cheapest``); else None."""
        if self.t5 is None or self.edit5 is None:
            return None
        return {"t5": measured.model_key(self.t5, weights=True),
                "edit5": measured.model_key(self.edit5, weights=True), "slots": slots}

    def fresh_drafts(self, slots: int) -> DraftCosts:
        """``drafts`` as a new process starts them: from those kept for these models at ``slots``."""
        costs = DraftCosts()
        key = self.drafts_key(slots)
        if key is not None:
            costs.restore(measured.load("drafts", key))
        self.drafts, self._kept_probes = costs, costs.probed
        return costs

    def keep_drafts(self, slots: int) -> None:
        """Keep ``drafts`` for the next process once this one has probed more."""
        key = self.drafts_key(slots) if self.drafts.probed != self._kept_probes else None
        if key is not None:
            state = self.drafts.state()
            measured.save("drafts", key, state)
            self._kept_probes = state["probed"]


LOOSE = Costs()  # the pass costs of models outside a bundle (a test's, the architectures profile's)


def busy() -> float | None:
    """The machine's load per core: the 1-minute load average over the cores (None: no such figure here)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return None


def contended() -> bool:
    """Whether other work now holds a core this process's threads need (``threads.busy_cores``)."""
    return threads.busy_cores() + torch.get_num_threads() > threads.allowed_cores()


def kept_costs(kept: dict | None) -> dict[int, float] | None:
    """Kept costs (``{"costs": {width: seconds}, "busy": load per core then, "contended": bool}``)
    as ``measure`` returns them, or None where they are not to be read: a damaged or older file,
    costs that break ``wrong``'s rules, costs measured under a load over ``BUSY`` that has since
    fallen by half (a quieter machine measures its own: each such measurement halves the load
    kept), or costs measured ``contended`` (or by a version that did not say) read by a process
    that is not."""
    try:
        costs = {int(w): float(c) for w, c in kept["costs"].items()}
        then = kept.get("busy")
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    now = busy()
    if isinstance(then, (int, float)) and then > BUSY and now is not None and now < then / 2:
        return None
    if kept.get("contended") is not False and not contended():  # an older file: unknown, measured again
        return None
    if 0 not in costs or not set(costs) <= set(WIDTHS) or not all(c > 0 for c in costs.values()):
        return None
    widths = sorted(costs)
    if any(wrong(costs, a, b) is not None for a, b in zip(widths, widths[1:])):
        return None
    return costs


def wrong(costs: dict[int, float], a: int, b: int) -> int | None:
    """Which of widths a < b looks mis-measured: b if its pass costs more than ``GROWTH`` times
    a's scaled by the tokens fed (1 + w), a if b's costs less than a's over ``GROWTH``; None if
    neither (a busy machine only adds time, so the dearer of the two is the suspect)."""
    if costs[b] > costs[a] * (1 + b) / (1 + a) * GROWTH * (1 + 1e-9):
        return b
    if costs[b] * GROWTH * (1 + 1e-9) < costs[a]:
        return a
    return None


@torch.inference_mode()
def measure(model: T5ForConditionalGeneration, slots: int, source_length: int = 24,
            repeats: int = 5) -> dict[int, float]:
    """Seconds of one pass of ``slots`` rows, each feeding 1 + w tokens, for w in WIDTHS up to the
    first whose pass makes a token dearer than the width before it at full acceptance: beyond it
    the arithmetic grows with the width and no wider window pays (32 slots: 16 is cheapest per
    token, 48 costs 115 ms a pass). Each the median of ``repeats`` passes; a width that looks
    wrong beside the one before (``wrong``) is measured again, and the costs are then bounded by
    the rules (``bounded``): they are kept for every later process on the machine."""
    passes = _Passes(model, slots, source_length)
    costs, previous = {}, 0
    for w in WIDTHS:
        costs[w] = passes.cost(w, repeats)
        for _ in range(RETRIES if w else 0):
            suspect = wrong(costs, previous, w)
            if suspect is None:
                break
            costs[suspect] = passes.cost(suspect, repeats)
        if w and (w + 1) / costs[w] <= (previous + 1) / costs[previous]:
            break
        previous = w
    return bounded(costs)


def bounded(costs: dict[int, float]) -> dict[int, float]:
    """``costs`` that keep ``wrong``'s rules: a narrower pass costs no more than a wider one (the
    lower value: other work only adds time), and a wider no more than ``GROWTH`` times the
    narrower's scaled by the tokens fed."""
    out, widths = dict(costs), sorted(costs)
    for narrower, wider in zip(widths[-2::-1], widths[:0:-1]):
        out[narrower] = min(out[narrower], out[wider])
    for narrower, wider in zip(widths, widths[1:]):
        out[wider] = min(out[wider], out[narrower] * (1 + wider) / (1 + narrower) * GROWTH)
    return out


class _Passes:
    """Decoder passes of ``slots`` rows on a dummy sentence of ``source_length`` ids."""

    def __init__(self, model: T5ForConditionalGeneration, slots: int, source_length: int):
        cfg = model.config
        self.start, self.rows = cfg.decoder_start_token_id, list(range(slots))
        self.source = [min(5 + i, cfg.vocab_size - 1) for i in range(source_length - 1)] + [cfg.eos_token_id]
        self.dec = Decoder(model, slots, source_length, max(WIDTHS) + 2)
        self.dec.admit(self.rows, *self.dec.encode([self.source] * slots)[1:])

    def cost(self, width: int, repeats: int) -> float:
        """The median seconds of ``repeats`` passes feeding 1 + ``width`` tokens a row, after a warm-up."""
        feed = [self.start] + self.source[:width] + [5] * max(0, width - len(self.source))
        times = [timed_pass(self.dec, self.rows, [feed] * len(self.rows)) for _ in range(repeats + 1)]
        return statistics.median(times[1:])


def timed_pass(dec: Decoder, rows: list[int], feeds: list[list[int]]) -> float:
    """Seconds of one decoder pass (the tests replace it by a clock of their own)."""
    start = time.perf_counter()
    dec.forward(rows, feeds)
    return time.perf_counter() - start
