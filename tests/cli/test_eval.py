"""``editspec eval``: ERRANT as the errant_compare command prints it, JSON, GLEU, bad input."""

import json

import pytest

from editspec import cli
from editspec.cli import eval as eval_cli
from editspec.data.m2 import read_blocks, source_tokens
from editspec.evaluation.errant import retokenize
from editspec.evaluation.gleu import gleu
from tests.helpers import GOLD_M2, GOLD_OUTPUTS, errant_compare


@pytest.fixture
def gold(tmp_path):
    path = tmp_path / "gold.m2"
    path.write_text(GOLD_M2, encoding="utf-8")
    return path


class FakeCorrector:
    """Corrects as GOLD_OUTPUTS says, counting its calls."""
    mode = "t5"

    def __init__(self):
        self.calls = 0

    def correct(self, sentences):
        self.calls += 1
        return [GOLD_OUTPUTS.get(s, s) for s in sentences]


def test_text_output_is_errant_compare_output(gold, tmp_path, capsys):
    hyp = tmp_path / "out.txt"
    hyp.write_text("".join(o + "\n" for o in GOLD_OUTPUTS.values()), encoding="utf-8")
    saved = tmp_path / "saved.m2"
    assert cli.main(["eval", "--m2", str(gold), "--hyp", str(hyp), "--cat", "2",
                     "--save-m2", str(saved)]) == 0
    printed = capsys.readouterr().out.split("\n", 1)[1]  # after the timing line
    assert printed == errant_compare(saved, gold, "-cat", "2")  # the installed command


def test_json_report_of_a_corrector(gold, tmp_path, capsys, monkeypatch):
    seen = {}
    corrector = FakeCorrector()

    def load(args):
        seen.update(model=args.model, mode=args.mode, batch_size=args.batch_size)
        return corrector

    monkeypatch.setattr(eval_cli, "load_corrector", load)
    saved = tmp_path / "hyp.txt"
    assert cli.main(["eval", "--m2", str(gold), "--json", "--no-progress", "--model", "BUNDLE",
                     "--mode", "t5", "--batch-size", "1", "--save-hyp", str(saved)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert seen == {"model": "BUNDLE", "mode": "t5", "batch_size": 1}
    assert corrector.calls == 2  # 6 sentences in chunks of 4 x batch size
    assert {k: report[k] for k in ("tp", "fp", "fn", "precision", "recall", "f0.5")} == \
        {"tp": 6, "fp": 2, "fn": 2, "precision": 0.75, "recall": 0.75, "f0.5": 0.75}
    assert report["per_type"]["M:DET"] == {"tp": 0, "fp": 1, "fn": 0, "precision": 0.0,
                                           "recall": 1.0, "f0.5": 0.0}
    assert report["sentences"] == 6 and report["mode"] == "t5" and report["seconds"] >= 0
    assert saved.read_text(encoding="utf-8").splitlines() == list(GOLD_OUTPUTS.values())

    assert cli.main(["eval", "--m2", str(gold), "--json", "--no-progress", "--limit", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sentences"] == 2 and (report["tp"], report["fp"]) == (3, 0)


def test_gleu_with_src_and_refs(gold, tmp_path, capsys, monkeypatch):
    """JFLEG-style: --src and --refs (tokenized, with JFLEG's trailing spaces), plus --m2."""
    monkeypatch.setattr(eval_cli, "load_corrector", lambda args: FakeCorrector())
    sources = [source_tokens(b) for b in read_blocks(gold)]
    src = tmp_path / "dev.src"
    src.write_text("".join(" ".join(t) + " \n" for t in sources), encoding="utf-8")
    ref_tokens = [retokenize(t, o) for t, o in zip(sources, GOLD_OUTPUTS.values())]
    refs = []
    for k, sentences in enumerate([ref_tokens, sources]):
        refs.append(tmp_path / f"dev.ref{k}")
        refs[-1].write_text("".join(" ".join(t) + " \n" for t in sentences), encoding="utf-8")
    assert cli.main(["eval", "--src", str(src), "--refs", *map(str, refs), "--m2", str(gold),
                     "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    expected = gleu(sources, [ref_tokens, sources], ref_tokens)
    assert report["gleu"] == round(expected, 4) and 0 < expected < 1
    assert report["tp"] == 6
    assert cli.main(["eval", "--src", str(src), "--refs", str(refs[0]), "--json",
                     "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gleu"] == 1.0 and "tp" not in report  # output = the only reference


def test_bad_input_is_one_line_before_any_model(gold, tmp_path, capsys, monkeypatch):
    def load(args):
        raise AssertionError("no model for bad input")

    monkeypatch.setattr(eval_cli, "load_corrector", load)
    short = tmp_path / "short.txt"
    short.write_text("one line\n", encoding="utf-8")
    other = tmp_path / "other.src"
    other.write_text("Another sentence .\n", encoding="utf-8")
    two = tmp_path / "two.ref"
    two.write_text("One .\nTwo .\n", encoding="utf-8")
    not_m2 = tmp_path / "plain.m2"
    not_m2.write_text("just text\n", encoding="utf-8")
    cases = [(["--json"], "give a gold set"),
             (["--src", str(short)], "--src needs --refs"),
             (["--m2", str(gold), "--hyp", str(short)], "1 lines for 6 sources"),
             (["--m2", str(gold), "--src", str(other)], "are not the sentences of"),
             (["--src", str(other), "--refs", str(short), str(two)], "two.ref has 2 lines for 1 sources"),
             (["--m2", str(tmp_path / "missing.m2")], "cannot read M2 file"),
             (["--m2", str(not_m2)], "is not an M2 file")]
    for argv, message in cases:
        assert cli.main(["eval", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (argv, err)
