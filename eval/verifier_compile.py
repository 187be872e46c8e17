"""The verifier pass of the shipped T5 (``Decoder._forward``), eager against ``torch.compile``
(inductor, CPU) at fixed shapes, and a pass's fixed cost (1 row, width 0): issue 77's levers,
measured, not used (reports/speed.md).

    python -m eval.verifier_compile --threads 1 --compile
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from editspec.decoding.costs import _Passes
from editspec.modeling.loading import DEFAULT_MODEL
from editspec.modeling.t5 import load_t5


def bench(passes: _Passes, width: int, n: int = 30, forward=None) -> tuple[float, torch.Tensor]:
    """Median ms of ``n`` passes feeding 1 + ``width`` tokens a row (after 3 untimed), and the logits."""
    feed = [passes.start] + passes.source[:width]
    forward = forward or passes.dec._forward
    times = []
    with torch.inference_mode():
        for _ in range(n + 3):
            start = time.perf_counter()
            out = forward(passes.rows, [feed] * len(passes.rows))
            times.append(time.perf_counter() - start)
    return statistics.median(times[3:]) * 1e3, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--slots", type=int, default=32)
    p.add_argument("--compile", action="store_true", help="also torch.compile the pass at --slots rows")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model, _ = load_t5(DEFAULT_MODEL / "t5", device=torch.device("cpu"), dtype=torch.float32)
    eager = {}
    for slots in (1, a.slots):
        passes = _Passes(model, slots, 24)
        for width in (0, 4):
            eager[slots, width] = bench(passes, width)[0]
            print(f"{slots} rows, width {width}: eager {eager[slots, width]:.2f} ms", flush=True)
    if a.compile:
        passes = _Passes(model, a.slots, 24)
        compiled = torch.compile(passes.dec._forward, dynamic=False)
        for width in (0, 4):
            start = time.perf_counter()
            bench(passes, width, n=0, forward=compiled)
            took = time.perf_counter() - start
            ms, out = bench(passes, width, forward=compiled)
            ref = bench(passes, width, n=1)[1]
            print(f"{a.slots} rows, width {width}: compiled {ms:.2f} ms ({eager[a.slots, width] / ms:.2f}x eager), "
                  f"compiling {took:.1f} s, max |logit diff| {float((out - ref).abs().max()):.1e}, "
                  f"argmax equal {bool((out.argmax(-1) == ref.argmax(-1)).all())}", flush=True)


if __name__ == "__main__":
    main()
