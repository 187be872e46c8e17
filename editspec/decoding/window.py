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
(``decoding.measured``) for the next process and by the bundle's ``decoding.costs.Costs`` for this one.
"""

from __future__ import annotations

WIDTHS = (0, 1, 2, 4, 8, 16, 32, 48)  # 48: the cap on the remaining draft


class WindowPolicy:
    def __init__(self, costs: dict[int, float] | None = None, fixed: int | None = None,
                 prior: tuple[float, float] = (8.0, 2.0)):
        self.costs, self.fixed = costs, fixed
        self.accepted, self.rejected = prior  # pseudo-counts: α starts at 0.8

    @classmethod
    def fixed_size(cls, width: int) -> "WindowPolicy":
        return cls(fixed=max(0, int(width)))

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
