"""ERRANT scoring (equal to the errant_compare command's), the evaluator and re-tokenization."""

import sys

import pytest
from errant.commands import compare_m2
from hypothesis import given, settings, strategies as st

from editspec.data.m2 import read_blocks, source_tokens
from editspec.errors import EditspecError
from editspec.evaluation.errant import ErrantEvaluator, errant_score, retokenize
from editspec.data.tokenized import detokenize
from tests.helpers import GOLD_M2, GOLD_OUTPUTS, errant_from_pairs

# What ERRANT makes of GOLD_OUTPUTS (checked by hand: spans index the gold S tokens).
EXPECTED_EDITS = [
    ["A 1 2|||R:VERB:SVA|||goes", "A 5 6|||R:NOUN:NUM|||day"],
    ["A 1 3|||R:VERB:TENSE|||saw"],
    ["A 4 4|||M:DET|||the"],
    ["A 2 3|||R:VERB:SVA|||are", "A 3 4|||R:SPELL|||useful"],
    ["A 2 3|||R:VERB:FORM|||gone"],
    ["A 4 5|||R:DET|||a"],
]


@pytest.fixture
def gold(tmp_path):
    path = tmp_path / "gold.m2"
    path.write_text(GOLD_M2, encoding="utf-8")
    return path


def fake_correct(sentences):
    return [GOLD_OUTPUTS.get(s, s) for s in sentences]


def errant_compare_in_process(hyp, ref, cat: int, monkeypatch, capsys) -> str:
    """stdout of ``errant_compare -hyp HYP -ref REF -cat N`` run in-process by its entry point
    (skips the command's seconds of spaCy import; test_eval checks the installed command)."""
    capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["errant_compare", "-hyp", str(hyp), "-ref", str(ref), "-cat", str(cat)])
    compare_m2.main()
    return capsys.readouterr().out


def parse_compare(out: str):
    """(overall [tp, fp, fn, p, r, f], {category: [tp, fp, fn, p, r, f]}) from errant_compare."""
    lines = out.splitlines()
    k = lines.index("TP\tFP\tFN\tPrec\tRec\tF0.5")
    overall = [float(x) for x in lines[k + 1].split("\t")]
    cats = {}
    if lines[2].startswith("Category"):
        for line in lines[3:]:
            if not line.strip():
                break
            name, *values = line.split()
            cats[name] = [float(x) for x in values]
    return overall, cats


def test_sources_are_detokenized_gold(gold):
    evaluator = ErrantEvaluator.from_m2(gold)
    assert evaluator.sources == list(GOLD_OUTPUTS)
    assert evaluator.source_tokens[4] == ["He", "hasn't", "go", "there", "."]
    assert len(ErrantEvaluator.from_m2(gold, limit=2)) == 2


def test_hypothesis_edits(gold):
    evaluator = ErrantEvaluator.from_m2(gold)
    blocks = evaluator.annotate(evaluator.tokenize(fake_correct(evaluator.sources)))
    edits = [[line.rsplit("|||", 3)[0] for line in b.split("\n")[1:]] for b in blocks]
    assert edits == EXPECTED_EDITS
    assert [source_tokens(b) for b in blocks] == [source_tokens(g) for g in read_blocks(gold)]


def test_scores_equal_errant_compare(gold, tmp_path, monkeypatch, capsys):
    """Overall and per-category numbers equal the errant_compare command's on the same M2 files."""
    evaluator = ErrantEvaluator.from_m2(gold)
    hyp = tmp_path / "hyp.m2"
    blocks = evaluator.annotate(evaluator.tokenize(fake_correct(evaluator.sources)))
    hyp.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    result = errant_score(blocks, read_blocks(gold))
    # by hand: 7 hypothesis edits; M:DET and R:DET are wrong; INFL is missed (annotator 1 is
    # chosen for sentence 4); the R:VERB:SVA "lives" of sentence 6 is missed
    assert (result.tp, result.fp, result.fn) == (6, 2, 2)
    assert [sum(c) for c in zip(*result.sentences)] == [6, 2, 2] and len(result.sentences) == len(blocks)
    mine = result.to_dict()
    for cat in (1, 2, 3):
        overall, cats = parse_compare(errant_compare_in_process(hyp, gold, cat, monkeypatch, capsys))
        assert overall == [mine["tp"], mine["fp"], mine["fn"], mine["precision"], mine["recall"],
                           mine["f0.5"]]
        per_type = result.per_type(cat)
        assert cats == {k: [v["tp"], v["fp"], v["fn"], v["precision"], v["recall"], v["f0.5"]]
                        for k, v in per_type.items()}
    assert set(result.per_type(1)) == {"M", "R"} and "VERB:SVA" in result.per_type(2)


