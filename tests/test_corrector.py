"""Corrector API and `editspec correct` (editspec/segment.py, editspec/corrector.py).

Tiny random models are built here and saved with the conftest tokenizer into a tmp bundle.
An "identity" EdiT5 has weights set so that it keeps every token in order and inserts nothing
(tag bias: keep; pointer query zero: all successors tie, the walk takes source order; the
insertion decoder's only path to the lm head is the start token's embedding, which the lm head
maps to EOS): through the real generate_edits, realize and render, its output must be the input
byte for byte.
"""

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from editspec import cli, files
from editspec.modeling import loading, precision
from editspec.pre import segment
from editspec.cli.correct import format_diff
from editspec.config import CorrectorConfig
from editspec.decoding import drafters
from editspec.corrector import Corrector
from editspec.modeling.loading import resolve_models
from editspec.post.diff import Correction, Edit, apply, diff, edit_size
from editspec.post.checks import guard
from editspec.errors import EditspecError
from editspec.tokenization.tokens import encode
from tests.helpers import save, tiny_bundle, tiny_edit5, tiny_t5

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "editspec" / "samples" / "learner.txt"


@pytest.fixture(scope="module")
def models(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer)


@pytest.fixture(scope="module")
def identity(models):
    return Corrector.from_pretrained(models / "identity", device="cpu")


@pytest.fixture(scope="module")
def speculative(models):
    return Corrector.from_pretrained(models / "bundle", device="cpu", batch_size=4)


def patch_decode(monkeypatch, c, texts):
    """The corrector's decode replaced by ``texts(encoded, ...)``: each unit's output text, no hypotheses."""
    monkeypatch.setattr(c, "decode", lambda *a, **k: [(t, ()) for t in texts(*a, **k)])


LINES = ["  She go to school every days.  I like it.", "", "\t😀 中文 He go home.\tThen   we eat 3.5 apple. ",
         "word " * 60, "ﬁne</s><extra_id_3>  x", "no newline at end", "ﷺ" * 30 + " x"]


# -- segment --


def test_segment_docstring_example():
    line = '  He go home.  She say "Hi!" to me.Then   we eat 3.5 apple. '
    spans = segment.segment(line)
    assert [line[a:b] for a, b in spans] == ["He go home.", 'She say "Hi!" to me.', "Then   we eat 3.5 apple."]
    assert segment.rejoin(line, spans, ["He goes home.", 'She says "Hi!" to me.', "Then we eat 3.5 apples."]) \
        == '  He goes home.  She says "Hi!" to me.Then we eat 3.5 apples. '


def test_sentences_keep_abbreviations_decimals_quotes():
    def split(line):
        return [line[a:b] for a, b in segment.sentences(line)]

    assert split("Mr. Smith paid $3.50 for it, e.g. on Monday. U.S. citizens vote.") == \
        ["Mr. Smith paid $3.50 for it, e.g. on Monday.", "U.S. citizens vote."]
    assert split('He said "Stop!" and left. It was No. 1 in the list.') == \
        ['He said "Stop!" and left.', "It was No. 1 in the list."]
    assert split("i went home. i was tired.") == ["i went home.", "i was tired."]
    assert split("first line\nsecond line") == ["first line", "second line"]
    assert split(" \t ") == []


def test_chunks_cover_long_sentences_without_loss(tokenizer):
    text = ", ".join(["the cat played football with friends"] * 12) + " " + "x" * 300
    spans = segment.chunks(tokenizer, text, 20)  # a clause is 13 tokens here
    assert len(spans) > 5
    for (a, b), (c, _) in zip(spans, spans[1:]):
        assert b <= c and not text[b:c].strip()  # only whitespace between chunks
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(len(encode(tokenizer, [text[a:b]])[0].ids) <= 20 for a, b in spans)
    # a cut prefers clause punctuation: the first chunk ends at a comma
    assert text[: spans[0][1]].endswith(",")


def test_chunks_cut_between_characters_that_each_expand(tokenizer):
    """Each "ﬀ" normalises to two tokens: no cut fits inside one, so the cut falls between them
    (found by test_segment_property; the whole line was one over-long span before)."""
    spans = segment.segment("ﬀﬀ", [(tokenizer, 3)])
    assert spans == [(0, 1), (1, 2)]
    assert all(len(encode(tokenizer, ["ﬀﬀ"[a:b]])[0].ids) <= 3 for a, b in spans)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300), st.integers(2, 20))
def test_segment_property(tokenizer, line, max_tokens):
    spans = segment.segment(line, [(tokenizer, max_tokens)])
    cursor = 0
    for a, b in spans:
        assert cursor <= a < b and not line[cursor:a].strip()
        assert line[a:b] == line[a:b].strip()
        assert len(encode(tokenizer, [line[a:b]])[0].ids) <= max_tokens or b - a == 1  # see chunks
        cursor = b
    assert not line[cursor:].strip()
    assert segment.rejoin(line, spans, [line[a:b] for a, b in spans]) == line


# -- Corrector --


def test_diff_edits_are_source_offsets():
    src, tgt = "He go to school. 😀", "He goes to the school. 😀"
    edits = diff(src, tgt)
    assert edits[0] == Edit(3, 5, "go", "goes")
    assert [src[e.start:e.end] for e in edits] == [e.original for e in edits]
    assert apply(src, edits) == tgt
    assert diff(src, src) == []


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_diff_applies(src, tgt):
    assert apply(src, diff(src, tgt)) == tgt


