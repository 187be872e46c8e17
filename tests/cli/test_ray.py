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
    monkeypatch.setattr(ray_data, "RAY_BLOCK_ROWS", 7)
    monkeypatch.setattr(tables, "BLOCK_ROWS", 16)  # parquet row groups of 16 rows; several blocks
    folder = tmp_path / "in"
    folder.mkdir()
    for k, n in enumerate([0, 30, 11, 0]):  # empty files first and last
        texts = sentences(n, seed=k)
        if n:
            texts[2] = None
        pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()), "text": pa.array(texts, pa.string())}),
                       folder / f"{k}.parquet")
    # float32: Ray's blocks (7 rows) batch other rows than the local run's (16), and in bf16 a near
    # tie of the random models can flip with the padding (test_reliability: batch independence)
    common = ["correct", str(folder), "--model", str(bundle), "--dtype", "float32", "--threads", "1"]
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
