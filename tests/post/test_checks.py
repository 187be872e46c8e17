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


# misspellings learners write (W&I train) whose candidates include the word meant
MISSPELT = ["wrold", "recieve", "becouse", "leter", "freind", "beautifull", "wich", "tommorow",
            "goverment", "definately", "infront", "studing"]


def test_no_word_the_writer_misspelt_is_removed_for_any_of_the_spellers_candidates():
    """Whichever candidate the spelling step writes for a misspelt word, an edit that removes it
    (alone, with a neighbour, or rewritten into fewer words) is undone, and the model's other
    edits stay; with the spelling step off the misspelling itself is kept the same way."""
    from editspec.post.checks import keep_respelled
    from editspec.pre.spelling import load_speller

    speller = load_speller()
    seen = 0
    for miss in MISSPELT:
        assert speller.misspelt(miss) and speller.misspelt(miss.capitalize())
        for cand in speller.options(miss, None, None, speller.choices):
            written, spelled = f"Oh {miss}, he go home.", f"Oh {cand}, he go home."
            for output in ("Oh, he goes home.", "Oh he goes home.", f"Ah, he goes home."):
                kept = keep_respelled(Correction.of(spelled, output), written, speller.misspelt)
                assert cand in kept.output and kept.output.endswith("he goes home."), (miss, cand, output)
                seen += 1
            replaced = f"Oh {cand}s, he goes home."  # a rewrite of the word is the model's to make
            assert keep_respelled(Correction.of(spelled, replaced), written, speller.misspelt).output == replaced
        off = keep_respelled(Correction.of(written, "Oh, he goes home."), written, speller.misspelt)
        assert off.output == f"Oh {miss}, he goes home."
    assert seen > 3 * len(MISSPELT)


def test_removing_a_word_written_right_is_the_models_to_make():
    """A word spelt right, or one no dictionary word is near ("xqzv"), may be removed."""
    from editspec.post.checks import keep_respelled
    from editspec.pre.spelling import load_speller

    misspelt = load_speller().misspelt
    for written, output in [("I very like it.", "I like it."), ("He said xqzvwk to me.", "He said to me."),
                            ("The the cat sat.", "The cat sat.")]:
        assert keep_respelled(Correction.of(written, output), written, misspelt).output == output
    # a word the spelling step only capitalised was not misspelt
    assert keep_respelled(Correction.of("On Monday we go.", "We go."), "on monday we go.", misspelt).output == "We go."


def test_no_content_word_is_deleted_but_function_words_may_be():
    from editspec.post.checks import keep_content_words

    for source, output, kept in [
        ("Can you tell me where is the park?", "Can you tell me where the park?", "Can you tell me where is the park?"),
        ("My father has worked here for 27 years.", "My father worked here for 27 years.",
         "My father has worked here for 27 years."),
        ("It was very nice and he go home.", "It was nice and he goes home.", "It was very nice and he goes home."),
        ("Hello world, how are you?", "Hello, how are you?", "Hello world, how are you?"),
        ("I like the music of Rock.", "I like rock music.", "I like rock music."),  # rewrites: not judged
        ("He is interesting in the the music.", "He is interested in the music.", "He is interested in the music."),
        ("I went to the home.", "I went home.", "I went home."),  # function words: the model's to delete
        ("We discussed about it.", "We discussed it.", "We discussed it."),
    ]:
        assert keep_content_words(Correction.of(source, output)).output == kept, source
