"""training/back_translate.py: an error model's samples, filtered to what a learner could write."""

import json

import pytest

from editspec.post.diff import Correction
from editspec.post.checks import guard
from editspec.pre.spelling import load_speller
from training import back_translate
from training.back_translate import learner_errors
from training.synthetic.pairs import WIKI_DIR


def test_back_translate_pairs_sampled_sentences_with_the_clean_ones_reproducibly(models, tmp_path):
    """training/back_translate.py: target.txt holds the usable clean sentences (4-60 words, no
    character the tokenizer lacks) in order; source.txt the error model's samples, their edits
    filtered by ``learner_errors``; the same seed gives the same samples, another seed others; with
    the guard only samples within its limit stay, with --changed-only only pairs with an error left;
    a rerun reuses the stored samples."""
    data = tmp_path / "data"
    (data / WIKI_DIR).mkdir(parents=True)
    lines = ["The cat went to the park yesterday.", "Too short.", "My friend saw 中文 in the city.",
             "I played football with friends on Monday.", "We wanted some water in the morning.",
             "The teacher liked the old house because it is fun."]
    (data / WIKI_DIR / "enwiki_sentences.00.txt").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    usable = [lines[0], lines[3], lines[4], lines[5]]

    def run(out, *extra):
        back_translate.main([str(models / "bundle" / "t5"), "--out", str(out), "--sentences", "3", "--skip", "1",
                             "--shards", "0", "--data-dir", str(data), "--batch-size", "2", "--chunk", "2", *extra])
        written = [(out / f"{name}.txt").read_text(encoding="utf-8").splitlines() for name in ("source", "target")]
        samples = [x for part in sorted((out / "parts").iterdir()) for x in json.loads(part.read_text())["source"]]
        return written, samples

    knows = load_speller().knows
    (source, target), samples = run(tmp_path / "a", "--max-edit-words", "0")
    assert target == usable[1:4] and samples != target  # a random T5 rewrites
    assert source == [back_translate.learner_errors(t, s, knows) for s, t in zip(samples, target)]
    assert run(tmp_path / "b", "--max-edit-words", "0") == ([source, target], samples)
    assert run(tmp_path / "c", "--max-edit-words", "0", "--seed", "1")[1] != samples
    assert run(tmp_path / "b", "--max-edit-words", "0", "--seed", "1")[1] != samples  # stored samples of seed 0 redrawn
    (guarded, kept), _ = run(tmp_path / "d", "--max-edit-words", "3")
    within = [(back_translate.learner_errors(t, s, knows), t) for s, t in zip(samples, target) if guard(Correction.of(t, s), 3).output == s]
    assert len(within) < 3 and list(zip(guarded, kept)) == within
    (changed, changed_target), _ = run(tmp_path / "e", "--max-edit-words", "0", "--changed-only")
    assert changed and list(zip(changed, changed_target)) == [(s, t) for s, t in zip(source, target) if s != t]
    part = tmp_path / "a" / "parts" / "00000000.json"
    part.write_text(json.dumps({**json.loads(part.read_text()), "source": [target[0], target[1] + " the"]}))
    assert run(tmp_path / "a", "--max-edit-words", "0")[0][0][:2] == [target[0], target[1] + " the"]


@pytest.mark.parametrize("clean, sampled, kept", [
    ("Maltose is released as the main product of starch degradation.",  # the module docstring's
     "Maltose is released like the main product ofì prefect.",
     "Maltose is released like the main product of starch degradation."),
    ("It is an active parish church.", "It is an active Michelangelo church.", "It is an active parish church."),
    ("I receive your letter.", "I recieve your leter.", "I recieve your leter."),  # misspellings
    ("The booths have been demolished.", "The booths been demolish.", "The booths been demolish."),
    ("However, she avoided it.", "however she avoided it", "however she avoided it"),  # case, punctuation
    ("They both currently play.", "They bothover play.", "They both currently play."),
])
def test_learner_errors_keep_what_a_learner_could_write(clean, sampled, kept):
    """back_translate.learner_errors: misspellings, forms of the same word, common words, case and
    punctuation stay; a rare word replaced by another, or word salad, is undone."""
    assert learner_errors(clean, sampled, load_speller().knows) == kept
