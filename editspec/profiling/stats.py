"""Summaries of timed samples, and Leviathan et al.'s model of speculative decoding.

``summary([4.0, 1.0, 2.0, 3.0])`` is ``{"median": 2.5, "p90": 4.0, "p95": 4.0, "mean": 2.5, "n": 4}``
(percentiles by nearest rank). ``summarize`` turns one mode's samples into its report entry:
latency and its parts, speedup against T5, the share of outputs identical to T5's, and for the
speculative modes the acceptance counts and the model below.

Leviathan et al.: each draft token is accepted with probability α until the first rejection, so
α = accepted / (accepted + rejections). With γ draft tokens per verifier pass and c the cost of
drafting one token relative to one verifier step::

    E[tokens per pass] = (1 − α^(γ+1)) / (1 − α)          α = 0.9, γ = 4: 4.10
    expected speedup   = E[tokens per pass] / (γc + 1)     c = 0.1:        4.10 / 1.4 = 2.93
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Sequence

from editspec.profiling.clock import Sample


def summary(values: Sequence[float]) -> dict | None:
    """median, p90, p95, mean and n of ``values`` (None when there are none)."""
    if not values:
        return None
    ordered = sorted(values)

    def q(p):  # nearest rank
        return ordered[min(len(ordered) - 1, max(0, math.ceil(p * len(ordered)) - 1))]

    return {"median": statistics.median(ordered), "p90": q(0.90), "p95": q(0.95),
            "mean": statistics.fmean(ordered), "n": len(ordered)}


def median(s: dict | None) -> float | None:
    """The median of a ``summary`` (None for none)."""
    return None if s is None else s["median"]


def expected_tokens_per_pass(alpha: float, gamma: float) -> float:
    """Leviathan et al.: E[tokens per verifier pass] = (1 - α^(γ+1)) / (1 - α)."""
    return gamma + 1 if alpha >= 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def expected_speedup(alpha: float, gamma: float, c: float) -> float:
    """Leviathan et al.: (1 - α^(γ+1)) / ((1 - α)(γc + 1))."""
    return expected_tokens_per_pass(alpha, gamma) / (gamma * c + 1)


def summarize(samples: list[Sample], same: list[bool] | None, source: str, t5_latency: float | None,
              t5_step: float | None = None) -> dict:
    """The report entry of one mode (``same``: per sentence, output equal to T5's; ``t5_latency``,
    ``t5_step``: medians of plain T5, for the speedup and Leviathan's cost ratio c)."""
    latency = summary([s.latency for s in samples])
    steps = [len(s.steps) for s in samples]
    step_ms = summary([x for s in samples for x in s.steps])
    drafts = [s.draft for s in samples if s.draft is not None]
    entry = {
        "status": "ok", "source": source,
        "latency_ms": latency,
        "encoder_ms": summary([s.encoder for s in samples]),
        "decoder_ms": summary([s.decoder for s in samples]),
        "decoder_step_ms": step_ms,
        "decoder_steps": summary(steps),
        "draft_ms": summary(drafts) if drafts else None,
        "other_ms": summary([s.other for s in samples]),
        "output_tokens": summary([len(o) for s in samples for o in s.outputs]),
        "speedup_vs_t5": t5_latency / latency["median"] if t5_latency and latency else None,
        "identical_to_t5": sum(same) / len(same) if same else None,
        "acceptance_rate": None,
    }
    if samples and all(len(s.outputs) == 1 for s in samples):  # batch 1: passes are the row's
        tokens = sum(len(s.outputs[0]) + s.finished[0] for s in samples)
        entry["tokens_per_pass"] = tokens / max(1, sum(steps))
    specs = [s.spec for s in samples if s.spec is not None]
    if specs:
        total = {k: sum(sp[k] for sp in specs) for k in ("proposed", "accepted", "tokens", "row_passes")}
        passes = [p for s in samples for p in s.passes]
        rejections = sum(1 for proposed, accepted in passes if accepted < proposed)
        alpha = total["accepted"] / max(1, total["accepted"] + rejections)
        gamma = total["proposed"] / max(1, total["row_passes"])
        c = (sum(drafts) / max(1, total["proposed"])) / t5_step if t5_step else None
        entry["acceptance_rate"] = total["accepted"] / max(1, total["proposed"])
        entry["tokens_per_pass"] = total["tokens"] / max(1, total["row_passes"])
        entry["leviathan"] = {
            "alpha": alpha, "gamma": gamma, "c": c,
            "expected_tokens_per_pass": expected_tokens_per_pass(alpha, gamma),
            "expected_speedup": expected_speedup(alpha, gamma, c) if c is not None else None,
        }
        entry["accepted_per_pass"] = dict(sorted(Counter(a for _, a in passes).items()))
        entry["counts"] = total
    return entry
