"""The house rule on functions (the brief; issue 76): none in editspec/ over 60 lines (the ``def``
line to the last, decorators aside), none with 10+ parameters (``self``/``cls`` aside)."""

import ast
from pathlib import Path

MAX_LINES, MAX_PARAMETERS = 60, 9
ROOT = Path(__file__).resolve().parents[1] / "editspec"

# Known and named, not a file-wide pass: the decoding core's ``generate`` still takes 11 parameters
# (its ~60 callers pass them by keyword; a typed request for it is issue 76's open remainder).
KNOWN = {"decoding/core.py generate: 11 parameters"}


def parameters(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = f.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
    return n - bool(names and names[0].arg in ("self", "cls"))


def oversized(source: str) -> list[str]:
    """'name: N lines' / 'name: N parameters' for each function of ``source`` over the limits."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (lines := node.end_lineno - node.lineno + 1) > MAX_LINES:
                found.append(f"{node.name}: {lines} lines")
            if (n := parameters(node)) > MAX_PARAMETERS:
                found.append(f"{node.name}: {n} parameters")
    return found


def test_the_check_finds_a_long_function_and_a_wide_one():
    long = "def f():\n" + "    x = 1\n" * 60
    wide = "class C:\n    def g(self, a, b, c, d, e, f, g, h, i, j=0):\n        pass\n"
    assert oversized(long) == ["f: 61 lines"] and oversized(long.replace("    x = 1\n", "", 1)) == []
    assert oversized(wide) == ["g: 10 parameters"] and oversized(wide.replace(", j=0", "")) == []


def test_no_function_in_editspec_is_over_60_lines_or_takes_10_parameters():
    files = {p.relative_to(ROOT).as_posix(): p for p in ROOT.rglob("*.py")}
    found = {f"{name} {what}" for name, p in sorted(files.items())
             for what in oversized(p.read_text(encoding="utf-8"))}
    assert found == KNOWN  # a mended one leaves the list too
