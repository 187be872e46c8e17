"""The step's variants timed on the run's own model while the data starts (``train.bench_steps``).

A lease's first minute goes to the loader (its process, 12 synthetic workers, the first pool of
65k pairs) while the GPU idles. The Trainer spends it here: random batches of the recipe's shape
through the run's model, forward and backward only (no optimizer step: the weights do not change;
the gradients are dropped), for each variant::

    hf         transformers' forward with the 2D mask, its logits and loss (the step before issue 59)
    nosync     training.step.T5Loss, eager: the ready 4D mask, the chunked loss
    compiled   T5Loss under torch.compile (the run's own compiled callable: its compilation is done
               here, not in the first training steps)

at ``batch_tokens`` and twice that, ``steps`` timed steps each after one untimed; and whether a
nosync step reads the device on the host (``torch.cuda.set_sync_debug_mode("error")`` on a GPU,
``training.step.host_reads`` on the CPU). The run then trains compiled only where compiling was
faster; the batch-size figures are for the next lease's recipe (the loader already cuts batches).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import torch

from training.step import host_reads

SOURCE, TARGET = 32, 32  # tokens per pair: about the sorted pools' middle


def random_batch(batch_tokens: int, vocab: int, device: torch.device, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    pairs = max(1, batch_tokens // (SOURCE + TARGET))
    ids = torch.randint(2, vocab, (pairs, SOURCE), generator=gen)
    labels = torch.randint(2, vocab, (pairs, TARGET), generator=gen)
    return {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device), "labels": labels.to(device)}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def no_sync_allowed(device: torch.device):
    """Any device-to-host read raises inside (CUDA's sync debug mode; on the CPU, host_reads)."""
    if device.type != "cuda":
        with host_reads():
            yield
        return
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


def time_steps(step: Callable[[dict], torch.Tensor], batch: dict, steps: int, device: torch.device,
               params: list[torch.nn.Parameter]) -> float:
    """Seconds per forward+backward after one untimed step; the gradients dropped."""
    def once() -> None:
        step(batch).backward()
        for p in params:
            p.grad = None

    once()
    synchronize(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        once()
    synchronize(device)
    return (time.perf_counter() - t0) / steps


def bench_step(net: torch.nn.Module, eager: torch.nn.Module, compiled: torch.nn.Module | None, autocast,
               batch_tokens: int, steps: int, device: torch.device, log=print) -> dict:
    """{"variants": {name@tokens: {"ms": ..., "pairs_per_s": ...}}, "sync_free": bool,
    "compile_faster": bool | None}; ``eager`` is the prepared T5Loss, ``compiled`` its compiled form."""
    params = [p for p in net.parameters() if p.requires_grad]
    def hf(b: dict) -> torch.Tensor:
        out = net(**b)
        out.logits.float()  # accelerate's bf16 wrapper made this copy of the output
        return out.loss

    variants: dict[str, Callable[[dict], torch.Tensor]] = {"hf": hf, "nosync": lambda b: eager(**b)}
    if compiled is not None:
        variants["compiled"] = lambda b: compiled(**b)
    result: dict = {"variants": {}, "pairs_per_step": {}}
    for tokens in (batch_tokens, 2 * batch_tokens):
        batch = random_batch(tokens, net.config.vocab_size, device)
        pairs = batch["input_ids"].shape[0]
        result["pairs_per_step"][tokens] = pairs
        for name, step in variants.items():
            t0 = time.perf_counter()
            try:
                with autocast():
                    seconds = time_steps(step, batch, steps, device, params)
            except Exception as e:  # noqa: BLE001  a variant that fails is reported, not fatal
                result["variants"][f"{name}@{tokens}"] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
                continue
            result["variants"][f"{name}@{tokens}"] = {"ms": round(1000 * seconds, 2),
                                                      "pairs_per_s": round(pairs / seconds, 1),
                                                      "wall_s": round(time.perf_counter() - t0, 1)}
            log(f"bench {name}@{tokens}: {1000 * seconds:.1f} ms/step, {pairs / seconds:,.0f} pairs/s "
                f"({time.perf_counter() - t0:.1f} s with warm-up)")
    batch = random_batch(batch_tokens, net.config.vocab_size, device, seed=1)
    try:
        with autocast(), no_sync_allowed(device):
            eager(**batch).backward()
        result["sync_free"] = True
    except RuntimeError as e:
        result["sync_free"], result["sync_error"] = False, str(e).splitlines()[0][:200]
    for p in params:
        p.grad = None
    fast = {k.split("@")[0]: v.get("ms") for k, v in result["variants"].items() if k.endswith(f"@{batch_tokens}")}
    if compiled is not None and not fast.get("compiled"):
        result["compile_faster"] = False  # it failed: the run trains eager
    else:
        result["compile_faster"] = (fast["compiled"] < fast["nosync"]) if fast.get("compiled") and fast.get("nosync") else None
    return result
