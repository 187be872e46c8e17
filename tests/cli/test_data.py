"""``editspec data stats`` and ``editspec data roundtrip`` on tiny files."""

import json

import pytest

from editspec.cli import main
from editspec.tokenization.tokens import encode, load_tokenizer

pytestmark = pytest.mark.usefixtures("datasets_cache")


def test_data_stats(tmp_path, m2_file, tokenizer_dir, capsys):
    assert main(["data", "stats", str(m2_file), "--tokenizer", str(tokenizer_dir)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pairs"] == 4 and out["identical_pairs"] == 2
    assert out["too_few_markers"] == 0 and out["roundtrip_exact"] == 4
    assert out["mean_insertions"] > 0 and out["mean_decoder_tokens"] >= out["mean_insertions"] + 1
    assert main(["data", "stats", str(m2_file), "--annotator", "all", "--tokenized",
                 "--tokenizer", str(tokenizer_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"] == 8

    # the tiny tokenizer has 64 markers: inserting after the 70th kept token needs #70
    assert len(encode(load_tokenizer(tokenizer_dir), ["school park"])[0].ids) == 2
    tsv = tmp_path / "long.tsv"
    tsv.write_text(f"{' '.join(['school'] * 80)}\t{' '.join(['school'] * 70 + ['park'] + ['school'] * 10)}\n"
                   "A dog .\tA dog .\n")
    assert main(["data", "stats", str(tsv), "--tokenizer", str(tokenizer_dir)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pairs"] == 2 and out["too_few_markers"] == 1 and out["roundtrip_exact"] == 1
    assert out["max_position_markers_needed"] == 71 and out["identical_pairs"] == 1


def test_data_stats_bad_input(tmp_path, m2_file, tokenizer_dir, capsys):
    assert main(["data", "stats", str(tmp_path / "none.m2"), "--tokenizer", str(tokenizer_dir)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["data", "stats", str(m2_file), "--target", str(tmp_path / "none.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["data", "stats", str(m2_file), "--tokenizer", str(tmp_path / "no-tokenizer")]) == 2
    assert "no tokenizer at" in capsys.readouterr().err
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00a")
    assert main(["data", "stats", str(binary), "--tokenizer", str(tokenizer_dir)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and err.count("\n") == 1


def test_data_roundtrip(tmp_path, m2_file, capsys):
    """Each sentence of the tiny M2 file detokenizes and re-tokenizes to itself; "hasn't" (one
    spaCy 1.9 token, two spaCy 3 tokens) does not."""
    text = tmp_path / "tokens.txt"
    text.write_text("He has n't gone .\nHe hasn't gone .\n", encoding="utf-8")
    assert main(["data", "roundtrip", str(m2_file), str(text)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{m2_file}: 4/4 = 100.00% re-tokenize exactly",
        f"{text}: 1/2 = 50.00% re-tokenize exactly"]
    assert main(["data", "roundtrip", str(tmp_path / "none.m2")]) == 2
    assert "no such file" in capsys.readouterr().err
