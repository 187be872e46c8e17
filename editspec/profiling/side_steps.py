"""The text steps around the model, timed apart from the modes.

They are the same whichever mode runs, so they are not in any mode's latency:

    spelling     before the model: ``editspec.pre.spelling`` respells the text ("I recieve your
                 leter." -> "I receive your letter."); its dictionaries load once per process
                 (``load_seconds``)
    rescoring    after the model: ``editspec.decoding.rescoring`` undoes the edits the output
                 model scores the sentence better without, timed on that model's own outputs with
                 every pair forced (``editspec correct`` takes a bf16 T5's outputs' own scores from
                 the decode instead: ``editspec profile --pipeline`` times that path)
    real_words   after the model, with spelling on: the check for made-up words
                 (``editspec.post.checks.real_words``)

Each is timed one sentence at a time with ``time.perf_counter``, after ``warmup`` untimed ones,
and summarized as ``{"median", "p90", "p95", "mean", "n"}`` in ms per sentence.
"""

from __future__ import annotations

import time
from typing import Sequence

from editspec.config import CorrectorConfig
from editspec.corrector import Corrector
from editspec.decoding.runners import RUNNERS
from editspec.decoding.rescoring import rescore
from editspec.profiling.stats import summary
from editspec.post.diff import Correction
from editspec.post.checks import real_words
from editspec.pre.spelling import load_speller, respell_all


def time_spelling(sources: Sequence[str], warmup: int) -> dict:
    """ms per sentence of the spelling step, and the seconds its first load took (0 if this process
    had loaded it before)."""
    start = time.perf_counter()
    speller = load_speller()  # the first call loads the dictionaries: a once-per-process cost
    load_seconds = time.perf_counter() - start
    for text in sources[:warmup]:
        speller.respell(text)
    times = []
    for text in sources:
        start = time.perf_counter()
        speller.respell(text)
        times.append((time.perf_counter() - start) * 1e3)
    return {**summary(times), "load_seconds": load_seconds}


def time_rescoring(corrector: Corrector, sources: Sequence[str], warmup: int) -> dict:
    """ms per sentence of rescoring for each model ``corrector`` holds ({"edit5": ..., "t5": ...}),
    on that model's own outputs of ``sources`` (as the corrector reads them); ``changed`` counts
    the outputs it had edits to score. With the spelling step on, ``real_words`` times the check
    for made-up words on the same outputs."""
    units = list(sources)
    if corrector.config.spelling:
        units, knows = respell_all(units), load_speller().knows
    timed = {}
    for kind in ("edit5", "t5"):
        if getattr(corrector.bundle, kind) is None:
            continue
        plain = Corrector(corrector.bundle.only(kind), CorrectorConfig(kind, max_edit_words=corrector.config.max_edit_words))
        outputs = plain.correct(units)
        score = RUNNERS[kind].scorer(plain.bundle, prefix=corrector.config.prefix)  # the edit5 mode reads no prefix
        changes = [Correction.of(unit, output) for unit, output in zip(units, outputs)]  # as the corrector has them
        for c in changes[:warmup]:
            rescore([c], score)
        times = []
        for c in changes:
            start = time.perf_counter()
            rescore([c], score)
            times.append((time.perf_counter() - start) * 1e3)
        timed[kind] = {**summary(times), "changed": sum(o != u for o, u in zip(outputs, units))}
        if corrector.config.spelling:
            times = []
            for c in changes:
                start = time.perf_counter()
                real_words(c, knows)
                times.append((time.perf_counter() - start) * 1e3)
            timed[kind]["real_words"] = summary(times)
    return timed
