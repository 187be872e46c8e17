"""``editspec correct``: a file (or stdin) corrected line by line into a file (or stdout), as text,
a ``[-old-]{+new+}`` diff or JSON lines with character-offset edits."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator

from tqdm import tqdm

from editspec.cli.model_options import add_correction_options, add_model_options, corrector_from_args
from editspec.errors import EditspecError
from editspec.files import Line, atomic_output, open_input, read_blocks
from editspec.text import error_types
from editspec.text.diff import Correction

RED, GREEN, RESET = "\x1b[31m", "\x1b[32m", "\x1b[0m"
# line breaks to str.splitlines and JavaScript besides those JSON escapes anyway (controls < 0x20)
LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``correct`` subcommand with its options (the model options included)."""
    p = sub.add_parser("correct", help="correct the text of a file (one output line per input line)")
    p.add_argument("input", help="input text file, or - for stdin")
    p.add_argument("-o", "--output", default="-", help="output file (written atomically), - for stdout")
    p.add_argument("--format", choices=("text", "jsonl", "diff"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour for --format diff")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--max-length", type=int, default=None,
                   help="longest model input in tokens with EOS; longer sentences are split "
                        "(default: the length the models were trained with)")
    add_model_options(p)
    add_correction_options(p)
    return p


def json_line(value: dict) -> str:
    """One JSON line, non-ASCII text as it is, except the characters that a line-splitting reader
    (``str.splitlines``, JavaScript) takes for a line break: escaped, so one record is one line."""
    return json.dumps(value, ensure_ascii=False).translate(LINE_BREAKS) + "\n"


def format_diff(c: Correction, color: bool = False) -> str:
    """``input`` with edits marked ``[-old-]{+new+}`` (wdiff style), coloured if asked."""
    red, green, reset = (RED, GREEN, RESET) if color else ("", "", "")
    parts, cursor = [], 0
    for e in c.edits:
        parts.append(c.input[cursor:e.start])
        if e.original:
            parts.append(f"{red}[-{e.original}-]{reset}")
        if e.correction:
            parts.append(f"{green}{{+{e.correction}+}}{reset}")
        cursor = e.end
    parts.append(c.input[cursor:])
    return "".join(parts)


def _use_color(args) -> bool:
    if args.color != "auto":
        return args.color == "always"
    return args.output == "-" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def run_correct(args) -> int:
    """Correct ``args.input`` into ``args.output``. Launched as several processes (``torchrun
    --nproc-per-node N -m editspec correct ...`` or ``accelerate launch``), each process corrects
    its share of every block of lines (``accelerate``'s ``split_between_processes``: contiguous,
    the first to process 0) and process 0 gathers the shares and writes them in the input's order."""

    state = _processes(args)
    main = state is None or state.is_main_process
    if state is not None:
        from accelerate.utils import gather_object
    stream = open_input(args.input)
    try:
        blocks = read_blocks(stream, args.input)
        first = next(blocks, None)  # a non-UTF-8 start fails before the model loads
        # torch loads here, after the input is checked; an empty input needs no model (its output
        # is empty), so it costs no torch import and no model load (start-up: editspec.cli)
        corrector = corrector_from_args(args) if first is not None else None
        total = os.fstat(stream.fileno()).st_size if args.input != "-" and Path(args.input).is_file() else None
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="correcting", file=sys.stderr,
                   disable=args.no_progress or not sys.stderr.isatty() or not main, dynamic_ncols=True)
        done = 0
        try:
            with (atomic_output(args.output) if main else contextlib.nullcontext()) as out, bar:
                color = _use_color(args)
                # a UTF-8 byte order mark is not text: keep it out of the model, write it back
                bom = first is not None and first[0].text.startswith("\ufeff")
                if bom:
                    first[0].text = first[0].text[1:]
                for block in _chain(first, blocks):
                    if state is None:
                        text = _formatted(corrector, block, args, color, bar.update)
                    else:
                        with state.split_between_processes(block) as mine:
                            text = _formatted(corrector, mine, args, color, bar.update) if mine else ""
                        text = "".join(gather_object([text]))
                    if bom and done == 0 and args.format != "jsonl":
                        text = "\ufeff" + text
                    if main:
                        out.write(text.encode("utf-8"))
                        if args.output == "-":
                            out.flush()
                    done += sum(line.size for line in block)
                    bar.n = done  # progress counted characters; resync to bytes read
                    bar.refresh()
        except BrokenPipeError:  # `editspec correct f | head`: the reader left, not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 1
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    return 0


def _processes(args):
    """accelerate's ``PartialState`` when launched as several processes (torchrun / accelerate
    launch set WORLD_SIZE), else None. Each process reads the input itself: a file, not stdin.
    On GPUs each process takes its own (``--device`` unset)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    if args.input == "-":
        raise EditspecError("several processes read the input each: give a file, not stdin")
    from accelerate import PartialState

    state = PartialState()
    if args.device is None:
        args.device = str(state.device)
    return state


def _formatted(corrector, block: list[Line], args, color: bool, progress) -> str:
    """The output of ``block``'s lines in the chosen format (text needs no edits: no line diffs)."""
    texts = [line.text for line in block]
    if args.format == "text":
        return "".join(out + line.ending for line, out in zip(block, corrector.correct(texts, progress=progress)))
    results = corrector.correct_detailed(texts, progress=progress)
    # jsonl: each edit with its ERRANT type and message (editspec.text.error_types)
    types = error_types.classify(results) if args.format == "jsonl" else [[]] * len(results)
    lines = []
    for line, c, c_types in zip(block, results, types):
        if args.format == "jsonl":
            lines.append(json_line(error_types.typed_dict(c, c_types)))
        elif args.format == "diff":
            lines.append(format_diff(c, color) + line.ending)
        else:
            lines.append(c.output + line.ending)
    return "".join(lines)


def _chain(first: list[Line] | None, rest: Iterable[list[Line]]) -> Iterator[list[Line]]:
    if first is not None:
        yield first
    yield from rest
