"""Tables in and out for ``editspec correct --column``: JSON lines, CSV and Parquet files, and
folders of Parquet files, read and written in blocks of rows; every column and the row order kept.

    input    essays.parquet     id | text                  | score
    plan     each input file and its output, checked before a model loads (``plan``): the
             column is there, no column named ``corrected`` or ``edits``, the output's folder
             exists; a folder's outputs already written are kept (a rerun resumes)
    blocks   ``BLOCK_ROWS`` rows at a time (``read``: pyarrow's ``ParquetFile.iter_batches`` and
             ``csv.open_csv``; JSON lines parsed by ``json``)
    correct  the column's strings -> ``Corrector.correct_detailed(types=True)`` (``correct_table``,
             also the body of ``editspec.ray_data.CorrectBatch``); a null or non-string cell
             passes through with a null correction
    output   id | text | score | corrected | edits       ``edits``: a list of {start, end,
             original, correction, type, message}, as ``--format jsonl`` writes them
    write    block by block into ``atomic_output``'s temporary file (``write``), renamed over the
             output once the whole file is done: a killed run leaves no half-written output

Types: Parquet's are kept. CSV has none, so every CSV cell is read as a string ("007" stays
"007"; an empty cell is ""). JSON lines are read twice: a first pass finds every key and one
type per key (an int in one row and a float in another become float; a string in one row and
a number in another is an error, as one table column holds one type), the second reads the
rows in blocks with that schema; a key a row lacks is null there. CSV output writes nested
values (``edits``, a Parquet list column) as JSON text.

Why partly hand-written: pyarrow's streaming JSON reader fixes the columns and their types from
its first block and fails on a later row with a new key ("unexpected field"), and has no JSON
writer; the rest is pyarrow's own readers and writers.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import decimal
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from editspec.errors import EditspecError
from editspec.post.diff import edit_dict
from editspec.files import BLOCK_LINES, atomic_output, json_line, table_format

BLOCK_ROWS = BLOCK_LINES  # rows corrected together: bounded memory, good batches
ADDED = ("corrected", "edits")  # the columns the output adds
EDIT = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("original", pa.string()),
                  ("correction", pa.string()), ("type", pa.string()), ("message", pa.string()),
                  ("confidence", pa.float64())])
EDITS = pa.list_(EDIT)


def output_schema(schema: pa.Schema) -> pa.Schema:
    """The input's columns, then ``corrected`` and ``edits``."""
    return schema.append(pa.field("corrected", pa.string())).append(pa.field("edits", EDITS))


# -- what to read and write --


@dataclass
class Source:
    """One input table file: its format, schema (every block is read with it) and row count."""

    path: Path
    format: str
    schema: pa.Schema
    rows: int


@dataclass
class Job:
    source: Source
    target: str  # a file name, or "-" (JSON lines to stdout)
    format: str


@dataclass
class Plan:
    jobs: list[Job]  # what is left to do, in order
    kept: list[str]  # a folder's outputs written by an earlier run, kept as they are

    @property
    def rows(self) -> int:
        return sum(job.source.rows for job in self.jobs)


def plan(input_name: str, output_name: str, column: str) -> Plan:
    """What ``editspec correct INPUT --column C -o OUTPUT`` reads and writes, every input checked
    (one-line errors) before a model loads. A folder of Parquet files goes to a folder of the
    same names (made if missing); an output file already there was written whole by an earlier
    run (outputs are atomic), so it is kept and its input skipped: a killed run resumes at its
    first unfinished file."""
    path = Path(input_name)
    if not path.exists():
        raise EditspecError(f"{input_name}: no such file or folder")
    if path.is_dir():
        return _plan_folder(path, output_name, column)
    fmt = table_format(path)
    if output_name == "-":
        out_fmt = "jsonl"
    else:
        out_fmt = table_format(output_name)
        if out_fmt is None:
            raise EditspecError(f"output {output_name}: give a table file name (.jsonl, .csv or .parquet) "
                                f"for a table input")
        _check_output_folder(Path(output_name).parent)
    source = open_source(path, fmt)
    check_columns(source, column)
    return Plan([Job(source, output_name, out_fmt)], [])


