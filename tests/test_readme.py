"""The README's examples, run on the shipped models: what it says they fix, they fix.

Read from the files themselves, so an example changed there is checked as it now reads:
- the Python block of "Using it": each line with ``# -> VALUE`` is evaluated and compared with
  VALUE; the other lines run as written (``Corrector.from_pretrained()`` is the one model load);
- the "Fixed" block: each line appears in ``--format diff`` of the packaged sample (``--sample``);
- the "Missed" sentences: "A~~ B~~ C" is written "A B C" in the sample and comes back "A C";
- the server page's sample text (``editspec/serve/page/index.html``) is the README's, and comes
  back as the README says;
- the worked example at the top of ``editspec/corrector.py``.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAMPLE = ROOT / "editspec" / "samples" / "learner.txt"


@pytest.fixture(scope="module")
def namespace():
    """The README's Python block run up to its first ``# ->`` line: the shipped Corrector, loaded once."""
    import torch

    torch.set_num_threads(1)
    ns: dict = {}
    for line in python_block():
        if "# ->" in line:
            break
        exec(line, ns)
    assert "corrector" in ns, "the README's Python block builds no `corrector`"
    return ns


def python_block() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) == 1, "expected one Python block in README.md"
    return [line for line in blocks[0].splitlines() if line.strip()]


def test_python_example(namespace):
    checked = 0
    started = False
    for line in python_block():
        if "# ->" in line:
            started = True
            code, expected = line.split("# ->", 1)
            assert eval(code, namespace) == ast.literal_eval(expected.strip()), line
            checked += 1
        elif started:
            exec(line, namespace)
    assert checked >= 2


def sample_diff(corrector) -> list[str]:
    from editspec.cli.correct import format_diff

    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    return [format_diff(c) for c in corrector.correct_detailed(lines)]


def test_fixed_and_missed_in_the_sample(namespace):
    corrector = namespace["corrector"]
    diffs = sample_diff(corrector)
    fixed = re.search(r"Fixed \(from `editspec correct --sample --format diff`, the sample shipped in the package\):"
                      r"\n\n```\n(.*?)```",
                      README, re.S)
    assert fixed, "README's 'Fixed' block not found"
    examples = fixed.group(1).splitlines()
    assert examples
    for example in examples:
        assert any(example in d for d in diffs), example

    missed = re.search(r"Missed, in the same file: (.*?)\n\n", README, re.S)
    assert missed, "README's 'Missed' sentence not found"
    quoted = re.findall(r'"([^"]+)"', missed.group(1).replace("\n", " "))
    assert len(quoted) >= 3
    source = SAMPLE.read_text(encoding="utf-8")
    outputs = "\n".join(corrector.correct(source.splitlines()))
    for q in quoted:
        written, comes_back = q.replace("~~", ""), re.sub(r"~~.*?~~", "", q)
        assert written in source, q
        assert comes_back in outputs, q


def test_server_page_sample(namespace):
    page = (ROOT / "editspec" / "serve" / "page" / "index.html").read_text(encoding="utf-8")
    prefilled = re.search(r"<textarea[^>]*>(.*?)</textarea>", page, re.S).group(1)
    stated = re.search(r'Its sample text, "(.*?)",\s+comes back "(.*?)"', README, re.S)
    assert stated, "README states no corrected form of the page's sample text"
    written, comes_back = (" ".join(s.split()) for s in stated.groups())
    assert prefilled == written
    assert written != comes_back
    assert namespace["corrector"].correct([prefilled]) == [comes_back]


def test_corrector_docstring_example(namespace):
    import editspec.corrector

    doc = editspec.corrector.__doc__
    call = re.search(r"corrector\.correct\((\[.*?\])\)\n\s*# -> (\[.*?\])\n", doc)
    assert call, "editspec/corrector.py's worked example not found"
    texts, expected = (ast.literal_eval(g) for g in call.groups())
    assert texts != expected
    assert namespace["corrector"].correct(texts) == expected
