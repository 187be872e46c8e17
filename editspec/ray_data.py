"""Correct tables with Ray Data, on one machine or a cluster: one ``Corrector`` per actor.

``CorrectBatch`` is the callable class for ``Dataset.map_batches``; a Ray user puts it in their
own pipeline (``pip install -e ".[ray]"``)::

    import ray
    from editspec.ray_data import CorrectBatch

    ds = ray.data.read_parquet("essays/")
    ds = ds.map_batches(CorrectBatch, fn_constructor_kwargs={"column": "text"}, batch_format="pyarrow",
                        compute=ray.data.ActorPoolStrategy(size=4), num_cpus=1)
    ds.write_parquet("corrected/")          # the columns, then corrected and edits

``editspec correct INPUT --column C -o OUTPUT --ray [ADDRESS]`` runs the same, the local run's
files in and out::

    driver    tables.plan: the files, checked before anything starts (as the local run)
    read      a read task per input file, on the driver's node (its files need not be on the
              others), 0 CPUs: ``tables.read``'s blocks, the local run's very blocks, each packed
              whole into one row (Arrow IPC bytes), so that Ray, which cuts and merges blocks
              by bytes, cannot cut one
    correct   map_batches(CorrectBatch) through ``_Packed``, a batch of one packed block:
              ``actors`` actors, ``threads`` CPUs and torch threads each, one ``Corrector`` each,
              loaded once, correcting the local run's blocks (``tables.correct_table``, the local
              run's code): a sentence is decoded among the same sentences as in the local run,
              so even bf16 (whose output can change with the batch) writes the local run's text
    write     the driver takes the blocks back in input order (``preserve_order``), cuts them
              into the files by their row counts and writes them (``tables.write``): the same
              bytes as the local run, atomically

Ray is imported only here, when ``--ray`` asks for it.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Iterator

import pyarrow as pa

from editspec.errors import EditspecError
from editspec import tables
from editspec.tables import Job, correct_table, read

PACKED = "editspec_block"  # the one column of the packed blocks: a block's Arrow IPC stream a row


class CorrectBatch:
    """A ``map_batches`` callable: loads one ``Corrector`` (``Corrector.from_pretrained(model,
    **options)``) when the actor starts, and returns each batch with ``corrected`` and ``edits``
    after its columns (``editspec.tables.correct_table``: a null or non-string cell gets null).
    ``threads``: torch threads (default: the CPUs Ray assigned to the actor, else 1)."""

    def __init__(self, column: str = "text", model: str | None = None, threads: int | None = None, **options):
        import torch

        from editspec.corrector import Corrector

        torch.set_num_threads(threads or _assigned_cpus())
        self.column = column
        self.corrector = Corrector.from_pretrained(model, **options)  # threads: set above

    def __call__(self, batch) -> pa.Table:
        if not isinstance(batch, pa.Table):  # a pandas DataFrame, or a dict of columns (Ray's numpy format)
            batch = pa.Table.from_pandas(batch, preserve_index=False) if hasattr(batch, "to_pandas") or \
                hasattr(batch, "iloc") else pa.table({k: list(v) for k, v in batch.items()})
        return correct_table(self.corrector, batch, self.column)


def _assigned_cpus() -> int:
    import ray

    try:
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
    except Exception:  # not inside a Ray worker
        return 1
    return max(1, int(cpus))


def connect(address: str | None) -> bool:
    """Join the Ray cluster at ``address`` (or ``RAY_ADDRESS``), else start Ray on this machine;
    a session already started in this process (``ray.init`` before) is used as it is. Whether
    this call connected (and so should disconnect)."""
    import ray

    if ray.is_initialized():
        return False
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
    try:
        if address or os.environ.get("RAY_ADDRESS"):
            ray.init(address=address or None, **quiet)
        else:
            ray.init(include_dashboard=False, **quiet)
    except (ConnectionError, ValueError, RuntimeError) as e:
        raise EditspecError(f"cannot connect to Ray at {address or os.environ.get('RAY_ADDRESS')}: "
                            f"{' '.join(str(e).split())[:300]}") from e
    return True


def corrected_blocks(jobs: list[Job], column: str, options: dict, actors: int | None = None,
                     threads: int = 1, block_rows: int | None = None,
                     fn: type = CorrectBatch) -> Iterator[tuple[int, pa.Table]]:
    """(job index, corrected block) for every row of ``jobs``' inputs, in order, corrected by
    ``actors`` actors (default: the cluster's CPUs // ``threads``) of ``threads`` CPUs each, in
    the local run's blocks (``tables.read``'s, ``block_rows`` rows: default ``tables.BLOCK_ROWS``);
    ``fn``: the callable class (eval/ray_scaling.py times Ray's own cost with one that loads no model)."""
    import ray
    import ray.data
    from ray.data.context import DataContext

    block_rows = block_rows or tables.BLOCK_ROWS
    context = DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False  # the command's own bar counts rows
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    if actors is None:
        actors = max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
    # override_num_blocks: one read task a file (else Ray splits it for parallelism). A read
    # merges its rows into Ray blocks of up to target_max_block_size (128 MB: a whole file to one
    # actor); a byte makes every packed row a Ray block of its own (a row is never cut), so the
    # actors share the blocks as they come.
    context.target_max_block_size = 1
    dataset = ray.data.read_datasource(_files(jobs, block_rows), num_cpus=0,
                                       override_num_blocks=max(1, len(jobs))).map_batches(
        _Packed, fn_constructor_kwargs={"fn": fn, "column": column, "threads": threads, **options},
        batch_size=1, batch_format="pyarrow",
        # one block in flight an actor (Ray's default queues 4): an actor that is ready first does
        # not take the blocks another would have started on
        compute=ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=1),
        num_cpus=threads)
    rows = [job.source.rows for job in jobs]
    index, left = 0, rows[0] if rows else 0
    try:
        for packed in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
            for data in packed.column(PACKED).to_pylist():
                table = _unpack(data)
                while len(table):  # a block holds one file's rows; cut by the files' row counts anyway
                    while left == 0:
                        index += 1
                        left = rows[index]
                    part, table = table.slice(0, left), table.slice(left)
                    left -= len(part)
                    yield index, part
    except Exception as e:
        raise _user_error(e) or e
    if left or any(rows[index + 1:]):
        raise RuntimeError(f"Ray returned fewer rows than the inputs hold ({sum(rows)})")


