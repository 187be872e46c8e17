"""keep_unreadable (editspec/post/checks.py): no model edit of characters it cannot read, no
whitespace-only insertions."""

from editspec.post.diff import Correction
from editspec.post.checks import keep_unreadable
from editspec.tokenization.tokens import encode, unreadable


def check(tok, source: str, output: str) -> str:
    return keep_unreadable(Correction.of(source, output), unreadable(tok, encode(tok, [source])[0])).output


def test_words_with_unknown_characters_are_never_rewritten(tokenizer):
    """The T5 deleted characters inside words of other scripts and emoji (issue 45); an edit
    elsewhere in the sentence stays."""
    for source, output, kept in [
        ("こんにちは世界 He go home.", "こんにちは界 He goes home.", "こんにちは世界 He goes home."),
        ("Ελληνικά is nice.", "Ελλ is nice.", "Ελληνικά is nice."),
        ("I like 🇫🇷 food.", "I like food.", "I like 🇫🇷 food."),
        ("He like 😀 a lot.", "He likes 😀 a lot.", "He likes 😀 a lot."),
        ("I like 😀.", "I likes.", "I like 😀."),  # one edit with the emoji: undone whole
    ]:
        assert check(tok := tokenizer, source, output) == kept, source
    assert unreadable(tok, encode(tok, ["a 😀"])[0]) == {2}


def test_odd_whitespace_is_never_deleted_but_words_beside_it_are_edited(tokenizer):
    assert check(tokenizer, "I want to\twent home.", "I want to go home.") == "I want to\twent home."
    assert check(tokenizer, "I want to\twent home.", "I want to\tgo home.") == "I want to\tgo home."
    assert check(tokenizer, "a\rthe cat", "a cat") == "a\rthe cat"
    assert check(tokenizer, "a \u200bthe cat", "a cat") == "a \u200bthe cat"
    assert check(tokenizer, "a the cat", "a cat") == "a cat"  # a plain space is the model's


def test_inserted_whitespace_is_no_edit(tokenizer):
    assert check(tokenizer, "She goes home.", "She goes" + " " * 30 + "home.") == "She goes home."
    assert check(tokenizer, "She goes home.", "She  goes home .") == "She goes home."
    assert check(tokenizer, "I like it .", "I like it.") == "I like it."  # a deleted space is an edit
    assert check(tokenizer, "everyday", "every day") == "every day"
