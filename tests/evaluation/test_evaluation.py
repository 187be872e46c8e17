"""ERRANT scoring (equal to the errant_compare command), re-tokenization, GLEU, and `editspec eval`."""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings, strategies as st

from editspec import cli
from editspec import evaluation
from editspec.evaluation import (ErrantEvaluator, ErrantResult, detection_auc, errant_score, gleu, gleu_from_stats,
                                 gleu_stats, paired_bootstrap, retokenize)
from editspec.data.m2 import read_blocks as read_m2
from editspec.text.tokenized import detokenize

# Two annotators, noop annotations, an UNK edit (ignored in correction scoring) and a source token
# spaCy 3 would split ("hasn't"): ERRANT picks per sentence the annotator that maximises corpus F.
GOLD = """\
S He go to school every days .
A 1 2|||R:VERB:SVA|||goes|||REQUIRED|||-NONE-|||0
A 5 6|||R:NOUN:NUM|||day|||REQUIRED|||-NONE-|||0
A 1 2|||R:VERB:TENSE|||went|||REQUIRED|||-NONE-|||1
A 5 6|||R:NOUN:NUM|||day|||REQUIRED|||-NONE-|||1

S I have seen him yesterday .
A 1 3|||R:VERB:TENSE|||saw|||REQUIRED|||-NONE-|||0
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||1

S She does n't like apples .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0
A 0 1|||UNK|||She|||REQUIRED|||-NONE-|||1

S The informations is usefull .
A 1 2|||R:NOUN:INFL|||information|||REQUIRED|||-NONE-|||0
A 3 4|||R:SPELL|||useful|||REQUIRED|||-NONE-|||0
A 1 2|||R:NOUN:INFL|||information|||REQUIRED|||-NONE-|||1
A 2 3|||R:VERB:SVA|||are|||REQUIRED|||-NONE-|||1
A 3 4|||R:SPELL|||useful|||REQUIRED|||-NONE-|||1

S He hasn't go there .
A 2 3|||R:VERB:FORM|||gone|||REQUIRED|||-NONE-|||0

S My friend live in the medium - sized town .
A 2 3|||R:VERB:SVA|||lives|||REQUIRED|||-NONE-|||0
"""
OUTPUTS = {  # natural-text source -> a system's output: right, wrong and missed edits
    "He go to school every days.": "He goes to school every day.",
    "I have seen him yesterday.": "I saw him yesterday.",
    "She doesn't like apples.": "She doesn't like the apples.",
    "The informations is usefull.": "The informations are useful.",
    "He hasn't go there.": "He hasn't gone there.",
    "My friend live in the medium-sized town.": "My friend live in a medium-sized town.",
}
# What ERRANT makes of OUTPUTS (checked by hand: spans index the gold S tokens).
EXPECTED_EDITS = [
    ["A 1 2|||R:VERB:SVA|||goes", "A 5 6|||R:NOUN:NUM|||day"],
    ["A 1 3|||R:VERB:TENSE|||saw"],
    ["A 4 4|||M:DET|||the"],
    ["A 2 3|||R:VERB:SVA|||are", "A 3 4|||R:SPELL|||useful"],
    ["A 2 3|||R:VERB:FORM|||gone"],
    ["A 4 5|||R:DET|||a"],
]
ERRANT_COMPARE = Path(sys.executable).with_name("errant_compare")


@pytest.fixture
def gold(tmp_path):
    path = tmp_path / "gold.m2"
    path.write_text(GOLD, encoding="utf-8")
    return path


def fake_correct(sentences):
    return [OUTPUTS.get(s, s) for s in sentences]


def errant_compare(hyp, ref, *flags, monkeypatch=None, capsys=None) -> str:
    """stdout of ``errant_compare -hyp HYP -ref REF FLAGS``: the installed command, or (given
    pytest's monkeypatch and capsys) its entry point ``compare_m2.main`` in-process, which skips
    the command's 4 s spaCy import."""
    args = ["-hyp", str(hyp), "-ref", str(ref), *flags]
    if monkeypatch is None:
        exe = str(ERRANT_COMPARE) if ERRANT_COMPARE.exists() else shutil.which("errant_compare")
        assert exe, "errant_compare (errant's command) is not installed"
        return subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout
    from errant.commands import compare_m2

    capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["errant_compare", *args])
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
    assert evaluator.sources == list(OUTPUTS)
    assert evaluator.source_tokens[4] == ["He", "hasn't", "go", "there", "."]


def test_hypothesis_edits(gold):
    evaluator = ErrantEvaluator.from_m2(gold)
    blocks = evaluator.annotate(evaluator.tokenize(fake_correct(evaluator.sources)))
    edits = [[line.rsplit("|||", 3)[0] for line in b.split("\n")[1:]] for b in blocks]
    assert edits == EXPECTED_EDITS
    assert all(b.split("\n")[0] == g.split("\n")[0] for b, g in zip(blocks, read_m2(gold)))