class _Packed:
    """The command's ``map_batches`` callable: each row of a batch is one packed block, which
    ``fn(**kwargs)`` (``CorrectBatch``) corrects whole; the corrected blocks go back packed."""

    def __init__(self, fn: type, **kwargs):
        self.fn = fn(**kwargs)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return _packed([self.fn(_unpack(data)) for data in batch.column(PACKED).to_pylist()])


def _packed(blocks: list[pa.Table]) -> pa.Table:
    """One row per block: its Arrow IPC stream (schema and all, so an empty block survives too)."""
    cells = []
    for block in blocks:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, block.schema) as writer:
            writer.write_table(block)
        cells.append(sink.getvalue().to_pybytes())
    return pa.table({PACKED: pa.array(cells, pa.large_binary())})


def _unpack(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def _user_error(e: BaseException) -> EditspecError | None:
    """The EditspecError an actor raised (a bad model directory, say), as one line here."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, EditspecError):
            return EditspecError(str(e))
        e = getattr(e, "cause", None) or e.__cause__ or e.__context__
    return None


def _read(source, rows: int) -> Iterator[pa.Table]:
    for block in read(source, rows):
        yield _packed([block])


def _files(jobs: list[Job], rows: int):
    """A Ray ``Datasource`` of the plan's input files: one read task each, on the driver's node
    (``supports_distributed_reads`` False), yielding ``tables.read``'s blocks, packed. (Defined here, not
    at the top: Ray loads only when ``--ray`` asks for it.)"""
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class Files(Datasource):
        supports_distributed_reads = False

        def estimate_inmemory_data_size(self) -> int | None:
            return None

        def get_read_tasks(self, parallelism: int, **kwargs) -> list[ReadTask]:
            return [ReadTask(functools.partial(_read, job.source, rows),
                             BlockMetadata(num_rows=None, size_bytes=None,  # rows: packed blocks
                                           input_files=[str(job.source.path)], exec_stats=None),
                             schema=pa.schema([(PACKED, pa.large_binary())]))
                    for job in jobs]

        def get_name(self) -> str:
            return "EditspecTables"

    return Files()


def run(jobs: list[Job], column: str, options: dict, address: str | None, actors: int | None,
        threads: int | None) -> Iterator[tuple[int, pa.Table]]:
    """Connect (``connect``), yield the corrected blocks (``corrected_blocks``), then disconnect
    (a Ray started here stops here, also on Ctrl-C or an error)."""
    try:
        import ray
        import ray.data  # noqa: F401  (the optional extra: a one-line error when it is missing)
    except ImportError as e:
        raise EditspecError(f"--ray needs the ray extra ({e.name} is missing): pip install 'editspec[ray]'")
    connected = connect(address)
    try:
        yield from corrected_blocks(jobs, column, options, actors, threads or 1)
    finally:
        if connected:
            ray.shutdown()
