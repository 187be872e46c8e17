"""``editspec correct --ray`` and ``editspec.ray_data.CorrectBatch`` on a local Ray of 2 CPUs: the
same files as the local run, byte for byte, from a tiny model over several files and blocks; a Ray
user's own pipeline gets the local run's corrections from the shipped models."""


import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray

from editspec import cli, ray_data, tables
from tests.helpers import sentences, tiny_bundle


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer) / "bundle"


def test_ray_writes_what_the_local_run_writes(local_ray, bundle, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tables, "BLOCK_ROWS", 16)  # blocks and parquet row groups of 16 rows: several a file
    folder = tmp_path / "in"
    folder.mkdir()
    for k, n in enumerate([0, 30, 11, 0]):  # empty files first and last
        texts = sentences(n, seed=k)
        if n:
            texts[2] = None
        pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()), "text": pa.array(texts, pa.string())}),
                       folder / f"{k}.parquet")
    # bf16, where a sentence's output can change with its batch: Ray corrects the local run's blocks
    common = ["correct", str(folder), "--model", str(bundle), "--dtype", "bfloat16", "--threads", "1"]
    assert cli.main([*common, "-o", str(tmp_path / "local")]) == 0
    assert cli.main([*common, "-o", str(tmp_path / "ray"), "--ray", "--actors", "2"]) == 0
    err = capsys.readouterr().err
    assert "41 rows read" in err and "2 rows with no text" in err
    for k in range(4):
        local, distributed = (tmp_path / d / f"{k}.parquet" for d in ("local", "ray"))
        assert distributed.read_bytes() == local.read_bytes()
    out = pq.read_table(tmp_path / "ray" / "1.parquet")
    assert out.column("id").to_pylist() == list(range(30)) and out.column("corrected").null_count == 1
    assert out.column("corrected").to_pylist() != out.column("text").to_pylist()  # the model edits



class Sizes:
    """A callable that corrects nothing and writes down how many rows it was given at once."""

    def __init__(self, column: str = "text", threads: int | None = None, **options):
        pass

    def __call__(self, table: pa.Table) -> pa.Table:
        return table.append_column("given", pa.array([len(table)] * len(table), pa.int64()))


def test_each_actor_call_gets_one_whole_block_of_the_local_run(local_ray, tmp_path, monkeypatch):
    """Ray cuts and merges its blocks by bytes; packed, the local run's blocks reach the actors
    whole and come back in order, so a sentence is batched with the same sentences as locally."""
    monkeypatch.setattr(tables, "BLOCK_ROWS", 16)
    for k, n in enumerate([40, 7]):
        pq.write_table(pa.table({"text": sentences(n, seed=k)}), tmp_path / f"{k}.parquet")
    plan = tables.plan(str(tmp_path), str(tmp_path / "out"), "text")
    local = [(i, len(block)) for i, job in enumerate(plan.jobs) for block in tables.read(job.source)]
    got = list(ray_data.corrected_blocks(plan.jobs, "text", {}, actors=2, fn=Sizes))
    assert [(i, len(block)) for i, block in got] == local == [(0, 16), (0, 16), (0, 8), (1, 7)]
    assert all(block.column("given").to_pylist() == [len(block)] * len(block) for _, block in got)
    texts = [t for _, block in got for t in block.column("text").to_pylist()]
    assert texts == sentences(40, seed=0) + sentences(7, seed=1)


def test_shipped_models_in_a_user_s_ray_pipeline(local_ray, tmp_path):
    """CorrectBatch on the shipped models, in Ray's default batch format: the local run's corrections
    and types."""
    texts = ["He go to school every days.", None, "I recieve your letter yesterday.", "Fine."]
    pq.write_table(pa.table({"k": [1, 2, 3, 4], "text": texts}), tmp_path / "in.parquet")
    assert cli.main(["correct", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "local.parquet"),
                     "--threads", "1", "--no-progress"]) == 0
    local = pq.read_table(tmp_path / "local.parquet").to_pylist()
    assert local[0]["corrected"] != texts[0] and local[1]["corrected"] is None

    # the callable class in a Ray user's own pipeline, Ray's default batch format
    ds = ray.data.from_items([{"k": r["k"], "text": r["text"]} for r in local if r["text"]])
    got = ds.map_batches(ray_data.CorrectBatch, fn_constructor_kwargs={"column": "text"},
                         compute=ray.data.ActorPoolStrategy(size=1), num_cpus=1).take_all()
    assert [(r["k"], r["corrected"]) for r in got] == [(r["k"], r["corrected"]) for r in local if r["text"]]
    assert [[e["type"] for e in r["edits"]] for r in got] == [[e["type"] for e in r["edits"]] for r in local if r["text"]]
