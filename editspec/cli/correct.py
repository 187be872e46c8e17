"""``editspec correct``: text lines or a table's column, corrected into a file (or stdout).

    text     a file (or stdin, or ``--text``) line by line: the corrected lines, a
             ``[-old-]{+new+}`` diff, JSON lines with typed character-offset edits, or ERRANT M2
    tables   ``--column C``: .jsonl, .csv, .parquet files, or a folder of .parquet files, into the
             same columns plus ``corrected`` and ``edits`` (``editspec.tables``); ``--ray``: the
             same through Ray Data (``editspec.ray_data``)

Every option is checked, and every input opened, before the models load; stderr gets a progress
bar in lines or rows, and one summary line at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from editspec.cli.model_options import add_correction_options, add_model_options, corrector_from_args
from editspec.errors import EditspecError
from editspec.files import Line, atomic_output, is_table, json_line, open_input, read_blocks
from editspec.post.diff import Correction

RED, GREEN, RESET = "\x1b[31m", "\x1b[32m", "\x1b[0m"
SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "learner.txt"  # package data: in a wheel too
FORMATS = ("text", "jsonl", "diff", "m2")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``correct`` subcommand with its options (the model options included)."""
    p = sub.add_parser("correct", help="correct text lines, or a column of a table (.jsonl, .csv, .parquet)",
                       description="Correct text lines, or a column of a table, into a file or stdout.")
    p.add_argument("input", nargs="?", default=None,
                   help="a text file (one output line per input line), - for stdin, or a table with --column: "
                        ".jsonl, .csv, .parquet, or a folder of .parquet files")
    p.add_argument("--text", action="append", default=None, metavar="TEXT",
                   help="correct TEXT instead of a file (repeatable: one output line each)")
    p.add_argument("--sample", action="store_true",
                   help="correct the sample of learner English shipped with editspec (try --format diff)")
    p.add_argument("-o", "--output", default="-",
                   help="output file, written in full or not at all; a table's format follows its "
                        "extension; a folder for a folder of .parquet files; - for stdout; the input file "
                        "itself only with --in-place")
    p.add_argument("--in-place", action="store_true",
                   help="replace the input file with its correction (or let -o name it): written beside "
                        "it first, it replaces the input only once complete, so a failure or Ctrl-C "
                        "leaves the input as it was")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="for text: text (the corrected lines), jsonl (each line's input, output and edits: "
                        "character offsets, original, correction, ERRANT type, message), diff "
                        "([-old-]{+new+}), m2 (ERRANT M2 of each line against its correction, spaCy "
                        "tokens, as errant_parallel writes it) (default: text)")
    p.add_argument("--nbest", type=int, default=None, metavar="K",
                   help="with --format jsonl: each line's K best hypotheses of the T5's beam search with their "
                        "scores (log P / length; a line of several sentences: the k-th of each, scores summed), "
                        "kept from the beam search that made the output (of each sentence as the model read it, "
                        "after the spelling step; before the guard and rescoring); K <= --beam")
    p.add_argument("--alternatives", action="store_true",
                   help="with --format jsonl: each edit's other replacements of its span (up to 2, best first) "
                        "from the T5's 4-beam n-best, as \"alternatives\"; costs a beam search besides the "
                        "correction (about 2x the time: reports/confidence.md); with --nbest, from its hypotheses")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour for --format diff (auto: on a terminal, unless NO_COLOR is set)")
    p.add_argument("--column", default=None, metavar="NAME",
                   help="the column to correct in a table input; the output adds corrected and edits "
                        "(default: text)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="correct a table with Ray Data, one model copy per actor: on the cluster at "
                        "ADDRESS (or $RAY_ADDRESS), else on Ray started on this machine; --threads "
                        "is then per actor (default 1) (pip install 'editspec[ray]')")
    p.add_argument("--actors", type=int, default=None,
                   help="with --ray: model copies working at once (default: the cluster's CPUs "
                        "divided by --threads)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar and no summary line on stderr")
    p.add_argument("--max-length", type=int, default=None,
                   help="longest model input in tokens with EOS; longer sentences are split "
                        "(default: the length the models were trained with)")
    add_model_options(p)
    add_correction_options(p)
    return p


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