def _plan_folder(folder: Path, output_name: str, column: str) -> Plan:
    files = sorted(p for p in folder.rglob("*.parquet") if p.is_file() and not p.name.startswith("."))
    if not files:
        raise EditspecError(f"{folder} holds no .parquet files")
    if output_name == "-" or table_format(output_name) is not None:
        raise EditspecError(f"a folder input needs an output folder: -o FOLDER (not {output_name})")
    out = Path(output_name)
    if out.resolve() == folder.resolve():
        raise EditspecError("the output folder must not be the input folder")
    if out.exists() and not out.is_dir():
        raise EditspecError(f"output {output_name} is a file, not a folder")
    _check_output_folder(out.parent)
    jobs, kept = [], []
    for p in files:
        target = out / p.relative_to(folder)
        if target.is_file():
            kept.append(str(target))
            continue
        source = open_source(p, "parquet")
        check_columns(source, column)
        jobs.append(Job(source, str(target), "parquet"))
    return Plan(jobs, kept)


def _check_output_folder(folder: Path) -> None:
    if not folder.is_dir():
        raise EditspecError(f"output folder {folder} does not exist")


def check_columns(source: Source, column: str) -> None:
    names = source.schema.names
    if column not in names:
        shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        raise EditspecError(f"{source.path}: no column {column!r} (its columns: {shown})")
    taken = [name for name in ADDED if name in names]
    if taken:
        raise EditspecError(f"{source.path} already has a column named {taken[0]!r}, which the output adds")


def open_source(path: Path, fmt: str | None = None) -> Source:
    """The file's schema and row count (a first pass for JSON lines and CSV, streamed)."""
    fmt = fmt or table_format(path)
    if fmt is None:
        raise EditspecError(f"{path}: not a table (.jsonl, .csv or .parquet)")
    try:
        if fmt == "parquet":
            meta = pq.ParquetFile(path)
            return Source(path, fmt, meta.schema_arrow, meta.metadata.num_rows)
        if fmt == "csv":
            names = pa_csv.open_csv(path).schema.names
            schema = pa.schema([(name, pa.string()) for name in names])
            rows = sum(len(batch) for batch in _csv_batches(path, schema))
            return Source(path, fmt, schema, rows)
        schema, rows = _json_schema(path)
        return Source(path, fmt, schema, rows)
    except EditspecError:
        raise
    except FileNotFoundError as e:
        raise EditspecError(f"{path}: no such file") from e
    except (OSError, pa.ArrowException) as e:
        raise EditspecError(f"cannot read {path} as {fmt}: {_one_line(e)}") from e


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__


# -- reading --


def read(source: Source, rows: int | None = None) -> Iterator[pa.Table]:
    """The source's rows in blocks of at most ``rows`` (default ``BLOCK_ROWS``), every block with
    ``source.schema``."""
    rows = rows or BLOCK_ROWS
    try:
        if source.format == "parquet":
            batches: Iterable[pa.RecordBatch] = pq.ParquetFile(source.path).iter_batches(batch_size=rows)
        elif source.format == "csv":
            batches = _csv_batches(source.path, source.schema)
        else:
            batches = _json_batches(source.path, source.schema, rows)
        for batch in batches:
            for start in range(0, len(batch), rows):
                yield pa.Table.from_batches([batch.slice(start, rows)], schema=source.schema)
    except (OSError, pa.ArrowException) as e:
        raise EditspecError(f"cannot read {source.path}: {_one_line(e)}") from e


def _csv_batches(path: Path, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    types = {field.name: field.type for field in schema}
    with pa_csv.open_csv(path, convert_options=pa_csv.ConvertOptions(column_types=types)) as reader:
        yield from reader


def _json_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) per non-blank line of a JSON lines file."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise EditspecError(f"{path}: line {number} is not UTF-8 text") from e
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except ValueError as e:
                raise EditspecError(f"{path}: line {number} is not JSON ({e})") from e
            if not isinstance(record, dict):
                raise EditspecError(f"{path}: line {number} is not a JSON object")
            yield number, record


