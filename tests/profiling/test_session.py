"""`editspec profile` end to end (editspec/cli/profile.py -> editspec/profiling/session.py): a smoke
run of the harness on 5 sentences with the tiny random bundle. Benchmarks are commands, not
tests: these check the report's structure, that every exact mode reproduced T5's greedy output,
the acceptance bookkeeping, and that the report files and plots are written."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from editspec import cli
from editspec.profiling import architectures
from editspec.modes import BY_NAME

EXACT = ("speculative", "speculative-edit5", "speculative-copy", "speculative-perfect", "hf-greedy")
STAT_KEYS = {"median", "p90", "mean"}
TINY_ARCHITECTURES = {
    "t5-base": ("t5", dict(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=2)),
    "edit5-base": ("edit5", dict(d_model=32, d_kv=8, d_ff=64, num_heads=4, num_layers=2, num_decoder_layers=1)),
}


def test_profile_report(bundle, dev_m2, tmp_path, capsys):
    out = tmp_path / "report"
    # float32: transformers' generate (hf-greedy) equals our core's greedy there; in bf16 their
    # attention kernels round differently
    rc = cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out), "--limit", "5",
                   "--warmup", "1", "--threads", "1", "--device", "cpu", "--dtype", "float32"])
    assert rc == 0
    said = capsys.readouterr().err  # each phase says itself as it starts (issue 78: 31 s of silence)
    assert said.index("editspec: loading the models") < said.index("editspec: timing modes t5 ")
    report = json.loads((out / "report.json").read_text())
    assert report["dtype"] == "float32"
    for key in ("device", "threads", "sentences", "batch_size", "torch", "transformers", "modes", "architectures"):
        assert key in report
    assert report["threads"] == 1 and report["batch_size"] == 1 and report["sentences"] == 5
    assert report["options"]["limit"] == 5 and report["options"]["model"] == str(bundle)
    assert list(report["modes"]) == list(BY_NAME)
    for mode, e in report["modes"].items():
        assert e["status"] == "ok", (mode, e)
        assert e["source"] == "trained"
        for key in ("latency_ms", "encoder_ms", "decoder_step_ms", "decoder_steps"):
            if mode.startswith("ct2-") and key == "decoder_step_ms":  # one call timed whole: no steps seen
                assert e[key] is None
                continue
            assert STAT_KEYS <= set(e[key]), (mode, key)
            assert e[key]["n"] >= 5
        assert e["latency_ms"]["median"] > 0 and e["speedup_vs_t5"] > 0
        # the parts of a sample cannot exceed the whole
        assert e["encoder_ms"]["mean"] + e["decoder_ms"]["mean"] <= e["latency_ms"]["mean"] * 1.001
    modes = report["modes"]
    assert modes["t5"]["speedup_vs_t5"] == pytest.approx(1.0)
    for mode in EXACT:
        assert modes[mode]["identical_to_t5"] == 1.0, mode
    # one T5 step per output token plus EOS, unless cut by max_new_tokens (then no EOS)
    assert modes["t5"]["tokens_per_pass"] == modes["hf-greedy"]["tokens_per_pass"] == pytest.approx(1.0)
    for mode in ("speculative", "speculative-edit5", "speculative-copy", "speculative-perfect"):
        e = modes[mode]
        assert 0.0 <= e["acceptance_rate"] <= 1.0 and STAT_KEYS <= set(e["draft_ms"])
        hist = {int(k): v for k, v in e["accepted_per_pass"].items()}
        assert sum(k * v for k, v in hist.items()) == e["counts"]["accepted"]  # per-pass bookkeeping
        assert sum(hist.values()) == e["counts"]["row_passes"]
        assert e["decoder_steps"]["mean"] == pytest.approx(e["counts"]["row_passes"] / 5)  # hooks saw every pass
        assert e["leviathan"]["expected_speedup"] > 0
    # CTranslate2 on the same weights: fp32 greedy is our greedy; every mode's speedup against it
    assert modes["ct2-greedy"]["identical_to_t5"] == 1.0 and "tokens_per_pass" not in modes["ct2-greedy"]
    assert modes["ct2-greedy"]["speedup_vs_ct2_greedy"] == pytest.approx(1.0)
    assert modes["speculative"]["speedup_vs_ct2_greedy"] > 0 and report["ctranslate2"]
    perfect = modes["speculative-perfect"]
    assert perfect["acceptance_rate"] == 1.0 and perfect["leviathan"]["alpha"] == 1.0
    assert perfect["tokens_per_pass"] > 2  # T5's own output as the draft: whole windows accepted
    assert modes["hf-assisted"]["draft_ms"]["mean"] > 0
    # the speculative mode's pick: each candidate measured on the 5 probed sentences (and warm-up)
    assert modes["speculative"]["drafter"] in ("edit5", "copy")
    assert set(modes["speculative"]["drafter_cost_ms"]) == {"edit5", "copy"}
    assert all(v > 0 for v in modes["speculative"]["drafter_cost_ms"].values())
    md = (out / "report.md").read_text()
    assert "| `speculative-perfect` |" in md and "Leviathan" in md and "`speculative` drafts with" in md
    assert "against CTranslate2" in md and "token for token in 100.0%" in md
    for name in ("latency_breakdown.png", "latency_vs_length.png", "accepted_per_pass.png"):
        assert (out / name).stat().st_size > 0, name


def test_batches_and_refusals(bundle, dev_m2, tmp_path, monkeypatch):
    """Batch size 2: transformers' assisted modes are recorded as unsupported; ours stay exact.
    And the --architectures path of the command (tiny sizes)."""
    monkeypatch.setattr(architectures, "ARCHITECTURES", TINY_ARCHITECTURES)
    out = tmp_path / "report"
    rc = cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out), "--limit", "5",
                   "--warmup", "0", "--batch-size", "2", "--device", "cpu", "--architectures", "--trace",
                   "--dtype", "float32", "--modes", "speculative", "hf-assisted", "hf-prompt-lookup", "hf-greedy"])
    assert rc == 0
    report = json.loads((out / "report.json").read_text())
    modes = report["modes"]
    assert list(modes) == ["t5", "speculative", "hf-greedy", "hf-assisted", "hf-prompt-lookup"]
    assert modes["hf-assisted"]["status"] == modes["hf-prompt-lookup"]["status"] == "unsupported"
    assert "batch" in modes["hf-assisted"]["reason"]
    assert modes["speculative"]["identical_to_t5"] == modes["hf-greedy"]["identical_to_t5"] == 1.0
    assert modes["t5"]["decoder_steps"]["n"] == 3  # batches of 2, 2, 1
    assert set(report["architectures"]) == {*TINY_ARCHITECTURES, "t5-base+gold", "t5-base+copy"}
    assert (out / "architectures.png").stat().st_size > 0
    trace = json.loads((out / "trace-t5.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert {"editspec.t5.encode", "editspec.decoding.pass"} <= names
    assert (out / "trace-speculative.json").is_file() and not (out / "trace-hf-assisted.json").exists()


def test_missing_drafter_is_skipped_with_a_note(bundle, dev_m2, tmp_path):
    out = tmp_path / "report"
    rc = cli.main(["profile", "--data", str(dev_m2), "--t5", str(bundle / "t5"), "--out", str(out),
                   "--limit", "2", "--warmup", "0", "--device", "cpu", "--modes", "hf-assisted", "edit5"])
    assert rc == 0
    modes = json.loads((out / "report.json").read_text())["modes"]
    assert modes["t5"]["status"] == "ok" and modes["t5"]["decoder_steps"]["n"] == 2
    assert modes["hf-assisted"] == {"status": "skipped", "reason": modes["hf-assisted"]["reason"]}
    assert "t5-draft" in modes["hf-assisted"]["reason"] and "edit5" in modes["edit5"]["reason"]


def test_ct2_without_ctranslate2_is_skipped(bundle, dev_m2, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import fails as if not installed
    out = tmp_path / "report"
    rc = cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out),
                   "--limit", "2", "--warmup", "0", "--device", "cpu", "--modes", "ct2-greedy"])
    assert rc == 0
    modes = json.loads((out / "report.json").read_text())["modes"]
    assert modes["ct2-greedy"]["status"] == "skipped" and "ctranslate2" in modes["ct2-greedy"]["reason"]
    assert "speedup_vs_ct2_greedy" not in modes["t5"]
    assert "skipped" in (out / "report.md").read_text()


@pytest.mark.parametrize("flags, message", [
    (["--modes", "t5", "beam"], "unknown mode(s) beam"),
    (["--gamma", "0"], "--gamma must be 'auto', 'all' or a positive integer"),
    (["--mode", "t5"], "use --modes"),
    (["--modes", "none"], "nothing to profile"),
    (["--batch-size", "0"], "argument --batch-size: must be an integer of 1 or more"),
    (["--dtype", "int8"], "invalid choice: 'int8'"),
])
def test_bad_flags_give_one_line(flags, message, dev_m2, tmp_path, capsys):
    rc = cli.main(["profile", "--data", str(dev_m2), "--out", str(tmp_path / "r"), *flags])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_bad_modes_fail_before_torch_loads(dev_m2, tmp_path):
    """A mistyped mode fails in the CLI's own process before the profiling modules import torch."""
    code = ("import sys\nfrom editspec import cli\n"
            f"rc = cli.main(['profile', '--data', {str(dev_m2)!r}, '--out', 'x', '--modes', 'beam'])\n"
            "print(rc, 'torch' in sys.modules)")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert done.stdout.split() == ["2", "False"]