def test_scores_equal_errant_compare(gold, tmp_path, monkeypatch, capsys):
    """Overall and per-category numbers equal the errant_compare command's on the same M2 files."""
    evaluator = ErrantEvaluator.from_m2(gold)
    hyp = tmp_path / "hyp.m2"
    blocks = evaluator.annotate(evaluator.tokenize(fake_correct(evaluator.sources)))
    hyp.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    result = errant_score(blocks, read_m2(gold))
    # by hand: 7 hypothesis edits; M:DET and R:DET are wrong; INFL is missed (annotator 1 is
    # chosen for sentence 4); the R:VERB:SVA "lives" of sentence 6 is missed
    assert (result.tp, result.fp, result.fn) == (6, 2, 2)
    assert [sum(c) for c in zip(*result.sentences)] == [6, 2, 2] and len(result.sentences) == len(blocks)
    mine = result.to_dict()
    for cat in (1, 2, 3):
        out = errant_compare(hyp, gold, "-cat", str(cat), monkeypatch=monkeypatch, capsys=capsys)
        overall, cats = parse_compare(out)
        assert overall == [mine["tp"], mine["fp"], mine["fn"], mine["precision"], mine["recall"],
                           mine["f0.5"]]
        per_type = result.per_type(cat)
        assert cats == {k: [v["tp"], v["fp"], v["fn"], v["precision"], v["recall"], v["f0.5"]]
                        for k, v in per_type.items()}
    assert set(result.per_type(1)) == {"M", "R"} and "VERB:SVA" in result.per_type(2)


def test_paired_bootstrap_tells_a_real_gain_from_noise():
    """Sentence counts (tp, fp, fn): B fixes one more error than A in 60 of 400 sentences, a clear
    gain; C differs from A by a right edit here and a wrong one there, which cancel in expectation."""
    def result(sentences):
        tp, fp, fn = (sum(c) for c in zip(*sentences))
        return ErrantResult(tp, fp, fn, sentences=sentences)

    a_rows = [(1, 1, 2) if i % 3 else (0, 0, 2) for i in range(400)]
    a = result(a_rows)
    b = result([(tp + 1, fp, fn - 1) if i % 20 < 3 else (tp, fp, fn) for i, (tp, fp, fn) in enumerate(a_rows)])
    c = result([(tp + 1, fp, fn - 1) if i % 40 == 0 else (tp, fp + 1, fn) if i % 40 == 20 else (tp, fp, fn)
                for i, (tp, fp, fn) in enumerate(a_rows)])
    gain = paired_bootstrap(a, b, samples=500)
    assert gain["delta"] == round(b.f - a.f, 4) > 0
    assert 0 < gain["ci95"][0] < gain["delta"] < gain["ci95"][1] and gain["p"] < 0.01
    noise = paired_bootstrap(a, c, samples=500)
    assert noise["ci95"][0] < 0 < noise["ci95"][1] and 0.05 < noise["p"] < 0.95
    same = paired_bootstrap(a, a, samples=50)
    assert same["delta"] == 0 and same["ci95"] == [0, 0] and same["p"] == 1.0
    assert paired_bootstrap(a, b, samples=200, seed=3) == paired_bootstrap(a, b, samples=200, seed=3)
    with pytest.raises(evaluation.EditspecError):
        paired_bootstrap(a, result(a_rows[:10]))