def test_guard_keeps_a_sentence_whose_edit_is_too_long():
    src = "I think that if you like a subject, you have to study hard."
    fixed = "I think that if you like a subject, you will have to study hard."
    loop = "I think that if you like a subject, you like a subject, you like a subject, you like a"
    assert [edit_size(e) for e in diff(src, fixed)] == [1]
    assert edit_size(Edit(0, 5, "a , b", "")) == 3  # punctuation marks count, spaces do not
    guarded = lambda output, limit: guard(Correction.of(src, output), limit).output  # noqa: E731
    assert guarded(fixed, 4) == fixed and guarded(src, 4) == src
    assert guarded(loop, 4) == src  # "hard." -> "you like a subject, you like a": 8 words
    assert guarded(loop, 0) == loop  # 0: no guard
    skipped = "I think that you have to study hard."  # "if you like a subject ," dropped: 6
    assert guarded(skipped, 6) == skipped and guarded(skipped, 5) == src
    assert guard(Correction.of(src, loop), 4) == Correction(src, src, [])  # none of its edits left


def test_corrector_guards_each_unit(models, monkeypatch, tmp_path, tokenizer):
    """Applied per sentence unit, counted, off with 0; the default is the output model's config."""
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=2)
    # (words the tiny tokenizer can read: an edit that writes an unreadable character is undone first)
    line = "She go home. I like a book."
    outputs = {"She go home.": "She goes home.", "I like a book.": "I like a book I like a book."}
    patch_decode(monkeypatch, c, lambda encoded, *_: [outputs[e.text] for e in encoded])
    assert c.correct([line]) == ["She goes home. I like a book."] and c.guarded == 1
    c.config = c.config.replace(max_edit_words=0)
    assert c.correct([line]) == ["She goes home. I like a book I like a book."] and c.guarded == 1

    assert Corrector.from_pretrained(models / "bundle", device="cpu").config.max_edit_words == 0
    save(tiny_t5(tokenizer), tokenizer, tmp_path / "t5")
    CorrectorConfig(max_edit_words=3).save_pretrained(tmp_path / "t5")  # what eval/tune_guard.py --write stores
    assert Corrector.from_pretrained(edit5=models / "bundle" / "edit5", t5=tmp_path / "t5").config.max_edit_words == 3
    assert Corrector.from_pretrained(tmp_path / "t5").config.max_edit_words == 3
    assert Corrector.from_pretrained(tmp_path / "t5", max_edit_words=0).config.max_edit_words == 0
    with pytest.raises(EditspecError, match="max edit words"):
        Corrector.from_pretrained(tmp_path / "t5", max_edit_words=-1)


def test_a_round_reads_the_units_every_model_can_read_longest_first(models):
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", prefix="fix: ")
    units = ["He go.", "She like the dogs.", "ﷺ" * 30]  # the last: NFKC makes it 120 words
    encoded, order = c.tokenize(units)
    assert [e.text for e in encoded] == ["fix: " + u for u in units] and order == [1, 0]


def test_each_text_is_tokenized_once_per_call(models, monkeypatch):
    """Segmenting's encodings serve the first round; a later round reads only the texts the one
    before wrote (both models share one tokenizer: one encoding serves both limits)."""
    from editspec.tokenization.tokens import Codec

    seen, real = [], Codec.encode
    monkeypatch.setattr(Codec, "encode", lambda self, texts: seen.extend(texts) or real(self, texts))
    c = Corrector.from_pretrained(models / "bundle", device="cpu", rounds=3)
    c.correct(LINES + ["He go home. He go home."])
    assert seen and len(seen) == len(set(seen))


def test_the_checks_after_the_model_undo_edits_in_turn(models):
    """``check``: an edit of what the model cannot read goes, then the guard, then (spelling on)
    a made-up word; each count goes up where its step undid something."""
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=2, spelling=True)
    [enc] = encode(c.tokenizer, ["Sales of beef 😀 have shown it."])
    check = lambda output: c.check(Correction.of(enc.text, output), enc).output  # noqa: E731
    assert check("Sales of beef have shown it.") == enc.text  # the emoji: unreadable, kept
    assert check("Sales of beef 😀 has shown it.") == "Sales of beef 😀 has shown it."
    assert (c.guarded, c.unreal) == (0, 0)
    assert check("Sales of beef 😀 has shown it it it it.") == enc.text and c.guarded == 1  # 3 words in one edit
    assert check("Sales of beingef 😀 has shown it.") == "Sales of beef 😀 has shown it." and c.unreal == 1


def test_corrector_config_round_trips_and_rejects_bad_files(tmp_path):
    config = CorrectorConfig(mode="t5", max_edit_words=2, rounds=3, spelling=True, rescore=True, prefix="grammar: ")
    config.save_pretrained(tmp_path)
    assert CorrectorConfig.from_pretrained(tmp_path) == config
    assert CorrectorConfig.from_pretrained(tmp_path / "nothing-here") == CorrectorConfig()
    assert config.replace(rounds=None, spelling=False) == CorrectorConfig("t5", 2, 3, False, True, "grammar: ")
    for text, message in (("[1, 2]", "JSON object"), ("{not json", "cannot read"), ('{"rounds": "2"}', "rounds must be int"),
                          ('{"colour": 1}', "unknown setting"), ('{"mode": "bogus"}', "unknown mode"),
                          ('{"spelling": 1}', "spelling must be bool"), ('{"rounds": 0}', "rounds must be 1")):
        (tmp_path / "corrector_config.json").write_text(text)
        with pytest.raises(EditspecError, match=message):
            CorrectorConfig.from_pretrained(tmp_path)


