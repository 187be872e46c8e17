"""Where a correction's time goes: wall time per pipeline step, for ``editspec profile --pipeline``.

The ``Corrector`` names its steps (``with self.timings("segment"): ...``); by default its
``timings`` is ``OFF``, whose call returns one shared ``nullcontext`` (no clock is read, nothing
is stored), so the steps cost nothing measurable when nobody times them. ``Timings`` keeps the
*exclusive* time of each step: a step started inside another pauses the outer one, so the steps
add up to the whole run and nothing is counted twice::

    t = Timings()
    with t("round"):          # 1 ms of its own
        with t("encoder"):    # 4 ms
            ...
    t.ms == {("round", 1): 1.0, ("encoder", 1): 4.0}

Times are kept per correction round (``next_round``), so the report can show what the extra
rounds cost. Hand-written rather than ``cProfile``/``pyinstrument``: those time Python functions
(and slow every call down), not the pipeline's named steps, and the model parts are timed from
hooks (``editspec.profiling.pipeline``) that need a start/stop pair.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from typing import Iterator

_NULL = contextlib.nullcontext()  # reusable: entering it does nothing


class Off:
    """No timing: every step is the same do-nothing context."""

    def __call__(self, name: str) -> contextlib.AbstractContextManager:
        return _NULL

    def next_round(self) -> None:
        pass

    def first_round(self) -> None:
        pass


OFF = Off()


class Timings:
    """Exclusive wall time (ms) and calls per (step, round)."""

    def __init__(self):
        self.ms: dict[tuple[str, int], float] = defaultdict(float)
        self.calls: dict[tuple[str, int], int] = defaultdict(int)
        self.round = 1
        self._stack: list[list] = []  # [name, time the step last resumed]

    def next_round(self) -> None:
        if self._stack:  # the running step's time so far belongs to the round that ends
            now = time.perf_counter()
            self.ms[self._stack[-1][0], self.round] += (now - self._stack[-1][1]) * 1e3
            self._stack[-1][1] = now
        self.round += 1

    def first_round(self) -> None:
        """Back to round 1 (the corrector calls it once per ``correct_rounds``)."""
        self.round = 1

    def inside(self, name: str) -> bool:
        """Whether step ``name`` is running (perhaps paused by a step inside it)."""
        return any(step[0] == name for step in self._stack)

    def start(self, name: str) -> None:
        now = time.perf_counter()
        if self._stack:  # pause the step we are inside
            outer = self._stack[-1]
            self.ms[outer[0], self.round] += (now - outer[1]) * 1e3
        self._stack.append([name, now])

    def stop(self) -> None:
        now = time.perf_counter()
        name, since = self._stack.pop()
        self.ms[name, self.round] += (now - since) * 1e3
        self.calls[name, self.round] += 1
        if self._stack:  # the outer step resumes
            self._stack[-1][1] = now

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        self.start(name)
        try:
            yield
        finally:
            self.stop()

    span = __call__  # a ``profiling.clock.Recorder``'s name: ``TimedDrafter`` takes either

    def totals(self) -> dict[str, float]:
        """ms per step over all rounds."""
        out: dict[str, float] = defaultdict(float)
        for (name, _), ms in self.ms.items():
            out[name] += ms
        return dict(out)

    def later_rounds(self) -> dict[str, float]:
        """ms per step in rounds 2 and later."""
        out: dict[str, float] = defaultdict(float)
        for (name, round_), ms in self.ms.items():
            if round_ > 1:
                out[name] += ms
        return dict(out)
