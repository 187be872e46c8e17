"""``editspec correct`` end to end against its yardsticks, in one run (``editspec profile --end-to-end``).

Three ways through the same lines, taking turns ``repeats`` times after a warm-up, so that a
change in machine load hits all of them alike (medians of the wall times)::

    default      Corrector.correct, as editspec correct runs it for text output: the bundle's
                 mode and settings (spelling, guard, rescoring, rounds), start-up not counted
    t5           the same with --mode t5 (the same models and settings; the yardstick of
                 speculative decoding)
    ct2-greedy   CTranslate2's bare fp32 greedy decoding of the same lines: T5 ids in (tokenized
                 before the clock starts), ids out, the corrector's batch size, longest first,
                 nothing around it (the peer a user would pick for a fast T5 on CPU)

Every number is reported both ways: ``speedup_vs_t5`` (t5 / default) and ``speedup_vs_ct2_greedy``
(ct2-greedy / default); above 1 the default is faster. Each turn of the default starts with fresh
draft costs (``drafters.DraftCosts``), as a new ``editspec correct`` process does; what a process
pays once is not counted (loading the models, and before its first speculative pass the window's
cost model, ``decoding.costs.measure``: ~1 s at 32 slots on 2 cores).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

from editspec.corrector import Corrector
from editspec.decoding.budgets import output_budget
from editspec.profiling.ct2 import CT2Peer
from editspec.profiling.sentences import batches
from editspec.tokenization.tokens import encode


def t5_twin(corrector: Corrector) -> Corrector:
    """The corrector in t5 mode: the same T5, settings and batch size (no models loaded again)."""
    return Corrector(corrector.bundle.only("t5"), corrector.config.replace(mode="t5"), corrector.batch_size)


def fresh_run(corrector: Corrector, lines: Sequence[str]) -> Callable[[], object]:
    """``corrector.correct(lines)`` as a new process runs it: with the draft costs kept for
    its models (``Costs.fresh_drafts``), not those of the turns before."""
    def run() -> object:
        corrector.bundle.costs.fresh_drafts(corrector.batch_size)
        return corrector.correct(list(lines))

    return run


def ct2_decoding(corrector: Corrector, peer: CT2Peer, lines: Sequence[str]) -> Callable[[], object]:
    """CTranslate2's fp32 greedy decoding of ``lines`` as T5 ids, batch by batch as the profile's
    ``ct2-greedy`` mode gets them (longest first; each batch to its longest row's budget)."""
    tok = corrector.bundle.t5_tokenizer
    rows = [e.ids + [tok.eos_token_id] for e in encode(tok, [corrector.config.prefix + line for line in lines])]
    order = sorted((i for i, r in enumerate(rows) if len(r) > 1), key=lambda i: -len(rows[i]))
    groups = [[rows[i] for i in b] for b in batches(order, corrector.batch_size)]

    def run() -> list:
        return [peer.translate("ct2-greedy", g, max(output_budget(len(r)) for r in g)) for g in groups]

    return run


def end_to_end(corrector: Corrector, lines: Sequence[str], peer: CT2Peer | None = None,
               peer_unavailable: str | None = None, repeats: int = 3, warmup: int = 5) -> dict:
    """Wall seconds per way (see the module docstring): every run, the medians and the ratios;
    ``warmup`` lines go through each way untimed first."""
    # each way: lines -> the call to time (what is not timed, tokenizing for CTranslate2, done first)
    ways: dict[str, Callable[[Sequence[str]], Callable[[], object]]] = {
        "default": lambda ls: fresh_run(corrector, ls)}
    if corrector.mode != "t5" and corrector.bundle.t5 is not None:
        twin = t5_twin(corrector)
        ways["t5"] = lambda ls: fresh_run(twin, ls)
    if peer is not None:
        ways["ct2-greedy"] = lambda ls: ct2_decoding(corrector, peer, ls)
    for way in ways.values():
        way(lines[:warmup])()
    calls = {name: way(lines) for name, way in ways.items()}
    runs: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            runs[name].append(time.perf_counter() - start)
    seconds = {name: statistics.median(r) for name, r in runs.items()}
    report = {"lines": len(lines), "mode": corrector.mode, "batch_size": corrector.batch_size,
              "repeats": repeats, "runs": runs, "seconds": seconds,
              "lines_per_s": {name: len(lines) / s for name, s in seconds.items()}}
    for name in ("t5", "ct2-greedy"):
        if name in seconds:
            report[f"speedup_vs_{name.replace('-', '_')}"] = seconds[name] / seconds["default"]
    if peer is None:
        report["ct2_unavailable"] = peer_unavailable or "no CTranslate2 peer"
    return report


def markdown(e: dict) -> list[str]:
    """The end-to-end section of report.md."""
    lines = [
        "## End to end (`editspec correct`'s path against its yardsticks, one run)", "",
        f"{e['lines']} lines, batch size {e['batch_size']}, {e['repeats']} turns each (medians; start-up not "
        f"counted). default: the bundle's mode ({e['mode']}) and settings; t5: the same with --mode t5; "
        "ct2-greedy: CTranslate2's bare fp32 greedy decoding of the same lines (ids in, ids out).", "",
        "| way | seconds | lines/s | default's speedup over it |", "|---|---:|---:|---:|",
    ]
    for name, s in e["seconds"].items():
        ratio = "1.00×" if name == "default" else f"{s / e['seconds']['default']:.2f}×"
        lines.append(f"| {name} | {s:.2f} | {e['lines_per_s'][name]:.1f} | {ratio} |")
    if e.get("ct2_unavailable"):
        lines += ["", f"ct2-greedy: not run ({e['ct2_unavailable']})."]
    return lines + [""]
