"""editspec.spelling: the docstring's example and what is never touched (the Corrector's use:
test_corrector.py)."""

import pytest
from hypothesis import given, settings, strategies as st

from editspec.spelling import load_speller


@pytest.fixture(scope="module")
def speller():
    return load_speller()


def test_docstring_example(speller):
    assert speller.respell("I recieve your leter becouse of the Tokyo meeting.") == \
        "I receive your letter because of the Tokyo meeting."


def test_context_picks_among_equally_close_words(speller):
    # "leter" is one edit from "later" and "letter": the word before decides
    assert speller.respell("your leter") == "your letter"
    assert speller.respell("see you leter") == "see you later"


def test_only_unknown_lower_case_words_change(speller):
    kept = ["Recieve the Leter.", "the self-esteam", "3rd-grade", "recieve's", "cat", "ok",
            "Their information is useful.", "a wrod2 here", "xqzvkj", ""]
    assert [speller.respell(t) for t in kept] == kept[:5] + kept[5:]  # names, hyphens, digits, apostrophes
    # every other character is copied as written
    assert speller.respell("😀 recieve\tthe  leter \r\n") == "😀 receive\tthe  letter \r\n"
    assert speller.respell("usefull, becouse") == "useful, because"


def test_pronoun_i_is_capitalised(speller):
    assert speller.respell("i think i'm late, so do i.") == "I think I'm late, so do I."
    assert speller.respell("what i’ve seen: i") == "what I’ve seen: I"
    kept = ["i.e. this", "(i) first", "i-th", "x_i", "hi", "ii", "Pi", "'i"]
    assert [speller.respell(t) for t in kept] == kept


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcdefghij Kz.,'-\t😀é"), max_size=40))
def test_respell_keeps_everything_but_words(speller, text):
    out = speller.respell(text)
    strip = lambda s: "".join(c for c in s if not ("a" <= c <= "z" or c == "I"))  # noqa: E731
    assert strip(out) == strip(text)  # only lower-case letters change ("i" to "I"), nothing else moves


def test_settings_each_do_what_they_say(speller):
    assert speller.respell("see you tommorow, the job wich I saw") == "see you tomorrow, the job which I saw"
    assert speller.respell("my mom's favorite color") == "my mom's favorite color"  # American, not wrong
    letters, prior, common = speller.distance2_letters, speller.slip_prior, speller.common_zipf
    try:
        speller.common_zipf = 0  # symspellpy's dictionary alone lacks "favorite"
        assert speller.respell("my favorite color") == "my favourite color"
        speller.distance2_letters = 99  # one edit only: "tommorow" is two from "tomorrow"
        assert speller.respell("see you tommorow") == "see you tommorow"
        speller.slip_prior = 1.0  # bigram counts alone prefer "job with"
        assert speller.respell("the job wich I saw") == "the job with I saw"
    finally:
        speller.distance2_letters, speller.slip_prior, speller.common_zipf = letters, prior, common
