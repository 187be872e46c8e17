"""The character diff on long lines (editspec/post/diff.py): windows of bounded size, same edits."""

import random

from rapidfuzz.distance import Indel

from editspec.post import diff as diff_module
from editspec.post.diff import Edit, apply, diff, output_starts


def test_a_long_line_is_diffed_in_bounded_windows(monkeypatch):
    """One LCS of a whole 1 MB line needs tens of GB (issue 45): no LCS may see more than
    WINDOW units of either side, and the edits are the local ones, each at its offset."""
    seen = []

    class Spy:
        @staticmethod
        def opcodes(a, b):
            seen.append(max(len(a), len(b)))
            return Indel.opcodes(a, b)

    monkeypatch.setattr(diff_module, "Indel", Spy)
    line = "she go home . " * 20000  # 280k characters, 160k units
    fixed = line.replace("she go", "she goes")
    edits = diff(line, fixed)
    assert max(seen) <= diff_module.WINDOW and len(seen) > 100
    assert len(edits) == 20000 and all(e.original == "go" and e.correction == "goes" for e in edits)
    assert [e.start for e in edits[:3]] == [4, 18, 32] and apply(line, edits) == fixed


def test_windows_find_the_whole_line_lcs_edits_of_local_corrections():
    rng = random.Random(0)
    words = ["the", "a", "cat", "go", "goes", "home", ".", ",", "I", "we"]
    for _ in range(5):
        source = " ".join(rng.choice(words) for _ in range(3000))
        units = source.split(" ")
        for _ in range(60):  # local edits
            k = rng.randrange(len(units))
            units[k] = rng.choice(["dog", "", "went", "the the"])
        target = " ".join(units)
        edits = diff(source, target)
        assert apply(source, edits) == target
        monkey = diff_module.WINDOW
        try:
            diff_module.WINDOW = 10 ** 6  # one LCS of everything: the exact answer
            exact = diff(source, target)
        finally:
            diff_module.WINDOW = monkey
        assert sum(len(e.original) + len(e.correction) for e in edits) == \
            sum(len(e.original) + len(e.correction) for e in exact)


def test_diff_applies_across_window_edges():
    rng = random.Random(1)
    for _ in range(200):
        a = "".join(rng.choice(["a", " ", "b", ".", "cc", "\t"]) for _ in range(rng.randrange(0, 5000)))
        b = "".join(rng.choice(["a", " ", "b", ".", "cc"]) for _ in range(rng.randrange(0, 5000)))
        assert apply(a, diff(a, b)) == b
    assert diff("He go home.", "He goes home.") == [Edit(3, 5, "go", "goes")]


def test_output_starts_place_each_edit_in_the_output():
    source, target = "She go to school every days.", "She goes to the school every day."
    edits = diff(source, target)
    assert [target[a:a + len(e.correction)] for e, a in zip(edits, output_starts(edits))] == \
        [e.correction for e in edits]


def test_a_correction_keeps_some_of_its_edits():
    """``Correction.keep`` makes only the edits given (the text in between), and finds the edits of
    what is left again: the steps after the model pass a unit's correction along so."""
    from editspec.post.diff import Correction

    c = Correction.of("He go to school every days.", "He goes to the school every day.")
    assert [e.correction for e in c.edits] == ["goes", "the ", "day"]
    assert c.keep(c.edits) is c
    first = c.keep(c.edits[:1])
    assert first.output == "He goes to school every days." and first.edits == c.edits[:1]
    assert c.keep([]) == Correction(c.input, c.input, [])
    # the edits left can pair up otherwise in the text in between: its edits are its own diff
    three = Correction.of("bc .", "b cc .a")
    kept = three.keep(three.edits[:2])
    assert kept.output == "b cc ." and kept.edits == diff("bc .", "b cc .") != three.edits[:2]
