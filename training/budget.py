"""A wall-clock budget for a run: a GPU lease or a session has minutes, not steps.

The clock is read on the host (no device sync); several processes agree on the slowest clock,
gathered only at log steps.
"""

from __future__ import annotations

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
    fitted = make(total)
    scheduler.lr_lambdas = fitted.lr_lambdas  # same optimizer; this scheduler keeps its place
    for group, base, fn in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * fn(scheduler.last_epoch)
    return total



class Budget:
    """Refits the schedule to ``minutes`` once the rate is known, and says when time is up."""

    def __init__(self, minutes: float | None, max_steps: int):
        self.seconds = 60 * minutes if minutes else None
        self.max_steps, self.started, self.mark, self.fitted = max_steps, time.perf_counter(), None, False

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def check(self, step: int, elapsed: float, scheduler, make, log) -> int | None:
        """A new last step, or None. Call with the elapsed seconds all processes agree on."""
        if self.seconds is None:
            return None
        if self.mark is None and elapsed > 0.05 * self.seconds:  # rate measured from here (warm caches, full pool)
            self.mark = (step, elapsed)
        elif self.mark is not None and not self.fitted and elapsed > 0.25 * self.seconds:
            total = fit_schedule(scheduler, step, elapsed, step - self.mark[0], elapsed - self.mark[1],
                                 self.seconds, self.max_steps, make)
            self.fitted = True
            log(f"time budget {self.seconds / 60:g} min: schedule refitted to {total} steps")
            return total
        elif elapsed > self.seconds:
            log(f"time budget {self.seconds / 60:g} min spent at step {step}")  # slower than measured: stop on time
            return step
        return None
