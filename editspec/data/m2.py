"""M2 files, read one way: the blocks as ERRANT splits them, and each block parsed into its source
tokens and edits.

An M2 block is one ``S`` line (the spaCy-tokenized source) and an ``A`` line per edit::

    S She go to school yesterday .
    A 1 2|||R:VERB:SVA|||goes|||REQUIRED|||-NONE-|||0
    A 1 2|||R:VERB:TENSE|||went|||REQUIRED|||-NONE-|||1

``read_blocks`` gives the block texts, split exactly as ``errant_compare`` splits a file (ERRANT
scores them); ``parse_m2`` gives ``(["She", "go", ...], [Edit(1, 2, "R:VERB:SVA", ["goes"], 0),
Edit(1, 2, "R:VERB:TENSE", ["went"], 1)])``; ``apply_edits`` with annotator 0's edits gives the
target tokens ``She goes to school yesterday .``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

from editspec.errors import EditspecError

SKIP_TYPES = {"noop", "UNK", "Um"}  # an annotator's "no edit", unknown corrections, NUCLE's "Um"


class Edit(NamedTuple):
    start: int
    end: int
    type: str
    correction: list[str]
    annotator: int


def read_blocks(path: str | os.PathLike, limit: int | None = None) -> list[str]:
    """M2 blocks ("S ..." plus its "A ..." lines), split exactly as errant_compare splits them."""
    try:
        blocks = Path(path).read_text(encoding="utf-8").strip().split("\n\n")
    except OSError as e:
        raise EditspecError(f"cannot read M2 file {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise EditspecError(f"M2 file {path} is not UTF-8 text") from e
    if not blocks[0].startswith("S "):
        raise EditspecError(f"{path} is not an M2 file (no 'S ' line first)")
    return blocks[:limit] if limit is not None else blocks


def source_tokens(block: str) -> list[str]:
    """The gold tokens of an M2 block's S line."""
    return block.split("\n", 1)[0][2:].split()


def parse_m2(lines: Iterable[str]) -> Iterator[tuple[list[str], list[Edit]]]:
    """(source tokens, edits) per M2 block of ``lines`` (an open file, or a block's lines)."""
    source: list[str] | None = None
    edits: list[Edit] = []
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if line.startswith("S ") or line == "S":
            if source is not None:
                yield source, edits
            source, edits = line[2:].split(), []
        elif line.startswith("A "):
            if source is None:
                raise EditspecError(f"M2 line {n}: an A line before any S line")
            fields = line[2:].split("|||")
            try:
                start, end = (int(x) for x in fields[0].split())
                edits.append(Edit(start, end, fields[1], fields[2].split(), int(fields[-1])))
            except (ValueError, IndexError):
                raise EditspecError(f"M2 line {n}: malformed edit {line!r}") from None
        elif line.strip() == "":
            if source is not None:
                yield source, edits
            source, edits = None, []
        else:
            raise EditspecError(f"M2 line {n}: expected an 'S ' or 'A ' line, got {line[:40]!r}")
    if source is not None:
        yield source, edits


def parse_block(block: str) -> tuple[list[str], list[Edit]]:
    """(source tokens, edits) of one block from ``read_blocks``."""
    return next(parse_m2(block.split("\n")))


def apply_edits(source: Sequence[str], edits: Sequence[Edit]) -> list[str]:
    """Target tokens: the edits (one annotator's, in file order for equal starts) applied to source."""
    target = list(source)
    shift = 0
    for start, end, kind, correction, _ in sorted(edits, key=lambda e: e[0]):  # stable
        if kind in SKIP_TYPES or start < 0 or correction == ["-NONE-"]:
            continue
        target[start + shift:end + shift] = correction
        shift += len(correction) - (end - start)
    return target


def is_m2(path: str | os.PathLike) -> bool:
    """An .m2 file, or a file whose first non-empty line is an ``S`` line."""
    p = Path(path)
    if p.suffix == ".m2":
        return True
    try:
        with open(p, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    return line.startswith("S ")
    except OSError as e:
        raise EditspecError(f"cannot read {path}: {e.strerror}") from e
    except UnicodeDecodeError:
        raise EditspecError(f"{path} is not UTF-8 text") from None
    return False