def check_args(args) -> bool:
    """One-line errors for options that do not fit together, before anything loads; whether the
    input is a table."""
    if args.sample:
        if args.text is not None or args.input is not None:
            raise EditspecError("give an input file, --text or --sample, not two of them")
        args.input = str(SAMPLE)
    if args.text is not None and args.input is not None:
        raise EditspecError("give an input file or --text, not both")
    if args.text is None and args.input is None:
        raise EditspecError("give an input file (- for stdin), --text TEXT or --sample")
    _check_in_place(args)
    table = args.input is not None and is_table(args.input)
    if args.nbest is not None and (table or args.format != "jsonl"):
        raise EditspecError("--nbest is for --format jsonl (text input)")
    if args.alternatives and (table or args.format != "jsonl"):
        raise EditspecError("--alternatives is for --format jsonl (text input)")
    if args.alternatives and args.mode == "edit5":
        raise EditspecError("--alternatives come from the T5's beam search: --mode edit5 has none")
    if table:
        if args.format is not None:
            raise EditspecError("--format is for text input; a table's output format follows -o's extension")
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise EditspecError("a table is corrected by one process, or by several with --ray")
    else:
        for name, value in (("--column", args.column), ("--ray", args.ray), ("--actors", args.actors)):
            if value is not None:
                raise EditspecError(f"{name} is for a table input (.jsonl, .csv, .parquet, or a folder)")
        if args.output != "-" and not Path(args.output).parent.is_dir():
            raise EditspecError(f"output folder {Path(args.output).parent} does not exist")
    if args.actors is not None and args.actors < 1:
        raise EditspecError("--actors must be 1 or more")
    return table


def _check_in_place(args) -> None:
    """-o naming the input is refused unless ``--in-place`` asks for it (a user lost a file so,
    issue 78); ``--in-place`` alone writes the correction over the input. Either way the output is
    ``atomic_output``'s: the input is read whole before its replacement is renamed over it."""
    given = args.input not in (None, "-")
    if args.in_place:
        if not given or args.text is not None:
            raise EditspecError("--in-place replaces an input file: give one (not stdin, --text or --sample)")
        if args.sample:
            raise EditspecError("--in-place would replace the sample shipped with editspec: give -o FILE")
        if os.path.isdir(args.input):
            raise EditspecError("--in-place is for a file; a folder's outputs go to another folder (-o DIR)")
        if args.output == "-":
            args.output = args.input
        elif not _same_file(args.input, args.output):
            raise EditspecError("--in-place writes over the input: give no -o, or -o naming the input")
    elif given and args.output != "-" and _same_file(args.input, args.output):
        raise EditspecError(f"-o {args.output} is the input file: add --in-place to replace it with its correction")


