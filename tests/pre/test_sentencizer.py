"""Sentences without spaCy (editspec/pre/sentencizer.py): the spans spaCy's blank English pipeline
and its sentencizer give, on hard cases and on random text (W&I, FCE, JFLEG, CoNLL whole:
``python -m eval.check_sentences``), with spaCy's own rules exported once into the cache."""

import json

import pytest
import spacy
from hypothesis import given, settings, strategies as st

from editspec.pre import sentencizer

HARD = ["He go home.  She say \"Hi!\" to me.Then   we eat 3.5 apple. ", "Mr. Smith lives in the U.S. since 2003!",
        "I live in St. Louis, e.g. near the river... It's fun!!! (Really?) yes.", "wait... what?! OK :) bye :-(",
        "Visit https://example.com/a.b?c=d. Then e-mail me at a.b@c.org.", "“Stop!” and left. ‘No.’ Yes. »Ja.« Fine",
        "It's 5 p.m. now. U.K. and N.Y.C. are far.", "don't can't won't y'all 'cause o'clock it's he's.",
        "a.b.c. d.e.f.G h. I", "\tTabs\there.\nNew line. \xa0 Spaces  .  .", "Hello.  !", "End.\u3002Next。Done",
        "x" * 50 + "." + "y" * 50, "", " ", "...", "(.)", "'s 's 'S", "1.2.3. 4.", "Ps. I love you. P.S. me too",
        "Well -- then . This ; that : end .", "café. Éclair! ñ? ü", "😀. 👍 ok. 中文。字"]


@pytest.fixture(scope="module")
def spacy_nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


@pytest.fixture(scope="module")
def ours():
    return sentencizer.load()


def spans(nlp, text):
    return [(s.start_char, s.end_char) for s in nlp(text).sents]


def test_hard_cases(spacy_nlp, ours):
    for text in HARD:
        assert ours.sentences(text) == spans(spacy_nlp, text), text
        assert [t for _, t in ours.tokens(text)] == [t.text for t in spacy_nlp.tokenizer(text)], text


PIECES = st.sampled_from(["Mr.", "U.S.", "e.g.", "etc.", "3.5", "...", "!", "?", ".", ",", '"', "'", "(", ")", "“",
                          "”", ":)", "’s", "'s", "n't", "-", "--", "http://a.b/c", "a@b.co", "Hi", "the", "I", "i",
                          "p.m.", "St.", "No.", "1.", "a.", "。", "？", "😀", "\t", "\n", " ", "  ", "\xa0", "can't"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=3)), max_size=14).map("".join))
def test_random_text(spacy_nlp, ours, text):
    assert [t for _, t in ours.tokens(text)] == [t.text for t in spacy_nlp.tokenizer(text)]
    assert ours.sentences(text) == spans(spacy_nlp, text)


def test_rules_exported_once_and_exported_again_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITSPEC_CACHE", str(tmp_path))
    first = sentencizer.load()
    [kept] = (tmp_path / "sentencizer").iterdir()
    assert json.loads(kept.read_text())["spacy"] == spacy.__version__ and len(first.specials) > 1000
    monkeypatch.setattr(sentencizer, "export", lambda: pytest.fail("exported again"))
    assert sentencizer.load().specials == first.specials  # read back
    monkeypatch.undo()
    monkeypatch.setenv("EDITSPEC_CACHE", str(tmp_path))
    kept.write_text("{damaged")
    assert sentencizer.load().specials == first.specials and json.loads(kept.read_text())["rules"]


def test_whitespace_is_the_tokenizers():
    """The runs are split on re's \\s, which is str.isspace (spaCy's test) for every code point."""
    import re
    import sys

    assert all((re.fullmatch(r"\s", chr(c)) is not None) == chr(c).isspace() for c in range(sys.maxunicode + 1))