def test_scoring_rejects_sets_of_different_sizes(gold):
    evaluator = ErrantEvaluator.from_m2(gold)
    with pytest.raises(EditspecError, match="5 outputs for 6 gold sentences"):
        evaluator.score(evaluator.sources[:5])
    with pytest.raises(EditspecError, match="1 hypothesis sentences for 6 gold ones"):
        errant_score(read_blocks(gold)[:1], read_blocks(gold))


def test_identity_scores_no_edits(gold):
    """The identity corrector makes no edits: 0 TP, 0 FP; re-tokenizing everything would charge
    it for spaCy splitting the gold token "hasn't"."""
    evaluator = ErrantEvaluator.from_m2(gold)
    result = evaluator.score(evaluator.sources)
    assert (result.tp, result.fp, result.fn) == (0, 0, 6)  # best annotator per sentence
    whole = ErrantEvaluator.from_m2(gold, retokenize="all").score(evaluator.sources)
    assert (whole.tp, whole.fp) == (0, 1)
    # sources that round-trip through detokenize + spaCy score no edits either way
    roundtrip = [b for b in read_blocks(gold) if "hasn't" not in b]
    for mode in ("changed", "all"):
        ev = ErrantEvaluator(roundtrip, retokenize=mode)
        assert (lambda r: (r.tp, r.fp))(ev.score(ev.sources)) == (0, 0)


def test_gold_from_pairs():
    """Gold edits extracted from parallel text: the targets score perfectly, the sources score 0."""
    sources = ["She go to school every days.", "I like it.", "He hasn't go there."]
    targets = ["She goes to school every day.", "I like it.", "He hasn't gone there."]
    dev = errant_from_pairs(sources, targets)
    assert dev.sources == sources and dev.source_tokens[2] == "He has n't go there .".split()
    result = dev.score(targets)
    assert (result.tp, result.fp, result.fn, result.f) == (3, 0, 0, 1.0)
    assert (lambda r: (r.tp, r.fp, r.fn))(dev.score(sources)) == (0, 0, 3)


@pytest.mark.parametrize("source, output, expected", [
    ("He hasn't go there .", "He hasn't gone there.", "He hasn't gone there ."),
    ("the dog .", "the dogs.", "the dogs ."),
    ("dog .", "The dog.", "The dog ."),
    ("I like the cats .", "I like cats!", "I like cats !"),
    ("He does n't swim .", "He didn't swim.", "He did n't swim ."),
    ("a medium - sized town", "a medium-sized town", "a medium - sized town"),
    ("with you re body", "with your body", "with your body"),  # source text: "youre"
    ("I 'm here", "", ""),
])
def test_retokenize(source, output, expected):
    assert retokenize(source.split(), output) == expected.split()


def test_retokenize_all_is_spacy():
    assert retokenize("He hasn't go there .".split(), "He hasn't gone there.", mode="all") == \
        "He has n't gone there .".split()
    with pytest.raises(ValueError, match="unknown retokenize mode"):
        retokenize(["a"], "a", mode="some")


WORDS = ["He", "has", "hasn't", "n't", "do", "go", "the", "dog", "dogs", ".", ",", "!", "'s",
         "(", ")", "\"", "-", "medium", "sized", "I", "'m", "$", "5"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
       st.lists(st.sampled_from(WORDS), max_size=8), st.data())
def test_retokenize_properties(source, insert, data):
    text = detokenize(" ".join(source))
    assert retokenize(source, text) == source  # unchanged text keeps the gold tokens
    at = data.draw(st.integers(0, len(text)))
    output = text[:at] + " ".join(insert) + text[at:]
    tokens = retokenize(source, output)
    assert "".join(tokens) == "".join(output.split())  # every output character, nothing else