def _json_chunks(path: Path, rows: int) -> Iterator[tuple[int, list[dict]]]:
    chunk: list[dict] = []
    first = 0
    for number, record in _json_records(path):
        if not chunk:
            first = number
        chunk.append(record)
        if len(chunk) >= rows:
            yield first, chunk
            chunk = []
    if chunk:
        yield first, chunk


def _json_schema(path: Path) -> tuple[pa.Schema, int]:
    """Every key of the file's objects (in order of first appearance) with one type each."""
    schema, rows = pa.schema([]), 0
    for first, chunk in _json_chunks(path, BLOCK_ROWS):
        names = list(dict.fromkeys(k for record in chunk for k in record))
        fields = []
        for name in names:
            try:
                fields.append(pa.field(name, pa.array([r.get(name) for r in chunk]).type))
            except (pa.ArrowException, OverflowError) as e:
                raise EditspecError(f"{path}: lines {first}-: key {name!r} holds values of different "
                                    f"types ({_one_line(e)}); a table column has one type") from e
        try:
            schema = pa.unify_schemas([schema, pa.schema(fields)], promote_options="permissive")
        except pa.ArrowException as e:
            raise EditspecError(f"{path}: lines {first}-: a key's values change type "
                                f"({_one_line(e)}); a table column has one type") from e
        rows += len(chunk)
    return pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in schema]), rows


def _json_batches(path: Path, schema: pa.Schema, rows: int) -> Iterator[pa.RecordBatch]:
    for _, chunk in _json_chunks(path, rows):
        columns = [pa.array([r.get(f.name) for r in chunk], type=f.type) for f in schema]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


# -- correcting --


@dataclass
class Counts:
    rows: int = 0
    changed: int = 0
    skipped: int = 0  # null or non-string cells: no correction

    def add(self, other: Counts) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def _array(values: list, type_: pa.DataType) -> pa.Array:
    """``pa.array(values, type_)`` without pandas: ``pa.array`` imports pandas, when installed, to
    check for its types (0.5 s quiet, 2.3 s on a busy 2-core host: a 5-row CSV paid it, issue 71);
    Arrow's JSON reader builds the same array from the values as JSON lines and imports nothing."""
    import io

    import pyarrow.json as pa_json

    if not values:
        return pa.nulls(0, type_)
    data = "".join(json.dumps({"v": v}) + "\n" for v in values).encode("utf-8")
    read = pa_json.read_json(io.BytesIO(data), read_options=pa_json.ReadOptions(block_size=max(1 << 20, len(data) + 1)),
                             parse_options=pa_json.ParseOptions(explicit_schema=pa.schema([("v", type_)])))
    return read.column(0).combine_chunks()


def correct_table(corrector, table: pa.Table, column: str,
                  progress: Callable[[int], None] | None = None) -> pa.Table:
    """``table`` with ``corrected`` (the column's text corrected) and ``edits`` (each edit with its
    ERRANT type and message) after its columns; a null or non-string cell gets null in both.
    ``progress`` as in ``Corrector.correct``."""
    cells = table.column(column).to_pylist()
    todo = [i for i, cell in enumerate(cells) if isinstance(cell, str)]
    corrected: list[str | None] = [None] * len(cells)
    edits: list[list[dict] | None] = [None] * len(cells)
    results = corrector.correct_detailed([cells[i] for i in todo], progress=progress, types=True) if todo else []
    for i, c in zip(todo, results):
        corrected[i] = c.output
        edits[i] = [edit_dict(e) for e in c.edits]
    return (table.append_column(pa.field("corrected", pa.string()), _array(corrected, pa.string()))
                 .append_column(pa.field("edits", EDITS), _array(edits, EDITS)))


