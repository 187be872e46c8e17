"""``editspec correct`` start-up: an empty input writes an empty output without importing the
heavy libraries (torch, transformers, spaCy, datasets, matplotlib, accelerate) or loading a model."""

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "transformers", "spacy", "errant", "datasets", "matplotlib", "accelerate", "starlette",
         "symspellpy", "ctranslate2", "pyarrow", "ray")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("flags", [[], ["--threads", "1"]])
def test_empty_input_imports_nothing_heavy(tmp_path, flags):
    source, out = tmp_path / "empty.txt", tmp_path / "out.txt"
    source.write_bytes(b"")
    code = ("import sys\nfrom editspec import cli\n"
            f"rc = cli.main(['correct', {str(source)!r}, '-o', {str(out)!r}, '--no-progress', *{flags!r}])\n"
            f"print(rc, *sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.split() == ["0"], done.stdout  # exit 0 and none of HEAVY imported
    assert out.read_bytes() == b""


def test_empty_stdin_gives_empty_stdout():
    done = subprocess.run([sys.executable, "-m", "editspec", "correct", "-", "--no-progress"], input=b"",
                          capture_output=True, check=True, cwd=ROOT)
    assert done.stdout == b""
