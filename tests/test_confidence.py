"""Issue 72: a confidence on every edit, whole-word edits, the picky level (editspec/confidence.py,
the corrector's levels, the CLI's --level). The shipped models are loaded once: what they are
asserted to do here, a model that lost its weights or a wrong margin would not do."""

import json
import math

import pytest

from editspec import cli
from editspec.confidence import Calibration, spread
from editspec.config import CorrectorConfig, Level
from editspec.corrector import Corrector
from editspec.errors import EditspecError
from editspec.post.diff import Correction, Edit, apply, diff

SENTENCES = ["He don't like apples.", "The informations was useful.", "She have two brothers.",
             "My brother go to work every day.", "It is fine.", "  I recieve your letter yesterday.  Thanks!"]


@pytest.fixture(scope="module")
def shipped():
    return Corrector.from_pretrained(device="cpu", batch_size=8)


def test_calibration_is_a_monotone_map_into_0_1():
    c = Calibration(0.5, -1.0)
    values = [c(m) for m in (-1e9, -20, -1, 0, 1, 20, 1e9)]
    assert all(0 <= v <= 1 for v in values) and values == sorted(values) and values[0] < 0.01 < 0.99 < values[-1]
    assert c(None) == c(0.0) == pytest.approx(1 / (1 + math.e))
    assert Calibration()(math.log(3)) == pytest.approx(0.75)


def test_whole_words_are_one_edit():
    assert diff("He don't go", "He didn't go", words=True) == [Edit(3, 8, "don't", "didn't")]
    assert diff("He don't go", "He didn't go") == [Edit(3, 6, "don", "didn")]  # the steps' own units, unchanged
    assert diff("I dont know", "I don't know", words=True) == [Edit(2, 6, "dont", "don't")]
    assert diff("Johns book", "John's book", words=True) == [Edit(0, 5, "Johns", "John's")]
    for s, t in [("It’s ok , is n't it", "It is ok, isn't it?"), ("a b'c d", "a b'x d e")]:
        assert apply(s, diff(s, t, words=True)) == t


def test_spread_gives_each_shown_edit_the_least_sure_unit_edit_it_covers():
    scored = [(10, Edit(3, 6, "don", "didn", confidence=0.7)), (10, Edit(12, 12, "", ",", confidence=0.2)),
              (30, Edit(0, 2, "ab", "AB", confidence=0.9))]
    shown = [Edit(13, 18, "don't", "didn't"), Edit(22, 22, "", ","), Edit(30, 32, "ab", "AB"), Edit(50, 51, "x", "y")]
    assert [e.confidence for e in spread(shown, scored)] == [0.7, 0.2, 0.9, 0.2]


def test_every_edit_has_its_margin_s_confidence(shipped):
    """Each edit's confidence is the calibrated margin of the output over the output without it,
    recomputed here with the T5 scorer: a confidence not computed from this edit would differ."""
    cal = shipped.calibration
    found = shipped.correct_detailed(SENTENCES)
    assert sum(len(c.edits) for c in found) >= 4
    score = shipped.scorer()
    from editspec.pre.spelling import respell_all
    margins = {}
    for c in found:
        for e in c.edits:
            assert 0.0 <= e.confidence <= 1.0
        if len(c.edits) == 1 and c.input.strip() == c.input:  # one unit, one edit
            read = respell_all([c.input])[0]
            full, without = score([read, read], [c.output, c.input])
            margins[c.input] = full - without
            assert e.confidence == pytest.approx(cal(full - without), abs=2e-3)
    by_text = {c.input: c for c in found}
    assert by_text["It is fine."].edits == []
    [edit] = by_text["He don't like apples."].edits
    assert edit.original == "don't" and edit.correction.endswith("n't")  # whole words, not "don" -> "didn"
    # the model prefers its corrections: "information" (no English word was written) by several nats
    assert margins["The informations was useful."] > 2 and all(m >= 0 for m in margins.values())
    assert cal(margins["The informations was useful."]) >= cal(0.0)


