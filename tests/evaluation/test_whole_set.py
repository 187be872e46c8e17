"""A corrector over a whole set: chunks by length, outputs in input order, and reading lines."""

import pytest

from editspec.errors import EditspecError
from editspec.evaluation.whole_set import correct_all, evaluate, read_lines
from tests.helpers import errant_from_pairs


def test_correct_all_chunks_longest_first_and_keeps_input_order():
    """The module docstring's example: chunks of 2, longest first; outputs back in input order."""
    sentences = ["Hi.", "He go to school every day.", "She like it."]
    fixes = {"He go to school every day.": "He goes to school every day.", "She like it.": "She likes it."}
    chunks = []

    def correct(batch):
        chunks.append(batch)
        return [fixes.get(s, s) for s in batch]

    outputs, seconds = correct_all(correct, sentences, chunk_size=2)
    assert chunks == [["He go to school every day.", "She like it."], ["Hi."]]
    assert outputs == ["Hi.", "He goes to school every day.", "She likes it."] and seconds >= 0
    with pytest.raises(EditspecError, match="returned 1 sentences for 2"):
        correct_all(lambda batch: batch[:1], sentences, chunk_size=2)


def test_evaluate_scores_the_outputs():
    sources = ["She go to school every days.", "I like it."]
    targets = ["She goes to school every day.", "I like it."]
    dev = errant_from_pairs(sources, targets)
    result, outputs, seconds = evaluate(lambda xs: [dict(zip(sources, targets))[x] for x in xs], dev)
    assert outputs == targets and seconds >= 0
    assert (result.tp, result.fp, result.fn) == (2, 0, 0)


def test_read_lines(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(b"one\r\ntwo\n\nthree")
    assert read_lines(path) == ["one", "two", "", "three"]
    with pytest.raises(EditspecError, match="cannot read"):
        read_lines(tmp_path / "missing.txt")
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(EditspecError, match="not UTF-8"):
        read_lines(path)
