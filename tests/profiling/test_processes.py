"""editspec profile --processes (editspec/profiling/processes.py): whole processes timed taking turns,
the CTranslate2 script among them, medians and goals in the report (tiny models: only the
bookkeeping is tested here; the numbers are the README's)."""

import json
from pathlib import Path

from editspec import cli
from editspec.profiling import processes


def test_processes_report(bundle, dev_m2, tmp_path):
    out = tmp_path / "out"  # the command here: the processes it times are its own either way
    assert cli.main(["profile", "--data", str(dev_m2), "--processes", "--sizes", "1", "--turns", "2", "--threads", "1",
                     "--model", str(bundle), "--ct2-cache", str(tmp_path / "ct2"), "--out", str(out)]) == 0
    report = json.loads((out / "processes.json").read_text())
    assert report["sizes"] == [1] and report["turns"] == 2 and report["threads"] == 1
    for n in ("1",):
        assert set(report["runs"][n]) == {"default", "t5", "ct2"}
        assert all(len(w) == 2 and min(w) > 0 for w in report["runs"][n].values())
        assert report["median"][n]["ct2"] > 0 and report["default_equals_t5"][n]
        assert report["ratios"][n]["t5_over_default"] > 0
        assert report["ratios"][n]["peer_over_default"] == report["ratios"][n]["ct2_over_default"]  # 1 thread: one script
    assert len(report["import_torch"]["runs"]) == 2 and report["import_torch"]["median"] > 0
    assert [g["goal"] for g in report["goals"]] == [processes.GOALS[1]]
    # the peer's output was checked against the T5's raw greedy output before timing: the same model
    assert report["peer_checked"]["1"] == {"same": 1, "lines": 1}
    text = (out / "processes.md").read_text()
    assert "| 1 |" in text and "CTranslate2" in text and "equals" in text and "import torch" in text
    assert "1 of 1 the same as the T5's raw greedy output" in text


def test_goals_are_read_off_the_medians():
    median = {1: {"default": 1.2}, 500: {"default": 4.0, "t5": 6.0, "ct2": 4.1},
              2000: {"default": 8.0, "t5": 17.0, "ct2": 11.9}}
    assert [g["met"] for g in processes.goals(median, 0.9)] == [True, True, False]  # 11.9 / 8 < 1.5
    assert [g["met"] for g in processes.goals(median, 0.7)][0] is False  # 1.2 > 0.7 + 0.4
    cold = [g["met"] for g in processes.goals({1: {"default": 1.2}}, 0.9, {"wall": 2.5, "cpu": 2.0})]
    assert cold == [True, False]  # a first process 2.5 / 1.2 > 2x a warm one


def test_the_peer_is_the_faster_script():
    """2 threads: the script runs on 1 and on 2, and the goals hold against the faster."""
    ways = processes.commands(Path("in.txt"), Path("out"), 2, Path("ct2"), Path("tok.json"), [])
    assert set(ways) == {"default", "t5", "ct2", "ct2-1"} and ways["ct2-1"][-1] == "1" and ways["ct2"][-1] == "2"
    assert set(processes.commands(Path("in.txt"), Path("out"), 1, Path("ct2"), Path("tok.json"), [])) == \
        {"default", "t5", "ct2"}
    median = {500: {"default": 4.0, "t5": 6.0, "ct2": 9.0, "ct2-1": 3.9},
              2000: {"default": 8.0, "t5": 17.0, "ct2": 30.0, "ct2-1": 12.5}}
    assert [g["met"] for g in processes.goals(median, 1.0)] == [False, True]  # 3.9 < 4.0; 12.5 / 8 >= 1.5
