"""The grammar step in the chain: the shipped bundle runs it after the T5, off gives the T5's own
output, its edits carry their type, message and confidence (API, jsonl), the CLI's --grammar, a
missing language model file, and edits of the T5 and of the step composed on one unit."""

import json

import pytest


import editspec.grammar
from editspec import cli
from editspec.corrector import Corrector
from editspec.grammar import chain as grammar_chain
from editspec.post.diff import Correction, Edit
from tests.helpers import tiny_bundle

TEXTS = ["The list of names are long.", "She have two book."]


@pytest.fixture(scope="module")
def shipped():
    return Corrector.from_pretrained()


def test_the_shipped_bundle_corrects_grammar_the_t5_leaves(shipped):
    assert shipped.config.grammar
    assert shipped.correct(TEXTS) == ["The list of names is long.", "She has two books."]
    first, second = (c.as_dict() for c in shipped.correct_detailed(TEXTS, types=True))
    (edit,) = first["edits"]
    assert (edit["original"], edit["correction"], edit["type"], edit["message"]) == (
        "are", "is", "R:VERB:SVA", "the verb should agree with its subject 'list'")
    assert 0 < edit["confidence"] <= 1
    t5, step = second["edits"]  # the T5's edit keeps ERRANT's type and message; the step's has its own
    assert (t5["correction"], t5["type"], t5["message"]) == ("has", "R:VERB:SVA", "Possible subject–verb agreement error")
    assert (step["correction"], step["type"], step["message"]) == (
        "books", "R:NOUN:NUM", "the noun should be plural after 'two'")
    assert 0 < step["confidence"] <= 1


def test_off_the_output_is_the_t5s_own(shipped):
    on = shipped.config
    try:
        shipped.config = on.replace(grammar=False)
        off = shipped.correct(TEXTS)
        assert off == ["The list of names are long.", "She has two book."]
        shipped.config = on.replace(grammar=False, mode="t5")
        assert shipped.correct(TEXTS) == off  # speculative is the T5's greedy output
    finally:
        shipped.config = on


@pytest.fixture(scope="module")
def identity(tmp_path_factory, tokenizer):
    return str(tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer) / "identity")


def test_the_cli_flag_and_jsonl(identity, capsysbinary):
    text = TEXTS[0]
    assert cli.main(["correct", "--text", text, "--model", identity]) == 0  # a raw checkpoint: no step
    assert capsysbinary.readouterr().out.decode() == text + "\n"
    assert cli.main(["correct", "--text", text, "--model", identity, "--grammar"]) == 0
    assert capsysbinary.readouterr().out.decode() == "The list of names is long.\n"
    assert cli.main(["correct", "--text", text, "--model", identity, "--grammar", "--format", "jsonl"]) == 0
    (edit,) = json.loads(capsysbinary.readouterr().out)["edits"]
    assert (edit["type"], edit["message"]) == ("R:VERB:SVA", "the verb should agree with its subject 'list'")
    assert 0 < edit["confidence"] <= 1


def test_a_missing_language_model_is_one_line_naming_it(identity, tmp_path, monkeypatch, capsys):
    missing = tmp_path / "gone.bin"
    monkeypatch.setattr(editspec.grammar, "DEFAULT_LM", missing)
    assert cli.main(["correct", "--text", "x", "--model", identity, "--grammar"]) != 0
    err = capsys.readouterr().err
    assert str(missing) in err and err.count("\n") == 1
    assert cli.main(["correct", "--text", "x", "--model", identity, "--no-grammar"]) == 0


def test_edits_of_the_t5_and_the_step_compose():
    written = "Her sistr hav two book ."
    t5 = Correction(written, "Her sister have two book .",
                    [Edit(4, 9, "sistr", "sister", confidence=0.9), Edit(10, 13, "hav", "have", confidence=0.6)])
    step = Correction(t5.output, "Her sister has two books .",
                      [Edit(11, 15, "have", "has", "R:VERB:SVA", "agree", 0.5),
                       Edit(20, 24, "book", "books", "R:NOUN:NUM", "plural", 0.8)])
    spans = grammar_chain.spans(step, t5)
    assert [(s.start, s.end) for s in spans] == [(10, 13), (18, 22)]  # on the text as written
    assert [written[s.start:s.end] for s in spans] == ["hav", "book"]
    shown = Correction.shown(written, step.output).edits
    typed = grammar_chain.own(shown, spans, t5)
    assert [(e.original, e.correction, e.type, e.message, e.confidence) for e in typed] == [
        ("sistr", "sister", None, None, None),  # the T5's alone: untouched here (spread gives its confidence)
        ("hav", "has", "R:VERB:SVA", "agree", 0.5),  # both: the step's type, the less sure confidence
        ("book", "books", "R:NOUN:NUM", "plural", 0.8)]


def test_a_levels_min_confidence_applies_to_the_steps_edits(shipped):
    was = shipped.config
    (edit,) = shipped.correct_detailed(TEXTS[:1])[0].edits  # the step's alone
    try:
        for threshold, expected in ((edit.confidence, "The list of names is long."), (edit.confidence + 0.01, TEXTS[0])):
            shipped.config = was.replace(levels={"default": {"min_confidence": threshold}})
            assert shipped.correct(TEXTS[:1]) == [expected]
    finally:
        shipped.config = was


def test_the_servers_matches_carry_the_steps_message(shipped):
    from starlette.testclient import TestClient

    from editspec.serve.app import create_app

    with TestClient(create_app(shipped.correct_detailed), base_url="http://localhost") as client:
        (v1,) = client.post("/v1/correct", json={"texts": TEXTS[:1]}).json()["corrections"][0]["edits"]
        (v2,) = client.post("/v2/check", data={"language": "en-US", "text": TEXTS[0]}).json()["matches"]
    message = "the verb should agree with its subject 'list'"
    assert (v1["type"], v1["message"], v2["message"], v2["rule"]["id"]) == ("R:VERB:SVA", message, message,
                                                                          "EDITSPEC_R_VERB_SVA")
    assert v1["confidence"] == v2["confidence"] > 0