def test_significance_script_scores_both_files(gold, tmp_path):
    """eval/significance.py: the gold itself against the unchanged sources is a gain no draw undoes."""
    evaluator = ErrantEvaluator.from_m2(gold)
    (tmp_path / "a.txt").write_text("".join(s + "\n" for s in evaluator.sources), encoding="utf-8")
    (tmp_path / "b.txt").write_text("".join(o + "\n" for o in OUTPUTS.values()), encoding="utf-8")
    script = Path(__file__).resolve().parents[2] / "eval" / "significance.py"
    run = subprocess.run([sys.executable, str(script), str(gold), str(tmp_path / "a.txt"),
                          str(tmp_path / "b.txt"), "--samples", "200"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("A ") and "F0.5 0.0000" in lines[0] and lines[1].startswith("B ")
    report = json.loads(lines[2])
    assert report["delta"] > 0 and report["ci95"][0] >= 0 and report["samples"] == 200
    (tmp_path / "short.txt").write_text("one line\n", encoding="utf-8")
    bad = subprocess.run([sys.executable, str(script), str(gold), str(tmp_path / "a.txt"),
                          str(tmp_path / "short.txt")], capture_output=True, text=True)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "short.txt" in bad.stderr


def test_cli_text_output_is_errant_compare_output(gold, tmp_path, capsys):
    hyp = tmp_path / "out.txt"
    hyp.write_text("".join(o + "\n" for o in OUTPUTS.values()), encoding="utf-8")
    saved = tmp_path / "saved.m2"
    assert cli.main(["eval", "--m2", str(gold), "--hyp", str(hyp), "--cat", "2",
                     "--save-m2", str(saved)]) == 0
    printed = capsys.readouterr().out.split("\n", 1)[1]  # after the timing line
    assert printed == errant_compare(saved, gold, "-cat", "2")  # the installed command


def test_identity_scores_no_edits(gold, tmp_path):
    """The identity corrector makes no edits: 0 TP, 0 FP; re-tokenizing everything would charge
    it for spaCy splitting the gold token "hasn't"."""
    evaluator = ErrantEvaluator.from_m2(gold)
    result = evaluator.score(evaluator.sources)
    assert (result.tp, result.fp, result.fn) == (0, 0, 6)  # best annotator per sentence
    whole = ErrantEvaluator.from_m2(gold, retokenize="all").score(evaluator.sources)
    assert (whole.tp, whole.fp) == (0, 1)
    # sources that round-trip through detokenize + spaCy score no edits either way
    roundtrip = [b for b in read_m2(gold) if "hasn't" not in b]
    for mode in ("changed", "all"):
        ev = ErrantEvaluator(roundtrip, retokenize=mode)
        assert (lambda r: (r.tp, r.fp))(ev.score(ev.sources)) == (0, 0)


def test_from_pairs_and_evaluate():
    """Gold edits extracted from parallel text: the targets score perfectly, the sources score 0."""
    sources = ["She go to school every days.", "I like it.", "He hasn't go there."]
    targets = ["She goes to school every day.", "I like it.", "He hasn't gone there."]
    dev = ErrantEvaluator.from_pairs(sources, targets)
    assert dev.sources == sources and dev.source_tokens[2] == "He has n't go there .".split()
    result, outputs, seconds = evaluation.evaluate(lambda xs: [dict(zip(sources, targets))[x]
                                                               for x in xs], dev)
    assert outputs == targets and seconds >= 0
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


def test_gleu_worked_example():
    """One sentence, one reference; n-gram counts by hand.

    source  the cat sat on mat         reference  the cat sat on the mat
    (a) hypothesis = source: it keeps "on mat", which the reference rewrote: penalised.
        1-grams 5 of 5 in r;  2-grams: 3 in r minus "on mat" (in s, not in r) = 2 of 4;
        3-grams 2 - "sat on mat" = 1 of 3;  4-grams 1 - "cat sat on mat" = 0 of 2  -> GLEU 0
    (b) hypothesis "the cat sat on a mat": 5/6, 3/5, 2/4, 1/3, |h| = |r| (no brevity penalty)
        -> GLEU = (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = (1/12) ** (1/4)
    """
    s, r = "the cat sat on mat".split(), "the cat sat on the mat".split()
    a, b = s, "the cat sat on a mat".split()
    assert gleu_stats(s, r, a) == [5, 6, 5, 5, 2, 4, 1, 3, 0, 2]
    assert gleu_stats(s, r, b) == [6, 6, 5, 6, 3, 5, 2, 4, 1, 3]
    assert gleu([s], [[r]], [a]) == 0.0
    assert gleu([s], [[r]], [b]) == pytest.approx((1 / 12) ** 0.25)
    # a corpus sums the statistics before scoring; a short hypothesis pays exp(1 - r/c)
    s2, r2 = "he go home".split(), "he goes home now".split()
    h2 = "he goes home".split()
    assert gleu_stats(s2, r2, h2) == [3, 4, 3, 3, 2, 2, 1, 1, 0, 0]  # no 4-gram: 0 of 0
    total = [x + y for x, y in zip(gleu_stats(s, r, b), gleu_stats(s2, r2, h2))]
    assert total == [9, 10, 8, 9, 5, 7, 3, 5, 1, 3]
    expected = math.exp(1 - 10 / 9) * (8 / 9 * 5 / 7 * 3 / 5 * 1 / 3) ** 0.25
    assert gleu([s, s2], [[r, r2]], [b, h2]) == pytest.approx(expected)
    assert gleu_from_stats(total) == pytest.approx(expected)
    # with several references each round samples one per sentence; equal references change nothing
    assert gleu([s, s2], [[r, r2], [r, r2]], [b, h2]) == pytest.approx(expected)


JFLEG = Path(__file__).resolve().parents[3] / "shared" / "data" / "jfleg_dev"


@pytest.mark.skipif(not (JFLEG / "dev.src").exists(), reason="shared JFLEG dev data not present")
def test_gleu_reproduces_jfleg_source_score():
    """JFLEG's paper reports GLEU 38.21 for the unchanged dev sources (keisks/jfleg gleu.py)."""
    src = [line.split() for line in (JFLEG / "dev.src").open(encoding="utf-8")]
    refs = [[line.split() for line in (JFLEG / f"dev.ref{k}").open(encoding="utf-8")]
            for k in range(4)]
    assert round(gleu(src, refs, src) * 100, 2) == 38.21


class FakeCorrector:
    mode = "t5"
    calls = 0

    def correct(self, sentences):
        FakeCorrector.calls += 1
        return fake_correct(sentences)


def test_cli_eval_json(gold, tmp_path, capsys, monkeypatch):
    seen = {}

    def load(args):
        seen.update(model=args.model, mode=args.mode, batch_size=args.batch_size)
        return FakeCorrector()

    monkeypatch.setattr(evaluation, "load_corrector", load)
    saved = tmp_path / "hyp.txt"
    assert cli.main(["eval", "--m2", str(gold), "--json", "--no-progress", "--model", "BUNDLE",
                     "--mode", "t5", "--batch-size", "1", "--save-hyp", str(saved)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert seen == {"model": "BUNDLE", "mode": "t5", "batch_size": 1}
    assert FakeCorrector.calls >= 2  # chunks of 4 x batch size
    assert {k: report[k] for k in ("tp", "fp", "fn", "precision", "recall", "f0.5")} == \
        {"tp": 6, "fp": 2, "fn": 2, "precision": 0.75, "recall": 0.75, "f0.5": 0.75}
    assert report["per_type"]["M:DET"] == {"tp": 0, "fp": 1, "fn": 0, "precision": 0.0,
                                           "recall": 1.0, "f0.5": 0.0}
    assert report["sentences"] == 6 and report["mode"] == "t5" and report["seconds"] >= 0
    assert saved.read_text(encoding="utf-8").splitlines() == list(OUTPUTS.values())

    assert cli.main(["eval", "--m2", str(gold), "--json", "--no-progress", "--limit", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sentences"] == 2 and (report["tp"], report["fp"]) == (3, 0)


def test_cli_eval_gleu(gold, tmp_path, capsys, monkeypatch):
    """JFLEG-style: --src and --refs (tokenized, with JFLEG's trailing spaces), plus --m2."""
    monkeypatch.setattr(evaluation, "load_corrector", lambda args: FakeCorrector())
    blocks = read_m2(gold)
    src = tmp_path / "dev.src"
    src.write_text("".join(b.split("\n")[0][2:] + " \n" for b in blocks), encoding="utf-8")
    ref_tokens = [retokenize(b.split("\n")[0][2:].split(), o) for b, o in zip(blocks, OUTPUTS.values())]
    refs = []
    for k, sentences in enumerate([ref_tokens, [b.split("\n")[0][2:].split() for b in blocks]]):
        refs.append(tmp_path / f"dev.ref{k}")
        refs[-1].write_text("".join(" ".join(t) + " \n" for t in sentences), encoding="utf-8")
    assert cli.main(["eval", "--src", str(src), "--refs", *map(str, refs), "--m2", str(gold),
                     "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    sources = [b.split("\n")[0][2:].split() for b in blocks]
    expected = gleu(sources, [ref_tokens, sources], ref_tokens)
    assert report["gleu"] == round(expected, 4) and 0 < expected < 1
    assert report["tp"] == 6
    assert cli.main(["eval", "--src", str(src), "--refs", str(refs[0]), "--json",
                     "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gleu"] == 1.0 and "tp" not in report  # output = the only reference


def test_cli_eval_errors(gold, tmp_path, capsys):
    assert cli.main(["eval", "--json"]) == 2
    short = tmp_path / "short.txt"
    short.write_text("one line\n", encoding="utf-8")
    assert cli.main(["eval", "--m2", str(gold), "--hyp", str(short)]) == 2
    assert "1 lines for 6 sources" in capsys.readouterr().err


def test_detection_auc_counts_ordered_pairs():
    """AUC = P(positive scores above negative), ties half: checked against all pairs, with ties."""
    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 7, (300,), generator=g).float()  # few values: many ties
    positive = torch.rand(300, generator=g) < 0.2
    pos, neg = scores[positive], scores[~positive]
    pairs = (pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double()
    assert detection_auc(scores, positive) == pytest.approx(float(pairs.mean()))
    labels = torch.tensor([False, False, True, True])
    assert detection_auc(torch.tensor([0.0, 1.0, 2.0, 3.0]), labels) == 1.0
    assert detection_auc(torch.tensor([3.0, 2.0, 1.0, 0.0]), labels) == 0.0
    assert detection_auc(torch.zeros(4), labels) == 0.5