def counts(table: pa.Table, column: str) -> Counts:
    """Rows, rows changed and cells passed through (no correction) of a corrected table."""
    cells, corrected = table.column(column).to_pylist(), table.column("corrected").to_pylist()
    return Counts(len(cells), sum(c is not None and c != s for s, c in zip(cells, corrected)),
                  sum(c is None for c in corrected))


# -- writing --


class Sink:
    """Writes blocks of one output schema to a binary file in one format."""

    def __init__(self, fmt: str, out: IO[bytes], schema: pa.Schema):
        self.fmt, self.out, self.schema = fmt, out, schema
        if fmt == "parquet":
            self.writer = pq.ParquetWriter(out, schema)
            self.pending: list[pa.Table] = []
            self.rows = 0
        elif fmt == "csv":  # nested values as JSON text: CSV has no lists
            self.nested = [i for i, f in enumerate(schema) if pa.types.is_nested(f.type)]
            flat = schema
            for i in self.nested:
                flat = flat.set(i, pa.field(schema[i].name, pa.string()))
            self.writer = pa_csv.CSVWriter(out, flat)

    def write(self, table: pa.Table) -> None:
        table = table.cast(self.schema)
        if self.fmt == "parquet":  # row groups of BLOCK_ROWS whatever the blocks: the same file from any run
            self.pending.append(table)
            self.rows += len(table)
            if self.rows >= BLOCK_ROWS:
                self._flush(final=False)
        elif self.fmt == "csv":
            for i in self.nested:
                values = [None if v is None else json.dumps(v, ensure_ascii=False, default=_json_value)
                          for v in table.column(i).to_pylist()]
                table = table.set_column(i, pa.field(self.schema[i].name, pa.string()), _array(values, pa.string()))
            self.writer.write_table(table)
        else:
            self.out.write("".join(json_line(row, default=_json_value) for row in table.to_pylist()).encode("utf-8"))

    def _flush(self, final: bool) -> None:
        table = pa.concat_tables(self.pending)
        cut = len(table) if final else len(table) - len(table) % BLOCK_ROWS
        if cut:
            self.writer.write_table(table.slice(0, cut), row_group_size=BLOCK_ROWS)
        self.pending, self.rows = [table.slice(cut)], len(table) - cut

    def close(self) -> None:
        if self.fmt == "parquet" and self.rows:
            self._flush(final=True)
        if self.fmt != "jsonl":
            self.writer.close()

    def abandon(self) -> None:
        """Close the writer of an output that ``atomic_output`` is about to remove."""
        with contextlib.suppress(Exception):
            self.close()


def _json_value(value):
    """JSON for what Parquet holds and JSON has not: dates and times (ISO 8601), decimals
    (text), bytes (base64)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write(jobs: list[Job], corrected: Iterable[tuple[int, pa.Table]],
          done: Callable[[Job], None] | None = None) -> None:
    """Write each job's output from ``corrected``: (job index, corrected block), in job and row
    order. Each output is written whole or not at all (``atomic_output``), and is in place as soon
    as its input's last row is written (its row count says when: no block of the next file is
    corrected before); a job whose input has no rows gets the columns and no rows. ``done(job)``
    after each output is in place."""
    blocks = iter(corrected)
    for index, job in enumerate(jobs):
        if job.target != "-":
            Path(job.target).parent.mkdir(parents=True, exist_ok=True)  # a folder's subfolders
        with atomic_output(job.target) as out:
            sink = Sink(job.format, out, output_schema(job.source.schema))
            try:
                left = job.source.rows
                while left > 0:
                    got = next(blocks, None)
                    if got is None or got[0] != index or len(got[1]) > left:
                        raise RuntimeError(f"the corrected rows of {job.source.path} do not match its {job.source.rows}")
                    sink.write(got[1])
                    if job.target == "-":
                        out.flush()
                    left -= len(got[1])
            except BaseException:
                sink.abandon()
                raise
            sink.close()
        if done is not None:
            done(job)
    if next(blocks, None) is not None:
        raise RuntimeError("more corrected rows than the inputs hold")
