"""A wall-clock budget for a run: a GPU lease or a session has minutes, not steps.

The clock counts training time only: it starts at the first batch (the data's start-up is not in
it) and stops while the run evaluates or saves (``paused``), so the measured rate is the steps'
own and a plan's minutes are training minutes, loading and evaluation on top. The clock is read on
the host (no device sync); several processes agree on the slowest clock, gathered only at log
steps. A resumed run continues the clock and the fitted schedule (``state``).
"""

from __future__ import annotations

import contextlib
import time


def fit_schedule(scheduler, step: int, seconds: float, rate_steps: int, rate_seconds: float,
                 budget_seconds: float, max_steps: int, make) -> int:
    """The step count that fills a wall-clock budget, with ``scheduler`` refitted to end there.

    A GPU lease or a session has minutes, not steps: at a quarter of the budget the measured
    rate (steps over seconds, start-up excluded) gives the steps left, and the LR schedule is
    rebuilt (``make(total)``) so that its decay ends with the budget instead of being cut off
    mid-way. Never more than ``max_steps``.
    """
    total = min(max_steps, step + int(rate_steps / max(rate_seconds, 1e-9) * (budget_seconds - seconds)))
    total = max(total, step + 1)
    refit(scheduler, make(total))
    return total


def refit(scheduler, fitted) -> None:
    """``scheduler`` follows ``fitted``'s lr curve from where it is (same optimizer, same place)."""
    scheduler.lr_lambdas = fitted.lr_lambdas
    for group, base, fn in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * fn(scheduler.last_epoch)



class Budget:
    """Refits the schedule to ``minutes`` once the rate is known, and says when time is up."""

    MIN_STEPS = 20  # a rate measured over fewer steps is noise

    def __init__(self, minutes: float | None, max_steps: int):
        self.seconds = 60 * minutes if minutes else None
        self.max_steps, self.started, self.mark, self.total = max_steps, None, None, None
        self.offset = 0.0  # seconds of an earlier run of the same stage (resumed)

    def begin(self) -> None:
        """At the first batch: the clock starts."""
        if self.started is None:
            self.started = time.perf_counter() - self.offset

    @contextlib.contextmanager
    def paused(self):
        """Evaluation and saving: not training time."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self.started is not None:
                self.started += time.perf_counter() - t0

    def elapsed(self) -> float:
        return 0.0 if self.started is None else time.perf_counter() - self.started

    def state(self) -> dict:
        return {"elapsed": self.elapsed(), "total": self.total}

    def resume(self, state: dict, scheduler, make) -> int | None:
        """Continue a saved run's clock and fitted schedule; its fitted last step, if any."""
        self.offset = float(state.get("elapsed") or 0.0)
        self.total = state.get("total")
        if self.total:
            refit(scheduler, make(self.total))
        return self.total

    def check(self, step: int, elapsed: float, scheduler, make, log) -> int | None:
        """A new last step, or None. Call with the elapsed seconds all processes agree on."""
        if self.seconds is None or self.started is None:
            return None
        if self.mark is None and elapsed > 0.05 * self.seconds:  # rate measured from here (warm caches, full pool)
            self.mark = (step, elapsed)
        elif (self.mark is not None and self.total is None and elapsed > 0.25 * self.seconds
              and step - self.mark[0] >= self.MIN_STEPS and elapsed - self.mark[1] >= 0.1 * self.seconds):
            self.total = fit_schedule(scheduler, step, elapsed, step - self.mark[0], elapsed - self.mark[1],
                                      self.seconds, self.max_steps, make)
            log(f"time budget {self.seconds / 60:g} min: schedule refitted to {self.total} steps")
            return self.total
        elif elapsed > self.seconds:
            log(f"time budget {self.seconds / 60:g} min spent at step {step}")  # slower than measured: stop on time
            return step
        return None
