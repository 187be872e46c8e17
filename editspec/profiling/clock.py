"""Time stamps taken at module boundaries, without changing the code that is timed.

A ``Recorder`` installs hooks and wrappers, collects stamps, and removes them again (``close``)::

    rec = Recorder(Clock(device))
    rec.time_module(t5.encoder, "encoder")        # a span (start, end) per call of the encoder
    rec.time_module(t5, "step")                   # a span per decoder pass (one call of the model)
    rec.mark_module(edit5.insertion.decoder.block[0], "step")  # a mark when each insertion step starts
    ... decode ...
    rec.close()
    rec.total("encoder")      # ms in the encoder
    rec.steps("step", end)    # marks at 0, 2 and 5 ms, end at 6 ms: steps [2, 3, 1]

On CUDA a stamp is a ``torch.cuda.Event`` recorded on the current stream, all read after one
``synchronize`` per sample (reading one earlier would stall the GPU); on CPU it is
``time.perf_counter``. A ``Sample`` is what one mode recorded on one batch: its latency split
into encoder, decoder steps, draft and the rest.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch


class Clock:
    """Time stamps: CUDA events on the current stream (read after one synchronize), or
    ``time.perf_counter`` on CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def stamp(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def ms(self, a, b) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


class Recorder:
    """Spans (start, end) and marks per label, taken by hooks and wrappers it installs and
    removes again (``close``)."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.spans: dict[str, list] = defaultdict(list)
        self.marks: dict[str, list] = defaultdict(list)
        self._undo: list[Callable[[], None]] = []

    @contextlib.contextmanager
    def span(self, label: str) -> Iterator[None]:
        start = self.clock.stamp()
        try:
            yield
        finally:
            self.spans[label].append((start, self.clock.stamp()))

    def mark(self, label: str) -> None:
        self.marks[label].append(self.clock.stamp())

    def time_module(self, module: torch.nn.Module, label: str) -> None:
        """Every call of ``module`` is a span."""
        starts = []
        pre = module.register_forward_pre_hook(lambda m, args: starts.append(self.clock.stamp()))
        post = module.register_forward_hook(
            lambda m, args, out: self.spans[label].append((starts.pop(), self.clock.stamp())))
        self._undo += [pre.remove, post.remove]

    def mark_module(self, module: torch.nn.Module, label: str) -> None:
        """Every call of ``module`` is a mark (when it starts)."""
        self._undo.append(module.register_forward_pre_hook(lambda m, args: self.mark(label)).remove)

    def time_passes(self, decoders, label: str) -> None:
        """Every pass of the decoding core's decoders (a ``decoder.Decoders``) is a span."""
        before = decoders.timed
        decoders.timed = lambda: self.span(label)
        self._undo.append(lambda: setattr(decoders, "timed", before))

    def override(self, module: torch.nn.Module, output: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Replace ``module``'s output by ``output(its output)`` (forced-length runs)."""
        self._undo.append(module.register_forward_hook(lambda m, args, out: output(out)).remove)

    def wrap(self, obj, name: str, label: str) -> None:
        """Time calls of the method ``obj.name``: on an instance (an attribute that shadows the
        class's), or on a class (every instance's calls; ``close`` puts the method back)."""
        original = getattr(obj, name)
        own = vars(obj).get(name)  # a class's own method, restored by close

        def timed(*args, **kwargs):
            with self.span(label):
                return original(*args, **kwargs)

        setattr(obj, name, timed)
        self._undo.append(lambda: setattr(obj, name, own) if own is not None else delattr(obj, name))

    def close(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo = []

    def total(self, label: str) -> float:
        return sum(self.clock.ms(a, b) for a, b in self.spans.get(label, []))

    def durations(self, label: str) -> list[float]:
        return [self.clock.ms(a, b) for a, b in self.spans.get(label, [])]

    def steps(self, label: str, end) -> list[float]:
        """Durations between consecutive marks, the last one until ``end``."""
        marks = self.marks.get(label, []) + [end]
        return [self.clock.ms(a, b) for a, b in zip(marks, marks[1:])] if len(marks) > 1 else []


@dataclass
class Sample:
    """One mode on one batch."""

    latency: float
    encoder: float
    steps: list[float]
    draft: float | None
    outputs: list[list[int]]
    finished: list[bool]  # EOS emitted (not cut by max_new_tokens)
    passes: list[tuple[int, int]] = field(default_factory=list)  # speculative: (proposed, accepted)
    spec: dict | None = None  # speculative: summed SpecStats

    @property
    def decoder(self) -> float:
        return sum(self.steps)

    @property
    def other(self) -> float:
        return self.latency - self.encoder - self.decoder - (self.draft or 0.0)
