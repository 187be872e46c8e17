"""editspec/profiling/clock.py: spans and marks from hooks, removed again by close."""

import torch

from editspec.profiling.clock import Clock, Recorder, Sample


def test_hooks_time_every_call_and_go_away():
    layer = torch.nn.Linear(2, 2)
    rec = Recorder(Clock(torch.device("cpu")))
    rec.time_module(layer, "layer")
    rec.mark_module(layer, "start")
    rec.override(layer, lambda out: out * 0)
    for _ in range(3):
        assert layer(torch.ones(1, 2)).abs().sum() == 0
    assert len(rec.durations("layer")) == 3 and all(d >= 0 for d in rec.durations("layer"))
    assert rec.total("layer") == sum(rec.durations("layer"))
    assert len(rec.steps("start", rec.clock.stamp())) == 3
    rec.close()
    assert not layer._forward_hooks and not layer._forward_pre_hooks
    assert layer(torch.ones(1, 2)).abs().sum() > 0 and len(rec.durations("layer")) == 3


def test_wrap_times_a_method_and_restores_it():
    class Model:
        def generate(self, x):
            return x + 1

    model, rec = Model(), Recorder(Clock(torch.device("cpu")))
    rec.wrap(model, "generate", "draft")
    assert model.generate(1) == 2 and len(rec.spans["draft"]) == 1
    rec.close()
    assert "generate" not in vars(model) and model.generate(2) == 3


def test_steps_between_marks_and_the_parts_of_a_sample():
    class Fake(Clock):
        def __init__(self):
            self.cuda = False

    rec = Recorder(Fake())
    rec.marks["step"] = [0.0, 0.002, 0.005]
    assert [round(s, 6) for s in rec.steps("step", 0.006)] == [2.0, 3.0, 1.0]
    assert rec.steps("none", 1.0) == []
    s = Sample(latency=10.0, encoder=2.0, steps=[2.0, 3.0, 1.0], draft=1.5, outputs=[[1]], finished=[True])
    assert s.decoder == 6.0 and s.other == 0.5