def test_prefix_is_read_by_the_t5_and_not_written(models, monkeypatch):
    """A prefix goes before every T5 input (the model sees it), and the output is the unit's
    correction without it; in edit5 mode there is no T5 to read it."""
    seen = []
    for mode, expected in (("t5", ["grammar: She go home.", "grammar: I like it."]), ("edit5", ["She go home.", "I like it."])):
        c = Corrector.from_pretrained(models / "bundle", mode=mode, device="cpu", prefix="grammar: ", max_length=64)
        assert c.config.prefix == "grammar: "
        patch_decode(monkeypatch, c, lambda encoded, *_: seen.extend(e.text for e in encoded) or
                            [e.text.removeprefix("grammar: ").replace("go", "goes") for e in encoded])
        assert c.correct(["She go home. I like it."]) == ["She goes home. I like it."]
        assert sorted(seen) == sorted(expected)
        seen.clear()


def test_rounds_correct_again_only_what_the_last_round_changed(models, monkeypatch, tmp_path, tokenizer):
    """Each round re-reads only the units the round before changed, the guard applies in every
    round, and the default is the output model's config."""
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=2, rounds=4)
    line = "He go school. I like it. Yes."
    outputs = {"He go school.": "He goes school.", "He goes school.": "He goes to school.",
               "He goes to school.": "He goes to school.", "I like it.": "I like it it it it.",
               "Yes.": "Yes."}
    seen: list[list[str]] = []

    def correct_batch(encoded, *_):
        seen.append(sorted(e.text for e in encoded))
        return [outputs[e.text] for e in encoded]

    patch_decode(monkeypatch, c, correct_batch)
    rounds = [[u.output for u in r] for r in c.correct_rounds(["He go school.", "I like it.", "Yes."])]
    assert [r[0] for r in rounds] == ["He goes school.", "He goes to school."] + ["He goes to school."] * 2
    assert all(r[1:] == ["I like it.", "Yes."] for r in rounds) and c.guarded == 1  # guarded once
    assert seen == [["He go school.", "I like it.", "Yes."], ["He goes school."], ["He goes to school."]]
    assert c.correct([line]) == ["He goes to school. I like it. Yes."]
    c.config = c.config.replace(rounds=1)
    assert c.correct([line]) == ["He goes school. I like it. Yes."]

    assert Corrector.from_pretrained(models / "bundle", device="cpu").config.rounds == 1
    save(tiny_t5(tokenizer), tokenizer, tmp_path / "t5")
    CorrectorConfig(rounds=2).save_pretrained(tmp_path / "t5")  # what eval/tune_rounds.py --write stores
    assert Corrector.from_pretrained(edit5=models / "bundle" / "edit5", t5=tmp_path / "t5").config.rounds == 2
    assert Corrector.from_pretrained(tmp_path / "t5", rounds=3).config.rounds == 3
    with pytest.raises(EditspecError, match="rounds"):
        Corrector.from_pretrained(tmp_path / "t5", rounds=0)


def test_corrector_respells_before_the_model_and_guards_against_the_respelled_unit(models, monkeypatch):
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", max_edit_words=1, spelling=True)
    seen = []

    def correct_batch(encoded, *_):
        seen.extend(e.text for e in encoded)
        return [e.text.replace("I has", "I have to have") for e in encoded]  # a 3-word edit: guarded

    patch_decode(monkeypatch, c, correct_batch)
    assert c.correct(["I has recieved your leter. Thanks!"]) == ["I has received your letter. Thanks!"]
    assert " ".join(seen) == "I has received your letter. Thanks!" and c.guarded == 1  # units, maybe chunks
    c.config = c.config.replace(spelling=False)
    assert c.correct(["your leter"]) == ["your leter"]
    assert Corrector.from_pretrained(models / "bundle", device="cpu").config.spelling is False


def test_corrector_capitalises_a_line_s_first_word_but_not_a_chunked_sentence_s_rest(models, monkeypatch):
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", spelling=True, max_length=12)
    seen = []
    patch_decode(monkeypatch, c, lambda encoded, *_: seen.extend(e.text for e in encoded) or
                        [e.text for e in encoded])
    line = "yesterday i went to the old market near the river and there we bought some bread"
    assert c.correct([line, line]) == ["Yesterday I went" + line[len("yesterday i went"):]] * 2
    assert len(seen) > 2 and sum(u[0].isupper() for u in seen) == 2  # chunks: the later ones kept as written
    # a line break inside a text begins a line too
    assert c.correct(["Dear sir,\nhow are you? i am fine."]) == ["Dear sir,\nHow are you? I am fine."]
    assert [p.starts_line for p in segment.places(["a. b\nc d"], [[(0, 2), (3, 4), (5, 8)]])] == [True, False, True]


def test_places_say_which_units_begin_and_end_a_line():
    assert segment.places(["a. b\nc d. e", "f"], [[(0, 2), (3, 4), (5, 9), (11, 12)], [(0, 1)]]) == \
        [(True, False), (False, True), (True, False), (False, True), (True, True)]


def test_corrector_ends_a_long_line_but_not_its_chunks(models, monkeypatch):
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", spelling=True, max_length=64)
    seen = []
    patch_decode(monkeypatch, c, lambda encoded, *_: seen.extend(e.text for e in encoded) or
                        [e.text for e in encoded])
    line = ("We went to the old market near the river, and there we bought some bread and cheese, "
            "then we walked back home along the river and ate all of it in the garden with friends")
    assert c.correct([line, line + "\nThanks"]) == [line + ".", line + ".\nThanks"]
    assert len(seen) > 4 and sum(u.endswith(".") for u in seen) == 2  # the last chunk of each only
    assert any(len(u.split()) >= 10 and not u.endswith(".") for u in seen)  # an earlier one long enough


