"""The tokenizer read without transformers (editspec/tokenization/fast.py) gives transformers'
tokenizer's ids, special tokens, vocabulary and text, on the test tokenizer and the shipped one."""

from hypothesis import given, settings, strategies as st

from editspec.modeling.loading import DEFAULT_MODEL
from editspec.tokenization import fast
from editspec.tokenization.tokens import encode, load_tokenizer, marker_ids, render_ids, unreadable

TEXTS = ["Hello  wörld 😀 don't\tgo, medium-sized<extra_id_3></s>.", " ﬁne  x ", "中文 字", "", "  ", "a </s> b <pad>",
         "I recieve your leter yesterday , it was good ."]


def assert_same(ours, theirs, texts):
    assert len(ours) == len(theirs) and ours.get_vocab() == theirs.get_vocab()
    assert (ours.eos_token_id, ours.pad_token_id, ours.unk_token_id) == \
        (theirs.eos_token_id, theirs.pad_token_id, theirs.unk_token_id)
    assert sorted(ours.all_special_ids) == sorted(theirs.all_special_ids)
    assert marker_ids(ours) == marker_ids(theirs)
    for a, b in zip(encode(ours, texts), encode(theirs, texts)):
        assert a == b and unreadable(ours, a) == unreadable(theirs, b)
        assert render_ids(ours, a, a.ids[::-1]) == render_ids(theirs, b, b.ids[::-1])
        ids = a.ids + [ours.eos_token_id, ours.pad_token_id] + marker_ids(ours)[:2]
        assert ours.convert_ids_to_tokens(ids) == theirs.convert_ids_to_tokens(ids)
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == theirs.decode(ids, skip_special_tokens=skip)


def test_test_tokenizer(tokenizer_dir, tokenizer):
    assert fast.readable(tokenizer_dir)
    assert_same(fast.load(tokenizer_dir), tokenizer, TEXTS)


def test_shipped_tokenizer_is_read_once():
    ours = fast.load(DEFAULT_MODEL / "t5")
    assert fast.load(DEFAULT_MODEL / "edit5") is ours  # the bundle's two copies: one tokenizer
    assert_same(ours, load_tokenizer(DEFAULT_MODEL / "t5"), TEXTS)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_same_ids_on_any_text(tokenizer_dir, tokenizer, text):
    assert encode(fast.load(tokenizer_dir), [text]) == encode(tokenizer, [text])
