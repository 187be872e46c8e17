"""Corpus readers (M2, parallel, JFLEG) and the detokenizer on tiny files."""

import pytest

from editspec.data.corpora import data_dir, evenly_spaced, read_jfleg, read_m2, read_parallel
from editspec.errors import EditspecError
from editspec.data.tokenized import detokenize, tokenize_for_errant
from tests.helpers import TINY_M2

pytestmark = pytest.mark.usefixtures("datasets_cache")


def test_read_m2_tokenized_annotator_0(m2_file):
    rows = read_m2(m2_file, detokenized=False).to_list()
    assert [r["target"] for r in rows] == [
        "He went to the school .",
        "I do n't like the medium - size car .",  # noop
        "Pasteries are very nice !",  # UNK changes nothing; "!" inserted before ".", "." deleted
        'It was " great " ( really ) .',  # a block without A lines
    ]
    assert rows[0]["source"] == "He go to school yesterday ."
    assert {r["annotator"] for r in rows} == {0}


def test_read_m2_detokenized_and_all_annotators(m2_file):
    rows = read_m2(m2_file, annotator="all").to_list()
    assert len(rows) == 8  # 4 sentences x annotators {0, 1}: missing lines mean "no edits"
    by = {(r["source"], r["annotator"]): r["target"] for r in rows}
    assert by[("He go to school yesterday.", 1)] == "He goes to school yesterday."
    assert by[("I don't like the medium-size car.", 0)] == "I don't like the medium-size car."
    assert by[("I don't like the medium-size car.", 1)] == "I don't like the medium-sized car."
    assert by[('It was "great" (really).', 1)] == 'It was "great" (really).'
    assert [r["target"] for r in read_m2(m2_file, annotator=1)][0] == "He goes to school yesterday."


def test_read_m2_cache_follows_file_changes(m2_file):
    assert len(read_m2(m2_file)) == 4
    m2_file.write_text(TINY_M2 + "\nS One more .\n", encoding="utf-8")
    assert len(read_m2(m2_file)) == 5


def test_read_m2_errors(tmp_path):
    with pytest.raises(EditspecError, match="no such file"):
        read_m2(tmp_path / "missing.m2")
    bad = tmp_path / "bad.m2"
    bad.write_text("S a b\nA x y|||R|||c|||REQUIRED|||-NONE-|||0\n", encoding="utf-8")
    with pytest.raises(EditspecError, match="line 2"):
        read_m2(bad)
    with pytest.raises(EditspecError, match="annotator"):
        read_m2(bad, annotator="first")


def test_read_parallel_tsv_and_two_files(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("He go home.\tHe goes home.\n\nI has a dog .\tI have a dog .\n", encoding="utf-8")
    assert read_parallel(tsv).to_list() == [
        {"source": "He go home.", "target": "He goes home.", "annotator": 0},
        {"source": "I has a dog .", "target": "I have a dog .", "annotator": 0},
    ]
    assert read_parallel(tsv, detokenized=True)[1]["target"] == "I have a dog."
    src, tgt = tmp_path / "src.txt", tmp_path / "tgt.txt"
    src.write_text("a b\nc\n", encoding="utf-8")
    tgt.write_text("a B\nc\n", encoding="utf-8")
    assert read_parallel(src, tgt)["target"] == ["a B", "c"]
    tgt.write_text("a B\n", encoding="utf-8")
    with pytest.raises(EditspecError, match="has 2 lines"):
        read_parallel(src, tgt)
    bad = tmp_path / "bad.tsv"
    bad.write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(EditspecError, match="TAB"):
        read_parallel(bad)


def test_read_jfleg(tmp_path):
    src = tmp_path / "dev.src"
    src.write_text("For not use car . \nI can not go . \n", encoding="utf-8")  # JFLEG: trailing space
    refs = []
    for k, lines in enumerate([["Not for use with a car . ", "I can not go . "],
                               ["Do not use a car . ", "I ca n't go . "]]):
        refs.append(tmp_path / f"dev.ref{k}")
        refs[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = read_jfleg(src, refs).to_list()
    assert rows[0] == {"source": "For not use car.", "references": ["Not for use with a car.", "Do not use a car."]}
    assert rows[1]["references"] == ["I can not go.", "I can't go."]
    tokenized = read_jfleg(src, refs, detokenized=False)
    assert tokenized[1]["references"] == ["I can not go .", "I ca n't go ."]
    pairs = read_jfleg(src, refs, pairs=True)
    assert len(pairs) == 4 and pairs["annotator"] == [0, 1, 0, 1]
    assert pairs[3] == {"source": "I can not go.", "target": "I can't go.", "annotator": 1}


def test_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITSPEC_DATA", str(tmp_path))
    assert data_dir() == tmp_path
    assert data_dir(tmp_path / ".") == tmp_path / "."
    with pytest.raises(EditspecError, match="does not exist"):
        data_dir(tmp_path / "nowhere")
    monkeypatch.setenv("EDITSPEC_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(EditspecError, match="does not exist"):
        data_dir()


@pytest.mark.parametrize("tokenized, natural", [
    ("I do n't know , do you ?", "I don't know, do you?"),
    ("I 'm sure it 's John 's car .", "I'm sure it's John's car."),
    ("We ca n't and wo n't go", "We can't and won't go"),
    ("I can not go", "I can not go"),
    ("a medium - sized town and an e - mail", "a medium-sized town and an e-mail"),
    ("prices rose 5 % to $ 5 ( or £ 4 ) ; then : stop !", "prices rose 5% to $5 (or £4); then: stop!"),
    ('He said " hello " and " bye " .', 'He said "hello" and "bye".'),
    ("She said ' no ' to the girls ' team .", "She said 'no' to the girls' team."),
    ('" Go away ! " he said .', '"Go away!" he said.'),
    ("and / or , well ...", "and/or, well..."),
    ("I do nt know , i m gon na go", "I dont know, im gonna go"),
    ("2010 - 2012 and 1 -- 2", "2010-2012 and 1 -- 2"),
    ("", ""),
])
def test_detokenize(tokenized, natural):
    assert detokenize(tokenized) == natural


def test_spacy_tokenizes_detokenized_text_back():
    sentences = ["I do n't know , do you ?", 'He said " hello " to the girls \' team .',
                 "a medium - sized town ( nice ) costs $ 5 .", "I do nt know , i m gon na go ."]
    for s in sentences:
        assert tokenize_for_errant(detokenize(s)) == s


def test_evenly_spaced_spreads_a_sample_over_the_file():
    assert evenly_spaced(10, 4) == [0, 2, 5, 7]
    assert evenly_spaced(3, 5) == evenly_spaced(3, None) == [0, 1, 2]