def real_words(source: str, output: str, knows) -> str:
    from editspec.post.checks import real_words as check

    return check(Correction.of(source, output), knows).output


def test_real_words_undoes_the_edits_that_write_a_made_up_word():
    words = {"sales", "of", "beef", "have", "has", "shown", "he", "doesn't", "know", "a", "world", "wide",
             "thing", "life"}
    known = words.__contains__
    assert real_words("sales of beef have shown", "sales of beingef has shown", known) == "sales of beef has shown"
    assert real_words("Sales of Beef", "Sales of Beingef", known) == "Sales of Beef"  # in any case
    # a word of the source may be written anywhere
    assert real_words("Candide have shown", "Candide has shown", known) == "Candide has shown"
    assert real_words("have Candide", "have Candide Candide", known) == "have Candide Candide"
    # a word is judged whole ("doesn't", not "doesn" and "t"), else by its parts without a possessive
    assert real_words("He dont know", "He doesn't know", known) == "He doesn't know"
    assert real_words("He dont know", "He doesn't know", (words - {"doesn't"} | {"doesn", "t"}).__contains__) \
        == "He dont know"
    assert real_words("Candide's life", "Canide's life", known) == "Candide's life"
    assert real_words("Candide life", "Candide's life", known) == "Candide's life"
    assert real_words("a world-wide thing", "a worldold-wide thing", known) == "a world-wide thing"
    assert real_words("a world wide thing", "a world-wide thing", known) == "a world-wide thing"
    # an edit that only touches the made-up word goes too (a deletion that glues two words)
    assert real_words("he my ankle", "he mykle", known) == "he my ankle"
    assert real_words("he", "he", known) == "he"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["he", "is", "be", "ef", "n", "t", "'", "-", " ", ".", "zq"]), max_size=8),
       st.lists(st.sampled_from(["he", "is", "be", "ef", "n", "t", "'", "-", " ", ".", "zq"]), max_size=8))
def test_real_words_leaves_no_made_up_word_the_source_does_not_hold(source, output):
    from editspec.post.checks import made_up_words

    known = {"he", "is", "be", "isn't", "t", "n"}.__contains__
    source, output = "".join(source), "".join(output)
    checked = real_words(source, output, known)
    assert made_up_words(source, checked, known) == []
    # one pass over the edits would leave "zq-t": undoing "zq " left "zq-" to meet the source's "t"
    assert made_up_words("tzq-t", real_words("tzq-t", "zq- zq", known), known) == []


def test_corrector_undoes_made_up_words_with_the_spelling_step(models, monkeypatch):
    c = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", spelling=True)
    patch_decode(monkeypatch, c, lambda encoded, *_: [e.text.replace("beef", "beingef").replace(
        "have", "has") for e in encoded])
    assert c.correct(["Sales of beef have shown it."]) == ["Sales of beef has shown it."] and c.unreal == 1
    c.config = c.config.replace(spelling=False)  # the dictionary is the spelling step's: without it, the model's word stays
    assert c.correct(["Sales of beef have shown it."]) == ["Sales of beingef has shown it."]


def test_corrector_rescores_after_the_guard_with_the_output_model(models, monkeypatch, tmp_path, tokenizer):
    """Rescoring reads the guarded outputs of one round, scored by the model whose output is
    returned; the default is that model's config."""
    from editspec.decoding import rescoring

    outputs = {"He go to home.": "He goes to the home.", "I like it.": "I like it I like it I like it.", "Yes.": "Yes."}
    for mode, kind in (("t5", "t5"), ("speculative", "t5"), ("edit5", "edit5")):
        c = Corrector.from_pretrained(models / "bundle", mode=mode, device="cpu", max_edit_words=3, rescore=True)
        patch_decode(monkeypatch, c, lambda encoded, *_: [outputs[e.text] for e in encoded])
        scored = []

        def fake_scorer(model, tok, batch_size, *_):
            assert model is getattr(c.bundle, kind) and tok is c.tokenizer
            return lambda sources, targets: scored.extend(targets) or \
                [(0 if "goes" in t else -5) - ("the" in t) for t in targets]  # "the" goes

        monkeypatch.setattr(rescoring, f"{kind}_scorer", fake_scorer)  # the mode's, by its output model
        assert c.correct(["He go to home. I like it. Yes."]) == ["He goes to home. I like it. Yes."]
        assert scored == ["He goes to the home.", "He go to the home.", "He goes to home."]  # not the guarded unit
    assert Corrector.from_pretrained(models / "bundle", device="cpu").config.rescore is False
    save(tiny_t5(tokenizer), tokenizer, tmp_path / "t5")
    CorrectorConfig(rescore=True).save_pretrained(tmp_path / "t5")  # as the shipped bundle's says
    assert Corrector.from_pretrained(edit5=models / "bundle" / "edit5", t5=tmp_path / "t5").config.rescore is True
    assert Corrector.from_pretrained(tmp_path / "t5", rescore=False).config.rescore is False
    args = cli.build_parser().parse_args(["correct", "x.txt", "--no-rescore"])
    assert args.rescore is False


def test_identity_model_reproduces_every_line(identity):
    assert identity.mode == "edit5"
    assert identity.correct(LINES) == LINES
    assert all(c.edits == [] and c.output == c.input for c in identity.correct_detailed(LINES))
    assert identity.correct([]) == []
    with pytest.raises(TypeError):
        identity.correct("a string, not a list")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=120), max_size=4))
