"""Round trip and minimality of the EdiT5 edit representation (editspec/edits.py)."""

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st
from rapidfuzz.distance import Indel

from editspec.tokenization.edits import DELETE, KEEP, Edits, TooFewMarkers, convert, insertion_spans, realize

EOS = 1
MARKERS = list(range(1000, 1064))  # 64 markers
W = {w: i + 10 for i, w in enumerate(
    "he go went to school yesterday . the a cat sat on mat I like dogs x y z".split())}


def ids(text: str) -> list[int]:
    return [W[w] for w in text.split()]


def roundtrip(s: list[int], t: list[int]) -> Edits:
    e = convert(s, t, MARKERS, EOS)
    assert realize(s, e, MARKERS, EOS) == t
    assert len(e.tags) == len(s)
    assert sorted(e.order) == [i for i, tag in enumerate(e.tags) if tag == KEEP]
    return e


def test_docstring_example():
    s, t = ids("he go to school yesterday ."), ids("yesterday he went to the school .")
    e = roundtrip(s, t)
    assert e.tags == [KEEP, DELETE, KEEP, KEEP, KEEP, KEEP]
    assert e.order == [4, 0, 2, 3, 5]
    assert e.insertions == [MARKERS[2], W["went"], MARKERS[3], W["the"], EOS]
    assert e.reordered


def test_insert_at_start_and_end():
    e = roundtrip(ids("cat sat"), ids("the cat sat ."))
    assert e.insertions == [MARKERS[0], W["the"], MARKERS[2], W["."], EOS]
    assert e.order == [0, 1] and not e.reordered


def test_delete_everything():
    e = roundtrip(ids("x y z"), ids("the cat"))
    assert e.tags == [DELETE] * 3 and e.order == []
    assert e.insertions == [MARKERS[0], W["the"], W["cat"], EOS]


def test_empty_source_and_target():
    assert roundtrip([], ids("a cat")).insertions == [MARKERS[0], W["a"], W["cat"], EOS]
    e = roundtrip(ids("a cat"), [])
    assert e.tags == [DELETE, DELETE] and e.insertions == [EOS]
    assert roundtrip([], []).insertions == [EOS]


def test_identity_is_all_keep_no_insertions():
    s = ids("I like the cat .")
    e = roundtrip(s, s)
    assert e.tags == [KEEP] * 5 and e.order == list(range(5)) and e.insertions == [EOS]


def test_swap_keeps_both_tokens():
    e = roundtrip(ids("x y"), ids("y x"))
    assert e.tags == [KEEP, KEEP] and e.insertions == [EOS] and e.reordered


def test_repeated_tokens():
    e = roundtrip(ids("the the cat the"), ids("the cat the the"))
    assert e.insertions == [EOS]  # all four kept: one "the" moves
    e = roundtrip(ids("the the cat"), ids("the cat"))
    assert e.tags.count(DELETE) == 1


def test_too_few_markers_is_explicit():
    s = ids("x y z")
    with pytest.raises(TooFewMarkers):
        convert(s, s + ids("."), MARKERS[:3], EOS)
    convert(s, s + ids("."), MARKERS[:4], EOS)  # position 3 needs the 4th marker


def test_marker_in_inserted_text_is_refused():
    with pytest.raises(ValueError):
        convert(ids("x"), ids("x") + [MARKERS[5]], MARKERS, EOS)


def test_lenient_realize_of_bad_predictions():
    s = ids("cat sat")
    # tokens before the first marker are dropped, out-of-range marker appends, repeats concatenate
    bad = Edits(tags=[KEEP, KEEP], order=[0, 1],
                insertions=[W["x"], MARKERS[9], W["."], MARKERS[0], W["the"], MARKERS[0], W["a"], EOS, W["y"]])
    assert realize(s, bad, MARKERS, EOS) == ids("the a cat sat .")
    assert insertion_spans(bad.insertions, MARKERS, EOS) == {9: [W["."]], 0: [W["the"], W["a"]]}


tokens = st.lists(st.integers(min_value=2, max_value=9), max_size=30)


@settings(max_examples=500, deadline=None)
@given(tokens, tokens)
def test_roundtrip_random(s, t):
    e = roundtrip(s, t)
    # minimal: kept tokens = multiset intersection, the most any edit can keep
    assert len(e.order) == sum((Counter(s) & Counter(t)).values())
    # reorder only when it saves insertions: a monotone alignment keeps strictly fewer
    if e.reordered:
        lcs = (len(s) + len(t) - Indel.distance(s, t)) // 2
        assert lcs < len(e.order)


@settings(max_examples=200, deadline=None)
@given(tokens)
def test_inserted_tokens_plus_kept_is_target_length(t):
    s = t[::2]
    e = roundtrip(s, t)
    assert len(e.insertions) - 1 - len(insertion_spans(e.insertions, MARKERS, EOS)) == len(t) - len(e.order)
