"""Character fidelity of encode/render (editspec/tokens.py)."""

import shutil

from hypothesis import given, settings, strategies as st

from editspec.tokenization.edits import convert, realize_aligned
from editspec.tokenization.tokens import (
    TOKENIZER_FILES, encode, load_tokenizer, marker_ids, render, render_ids, tokenizer_path,
)


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


def test_each_shipped_model_folder_holds_its_tokenizer():
    """Issue 71: each folder of the shipped bundle is a whole checkpoint (no bundle-level copy to
    fall back on), and both hold the same tokenizer."""
    from editspec.modeling.loading import DEFAULT_MODEL

    assert not (DEFAULT_MODEL / "tokenizer").exists()
    one = load_tokenizer(DEFAULT_MODEL / "t5")
    for kind in ("edit5", "t5"):
        assert all((DEFAULT_MODEL / kind / f).is_file() for f in TOKENIZER_FILES)
        assert tokenizer_path(DEFAULT_MODEL / kind) == DEFAULT_MODEL / kind
        assert load_tokenizer(DEFAULT_MODEL / kind).get_vocab() == one.get_vocab()


def test_a_checkpoint_with_its_own_tokenizer_reads_its_own(tokenizer_dir, tmp_path):
    from editspec.modeling.loading import DEFAULT_MODEL

    (tmp_path / "tokenizer").mkdir()  # a bundle's shared one (an older bundle's layout)
    for f in TOKENIZER_FILES:
        shutil.copy(DEFAULT_MODEL / "t5" / f, tmp_path / "tokenizer" / f)
    shutil.copytree(tokenizer_dir, tmp_path / "edit5")  # a user's checkpoint: its own, another vocabulary
    (tmp_path / "t5").mkdir()
    own, shared = load_tokenizer(tmp_path / "edit5"), load_tokenizer(tmp_path / "t5")
    assert len(own) == len(load_tokenizer(tokenizer_dir)) != len(shared) == len(load_tokenizer(tmp_path / "tokenizer"))
    assert tokenizer_path("t5-small") == "t5-small"  # a hub id goes to the hub as it is