def test_identity_property(identity, lines):
    """Unicode of every kind, spacing, unknown characters: unedited text survives exactly."""
    assert identity.correct(lines) == lines


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=50), max_size=3))
def test_random_models_never_crash(speculative, lines):
    results = speculative.correct_detailed(lines)
    assert len(results) == len(lines)
    for line, c in zip(lines, results):
        assert c.input == line and apply(line, c.edits) == c.output
        if line.strip():  # whitespace around the text is never handed to a model
            lead, trail = line[: len(line) - len(line.lstrip())], line[len(line.rstrip()):]
            assert c.output.startswith(lead) and c.output.endswith(trail)
        else:
            assert c.output == line


def test_speculative_output_is_t5_output(models):
    """Speculative T5 output is T5's greedy output (both chunk to training.json's 16 tokens).
    float64: a random tiny model has near-tied logits that float32 summation order can flip."""
    t5_only = Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu", batch_size=4)
    spec = Corrector.from_pretrained(models / "bundle", device="cpu", batch_size=4)
    assert spec.mode == "speculative" and spec.bundle.shared_vocab
    assert spec.limits[0][1] == t5_only.limits[0][1] == 15
    for model in (t5_only.bundle.t5, spec.bundle.t5, spec.bundle.edit5):
        model.double()
    lines = LINES[:3] + Path(SAMPLE).read_text(encoding="utf-8").splitlines()[:1]
    assert spec.correct(lines) == t5_only.correct(lines)
    # rescored, both are still T5's output: the T5 rescores it in both modes
    raw = t5_only.correct(lines)
    spec.config = spec.config.replace(rescore=True)
    t5_only.config = t5_only.config.replace(rescore=True)
    assert spec.correct(lines) == t5_only.correct(lines) != raw


def test_speculative_with_a_t5_alone_drafts_the_source(models):
    """A T5 checkpoint of one's own, no EdiT5: speculative mode drafts with the source and the
    output's n-grams, and gives the T5's output."""
    spec = Corrector.from_pretrained(t5=models / "bundle" / "t5", mode="speculative", device="cpu", batch_size=4)
    assert spec.mode == "speculative" and spec.bundle.edit5 is None and not spec.bundle.shared_vocab
    assert isinstance(spec._drafter([]).drafters[0], drafters.Copy)
    t5_only = Corrector.from_pretrained(t5=models / "bundle" / "t5", mode="t5", device="cpu", batch_size=4)
    for model in (spec.bundle.t5, t5_only.bundle.t5):
        model.double()
    assert spec.correct(LINES) == t5_only.correct(LINES)


def test_edit5_and_t5_modes_run(models):
    for mode in ("edit5", "t5"):
        c = Corrector.from_pretrained(models / "bundle", mode=mode, device="cpu", batch_size=64)
        out = c.correct(LINES)
        assert len(out) == len(LINES) and out[1] == ""
    # the random EdiT5 edits: a model whose output is ignored would fail this
    assert Corrector.from_pretrained(models / "bundle" / "edit5").correct(LINES[:1]) != LINES[:1]


def test_mismatched_tokenizers_are_retokenized(models, tmp_path, tokenizer):
    """An EdiT5 with another vocabulary drafts through text: the output is still T5's."""
    from tests.helpers import sentences
    from editspec.tokenization.tokens import train_tokenizer

    other = train_tokenizer(sentences(500, seed=3), tmp_path / "tok", vocab_size=200, extra_ids=64)
    assert other.get_vocab() != tokenizer.get_vocab()
    save(tiny_edit5(other), other, tmp_path / "edit5")
    spec = Corrector.from_pretrained(edit5=tmp_path / "edit5", t5=models / "bundle" / "t5", device="cpu")
    assert spec.mode == "speculative" and not spec.bundle.shared_vocab
    t5_only = Corrector.from_pretrained(t5=models / "bundle" / "t5", device="cpu")
    short = ["She go to school.", "I like it 😀.", ""]
    assert spec.correct(short) == t5_only.correct(short)


def test_model_resolution_and_errors(models, tmp_path, monkeypatch):
    bundle = models / "bundle"
    assert resolve_models(bundle) == (str(bundle / "edit5"), str(bundle / "t5"))
    assert resolve_models(bundle / "t5") == (None, str(bundle / "t5"))
    assert Corrector.from_pretrained(bundle / "t5").mode == "t5"

    def fails(pattern, **kwargs):
        with pytest.raises(EditspecError, match=pattern):
            Corrector.from_pretrained(**kwargs)

    fails("does not exist", model=tmp_path / "missing")
    fails("neither a model directory", model=tmp_path)
    fails("needs a T5", model=bundle / "edit5", mode="t5")
    fails("unknown mode", model=bundle, mode="beam")
    fails("is a T5 model, not an EdiT5", edit5=bundle / "t5")
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text('{"model_type": "bert"}')
    fails("'bert' model", model=bert)
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in (bundle / "edit5").iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "model.safetensors").write_bytes(b"not weights")
    fails("cannot load an EdiT5 model", model=broken)
    (broken / "config.json").write_text("{not json")
    fails("cannot read", model=broken)
    monkeypatch.setattr(loading, "DEFAULT_MODEL", tmp_path / "default")
    fails("no model installed")


# -- the command --

INPUT = "She go to school.  I like it.\r\n\r\n\t He have 3.5 apple 😀.  \n  \nlast line, no newline"


