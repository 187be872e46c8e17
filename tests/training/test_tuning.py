"""eval/tune_guard.py and eval/tune_rounds.py give what a Corrector with the tuned setting gives."""

import sys

from editspec.corrector import Corrector
from editspec.pre import segment
from editspec.pre.spelling import load_speller, respell_all
from eval import tune_rounds
from eval.tune_guard import apply_guard, model_edits
from editspec.post.checks import guard
from editspec.post.diff import Correction
from tests.helpers import errant_from_pairs


def test_tune_guard_applies_the_guard_as_the_corrector_does(models):
    """eval/tune_guard.py decodes once and guards per unit for each limit: the same outputs as a
    Corrector with that limit (a random T5 rewrites freely, so every limit keeps some units)."""
    lines = ["She go home. I like a subject.", "", "He go to school every days.", "Yes. No. Maybe so."]
    raw = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=0)
    spans = segment.segment_lines(lines, raw.limits)
    units = [text[a:b] for text, line in zip(lines, spans) for a, b in line]
    with model_edits():
        outputs = raw.correct_units(units)
    for limit in (0, 1, 2, 3):
        guarded = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=limit)
        got, kept = apply_guard(lines, spans, units, outputs, limit)
        assert got == guarded.correct(lines) and kept == guarded.guarded
        assert (kept > 0) == (limit > 0)


def test_tune_guard_undoes_made_up_words_after_the_guard_as_the_corrector_does(models):
    """With the spelling step on, the corrector undoes made-up words after the guard: so does
    eval/tune_guard.py (a random T5 glues sub-word pieces into words no dictionary knows)."""
    lines = ["She go home. I like a subject.", "He go to school every days.", "Yes. No. Maybe so.",
             "Their is many peoples who thinks so.", "I has went to the the park yesterday."]
    raw = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=0)
    spans = segment.segment_lines(lines, raw.limits)
    units = respell_all(segment.unit_texts(lines, spans), segment.places(lines, spans))
    with model_edits():
        outputs = raw.correct_units(units)
    knows = load_speller().knows
    undone = 0
    for limit in (0, 2):
        spelled = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=limit,
                                            spelling=True)
        got, kept = apply_guard(lines, spans, units, outputs, limit, knows)
        assert got == spelled.correct(lines) and kept == spelled.guarded
        guard_only = segment.rejoin_lines(lines, spans, [guard(Correction.of(u, o), limit).output
                                                         for u, o in zip(units, outputs)])
        undone += got != guard_only
    assert undone > 0  # the checks after the guard undid something, so the equality tested them


def test_tune_rounds_scores_each_round_as_the_corrector_outputs_it(models, tmp_path, monkeypatch, capsys):
    """eval/tune_rounds.py prints one score per round, and on a gold set without edits its false
    edits appear exactly when a Corrector with that many rounds changes a sentence."""
    m2 = tmp_path / "dev.m2"
    m2.write_text("".join(f"S {s}\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0\n\n"
                          for s in ["She go home .", "He go to school every days .", "Yes . No ."]))
    monkeypatch.setattr(sys, "argv", ["tune_rounds.py", str(models / "bundle"), "--m2", str(m2), "--mode", "t5",
                                      "--rounds", "3", "--no-spelling"])
    tune_rounds.main()
    out = capsys.readouterr().out
    assert "spelling off" in out and "best rounds" in out
    lines = [line for line in out.splitlines() if line.startswith("rounds ")]
    assert [line.split(":")[0] for line in lines] == ["rounds 1", "rounds 2", "rounds 3"]
    # noop gold: every edit is false, and the counts follow the corrector's outputs round by round
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", spelling=False)
    for n, line in enumerate(lines, 1):
        c.config = c.config.replace(rounds=n)
        fixed = c.correct(["She go home.", "He go to school every days.", "Yes. No."])
        changed = sum(f != s for f, s in zip(fixed, ["She go home.", "He go to school every days.", "Yes. No."]))
        assert (" TP 0 " in line) and ((" FP 0 " in line) == (changed == 0)), line


def test_tune_confidence_counts_the_reorderings_and_deletions_it_governs():
    """The order bias holds back reorderings (ERRANT's R:WO), the keep bias deletions (U:*): the
    tuning prints how many were made and how many the gold edits contain."""
    from eval.tune_confidence import governed

    dev = errant_from_pairs(["I have already it seen .", "She is is here .", "He go home ."],
                           ["I have already seen it .", "She is here .", "He goes home ."])
    assert governed(dev.score(["I have already seen it .", "She is here .", "He goes home ."])) \
        == "reorderings 1 (gold 1), deletions 1 (gold 1)"
    # a wrong reordering, a wrong deletion and a missed one
    assert governed(dev.score(["I already have it seen .", "She is is here .", "He home ."])) \
        == "reorderings 1 (gold 0), deletions 1 (gold 0)"
    assert governed(dev.score(dev.sources)) == "reorderings 0 (gold 0), deletions 0 (gold 0)"