def _same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` name one file (through links, ``..`` or another spelling)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def run_correct(args) -> int:
    started = time.perf_counter()
    if check_args(args):
        return _run_table(args, started)
    return _run_text(args, started)


# -- progress and status on stderr --


class Progress:
    """A tqdm bar in lines or rows on stderr. Within a block it moves by the corrector's progress
    (characters of sentences done) as the block's share of rows, and lands on the block's rows
    when the block is done."""

    def __init__(self, total: int | None, unit: str, show: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit=f" {unit}", desc="correcting", file=sys.stderr, dynamic_ncols=True,
                        disable=not show or not sys.stderr.isatty())
        self.base, self.rows, self.chars, self.seen = 0, 0, 1, 0

    def block(self, rows: int, chars: int):
        """Start a block; returns the corrector's ``progress`` callback for it."""
        self.rows, self.chars, self.seen = rows, max(1, chars), 0
        return self.update

    def update(self, chars: int) -> None:
        self.seen += chars
        self._move(self.base + min(self.rows, self.rows * self.seen // self.chars))

    def done(self) -> None:
        self.base += self.rows
        self._move(self.base)

    def _move(self, n: int) -> None:
        if n != self.bar.n:
            self.bar.n = n
            self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


@contextlib.contextmanager
def loading(show: bool) -> Iterator[None]:
    """"editspec: loading models ..." on a terminal while the models load, then cleared."""
    show = show and sys.stderr.isatty()
    if show:
        print("editspec: loading models ...", end="", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if show:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)


def summary(args, n: int, unit: str, changed: int, started: float, extra: str = "") -> None:
    if args.no_progress:
        return
    seconds = time.perf_counter() - started
    rate = f", {n / seconds:.1f} {unit}/s" if seconds > 0 and n else ""
    counted = unit[:-1] if n == 1 and unit.endswith("s") else unit  # "1 line read"
    print(f"editspec: {n:,} {counted} read, {changed:,} changed{extra}, {seconds:.1f} s{rate}", file=sys.stderr)


# -- text lines --


def _count_lines(name: str) -> int | None:
    """Lines in a regular file (a last line without newline counted), for the progress bar."""
    path = Path(name)
    if name == "-" or not path.is_file():
        return None
    lines, last = 0, b"\n"
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def _shared(state, block: list, formatted: Callable[[list], tuple[str, int]]) -> tuple[str, int]:
    """``formatted(block)`` in one process; launched as several, each formats its share and process 0
    gets the texts joined in the input's order and the changed lines summed."""
    if state is None:
        return formatted(block)
    from accelerate.utils import gather_object

    with state.split_between_processes(block) as mine:
        text, n = formatted(mine) if mine else ("", 0)
    return "".join(gather_object([text])), sum(gather_object([n]))


def _run_text(args, started: float) -> int:
    """Correct ``args.input`` (or ``--text``) into ``args.output``. Launched as several processes
    (``torchrun --nproc-per-node N -m editspec correct ...`` or ``accelerate launch``), each process
    corrects its share of every block of lines (``accelerate``'s ``split_between_processes``:
    contiguous, the first to process 0) and process 0 gathers the shares and writes them in the
    input's order."""
    fmt = args.format or "text"
    state = _processes(args)
    main = state is None or state.is_main_process
    if args.text is not None:
        stream = io.BytesIO("".join(t + "\n" for t in args.text).encode("utf-8"))
        name, total = "--text", sum(t.count("\n") + 1 for t in args.text)
    else:
        stream, name, total = open_input(args.input), args.input, _count_lines(args.input)
    try:
        blocks = read_blocks(stream, name)
        first = next(blocks, None)  # a non-UTF-8 start fails before the model loads
        # torch loads here, after the input is checked; an empty input needs no model (its output
        # is empty), so it costs no torch import and no model load (start-up: editspec.cli)
        with loading(main and not args.no_progress):
            corrector = corrector_from_args(args) if first is not None else None
        progress = Progress(total, "lines", main and not args.no_progress)
        lines = changed = 0
        try:
            with (atomic_output(args.output) if main else contextlib.nullcontext()) as out:
                color = _use_color(args)
                # a UTF-8 byte order mark is not text: keep it out of the model, write it back
                bom = first is not None and first[0].text.startswith("\ufeff")
                if bom:
                    first[0].text = first[0].text[1:]
                for block in _chain(first, blocks):
                    text, n = _shared(state, block, lambda mine: _formatted(
                        corrector, mine, fmt, color, progress, args.nbest, args.alternatives))
                    if bom and lines == 0 and fmt in ("text", "diff"):
                        text = "\ufeff" + text
                    if main:
                        out.write(text.encode("utf-8"))
                        if args.output == "-":
                            out.flush()
                    lines += len(block)
                    changed += n
                    progress.done()
        except BrokenPipeError:  # `editspec correct f | head`: the reader left, not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 1
        finally:
            progress.close()
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if main:
        summary(args, lines, "lines", changed, started)
    return 0


def _processes(args):
    """accelerate's ``PartialState`` when launched as several processes (torchrun / accelerate
    launch set WORLD_SIZE), else None. Each process reads the input itself: a file, not stdin.
    On GPUs each process takes its own (``--device`` unset)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    if args.input is None or args.input == "-":
        raise EditspecError("several processes read the input each: give a file, not stdin")
    from accelerate import PartialState

    state = PartialState()
    if args.device is None:
        args.device = str(state.device)
    return state


def _formatted(corrector, block: list[Line], fmt: str, color: bool, progress: Progress,
               nbest: int | None = None, alternatives: bool = False) -> tuple[str, int]:
    """The output of ``block``'s lines in the chosen format, and how many lines changed; ``nbest``
    (jsonl): each line's n-best hypotheses with their scores too (``editspec.nbest``)."""
    texts = [line.text for line in block]
    update = progress.block(len(block), sum(map(len, texts)))
    if fmt == "jsonl":  # each edit with its confidence, ERRANT type and message (editspec.post.error_types)
        results = corrector.correct_detailed(texts, progress=update, types=True, alternatives=2 if alternatives else 0,
                                             nbest=nbest or 0)
    else:  # nothing shows a confidence: the outputs alone (10% of a 500-line process, issue 71)
        outputs = corrector.correct(texts, progress=update)
        results = [Correction.shown(t, o) if fmt == "diff" else Correction(t, o) for t, o in zip(texts, outputs)]
    changed = sum(c.output != c.input for c in results)
    if fmt == "m2":
        from editspec.evaluation.errant import ErrantEvaluator  # ERRANT and spaCy: only for m2

        gold = ErrantEvaluator.from_pairs(texts, [c.output for c in results]).gold
        return "".join(b + "\n\n" for b in gold), changed
    lines = []
    for line, c in zip(block, results):
        if fmt == "jsonl":  # with nbest, its hypotheses too (the search that made the output)
            lines.append(json_line(c.as_dict()))
        elif fmt == "diff":
            lines.append(format_diff(c, color) + line.ending)
        else:
            lines.append(c.output + line.ending)
    return "".join(lines), changed


def _chain(first: list[Line] | None, rest: Iterable[list[Line]]) -> Iterator[list[Line]]:
    if first is not None:
        yield first
    yield from rest


# -- tables --


def _run_table(args, started: float) -> int:
    """``args.input``'s column corrected into ``args.output`` (``editspec.tables``), locally or
    with ``--ray``; a folder's outputs written by an earlier run are kept (it resumes)."""
    from editspec import tables
    from editspec.cli.model_options import corrector_options

    column = args.column or "text"
    plan = tables.plan(args.input, args.output, column)
    if plan.kept:
        print(f"editspec: {len(plan.kept)} of {len(plan.kept) + len(plan.jobs)} outputs already written "
              f"(kept; delete them to correct their inputs again)", file=sys.stderr)
    show = not args.no_progress
    if args.ray is not None:
        from editspec import ray_data

        with loading(show):
            options = vars(corrector_options(args))  # threads: the actors' own
            corrected = ray_data.run(plan.jobs, column, options, args.ray or None,
                                     args.actors, args.threads)
    elif plan.rows:
        with loading(show):
            corrector = corrector_from_args(args)
    progress = Progress(plan.rows, "rows", show)
    if args.ray is None:  # no rows: no model
        corrected = _local(corrector, plan.jobs, column, progress) if plan.rows else iter(())
    totals = tables.Counts()

    def counted(blocks):
        for index, table in blocks:
            totals.add(tables.counts(table, column))
            progress.rows = len(table)
            progress.done()
            yield index, table

    try:
        tables.write(plan.jobs, counted(corrected))
    finally:
        progress.close()
    if totals.skipped:
        rows = "1 row" if totals.skipped == 1 else f"{totals.skipped:,} rows"
        print(f"editspec: {rows} with no text in column {column!r} (null or not a string): passed through, "
              f"with a null correction", file=sys.stderr)
    summary(args, totals.rows, "rows", totals.changed, started)
    return 0


def _local(corrector, jobs, column: str, progress: Progress) -> Iterator[tuple[int, object]]:
    from editspec import tables

    for index, job in enumerate(jobs):
        for block in tables.read(job.source):
            cells = block.column(column).to_pylist()
            update = progress.block(len(block), sum(len(c) for c in cells if isinstance(c, str)))
            yield index, tables.correct_table(corrector, block, column, update)
