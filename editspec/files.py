"""Reading and writing text files for the commands: input lines in bounded blocks with their exact
endings, and output written in full or not at all.

    input     b"She go home.\r\nThey was late.\n" -> [Line("She go home.", "\r\n", 14),
                                                       Line("They was late.", "\n", 15)]
    output    atomic_output("out.txt"): a hidden temporary file beside out.txt, renamed over it at
              the end; removed on any failure, Ctrl-C or SIGTERM
    leftovers a SIGKILL leaves ".out.txt.k3j_x9ab.tmp"; the next run into that folder removes it
              when it is older than a minute and no live run holds its lock
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from editspec.errors import EditspecError

BLOCK_LINES, BLOCK_CHARS = 1000, 200_000  # lines corrected together (bounded memory, good batches)
STALE_SECONDS = 60  # an unlocked temporary file of ours this old is a killed run's
# line breaks to str.splitlines and JavaScript besides those JSON escapes anyway (controls < 0x20)
LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


TABLES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}  # editspec.tables


def table_format(name: str | os.PathLike) -> str | None:
    """"jsonl", "csv" or "parquet" for a table's file name (by extension), else None."""
    return TABLES.get(Path(name).suffix.lower())


def is_table(name: str) -> bool:
    """Whether ``editspec correct`` reads ``name`` as a table (``editspec.tables``): a table's
    extension, or a folder (of Parquet files)."""
    return name != "-" and (table_format(name) is not None or Path(name).is_dir())


@dataclass
class Line:
    text: str
    ending: str  # "\n", "\r\n" or "" (last line without newline)
    size: int  # bytes in the input


def open_input(name: str) -> IO[bytes]:
    if name == "-":
        return sys.stdin.buffer
    path = Path(name)
    if path.is_dir():
        raise EditspecError(f"{name} is a directory, not a text file")
    try:
        return path.open("rb")
    except FileNotFoundError as e:
        raise EditspecError(f"{name}: no such file") from e
    except OSError as e:
        raise EditspecError(f"cannot read {name}: {e.strerror or e}") from e


def read_blocks(stream: IO[bytes], name: str) -> Iterator[list[Line]]:
    """Decoded lines in blocks; only ``\\n`` ends a line, ``\\r\\n`` is kept as the line's ending."""
    block: list[Line] = []
    chars = 0
    for number, raw in enumerate(stream, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            where = "" if name == "-" else f"{name}: "
            raise EditspecError(f"{where}line {number} is not UTF-8 text (byte 0x{raw[e.start]:02x} "
                                f"at byte {e.start + 1} of the line)") from e
        ending = "\r\n" if text.endswith("\r\n") else "\n" if text.endswith("\n") else ""
        block.append(Line(text[: len(text) - len(ending)], ending, len(raw)))
        chars += len(text)
        if len(block) >= BLOCK_LINES or chars >= BLOCK_CHARS:
            yield block
            block, chars = [], 0
    if block:
        yield block


def json_line(value: dict, default=None) -> str:
    """One JSON line, non-ASCII text as it is, except the characters that a line-splitting reader
    (``str.splitlines``, JavaScript) takes for a line break: escaped, so one record is one line.
    ``default`` as in ``json.dumps``."""
    return json.dumps(value, ensure_ascii=False, default=default).translate(LINE_BREAKS) + "\n"


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, a job scheduler) unwinds like Ctrl-C, so ``finally`` blocks run."""
    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def atomic_output(name: str) -> Iterator[IO[bytes]]:
    """stdout, or a file written in full or not at all: a temporary file in the same directory,
    renamed over ``name`` at the end; on any failure, Ctrl-C or SIGTERM the temporary file is
    removed."""
    with _sigterm_as_interrupt():
        if name == "-":
            if sys.stdout is None:  # `editspec correct f >&-`
                raise EditspecError("standard output is closed; write to a file with -o FILE")
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
            return
        target = Path(name)
        if target.is_dir():
            raise EditspecError(f"output {name} is a directory")
        folder = target.parent
        if not folder.is_dir():
            raise EditspecError(f"output folder {folder} does not exist")
        remove_stale(folder, target.name)
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        except OSError as e:
            raise EditspecError(f"cannot write in {folder}: {e.strerror or e}") from e
        with contextlib.suppress(OSError):  # held while this run lives: not stale to the next
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            if target.exists():
                mode = target.stat().st_mode & 0o7777
            else:  # what open() would have created
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def remove_stale(folder: Path, name: str) -> list[str]:
    """Remove what killed runs left in ``folder``: ``atomic_output``'s temporary files for
    ``name`` (``.NAME.XXXXXXXX.tmp``, ``tempfile.mkstemp``'s 8 characters) older than
    ``STALE_SECONDS`` whose lock no live run holds. Returns the names removed."""
    ours = re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp")
    removed = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not ours.fullmatch(entry.name):
                continue
            with contextlib.suppress(OSError):
                if not entry.is_file(follow_symlinks=False) or \
                        time.time() - entry.stat(follow_symlinks=False).st_mtime < STALE_SECONDS:
                    continue
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while its run lives
                    os.unlink(entry.path)
                    removed.append(entry.name)
                finally:
                    os.close(fd)
    return removed
