"""The shipped T5's LM head as the verifier calls it (``Decoder._forward``'s last linear), three ways:
``F.linear`` (the module), the weight kept transposed and contiguous (``x @ Wᵀ``), and oneDNN's
prepacked weight (``torch.utils.mkldnn.MkldnnLinear``); ``--path`` also swaps each into a whole
correction of the first lines of a file, turns taking turns in one process. Issue 77's lever, measured,
not used (reports/speed.md, "Issue 77, third session").

    python -m eval.head_gemm --threads 2
    python -m eval.head_gemm --threads 2 --path ../shared/data/wi_locness/ABCN.dev.gold.bea19.m2 --lines 500
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import torch
import torch.nn.functional as F
import torch.utils.mkldnn as onednn


def per_call_ms(fn: Callable[[], torch.Tensor], n: int = 100) -> float:
    """Mean ms of ``n`` calls after 5 untimed."""
    for _ in range(5):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e3


def ways(head: torch.nn.Linear) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    transposed = head.weight.detach().t().contiguous()
    packed = onednn.MkldnnLinear(head, torch.float32)
    return {"F.linear": lambda x: F.linear(x, head.weight), "x @ W^T": lambda x: x @ transposed,
            "oneDNN": lambda x: packed(x)}


def sources(path: str, n: int) -> list[str]:
    """The first ``n`` source sentences of an M2 file (its ``S`` lines) or lines of a text file."""
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    if any(line.startswith("S ") for line in lines[:5]):
        lines = [line[2:] for line in lines if line.startswith("S ")]
    return lines[:n]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rows", type=int, nargs="+", default=[1, 5, 16, 32, 64, 160])
    p.add_argument("--path", help="also time whole corrections of this file's first --lines lines")
    p.add_argument("--lines", type=int, default=500)
    p.add_argument("--turns", type=int, default=3)
    a = p.parse_args()
    from editspec import threads

    threads.apply(a.threads)
    from editspec.corrector import Corrector

    corrector = Corrector.from_pretrained()
    head = corrector.bundle.t5.lm_head
    found = ways(head)
    with torch.inference_mode():
        for rows in a.rows:
            x = torch.randn(rows, head.in_features)
            print(f"{rows:4d} rows  " + "  ".join(f"{name} {per_call_ms(lambda: fn(x)):.3f} ms"
                                                  for name, fn in found.items()), flush=True)
    if not a.path:
        return
    lines, plain, outputs = sources(a.path, a.lines), head.forward, {}
    corrector.correct(lines[:64])
    try:
        for _ in range(a.turns):
            for name, fn in found.items():
                head.forward = fn
                start = time.perf_counter()
                outputs.setdefault(name, corrector.correct(lines))
                print(f"{name:9s} {len(lines)} lines {time.perf_counter() - start:.2f} s", flush=True)
    finally:
        head.forward = plain
    first = next(iter(outputs.values()))
    print("the same output each way:", all(o == first for o in outputs.values()))


if __name__ == "__main__":
    main()
