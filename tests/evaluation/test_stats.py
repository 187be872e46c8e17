"""The paired bootstrap (and eval/significance.py, which runs it on two output files), the AUC."""

import json
import runpy
import sys

import pytest
import torch

from editspec.errors import EditspecError
from editspec.evaluation.errant import ErrantResult
from editspec.evaluation.stats import detection_auc, paired_bootstrap
from tests.helpers import GOLD_M2, GOLD_OUTPUTS



def significance(monkeypatch, *args) -> None:
    """``python -m eval.significance ARGS`` in this process: ERRANT's spaCy pipeline loads once a
    session here, not ~5 s in a process of each run."""
    monkeypatch.setattr(sys, "argv", ["significance.py", *map(str, args)])
    runpy.run_module("eval.significance", run_name="__main__", alter_sys=True)


def result(sentences):
    tp, fp, fn = (sum(c) for c in zip(*sentences))
    return ErrantResult(tp, fp, fn, sentences=sentences)


def test_paired_bootstrap_worked_example():
    """The module docstring's three sentences: B's gain over A on the whole set, and its bounds."""
    a = result([(1, 0, 1), (0, 1, 1), (1, 0, 0)])
    b = result([(1, 0, 1), (1, 0, 0), (1, 0, 0)])
    assert (a.f, b.f) == (0.625, 0.9375)
    gain = paired_bootstrap(a, b, samples=2000)
    assert gain["delta"] == 0.3125
    # B never does worse on a draw; it ties on draws without sentence 2 ((2/3) ** 3 of them)
    assert gain["ci95"][0] == 0 and gain["p"] == pytest.approx(8 / 27, abs=0.03)


def test_paired_bootstrap_tells_a_real_gain_from_noise():
    """Sentence counts (tp, fp, fn): B fixes one more error than A in 60 of 400 sentences, a clear
    gain; C differs from A by a right edit here and a wrong one there, which cancel in expectation."""
    a_rows = [(1, 1, 2) if i % 3 else (0, 0, 2) for i in range(400)]
    a = result(a_rows)
    b = result([(tp + 1, fp, fn - 1) if i % 20 < 3 else (tp, fp, fn) for i, (tp, fp, fn) in enumerate(a_rows)])
    c = result([(tp + 1, fp, fn - 1) if i % 40 == 0 else (tp, fp + 1, fn) if i % 40 == 20 else (tp, fp, fn)
                for i, (tp, fp, fn) in enumerate(a_rows)])
    gain = paired_bootstrap(a, b, samples=500)
    assert gain["delta"] == round(b.f - a.f, 4) > 0
    assert 0 < gain["ci95"][0] < gain["delta"] < gain["ci95"][1] and gain["p"] < 0.01
    noise = paired_bootstrap(a, c, samples=500)
    assert noise["ci95"][0] < 0 < noise["ci95"][1] and 0.05 < noise["p"] < 0.95
    same = paired_bootstrap(a, a, samples=50)
    assert same["delta"] == 0 and same["ci95"] == [0, 0] and same["p"] == 1.0
    assert paired_bootstrap(a, b, samples=200, seed=3) == paired_bootstrap(a, b, samples=200, seed=3)
    with pytest.raises(EditspecError):
        paired_bootstrap(a, result(a_rows[:10]))


def test_significance_script_scores_both_files(tmp_path, monkeypatch, capsys):
    """eval/significance.py: the gold itself against the unchanged sources is a gain no draw undoes."""
    gold = tmp_path / "gold.m2"
    gold.write_text(GOLD_M2, encoding="utf-8")
    (tmp_path / "a.txt").write_text("".join(s + "\n" for s in GOLD_OUTPUTS), encoding="utf-8")
    (tmp_path / "b.txt").write_text("".join(o + "\n" for o in GOLD_OUTPUTS.values()), encoding="utf-8")
    significance(monkeypatch, gold, tmp_path / "a.txt", tmp_path / "b.txt", "--samples", "200")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("A ") and "F0.5 0.0000" in lines[0] and lines[1].startswith("B ")
    report = json.loads(lines[2])
    assert report["delta"] > 0 and report["ci95"][0] >= 0 and report["samples"] == 200
    (tmp_path / "short.txt").write_text("one line\n", encoding="utf-8")
    with pytest.raises(SystemExit) as bad:  # a message: exit status 1, the message the one line on stderr
        significance(monkeypatch, gold, tmp_path / "a.txt", tmp_path / "short.txt")
    assert isinstance(bad.value.code, str) and len(bad.value.code.splitlines()) == 1 and "short.txt" in bad.value.code


def test_detection_auc_counts_ordered_pairs():
    """AUC = P(positive scores above negative), ties half: checked against all pairs, with ties."""
    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 7, (300,), generator=g).float()  # few values: many ties
    positive = torch.rand(300, generator=g) < 0.2
    pos, neg = scores[positive], scores[~positive]
    pairs = (pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double()
    assert detection_auc(scores, positive) == pytest.approx(float(pairs.mean()))
    labels = torch.tensor([False, False, True, True])
    assert detection_auc(torch.tensor([0.0, 1.0, 2.0, 3.0]), labels) == 1.0
    assert detection_auc(torch.tensor([3.0, 2.0, 1.0, 0.0]), labels) == 0.0
    assert detection_auc(torch.zeros(4), labels) == 0.5
