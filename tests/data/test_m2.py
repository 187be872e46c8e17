"""The one M2 reader: blocks as ERRANT splits them, parsed edits, targets, and bad input."""

import pytest

from editspec.data.m2 import Edit, apply_edits, is_m2, parse_block, parse_m2, read_blocks, source_tokens
from editspec.errors import EditspecError

M2 = """\
S She go to school yesterday .
A 1 2|||R:VERB:SVA|||goes|||REQUIRED|||-NONE-|||0
A 1 2|||R:VERB:TENSE|||went|||REQUIRED|||-NONE-|||1

S Fine .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0
"""


def test_module_docstring_example(tmp_path):
    path = tmp_path / "dev.m2"
    path.write_text(M2 + "\n\n", encoding="utf-8")  # trailing blank lines: no empty block
    blocks = read_blocks(path)
    assert len(blocks) == 2 and blocks[1] == "S Fine .\nA -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0"
    assert read_blocks(path, limit=1) == blocks[:1]
    assert source_tokens(blocks[0]) == "She go to school yesterday .".split()
    source, edits = parse_block(blocks[0])
    assert edits == [Edit(1, 2, "R:VERB:SVA", ["goes"], 0), Edit(1, 2, "R:VERB:TENSE", ["went"], 1)]
    assert apply_edits(source, [e for e in edits if e.annotator == 0]) == "She goes to school yesterday .".split()
    assert apply_edits(*parse_block(blocks[1])) == ["Fine", "."]  # noop changes nothing
    with path.open(encoding="utf-8") as f:
        assert [s for s, _ in parse_m2(f)] == [source, ["Fine", "."]]


def test_apply_edits_shifts_offsets_and_keeps_file_order_at_one_position():
    source = "a b c d".split()
    # insertion and replacement at the same start: the insertion comes first, as in the file
    edits = [(1, 1, "M", ["x", "y"], 0), (1, 2, "R", ["B"], 0), (3, 4, "U", [], 0), (0, 0, "M", ["<"], 0)]
    assert apply_edits(source, edits) == "< a x y B c".split()
    assert apply_edits(source, [(-1, -1, "noop", ["-NONE-"], 0)]) == source
    assert apply_edits(source, [(0, 1, "UNK", ["a"], 0)]) == source


def test_parse_m2_blank_lines_and_bad_lines():
    assert list(parse_m2(iter(["S a\n", "\n", "\n", "S b c\n"]))) == [(["a"], []), (["b", "c"], [])]
    with pytest.raises(EditspecError, match="line 2: expected"):
        list(parse_m2(iter(["S a\n", "a tsv line\tx\n"])))
    with pytest.raises(EditspecError, match="line 2: malformed edit"):
        list(parse_m2(iter(["S a b\n", "A x y|||R|||c|||REQUIRED|||-NONE-|||0\n"])))
    with pytest.raises(EditspecError, match="line 1: an A line before any S line"):
        list(parse_m2(iter(["A 0 1|||R|||c|||REQUIRED|||-NONE-|||0\n"])))


def test_read_blocks_bad_input(tmp_path):
    with pytest.raises(EditspecError, match="cannot read M2 file"):
        read_blocks(tmp_path / "missing.m2")
    text = tmp_path / "text.m2"
    text.write_text("Just a sentence.\n", encoding="utf-8")
    with pytest.raises(EditspecError, match="is not an M2 file"):
        read_blocks(text)
    latin = tmp_path / "latin.m2"
    latin.write_bytes(b"S caf\xe9 .\n")
    with pytest.raises(EditspecError, match="not UTF-8"):
        read_blocks(latin)


def test_is_m2(tmp_path):
    named, tsv, led = tmp_path / "a.m2", tmp_path / "b.tsv", tmp_path / "c.txt"
    named.write_text("", encoding="utf-8")
    tsv.write_text("He go .\tHe goes .\n", encoding="utf-8")
    led.write_text("\nS He go .\n", encoding="utf-8")
    assert is_m2(named) and not is_m2(tsv) and is_m2(led)
    binary = tmp_path / "d.txt"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(EditspecError, match="not UTF-8"):
        is_m2(binary)
    with pytest.raises(EditspecError, match="cannot read"):
        is_m2(tmp_path / "missing.txt")
