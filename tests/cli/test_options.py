"""The command line as a new user meets it: every option explained with its default, --version,
--text, --format m2, -o into a missing folder failing before the models load, a progress bar in
lines, a loading line and a summary line; the API's typed edits."""

import argparse
import json
import sys

import pytest

from editspec import __version__, cli
from editspec.cli import correct as correct_cli
from editspec.corrector import Corrector
from editspec.errors import EditspecError
from editspec.data import m2
from editspec.post import error_types
from editspec.data.tokenized import tokenize_for_errant
from tests.helpers import sentences, tiny_bundle


@pytest.fixture(scope="module")
def models(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer)


def test_every_option_has_help_that_shows_its_default():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        for action in p._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.option_strings)
            shown = p.formatter_class(p.prog)._get_help_string(action)
            if action.default not in (None, False):
                assert "default" in shown, (name, action.option_strings)
    assert "(default: 8081)" in " ".join(sub.choices["serve"].format_help().split())
    assert "(default: 16)" in " ".join(sub.choices["correct"].format_help().split())


def test_version(capsys):
    assert cli.main(["--version"]) == 0 and capsys.readouterr().out == f"editspec {__version__}\n"


def test_text_on_the_command_line(models, capsysbinary):
    rc = cli.main(["correct", "--text", "He go home.", "--text", "  two  spaces", "--model", str(models / "identity")])
    out, err = capsysbinary.readouterr()
    assert rc == 0 and out == b"He go home.\n  two  spaces\n"
    assert b"editspec: 2 lines read, 0 changed" in err  # the summary line
    assert cli.main(["correct", "in.txt", "--text", "x"]) == 2
    assert "not both" in capsysbinary.readouterr().err.decode()