def run_cli(capsysbinary, *args) -> tuple[int, bytes, str]:
    rc = cli.main(["correct", *map(str, args)])
    out, err = capsysbinary.readouterr()
    return rc, out, err.decode()


def test_cli_text_is_byte_identical_with_identity_model(models, tmp_path, capsysbinary):
    src = tmp_path / "in.txt"
    src.write_bytes(INPUT.encode())
    rc, out, err = run_cli(capsysbinary, src, "--model", models / "identity", "--no-progress")
    assert rc == 0 and out == INPUT.encode(), err
    # a byte order mark is kept out of the model and written back
    src.write_bytes(b"\xef\xbb\xbf" + INPUT.encode())
    assert run_cli(capsysbinary, src, "--model", models / "identity")[1] == b"\xef\xbb\xbf" + INPUT.encode()


def test_cli_sample_is_the_packaged_file(models, capsysbinary):
    """``--sample`` corrects the sample inside the package (the wheel ships it: package-data), so
    the quick start runs from an installed wheel as from a clone."""
    import tomllib

    from editspec.cli.correct import SAMPLE as PACKAGED

    assert PACKAGED == SAMPLE and PACKAGED.is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["editspec"]
    assert "samples/*" in data
    rc, out, err = run_cli(capsysbinary, "--sample", "--model", models / "identity", "--no-progress")
    assert rc == 0 and out == SAMPLE.read_bytes(), err
    rc, out, err = run_cli(capsysbinary, "--sample", "--text", "x", "--model", models / "identity")
    assert rc == 2 and "not two of them" in err


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.one_of(st.sampled_from("\r\n\t  .,"), st.characters(codec="utf-8")), max_size=200))
def test_cli_property_identity_is_byte_identical(models, tmp_path_factory, capsysbinary, monkeypatch, text):
    """Any UTF-8 file (CR, CRLF, blank lines, no final newline, BOM) comes back byte for byte
    from a model that edits nothing, also when it is streamed in small blocks."""
    monkeypatch.setattr(files, "BLOCK_LINES", 3)
    src = tmp_path_factory.mktemp("prop") / "in.txt"
    src.write_bytes(text.encode())
    rc, out, err = run_cli(capsysbinary, src, "--model", models / "identity")
    assert rc == 0 and out == text.encode(), err


def test_cli_stdin_streams_in_blocks(models, monkeypatch, capsysbinary):
    monkeypatch.setattr(files, "BLOCK_LINES", 2)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(INPUT.encode())))
    calls = []
    real = Corrector.correct  # text output: the outputs alone (no confidences to show)
    monkeypatch.setattr(Corrector, "correct", lambda self, texts, **kw: calls.append(len(texts))
                        or real(self, texts, **kw))
    rc, out, _ = run_cli(capsysbinary, "-", "--model", models / "identity")
    assert rc == 0 and out == INPUT.encode() and calls == [2, 2, 1]


def test_cli_random_model_keeps_lines_and_endings(models, tmp_path, capsysbinary):
    src = tmp_path / "in.txt"
    src.write_bytes(INPUT.encode())
    rc, out, _ = run_cli(capsysbinary, src, "--model", models / "bundle", "--mode", "edit5")
    assert rc == 0
    got, want = out.decode().split("\n"), INPUT.split("\n")
    assert len(got) == len(want)
    assert [g.endswith("\r") for g in got] == [w.endswith("\r") for w in want]
    assert got[1] == "\r" and got[3] == "  "  # blank and whitespace-only lines untouched


def test_cli_jsonl_and_diff(models, tmp_path, capsysbinary):
    src = tmp_path / "in.txt"
    src.write_bytes(INPUT.encode())
    rc, out, _ = run_cli(capsysbinary, src, "--model", models / "bundle", "--mode", "edit5", "--format", "jsonl")
    rows = [json.loads(line) for line in out.decode().splitlines()]
    assert rc == 0 and [r["input"] for r in rows] == INPUT.replace("\r\n", "\n").split("\n")
    assert any(r["edits"] for r in rows)
    for r in rows:
        edits = [Edit(e["start"], e["end"], e["original"], e["correction"]) for e in r["edits"]]
        assert apply(r["input"], edits) == r["output"]
        assert all(e["type"] and e["message"] for e in r["edits"])  # ERRANT types (error_types)
        assert all(r["input"][e.start:e.end] == e.original for e in edits)

    rc, out, _ = run_cli(capsysbinary, src, "--model", models / "bundle", "--mode", "edit5", "--format", "diff",
                         "--color", "never")
    lines = out.decode().split("\n")
    assert rc == 0 and len(lines) == len(INPUT.split("\n")) and "[-" in out.decode()
    assert "\x1b[" not in out.decode()
    # undoing the markup gives the input back (no brackets in INPUT)
    unmarked = re.sub(r"\{\+.*?\+\}", "", re.sub(r"\[-(.*?)-\]", r"\1", out.decode(), flags=re.S), flags=re.S)
    assert unmarked == INPUT
    _, coloured, _ = run_cli(capsysbinary, src, "--model", models / "bundle", "--mode", "edit5", "--format", "diff",
                             "--color", "always")
    assert "\x1b[31m[-" in coloured.decode()
    c = Correction("He go home.", "He goes home.", [Edit(3, 5, "go", "goes")])
    assert format_diff(c) == "He [-go-]{+goes+} home."


