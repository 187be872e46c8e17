"""editspec/profiling/pipeline.py: editspec correct's path timed step by step, outputs unchanged."""

import json
import sys

import pytest

from editspec import cli
from editspec.corrector import Corrector
from editspec.profiling.end_to_end import t5_twin
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
    for name in ("segment", "tokenize", "encoder", "decoder", "draft", "decode", "render", "guard", "rejoin"):
        assert steps[name]["ms"] > 0 and steps[name]["calls"] > 0, name
    assert sum(s["ms"] for s in steps.values()) == pytest.approx(p["wall_ms"], rel=0.02)  # exclusive: adds up
    assert "## Pipeline" in (out / "report.md").read_text()


def test_timed_output_is_untimed_output(bundle):
    """Timing changes nothing: the same outputs, the hooks gone afterwards; rounds 2+ are split out."""
    corrector = Corrector.from_pretrained(bundle, device="cpu", rounds=3, rescore=True, batch_size=2)
    lines = sentences(8, seed=11) + ["", "  Two  spaces.  And more. "]
    plain = corrector.correct(lines)
    timed = corrector.bundle.decoders.timed
    p = profile_pipeline(corrector, lines, warmup=2)
    assert corrector.timings is OFF and corrector.bundle.decoders.timed is timed
    assert not corrector.bundle.t5.encoder._forward_hooks and not corrector.bundle.t5.encoder._forward_pre_hooks
    assert corrector.correct(lines) == plain
    assert p["steps"]["rescore"]["ms"] > 0 and p["rounds"] == 3
    assert p["later_rounds_ms"] == pytest.approx(sum(s["later_rounds_ms"] for s in p["steps"].values()))


def test_end_to_end_report(bundle, dev_m2, tmp_path, monkeypatch):
    """--end-to-end: the default path, --mode t5 and CTranslate2 take turns; every way is timed
    each turn and the ratios are the medians' (without ctranslate2, a note instead of its row)."""
    out = tmp_path / "report"
    rc = cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out), "--limit", "5",
                   "--warmup", "1", "--threads", "1", "--device", "cpu", "--modes", "none", "--end-to-end",
                   "--batch-size", "2", "--ct2-cache", str(tmp_path / "ct2")])
    assert rc == 0
    e = json.loads((out / "report.json").read_text())["end_to_end"]
    ways = ["default", "t5"] + (["ct2-greedy"] if "ct2_unavailable" not in e else [])
    assert e["lines"] == 5 and e["mode"] == "speculative" and e["batch_size"] == 2 and e["repeats"] == 3
    assert list(e["runs"]) == ways and all(len(r) == 3 and min(r) > 0 for r in e["runs"].values())
    assert e["speedup_vs_t5"] == pytest.approx(e["seconds"]["t5"] / e["seconds"]["default"])
    assert "## End to end" in (out / "report.md").read_text()
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import fails as if not installed
    rc = cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out), "--limit", "2",
                   "--warmup", "0", "--threads", "1", "--device", "cpu", "--modes", "none", "--end-to-end"])
    e = json.loads((out / "report.json").read_text())["end_to_end"]
    assert rc == 0 and list(e["runs"]) == ["default", "t5"] and "pip install" in e["ct2_unavailable"]


def test_the_t5_twin_is_t5_mode(bundle):
    """end_to_end's t5 way is the corrector's own --mode t5, on the same models and settings."""
    corrector = Corrector.from_pretrained(bundle, device="cpu", rescore=True, batch_size=2)
    twin = t5_twin(corrector)
    lines = sentences(12, seed=5)
    assert twin.mode == "t5" and twin.bundle.t5 is corrector.bundle.t5 and twin.config == corrector.config.replace(mode="t5")
    assert twin.correct(lines) == Corrector.from_pretrained(bundle, device="cpu", mode="t5", rescore=True,
                                                            batch_size=2).correct(lines)