def test_missing_output_folder_fails_before_the_models_load(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(Corrector, "from_pretrained", lambda *a, **k: pytest.fail("a model loaded"))
    src = tmp_path / "in.txt"
    src.write_text("He go home.\n")
    assert cli.main(["correct", str(src), "-o", str(tmp_path / "no" / "out.txt")]) == 2
    err = capsys.readouterr().err
    assert err == f"editspec: error: output folder {tmp_path / 'no'} does not exist\n"
    assert cli.main(["correct", str(src), "--column", "text"]) == 2
    assert "--column is for a table input" in capsys.readouterr().err


def test_format_m2_is_errant_m2_of_each_line(models, tmp_path, capsysbinary):
    lines = sentences(12, seed=3) + [""]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n")
    args = ["correct", str(src), "--model", str(models / "bundle"), "--mode", "edit5", "--no-progress"]
    assert cli.main([*args, "--format", "m2"]) == 0
    blocks = capsysbinary.readouterr()[0].decode().strip("\n").split("\n\n")
    assert cli.main(args) == 0
    outputs = capsysbinary.readouterr()[0].decode().splitlines()
    assert len(blocks) == len(lines) == len(outputs)
    edited = 0
    for line, output, block in zip(lines, outputs, blocks):
        tokens, edits = m2.parse_block(block)
        assert tokens == tokenize_for_errant(line).split()
        edits = [e for e in edits if e.type != "noop"]
        edited += bool(edits)
        assert m2.apply_edits(tokens, edits) == tokenize_for_errant(output).split()  # the edits make the output
    assert edited  # the random model edits: the test can fail


def test_api_edits_carry_the_jsonl_type_and_message(models):
    corrector = Corrector.from_pretrained(models / "bundle", mode="edit5", device="cpu")
    texts = sentences(10, seed=4)
    typed = corrector.correct_detailed(texts, types=True)
    plain = corrector.correct_detailed(texts)
    assert [[(e.start, e.end, e.original, e.correction) for e in c.edits] for c in typed] == \
        [[(e.start, e.end, e.original, e.correction) for e in c.edits] for c in plain]
    assert all(e.type is None for c in plain for e in c.edits)
    classes = error_types.classify(plain)
    assert any(classes)
    for c, types in zip(typed, classes):
        assert [e.type for e in c.edits] == types
        assert [e.message for e in c.edits] == [error_types.message(t) for t in types]


def test_progress_counts_rows_and_loading_is_said(monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with correct_cli.loading(True):
        pass
    assert capsys.readouterr().err == "editspec: loading models ...\r\x1b[K"
    progress = correct_cli.Progress(30, "lines", True)
    update = progress.block(10, 200)
    update(100)
    assert progress.bar.n == 5  # half the block's characters: half its lines
    update(150)
    assert progress.bar.n == 10  # never past the block
    progress.done()
    progress.block(20, 50)
    progress.done()
    assert progress.bar.n == progress.bar.total == 30
    progress.close()


def test_count_lines(tmp_path):
    path = tmp_path / "f.txt"
    for data, n in ((b"", 0), (b"a", 1), (b"a\n", 1), (b"a\r\nb", 2), (b"\n\n", 2)):
        path.write_bytes(data)
        assert correct_cli._count_lines(str(path)) == n
    assert correct_cli._count_lines("-") is None  # stdin: no total


def test_output_naming_the_input_is_refused_without_in_place(tmp_path, capsys, monkeypatch):
    """Issue 78: -o naming the input (or a link to it) is one line of error before the models
    load, and the input is as it was; --in-place is only for a file."""
    monkeypatch.setattr(Corrector, "from_pretrained", lambda *a, **k: pytest.fail("a model loaded"))
    src = tmp_path / "in.txt"
    src.write_text("He go home.\n")
    (tmp_path / "link.txt").symlink_to(src)
    for output in (str(src), str(tmp_path / "link.txt"), str(tmp_path / "." / "in.txt")):
        assert cli.main(["correct", str(src), "-o", output]) == 2
        err = capsys.readouterr().err
        assert err == f"editspec: error: -o {output} is the input file: add --in-place to replace it with its correction\n"
    for argv in (["--text", "x", "--in-place"], ["-", "--in-place"], [str(src), "--in-place", "-o", str(tmp_path / "o")],
                 [str(tmp_path), "--in-place"]):
        assert cli.main(["correct", *argv]) == 2 and capsys.readouterr().err.count("\n") == 1
    assert src.read_text() == "He go home.\n"


def test_in_place_replaces_the_input_only_once_complete(models, tmp_path, capsys, monkeypatch):
    src = tmp_path / "in.txt"
    src.write_text("He go home.\nShe like it.\n")
    model = ["--model", str(models / "identity"), "--no-progress", "--format", "jsonl"]
    assert cli.main(["correct", str(src), "--in-place", *model]) == 0
    assert [json.loads(line)["input"] for line in src.read_text().splitlines()] == ["He go home.", "She like it."]
    src.write_text("He go home.\n")
    assert cli.main(["correct", str(src), "-o", str(src), "--in-place", *model]) == 0
    assert json.loads(src.read_text())["output"] == "He go home."

    def fail(*a, **k):
        raise EditspecError("the model failed")

    monkeypatch.setattr(Corrector, "correct_detailed", fail)
    src.write_text("He go home.\n")
    assert cli.main(["correct", str(src), "--in-place", *model]) == 2
    assert src.read_text() == "He go home.\n" and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_help_is_plain_text_and_a_bare_command_shows_its_usage(capsys):
    """Issue 78: no reST markup in any help text; a bare ``editspec`` prints its usage line."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for text in [parser.format_help(), *(p.format_help() for p in sub.choices.values())]:
        assert "``" not in text
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: editspec [-h]") and "{correct,data,eval,profile,serve}" in err
    assert err.endswith("editspec: give a command (editspec --help: what each does)\n")


def test_one_line_read_is_singular(models, capsysbinary):
    assert cli.main(["correct", "--text", "He go home.", "--model", str(models / "identity")]) == 0
    assert b"editspec: 1 line read, 0 changed" in capsysbinary.readouterr().err


def test_building_the_spelling_index_says_what_it_does_and_that_it_is_once(tmp_path, monkeypatch, capsys):
    """The first run's index build (seconds) is said on stderr, and not with --no-progress."""
    from symspellpy import SymSpell

    from editspec.pre import lexicon

    def tiny() -> SymSpell:
        symspell = SymSpell(max_dictionary_edit_distance=2)
        symspell.create_dictionary_entry("world", 10)
        return symspell

    monkeypatch.setattr(lexicon, "build_symspell", tiny)
    monkeypatch.setattr(lexicon, "zipf_table", lambda: iter([("world", 5.9)]))
    try:
        cli.say_progress(True)
        lexicon.build(tmp_path / "a" / "index.sqlite")
        err = capsys.readouterr().err
        assert f"editspec: building the spelling index in {tmp_path / 'a'} (once: later runs open it" in err
        assert "editspec: spelling index built in" in err
        cli.say_progress(False)
        lexicon.build(tmp_path / "b" / "index.sqlite")
        assert capsys.readouterr().err == ""
    finally:
        cli.say_progress(False)
