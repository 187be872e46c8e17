"""editspec/profiling/sentences.py: the three input formats, sampling, batches and padded model inputs."""

import pytest
import torch

from editspec.errors import EditspecError
from editspec.modeling.tensors import model_inputs
from editspec.profiling.sentences import batches, read_data


def test_read_data(tmp_path):
    m2 = tmp_path / "a.m2"
    m2.write_text("S I do n't like it .\nA 4 5|||R:PRON|||this|||REQUIRED|||-NONE-|||0\n"
                  "A 4 5|||R:PRON|||that|||REQUIRED|||-NONE-|||1\n\n"
                  "S Fine .\nA -1 -1|||noop|||-NONE-|||x|||-NONE-|||0\n")
    assert read_data(m2) == (["I don't like it.", "Fine."], ["I don't like this.", "Fine."])
    tsv = tmp_path / "a.tsv"
    tsv.write_text("a b\tA b.\n\nc\tC.\n")
    assert read_data(tsv, limit=1) == (["a b"], ["A b."])
    lines = [f"Sentence {k}." for k in range(50)]
    plain = tmp_path / "many.txt"
    plain.write_text("\n".join(lines) + "\n")
    sample, _ = read_data(plain, limit=10, seed=1)
    assert len(sample) == 10 and sample != lines[:10] and sample == sorted(sample, key=lines.index)
    assert read_data(plain, limit=10, seed=1)[0] == sample
    plain = tmp_path / "a.txt"
    plain.write_text("One line.\n\nTwo\tcolumns here.\n")
    assert read_data(plain) == (["One line.", "Two\tcolumns here."], None)


@pytest.mark.parametrize("content, message", [(None, "no such file"), (b"\n\n", "holds no sentences"),
                                               (b"\xff\xfe bad\n", "not UTF-8")])
def test_read_data_refuses_bad_files(tmp_path, content, message):
    path = tmp_path / "in.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(EditspecError, match=message):
        read_data(path)


def test_batches_and_model_inputs():
    assert batches([5, 2, 9, 1, 7], 2) == [[5, 2], [9, 1], [7]]
    ids, mask = model_inputs([[8, 9], [7]], eos=1, pad_id=0, device="cpu")
    assert ids.tolist() == [[8, 9, 1], [7, 1, 0]] and mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert ids.dtype == mask.dtype == torch.long
