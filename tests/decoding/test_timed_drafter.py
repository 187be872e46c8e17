"""editspec/decoding/drafters.py's TimedDrafter: every call the core makes to a drafter is a ``draft`` span, and
the drafter's proposals pass through unchanged (the core counts the accepted tokens)."""

import torch

from editspec.decoding import core, drafters
from editspec.profiling.clock import Clock, Recorder
from editspec.decoding.drafters import TimedDrafter
from tests.helpers import random_batch, random_t5


def test_every_drafter_call_is_a_draft_span_and_outputs_are_unchanged():
    model = random_t5(0)
    ids, mask = random_batch(torch.Generator().manual_seed(3), 3, 40, min_len=5)
    sources = core.inputs(ids, mask)
    ref, _ = core.generate(model, sources, 2, max_new_tokens=20)
    rec = Recorder(Clock(torch.device("cpu")))
    calls = []
    inner = drafters.Mix(drafters.Copy(), drafters.Ngram())
    for name in ("prepare", "encoded", "propose", "finish"):
        method = getattr(inner, name)
        setattr(inner, name, lambda *a, _m=method, _n=name: calls.append(_n) or _m(*a))
    out, stats = core.generate(model, sources, 2, TimedDrafter(inner, rec), 20, window=3)
    assert out == ref
    assert len(rec.spans["draft"]) == len(calls) > 0
    assert calls.count("prepare") == 1 and calls.count("finish") == 3
    assert calls.count("encoded") == 2  # sentences encoded 2 at a time (slots), then the third
    # one proposal per row and pass, except where the row's token budget leaves no room
    assert 0 < calls.count("propose") <= sum(stats.row_passes) == len(stats.windows)
    assert sum(p for p, _ in stats.windows) == sum(stats.proposed)
    assert sum(a for _, a in stats.windows) == sum(stats.accepted)