def test_keep_sure_leaves_unsure_edits_as_written(shipped):
    # the model's edits alone: the grammar step may make an undone edit again, at its own confidence
    was = shipped.config
    shipped.config = was.replace(grammar=False)
    try:
        plain = shipped.correct_detailed(SENTENCES)
        confidences = sorted(e.confidence for c in plain for e in c.edits)
        threshold = confidences[len(confidences) // 2]
        shipped.config = shipped.config.replace(levels={"default": {"min_confidence": threshold}})
        sure = shipped.correct_detailed(SENTENCES)
        assert shipped.correct(SENTENCES) == [c.output for c in sure]
    finally:
        shipped.config = was
    kept = {(c.input, e.original, e.correction) for c in sure for e in c.edits}
    for c in plain:
        for e in c.edits:
            assert ((c.input, e.original, e.correction) in kept) == (e.confidence >= threshold)
    assert 0 < len(kept) < sum(len(c.edits) for c in plain)


def test_a_level_s_own_calibration_gives_its_edits_confidences(shipped):
    """Issue 78: a level with a calibration of its own (``Level.confidence``) maps its edits'
    margins through it; the default level keeps the model's."""
    saved = shipped.config
    own = {"confidence": [[-5.0, 0.0625], [5.0, 0.0625]], "min_confidence": 0.0}
    shipped.config = saved.replace(levels={**saved.levels, "picky": {**saved.levels["picky"], **own}})
    try:
        picky = shipped.correct_detailed(SENTENCES, level="picky")
        default = shipped.correct_detailed(SENTENCES)
    finally:
        shipped.config = saved
    assert {e.confidence for c in picky for e in c.edits} == {0.0625}
    assert 0.0625 not in {e.confidence for c in default for e in c.edits}
    with pytest.raises(EditspecError, match="level picky: confidence must be"):
        CorrectorConfig(levels={"picky": {"confidence": [[1.0, 0.5], [0.0, 0.6]]}})


def shipped_model_dir():
    from editspec.modeling import loading
    return loading.DEFAULT_MODEL


def test_picky_suggests_more_and_speculative_is_t5(shipped):
    """The picky level (the shipped config's): at least the default's edits on these sentences and
    more over the sample; the speculative output equals t5's at every level."""
    from editspec.modeling import loading
    lines = (loading.DEFAULT_MODEL.parent.parent / "samples" / "learner.txt").read_text(encoding="utf-8").splitlines()
    default = shipped.correct(lines)
    picky = shipped.correct(lines, level="picky")
    edits = lambda outs: sum(len(diff(i, o)) for o, i in zip(outs, lines))
    assert edits(picky) > edits(default)
    t5 = Corrector.from_pretrained(device="cpu", batch_size=8, mode="t5")
    assert t5.correct(lines, level="picky") == picky
    assert t5.correct(lines) == default


def test_levels_in_the_config_are_checked(tmp_path):
    assert CorrectorConfig().level_settings() == Level()
    with pytest.raises(EditspecError, match="unknown level 'loud'"):
        CorrectorConfig().level_settings("loud")
    with pytest.raises(EditspecError, match="level picky: these models have no settings"):
        CorrectorConfig().level_settings("picky")
    with pytest.raises(EditspecError, match="copy_penalty must be a number >= 0"):
        CorrectorConfig(levels={"picky": {"copy_penalty": -1}})
    with pytest.raises(EditspecError, match="levels.picky"):
        CorrectorConfig(levels={"picky": {"loudness": 1}})
    with pytest.raises(EditspecError, match=r"confidence.t5 must be \[scale, bias\]"):
        CorrectorConfig(confidence={"t5": [1]})
    (tmp_path / "corrector_config.json").write_text(json.dumps({"level": "picky"}))
    with pytest.raises(EditspecError, match="corrector_config.json: level picky: these models have no settings"):
        CorrectorConfig.from_pretrained(tmp_path)


def test_level_errors_are_one_line_before_the_models_load(capsys):
    rc = cli.main(["correct", "--text", "He go.", "--level", "loud"])
    err = capsys.readouterr().err
    assert rc == 2 and "invalid choice: 'loud'" in err
    rc = cli.main(["correct", "--text", "He go.", "--level", "picky", "--mode", "edit5"])
    err = capsys.readouterr().err
    assert rc == 2 and "level picky needs the T5" in err and len(err.strip().splitlines()) == 1
    # a checkpoint of its own (no corrector_config.json): no picky settings
    rc = cli.main(["correct", "--text", "He go.", "--level", "picky", "--t5", str(shipped_model_dir() / "t5")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "level picky: these models have no settings" in err


def test_diff_format_shows_whole_words(shipped):
    from editspec.cli.correct import format_diff

    [c] = shipped.correct_detailed(["He don't like apples."])
    assert format_diff(c) == "He [-don't-]{+" + c.edits[0].correction + "+} like apples."


def test_alternatives_come_from_the_n_best_at_the_edit_s_span(shipped):
    from editspec.nbest import ALTERNATIVES, alternatives
    texts = ["She have two brothers.", "He don't like apples.", "It is fine."]
    found = shipped.correct_detailed(texts, alternatives=2)
    units = shipped.units(texts, hypotheses=ALTERNATIVES)  # the round's own search, on what it read
    hyps = [u.hypotheses for u in units]
    assert [len(h) for h in hyps] == [ALTERNATIVES, ALTERNATIVES, 0]  # only the units it changed are searched
    assert sum(len(e.alternatives) for c in found for e in c.edits) >= 2  # "had", "doesn't": the beams have them
    for c, h in zip(found, hyps):
        for e in c.edits:
            assert len(e.alternatives) <= 2 and e.correction not in e.alternatives
            for alt in e.alternatives:  # a hypothesis has exactly this at the span
                assert any(text == c.input[:e.start] + alt + c.input[e.end:] or alt in text for text, _ in h)
    # the rule on made-up lists: inside the span, not beyond it; no lost-place repeats
    c = Correction("I go home.", "I went home.", [Edit(2, 4, "go", "went")])
    [got] = alternatives([c], [[("I went home.", 0), ("I go home now.", -1), ("I goes home.", -2),
                                ("I going going home.", -3), ("I will go home.", -4)]])
    assert got.edits[0].alternatives == ("goes",)
    # issue 78: in real words, with the spelling step's dictionary
    from editspec.pre.spelling import load_speller

    c = Correction("See you tomorow.", "See you tomorrow.", [Edit(8, 15, "tomorow", "tomorrow")])
    hyps = [[("See you tomorrow.", 0), ("See you to themorow.", -1), ("See you ofmorow.", -2),
             ("See you tomorow.", -3), ("See you today.", -4)]]
    assert alternatives([c], hyps)[0].edits[0].alternatives == ("to themorow", "ofmorow")
    assert alternatives([c], hyps, knows=load_speller().knows)[0].edits[0].alternatives == ("today",)


def test_jsonl_confidence_whole_words_and_alternatives_only_when_asked(capsys, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("She have two brothers.\nHe don't like apples.\n", encoding="utf-8")
    rc = cli.main(["correct", str(text), "--format", "jsonl", "--no-progress", "--threads", "1", "--alternatives"])
    first, second = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [edit] = first["edits"]
    assert rc == 0 and edit["correction"] == "has" and edit["alternatives"] == ["had"] and 0 <= edit["confidence"] <= 1
    assert second["edits"][0]["original"] == "don't" and 0 <= second["edits"][0]["confidence"] <= 1
    # without --alternatives a record has none (what as_dict writes), and its confidence
    record = Correction("a", "b", [Edit(0, 1, "a", "b", confidence=0.5)]).as_dict()
    assert "alternatives" not in record["edits"][0] and record["edits"][0]["confidence"] == 0.5
    rc = cli.main(["correct", "--text", "x", "--alternatives"])
    err = capsys.readouterr().err
    assert rc == 2 and "--alternatives is for --format jsonl" in err and len(err.strip().splitlines()) == 1


def test_languagetool_replacements_list_the_alternatives():
    from editspec.serve import languagetool

    text = "She have two brothers."
    doc = languagetool.document(text, None)
    c = Correction(text, "She has two brothers.", [Edit(4, 8, "have", "has", confidence=0.4, alternatives=("had",))])
    [m] = languagetool.matches(doc, c, ["R:VERB:SVA"], [(0, len(text))], languagetool.Options.from_params({}))
    assert [r["value"] for r in m["replacements"]] == ["has", "had"] and m["confidence"] == 0.4
    # an insertion widened over the next word carries its alternatives along
    c = Correction("go school", "go to school", [Edit(3, 3, "", "to ", alternatives=("at ",))])
    [m] = languagetool.matches(languagetool.document("go school", None), c, ["M:PREP"], [(0, 9)],
                               languagetool.Options.from_params({}))
    assert [r["value"] for r in m["replacements"]] == ["to school", "at school"]
