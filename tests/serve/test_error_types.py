"""ERRANT types, messages and rule ids of edits (editspec/post/error_types.py)."""

import json

from editspec.post import error_types
from editspec.post.diff import Correction, diff


def types(source: str, target: str) -> list[tuple[str, str, str]]:
    c = Correction(source, target, diff(source, target))
    [found] = error_types.classify([c])
    return [(e.original.strip(), e.correction.strip(), t) for e, t in zip(c.edits, found)]


def test_classify_common_learner_errors():
    assert types("She go to school every days.", "She goes to school every day.") == \
        [("go", "goes", "R:VERB:SVA"), ("days", "day", "R:NOUN:NUM")]
    assert types("He has went to the the park.", "He has gone to the park.") == \
        [("went", "gone", "R:VERB:FORM"), ("the", "", "U:DET")]
    assert types("i recieve a emails", "I receive an email") == \
        [("i", "I", "R:ORTH"), ("recieve", "receive", "R:SPELL"), ("a", "an", "R:DET"),
         ("emails", "email", "R:NOUN:NUM")]
    assert types("I want go home", "I want to go home.") == [("", "to", "M:VERB:FORM"), ("", ".", "M:PUNCT")]  # ERRANT: infinitival to is VERB:FORM


def test_offsets_after_earlier_edits_and_emoji():
    # the second edit's output side is found after the first one changed the length
    assert types("😀 I goes to the school yesterday and buyed it.",
                 "😀 I went to school yesterday and bought it.") == \
        [("goes", "went", "R:VERB:TENSE"), ("the", "", "U:DET"), ("buyed", "bought", "R:VERB:INFL")]


def test_whitespace_only_edit_is_orth_and_no_edits_no_parse():
    assert types("I like  it.", "I like it.") == [("", "", "R:ORTH")]
    assert error_types.classify([Correction("Fine.", "Fine.", [])]) == [[]]


def test_messages_rule_ids_categories():
    assert error_types.message("R:VERB:SVA") == "Possible subject–verb agreement error"
    assert error_types.message("M:DET") == "A determiner may be missing"
    assert error_types.message("U:ADV") == "This adverb may be unnecessary"
    assert error_types.message("R:PREP") == "Possibly the wrong preposition"
    assert error_types.short_message("M:DET") == "Missing determiner"
    assert error_types.message("R:NEWTYPE") == "Possibly the wrong word"
    assert error_types.rule_id("R:VERB:SVA") == "EDITSPEC_R_VERB_SVA"
    assert error_types.issue_type("R:SPELL") == "misspelling"
    assert error_types.category("R:SPELL") == ("TYPOS", "Possible Typo")
    assert error_types.issue_type("M:PUNCT") == "typographical"
    assert error_types.issue_type("R:VERB:SVA") == "grammar"
    # every main type of ERRANT has its own plain name
    for main in ("ADJ", "ADV", "CONJ", "CONTR", "DET", "NOUN", "PART", "PREP", "PRON", "PUNCT", "VERB",
                 "VERB:FORM", "VERB:TENSE", "NOUN:POSS", "WO", "OTHER", "MORPH", "SPELL", "ORTH"):
        assert main in error_types.NOUNS


def test_correct_jsonl_has_types(serve_models, tmp_path):
    from editspec import cli

    src = tmp_path / "in.txt"
    src.write_text("i like my scool.\nFine.\n")
    out = tmp_path / "out.jsonl"
    assert cli.main(["correct", str(src), "-o", str(out), "--format", "jsonl", "--model",
                     str(serve_models / "identity"), "--spelling", "--device", "cpu", "--no-progress"]) == 0
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    assert [(e["original"], e["type"], e["message"]) for e in first["edits"]] == \
        [("i", "R:ORTH", "Possible capitalisation or spacing error"), ("scool", "R:SPELL", "Possible spelling mistake")]
    assert second["edits"] == []