def test_cli_output_file_is_atomic(models, tmp_path, monkeypatch, capsysbinary):
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_bytes(INPUT.encode())
    rc, out, _ = run_cli(capsysbinary, src, "-o", dst, "--model", models / "identity")
    assert rc == 0 and out == b"" and dst.read_bytes() == INPUT.encode()
    assert oct(dst.stat().st_mode & 0o777) != "0o600"  # not mkstemp's private mode

    # interrupted after the first block was written: the old file stays, no temp file is left
    dst.write_text("previous")
    monkeypatch.setattr(files, "BLOCK_LINES", 2)
    real, calls = Corrector.correct, []

    def interrupted(self, texts, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, texts, **kw)

    monkeypatch.setattr(Corrector, "correct", interrupted)
    rc, _, err = run_cli(capsysbinary, src, "-o", dst, "--model", models / "identity")
    assert rc == 130 and "interrupted" in err
    assert dst.read_text() == "previous" and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]
    dst.unlink()
    calls.clear()
    rc, _, _ = run_cli(capsysbinary, src, "-o", dst, "--model", models / "identity")
    assert rc == 130 and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_atomic_output_survives_sigterm(tmp_path):
    """A ``kill`` mid-write (training/distill.py's parts, the CLI's output) leaves the old file and
    no temporary file."""
    dst = tmp_path / "out.txt"
    dst.write_text("previous")
    script = ("import os, signal, sys\n"
              "from editspec.files import atomic_output\n"
              "with atomic_output(sys.argv[1]) as f:\n"
              "    f.write(b'half')\n"
              "    os.kill(os.getpid(), signal.SIGTERM)\n"
              "    f.write(b'never')\n")
    run = subprocess.run([sys.executable, "-c", script, str(dst)], capture_output=True, text=True)
    assert run.returncode != 0 and "KeyboardInterrupt" in run.stderr
    assert dst.read_text() == "previous" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_cli_errors_are_one_line(models, tmp_path, capsysbinary):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("fine\ncaf\xe9\n".encode("latin-1"))
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    cases = [
        ((tmp_path / "missing.txt", "--model", models / "identity"), "no such file"),
        ((tmp_path, "--model", models / "identity"), "holds no .parquet files"),  # a folder is a table input
        ((bad, "--model", models / "identity"), "line 2 is not UTF-8"),
        ((bad, "--model", empty_dir), "line 2 is not UTF-8"),  # the input is read before the model
        ((SAMPLE, "--model", empty_dir), "neither a model directory"),
        ((SAMPLE, "--model", models / "identity", "-o", tmp_path / "no" / "out.txt"), "does not exist"),
        ((SAMPLE, "--model", models / "identity", "--device", "nonsense"), "unknown device"),
        ((SAMPLE, "--model", models / "identity", "--max-edit-words", "-1"), "max edit words"),
        ((SAMPLE, "--model", models / "identity", "--rounds", "0"), "rounds must be"),
    ]
    for args, message in cases:
        rc, out, err = run_cli(capsysbinary, *args)
        assert rc == 2 and out == b"", args
        assert err.count("\n") == 1 and err.startswith("editspec: error:") and message in err, err
    # a usage error, before any input is read or model loaded (the model named here is none)
    for flag in ("--batch-size", "--threads"):
        rc, out, err = run_cli(capsysbinary, tmp_path / "missing.txt", "--model", empty_dir, flag, "0")
        assert rc == 2 and out == b"" and err.count("\n") == 1, err
        assert err.startswith(f"editspec correct: error: argument {flag}: must be an integer of 1 or more"), err