def test_named_architectures_only_and_unknown_refused(bundle, dev_m2, tmp_path, monkeypatch, capsys):
    """``--architectures NAME``: only the named ones (our own shapes among them); an unknown name
    is a one-line error."""
    monkeypatch.setattr(architectures, "EXTRA", {"t5-ours": TINY_ARCHITECTURES["t5-base"]})
    out = tmp_path / "report"
    assert cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out), "--limit", "3",
                     "--warmup", "0", "--device", "cpu", "--modes", "none", "--architectures", "t5-ours"]) == 0
    assert set(json.loads((out / "report.json").read_text())["architectures"]) == {"t5-ours", "t5-ours+gold",
                                                                                   "t5-ours+copy"}
    assert cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(out), "--limit", "3",
                     "--modes", "none", "--architectures", "t5-nope"]) != 0
    assert "unknown architecture(s) t5-nope" in capsys.readouterr().err


def test_profile_records_the_threads_it_timed_with(bundle, dev_m2, tmp_path, monkeypatch):
    """Issue 76: ``profile --threads N`` with more threads than cores (torch is set directly then)
    recorded N while the corrector it loaded chose again (the machine's default): the timings
    were taken at another count. Loading no longer chooses threads: each mode is timed at N."""
    from editspec import threads
    from editspec.profiling import session

    n = threads.allowed_cores() + 1
    seen = []
    real = session.profile_modes

    def profile_modes(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(session, "profile_modes", profile_modes)
    monkeypatch.setattr(threads, "default_threads", lambda: 1)  # what a load chose before
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    try:
        rc = cli.main(["profile", "--data", str(dev_m2), "--model", str(bundle), "--out", str(tmp_path / "r"),
                       "--limit", "2", "--warmup", "0", "--threads", str(n), "--device", "cpu", "--modes", "t5"])
    finally:
        torch.set_num_threads(before)
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert rc == 0 and seen == [n] and report["threads"] == n
