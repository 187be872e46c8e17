"""editspec/profiling/pipeline.py: editspec correct's path timed step by step, outputs unchanged."""

import json

import pytest

from editspec import cli
from editspec.corrector import Corrector
from editspec.decoding import core
from editspec.profiling.pipeline import profile_pipeline
from editspec.timing import OFF
from tests.helpers import sentences


def test_pipeline_report(bundle, dev_m2, tmp_path):
    out = tmp_path / "report"
    rc = cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out), "--limit", "5",
                   "--warmup", "1", "--threads", "1", "--device", "cpu", "--modes", "none", "--pipeline",
                   "--batch-size", "2"])
    assert rc == 0
    p = json.loads((out / "report.json").read_text())["pipeline"]
    assert p["lines"] == 5 and p["mode"] == "speculative" and p["batch_size"] == 2 and p["load_seconds"] > 0
    steps = p["steps"]
    for name in ("segment", "tokenize", "encoder", "decoder", "draft", "decode", "render", "guard", "rejoin", "diff"):
        assert steps[name]["ms"] > 0 and steps[name]["calls"] > 0, name
    assert sum(s["ms"] for s in steps.values()) == pytest.approx(p["wall_ms"], rel=0.02)  # exclusive: adds up
    assert "## Pipeline" in (out / "report.md").read_text()


def test_timed_output_is_untimed_output(bundle):
    """Timing changes nothing: the same outputs, the hooks gone afterwards; rounds 2+ are split out."""
    corrector = Corrector.from_pretrained(bundle, device="cpu", rounds=3, rescore=True, batch_size=2)
    lines = sentences(8, seed=11) + ["", "  Two  spaces.  And more. "]
    plain = corrector.correct(lines)
    forward = core.Decoder.forward
    p = profile_pipeline(corrector, lines, warmup=2)
    assert corrector.timings is OFF and core.Decoder.forward is forward and "_drafter" not in vars(corrector)
    assert not corrector.t5.encoder._forward_hooks and not corrector.t5.encoder._forward_pre_hooks
    assert corrector.correct(lines) == plain
    assert p["steps"]["rescore"]["ms"] > 0 and p["rounds"] == 3
    assert p["later_rounds_ms"] == pytest.approx(sum(s["later_rounds_ms"] for s in p["steps"].values()))
