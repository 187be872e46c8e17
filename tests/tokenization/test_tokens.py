"""Character fidelity of encode/render (editspec/tokens.py)."""

from hypothesis import given, settings, strategies as st

from editspec.tokenization.edits import convert, realize_aligned
from editspec.tokenization.tokens import encode, marker_ids, render, render_ids


def test_markers_and_specials(tokenizer):
    markers = marker_ids(tokenizer)
    assert len(markers) == 64 and len(set(markers)) == 64
    assert tokenizer.eos_token_id not in markers


def test_unknown_characters_and_spacing_survive(tokenizer):
    for text in ["Hello  wörld 😀 don't\tgo, medium-sized<extra_id_3></s>.", " ﬁne  x ", "中文 字", "", "  "]:
        enc = encode(tokenizer, [text])[0]
        assert render_ids(tokenizer, enc, enc.ids) == text
    enc = encode(tokenizer, ["a </s> b"])[0]
    assert tokenizer.eos_token_id not in enc.ids  # literal control tokens are plain text


def test_edited_text_keeps_untouched_characters(tokenizer):
    src = encode(tokenizer, ["He go to school 😀 yesterday."])[0]
    tgt = encode(tokenizer, ["He went to school 😀 yesterday."])[0]
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    edits = convert(src.ids, tgt.ids, markers, eos)
    assert render(tokenizer, src, realize_aligned(src.ids, edits, markers, eos)) == "He went to school 😀 yesterday."


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_identity_render_is_byte_identical(tokenizer, text):
    enc = encode(tokenizer, [text])[0]
    assert render_ids(tokenizer, enc, enc.ids) == text
