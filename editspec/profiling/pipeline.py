"""Where each millisecond of ``editspec correct`` goes: the whole pipeline, step by step.

``profile_pipeline(corrector, lines)`` corrects ``lines`` with ``Corrector.correct`` (the path
of ``editspec correct``'s text output: no copy of it here; jsonl, tables and the server add the
confidences and the word diff of ``correct_detailed``) after ``warmup`` untimed lines, with a
``timing.Timings`` as the corrector's ``timings``: the corrector names its own text steps
(segment, spelling, tokenize, decode, render, edits, guard, rescore, rejoin) and times its drafter
(``draft``: ``drafters.TimedDrafter``), and ``attach`` adds the model parts by hooks, without
changing the code that is timed:

    encoder   forward hooks on the T5's (and a separate EdiT5's) encoder; an encoder call made
              while rescoring stays in ``rescore``
    decoder   the bundle's decoders' pass hook (``decoder.Decoders.timed``): one span per pass
    decode    what is left of the decoding core: slots, argmax, bookkeeping

Times are exclusive (a step inside another is not counted in the outer one), so the rows add up
to the wall time of the call; ``later_rounds_ms`` is what correction rounds 2 and later cost.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from editspec.corrector import Corrector
from editspec.timing import OFF, Timings

# the report's row order: the pipeline's order
STEPS = ("segment", "spelling", "tokenize", "encoder", "decoder", "draft", "decode", "edit5", "render", "edits",
         "guard", "rescore", "confidence", "grammar", "rejoin", "diff", "alternatives", "types", "other")


def attach(corrector: Corrector, timings: Timings) -> Callable[[], None]:
    """Time the corrector's model parts into ``timings``; returns the function that undoes it."""
    undo: list[Callable[[], None]] = []
    bundle = corrector.bundle
    encoders = {id(m.encoder): m.encoder for m in (bundle.t5, bundle.edit5) if m is not None}
    for encoder in encoders.values():
        pushed: list[bool] = []

        def pre(module, args, pushed=pushed):
            pushed.append(not (timings.inside("rescore") or timings.inside("confidence")))
            if pushed[-1]:
                timings.start("encoder")

        def post(module, args, output, pushed=pushed):
            if pushed.pop():
                timings.stop()

        undo += [encoder.register_forward_pre_hook(pre).remove, encoder.register_forward_hook(post).remove]

    before = bundle.decoders.timed
    bundle.decoders.timed = lambda: timings("decoder")
    undo.append(lambda: setattr(bundle.decoders, "timed", before))

    def detach() -> None:
        for step in reversed(undo):
            step()

    return detach


def profile_pipeline(corrector: Corrector, lines: Sequence[str], warmup: int = 5) -> dict:
    """ms per pipeline step over ``lines`` (after ``warmup`` untimed lines), the wall time and
    sentences per second."""
    corrector.correct(list(lines[:warmup]))
    timings = Timings()
    detach = attach(corrector, timings)
    corrector.timings = timings
    try:
        start = time.perf_counter()
        with timings("other"):
            corrector.correct(list(lines))
        wall = (time.perf_counter() - start) * 1e3
    finally:
        corrector.timings = OFF
        detach()
    totals, later = timings.totals(), timings.later_rounds()
    calls: dict[str, int] = {}
    for (name, _), n in timings.calls.items():
        calls[name] = calls.get(name, 0) + n
    steps = {name: {"ms": totals[name], "ms_per_line": totals[name] / max(1, len(lines)),
                    "share": totals[name] / wall if wall else 0.0, "later_rounds_ms": later.get(name, 0.0),
                    "calls": calls.get(name, 0)}
             for name in [*STEPS, *sorted(set(totals) - set(STEPS))] if name in totals}
    return {"lines": len(lines), "mode": corrector.mode, "batch_size": corrector.batch_size,
            "rounds": corrector.config.rounds, "spelling": corrector.config.spelling, "rescore": corrector.config.rescore,
            "wall_ms": wall, "lines_per_s": len(lines) / (wall / 1e3) if wall else None,
            "later_rounds_ms": sum(later.values()), "steps": steps}


def markdown(p: dict) -> list[str]:
    """The pipeline section of report.md."""
    lines = [
        "## Pipeline (`editspec correct`'s path, `Corrector.correct`)", "",
        f"{p['lines']} lines, mode {p['mode']}, batch size {p['batch_size']}, rounds {p['rounds']}, "
        f"spelling {'on' if p['spelling'] else 'off'}, rescore {'on' if p['rescore'] else 'off'}"
        + (f"; models loaded in {p['load_seconds']:.2f} s" if p.get("load_seconds") is not None else "")
        + f": {p['wall_ms'] / 1e3:.2f} s, {p['lines_per_s']:.1f} lines/s. Exclusive times (a step inside "
        "another is not in the outer one's row): the rows add up to the whole.", "",
        "| step | ms | ms/line | share | of which rounds 2+ | calls |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s in p["steps"].items():
        lines.append(f"| {name} | {s['ms']:.1f} | {s['ms_per_line']:.3f} | {100 * s['share']:.1f}% | "
                     f"{s['later_rounds_ms']:.1f} | {s['calls']} |")
    lines += [f"| **rounds 2+ (all steps)** | {p['later_rounds_ms']:.1f} | | "
              f"{100 * p['later_rounds_ms'] / p['wall_ms'] if p['wall_ms'] else 0:.1f}% | | |", "",
              "encoder: the encoder passes (T5's, and a separate EdiT5's); decoder: the decoding core's decoder "
              "passes; draft: the drafter (EdiT5's heads, copy/n-gram lookups); decode: the rest of the core "
              "(slots, argmax, bookkeeping); edit5: EdiT5's heads in edit5 mode; edits: each changed unit's diff; "
              "guard: the checks after the model (unreadable characters, the guard, made-up words); "
              "other: outside the named steps.", ""]
    return lines
