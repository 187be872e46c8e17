"""The grammar step: candidates from the parse, judged by an n-gram language model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from editspec.errors import EditspecError

DEFAULT_LM = Path(__file__).resolve().parents[1] / "models" / "default" / "grammar_lm.bin"
DEFAULT_SETTINGS = DEFAULT_LM.with_name("grammar.json")  # margins and calibration, tuned on FCE


def check_files(lm: Path | None = None, settings: Path | None = None) -> None:
    """One line of error now, before any model loads, where the step's files are missing."""
    for what, path in (("language model", lm or DEFAULT_LM), ("settings", settings or DEFAULT_SETTINGS)):
        if not Path(path).is_file():
            raise EditspecError(f"grammar {what} {path} is missing: reinstall editspec, or run with --no-grammar")


@dataclass(frozen=True)
class Candidate:
    """A rule's proposal (``rules.candidates``), before the language model judges it."""

    start: int  # character offsets of the replaced span in the parsed text
    end: int
    replacement: str
    pattern: str  # sva, noun_num, verb_form, an, det_missing, det_unneeded, confusable
    etype: str  # its ERRANT type
    message: str