def test_cli_subprocess_no_traceback(models, tmp_path):
    """`python -m editspec` as a user runs it, with a model whose weights are damaged: one line
    on stderr, exit 2, no traceback (the failure surfaces deep inside transformers)."""
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in (models / "identity").iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "model.safetensors").write_bytes(b"\0" * 64)
    p = subprocess.run([sys.executable, "-m", "editspec", "correct", str(SAMPLE), "--model", str(broken)],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith("editspec: error: cannot load an EdiT5 model from"), p.stderr


def test_chunks_never_split_an_expanded_character(tokenizer):
    """'¼' normalises to several tokens, some without characters of their own: a cut must fall
    between characters (found by the property test above)."""
    for text in ["0¼", "0¼0¼0¼", "a ¼ b ﬁ ¼"]:
        for a, b in segment.chunks(tokenizer, text, 3):
            assert len(encode(tokenizer, [text[a:b]])[0].ids) <= 3 or b - a == 1


def test_shipped_models_correct_the_sample(capsysbinary):
    """The bundle in the package: both models load (bf16 on disk, computed in the default type,
    fp32), the default mode
    is speculative, every line of the sample comes out with its spacing, speculative output is
    T5's greedy output, and the T5 mostly copies: a model that lost its weights, or a T5 that
    babbles, would change far more than a tenth of the characters."""
    import difflib

    assert (loading.DEFAULT_MODEL / "t5").is_dir() and (loading.DEFAULT_MODEL / "edit5").is_dir()
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    spec = Corrector.from_pretrained(device="cpu")
    assert spec.mode == "speculative" and spec.bundle.t5.dtype == spec.bundle.edit5.dtype == precision.default_dtype(spec.device)
    assert spec.config == CorrectorConfig.from_pretrained(loading.DEFAULT_MODEL).replace(mode="speculative")  # tuned
    assert spec.config.max_edit_words > 0 and "max_edit_words" not in spec.bundle.t5.config.to_dict()
    assert spec.config.spelling and spec.config.rounds == 1  # on FCE dev: spelling +9.9 F0.5, a second round -0.2
    assert spec.config.rescore  # on FCE dev +0.28 F0.5 for the T5 (reports/models.md, "Rescoring")
    outputs = spec.correct(lines)
    # exact: the raw outputs (the guard could hide a difference by reverting both)
    raw = [Corrector.from_pretrained(mode=m, device="cpu", max_edit_words=0).correct(lines) for m in ("speculative", "t5")]
    assert raw[0] == raw[1]
    assert len(outputs) == len(lines) and outputs[2] == "" and "🙂" in outputs[5]
    # mostly copied, some edits (what the shipped pair changes in the sample: README, "How well it corrects")
    assert difflib.SequenceMatcher(None, "\n".join(lines), "\n".join(outputs)).ratio() > 0.9
    assert outputs != lines
    assert len(Corrector.from_pretrained(mode="edit5", device="cpu").correct(lines)) == len(lines)
    rc, out, _ = run_cli(capsysbinary, SAMPLE, "--no-progress")
    assert rc == 0 and out.decode().splitlines() == outputs


def test_bfloat16_speculative_is_the_t5_s_output_in_bfloat16(models, capsysbinary):
    """--dtype bfloat16 computes both models in bf16 (the shipped weights' own type); speculative
    output stays the T5's greedy output computed in the same type, on the shipped models too."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    raw = [Corrector.from_pretrained(mode=m, device="cpu", max_edit_words=0, dtype="bfloat16") for m in ("speculative", "t5")]
    assert raw[0].bundle.t5.dtype == raw[0].bundle.edit5.dtype == torch.bfloat16
    assert raw[0].correct(lines) == raw[1].correct(lines)
    tiny = Corrector.from_pretrained(models / "bundle", device="cpu", dtype=torch.bfloat16)
    assert tiny.correct(LINES) == Corrector.from_pretrained(models / "bundle", mode="t5", device="cpu",
                                                            dtype="bf16").correct(LINES)
    with pytest.raises(EditspecError, match="unknown dtype 'int8'"):
        Corrector.from_pretrained(models / "bundle", device="cpu", dtype="int8")
    rc, out, err = run_cli(capsysbinary, SAMPLE, "--no-progress", "--model", str(models / "bundle"), "--dtype", "int8")
    assert rc == 2 and "invalid choice: 'int8'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_rescoring_reads_the_decode_s_own_scores(monkeypatch, dtype):
    """The shipped models, rescoring on, bf16 and (issue 71) float32: an output's own score comes from
    the decode (its pair is never forced), only the variants are, and the text is what rescoring
    with every pair forced gives, in both T5 modes (in float32 the scores differ in the last bits,
    not the sample's outputs)."""
    from editspec.decoding import core

    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    forced: list[tuple] = []
    real = core.score

    def spy(model, sources, targets, slots, widths, given=None, decoders=None, states=None):
        forced.extend(zip(map(tuple, sources), map(tuple, targets)))
        return real(model, sources, targets, slots, widths, given, decoders, states)

    monkeypatch.setattr(core, "score", spy)
    outputs = {}
    for mode in ("speculative", "t5"):
        c = Corrector.from_pretrained(mode=mode, device="cpu", rescore=True, dtype=dtype)
        forced.clear()
        outputs[mode] = c.correct(lines)
        with_known = list(forced)
        c.reuse_scores = False  # every pair forced
        forced.clear()
        assert c.correct(lines) == outputs[mode]
        assert set(with_known) < set(forced) and len(forced) - len(with_known) >= 5  # the outputs' pairs
    assert outputs["speculative"] == outputs["t5"]


def test_from_pretrained_takes_one_options_object(models, tmp_path):
    """Issue 71: ``Corrector.from_pretrained`` takes a ``LoadOptions`` (keywords change fields of it;
    a misspelt one is an error, not ignored)."""
    from editspec.config import LoadOptions

    bundle = models / "bundle"
    options = LoadOptions(model=bundle, settings={"mode": "t5", "max_edit_words": 2}, device="cpu", batch_size=3)
    c = Corrector.from_pretrained(options=options)
    assert (c.mode, c.batch_size, c.config.max_edit_words) == ("t5", 3, 2)
    changed = Corrector.from_pretrained(options=options, batch_size=5, mode="edit5")
    assert (changed.mode, changed.batch_size) == ("edit5", 5)
    assert Corrector.from_pretrained(bundle / "t5", options).mode == "t5"  # ``model`` is the options' model
    lines = ["He have two brothers.", "I recieve your letter yesterday."]
    assert c.correct(lines) == Corrector.from_pretrained(bundle, mode="t5", device="cpu", batch_size=3,
                                                         max_edit_words=2).correct(lines)
    with pytest.raises(TypeError, match="unknown option"):
        Corrector.from_pretrained(bundle, batchsize=3)
    with pytest.raises(EditspecError, match="batch size"):
        LoadOptions(batch_size=0)


def test_from_pretrained_leaves_threads_to_the_caller(models, monkeypatch):
    """Issue 76: threads are chosen by the entry point (the CLI, the server, the profiler), not as a
    side effect of loading: a load keeps torch's threads as the caller set them."""
    from editspec import threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "default_threads", lambda: 3)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        Corrector.from_pretrained(models / "bundle", device="cpu")
        assert torch.get_num_threads() == 1 and "OMP_NUM_THREADS" not in os.environ
        threads.apply(2)  # the entry point's choice
        Corrector.from_pretrained(models / "bundle", device="cpu")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    with pytest.raises(TypeError, match="unknown option"):
        Corrector.from_pretrained(models / "bundle", threads=2)
