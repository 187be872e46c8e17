"""``editspec correct --column``: JSON lines, CSV and Parquet in and out (editspec/tables.py), the
columns and row order kept, null cells passed through, outputs atomic, a folder resumed."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from editspec import cli, tables
from editspec.corrector import Corrector
from editspec.post.diff import Edit, apply
from tests.helpers import sentences, tiny_bundle

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, tokenizer):
    return tiny_bundle(tmp_path_factory.mktemp("models"), tokenizer) / "bundle"


def rows(n: int = 23) -> list[dict]:
    texts = sentences(n, seed=5)
    out = [{"id": i, "text": t, "score": i / 4, "tags": ["a", str(i)]} for i, t in enumerate(texts)]
    out[3]["text"] = None  # a null cell
    out[7]["text"] = "  two  spaces \t😀 He go home. "
    out[8]["text"] = ""
    return out


def run(*args):
    return cli.main(["correct", *map(str, args)])


def local(bundle, texts):
    return Corrector.from_pretrained(bundle, mode="edit5", device="cpu").correct_detailed(texts)


def check(out_rows: list[dict], in_rows: list[dict], bundle):
    """Every input column and value in order, then corrected and edits, as Corrector gives them."""
    assert len(out_rows) == len(in_rows)
    for got, want in zip(out_rows, in_rows):
        assert list(got)[:len(want)] == list(want) and list(got)[len(want):] == ["corrected", "edits"]
        assert {k: got[k] for k in want} == want
    texts = [r["text"] for r in in_rows if r["text"] is not None]
    expected = iter(local(bundle, texts))
    for got in out_rows:
        if got["text"] is None:
            assert got["corrected"] is None and got["edits"] is None
            continue
        c = next(expected)
        assert got["corrected"] == c.output
        edits = [Edit(e["start"], e["end"], e["original"], e["correction"]) for e in got["edits"]]
        assert edits == [Edit(e.start, e.end, e.original, e.correction) for e in c.edits]
        assert apply(got["text"], edits) == got["corrected"]
        # in bf16 a score's last bits can depend on the rows scored beside it
        assert [e["confidence"] for e in got["edits"]] == pytest.approx([e.confidence for e in c.edits], abs=0.02)
        assert all(e["type"] and e["message"] and 0 <= e["confidence"] <= 1 for e in got["edits"])
    assert any(r["edits"] for r in out_rows)  # the random model edits: the test can fail


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("out_ext", [".jsonl", ".parquet", ".csv"])
def test_jsonl_in_every_format_out(bundle, tmp_path, monkeypatch, capsys, out_ext):
    monkeypatch.setattr(tables, "BLOCK_ROWS", 5)  # several blocks
    src, dst = tmp_path / "in.jsonl", tmp_path / f"out{out_ext}"
    records = rows()
    write_jsonl(src, records)
    assert run(src, "--column", "text", "-o", dst, "--model", bundle, "--mode", "edit5") == 0
    err = capsys.readouterr().err
    assert "1 row with no text in column 'text'" in err and "23 rows read" in err
    if out_ext == ".jsonl":
        got = read_jsonl(dst)
    elif out_ext == ".parquet":
        got = pq.read_table(dst).to_pylist()
        assert pq.read_schema(dst).field("edits").type == tables.EDITS
    else:  # CSV: every cell as text, nested values as JSON
        got = pa_csv.read_csv(dst, convert_options=pa_csv.ConvertOptions(
            column_types={n: pa.string() for n in ["id", "text", "score", "tags", "corrected", "edits"]},
            strings_can_be_null=True, quoted_strings_can_be_null=False)).to_pylist()
        for r in got:
            r["id"], r["score"], r["tags"] = int(r["id"]), float(r["score"]), json.loads(r["tags"])
            r["edits"] = None if r["edits"] is None else json.loads(r["edits"])
    check(got, records, bundle)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in.jsonl", dst.name])  # no temporary left


def test_parquet_and_csv_in(bundle, tmp_path, capsys):
    records = rows(12)
    table = pa.Table.from_pylist(records)
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=5)
    assert run(tmp_path / "in.parquet", "--column", "text", "-o", tmp_path / "out.parquet", "--model", bundle,
               "--mode", "edit5", "--no-progress") == 0
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.schema == tables.output_schema(table.schema)  # the types kept
    check(out.to_pylist(), records, bundle)

    csv_rows = [{"id": f"00{i}", "text": r["text"] or ""} for i, r in enumerate(records)]
    pa_csv.write_csv(pa.Table.from_pylist(csv_rows), tmp_path / "in.csv")
    assert run(tmp_path / "in.csv", "-o", tmp_path / "out.jsonl", "--model", bundle, "--mode", "edit5") == 0
    got = read_jsonl(tmp_path / "out.jsonl")
    assert [r["id"] for r in got] == [f"00{i}" for i in range(12)]  # "007" stays text
    assert got[3]["text"] == "" and got[3]["corrected"] == ""  # an empty CSV cell is ""
    assert [r["corrected"] for r in got] == [c.output for c in local(bundle, [r["text"] for r in csv_rows])]


def test_non_string_cells_pass_through(bundle, tmp_path, capsys):
    pq.write_table(pa.table({"text": pa.array([1, None, 3], pa.int64())}), tmp_path / "n.parquet")
    assert run(tmp_path / "n.parquet", "-o", tmp_path / "o.jsonl", "--model", bundle, "--mode", "edit5") == 0
    assert read_jsonl(tmp_path / "o.jsonl") == [{"text": t, "corrected": None, "edits": None} for t in (1, None, 3)]
    assert "3 rows with no text" in capsys.readouterr().err


def one_line_error(capsys, *args) -> str:
    assert run(*args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("editspec: error:"), err
    return err


def test_table_errors_are_one_line_before_the_models_load(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(Corrector, "from_pretrained", lambda *a, **k: pytest.fail("a model loaded"))
    src = tmp_path / "in.jsonl"
    write_jsonl(src, [{"id": 1, "body": "He go."}])
    assert "no column 'text' (its columns: id, body)" in one_line_error(capsys, src, "-o", tmp_path / "o.jsonl")
    assert "does not exist" in one_line_error(capsys, src, "--column", "body", "-o", tmp_path / "no" / "o.jsonl")
    assert "give a table file name" in one_line_error(capsys, src, "--column", "body", "-o", tmp_path / "o.txt")
    assert "--format is for text input" in one_line_error(capsys, src, "--format", "jsonl")
    write_jsonl(src, [{"text": "a", "corrected": "b"}])
    assert "already has a column named 'corrected'" in one_line_error(capsys, src)
    src.write_text('{"text": "a"}\n{"text": 5}\n')
    assert "different types" in one_line_error(capsys, src)
    src.write_text('{"text": "a"}\n[1]\n')
    assert "line 2 is not a JSON object" in one_line_error(capsys, src)
    assert "no such file" in one_line_error(capsys, tmp_path / "missing.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    assert "cannot read" in one_line_error(capsys, tmp_path / "bad.parquet")
    (tmp_path / "none").mkdir()
    assert "holds no .parquet files" in one_line_error(capsys, tmp_path / "none", "-o", tmp_path / "x")


def test_an_interrupted_table_leaves_no_output(bundle, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tables, "BLOCK_ROWS", 4)
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.parquet"
    write_jsonl(src, rows(12))
    real, calls = tables.correct_table, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # after the first block was written
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(tables, "correct_table", interrupted)
    assert run(src, "-o", dst, "--model", bundle, "--mode", "edit5") == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_folder_resumes_at_the_first_unfinished_file(bundle, tmp_path, capsys):
    """A folder of Parquet files to a folder; the run is killed (SIGKILL) in its third file; the
    rerun keeps the two finished outputs, rewrites no file and writes the rest, the same as one
    uninterrupted run."""
    folder, out = tmp_path / "in", tmp_path / "out"
    (folder / "part").mkdir(parents=True)
    names = ["a.parquet", "b.parquet", "c.parquet", "part/d.parquet"]
    for k, name in enumerate(names):
        pq.write_table(pa.table({"n": list(range(6)), "text": sentences(6, seed=k)}), folder / name)
    pq.write_table(pa.table({"n": pa.array([], pa.int64()), "text": pa.array([], pa.string())}),
                   folder / "empty.parquet")
    common = ["--model", str(bundle), "--mode", "edit5", "--threads", "1", "--no-progress"]
    # the run: killed when the third file's first block is being corrected
    hook = ("import os, signal, sys\nfrom editspec import cli, tables\nreal = tables.correct_table\ncalls = []\n"
            "def kill(*a, **k):\n    calls.append(1)\n    if len(calls) == 3: os.kill(os.getpid(), signal.SIGKILL)\n"
            "    return real(*a, **k)\ntables.correct_table = kill\n"
            "sys.exit(cli.main(sys.argv[1:]))\n")
    killed = subprocess.run([sys.executable, "-c", hook, "correct", str(folder), "-o", str(out), *common],
                            capture_output=True, text=True, cwd=ROOT)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert done == ["a.parquet", "b.parquet"]  # sorted: a, b, c, empty, part/d; c was cut short
    stamps = {name: (out / name).stat().st_mtime_ns for name in done}
    time.sleep(0.01)
    capsys.readouterr()
    assert run(folder, "-o", out, *common) == 0  # the rerun: here, not a process of its own (its ~4 s start)
    assert "2 of 5 outputs already written" in capsys.readouterr().err
    assert {name: (out / name).stat().st_mtime_ns for name in done} == stamps  # kept, not rewritten
    fresh = tmp_path / "fresh"
    assert run(folder, "-o", fresh, *common) == 0
    for name in [*names, "empty.parquet"]:
        assert pq.read_table(out / name).equals(pq.read_table(fresh / name)), name
    assert pq.read_table(out / "empty.parquet").num_rows == 0
    leftovers = [p.name for p in out.rglob("*") if p.name.startswith(".")]
    assert len(leftovers) <= 1  # SIGKILL's temporary file (removed by a run a minute later)


def test_stdout_is_json_lines(bundle, tmp_path, capsysbinary):
    src = tmp_path / "in.jsonl"
    write_jsonl(src, [{"text": "He go home."}, {"text": "Fine."}])
    assert cli.main(["correct", str(src), "--model", str(bundle), "--mode", "edit5", "--no-progress"]) == 0
    out, err = capsysbinary.readouterr()
    got = [json.loads(line) for line in out.decode().splitlines()]
    assert [r["text"] for r in got] == ["He go home.", "Fine."] and err == b""


def test_the_new_columns_are_built_without_pandas():
    """Issue 71: ``pa.array`` imports pandas (seconds on a busy host) to look for its types; a table's
    ``corrected`` and ``edits`` columns are built through Arrow's JSON reader instead, the same arrays."""
    code = """
import sys
import pyarrow as pa
from editspec.tables import EDITS, _array
edits = [[{"start": 1, "end": 2, "original": "a\\u00e9\\U0001F600", "correction": "\\"b\\\\\\\\", "type": None,
           "message": "m"}], None, []]
texts = ["x", None, "\\n\\t\\u2028"]
built = _array(edits, EDITS), _array(texts, pa.string()), _array([], EDITS)
assert "pandas" not in sys.modules
assert built[0].equals(pa.array(edits, EDITS)) and built[1].equals(pa.array(texts, pa.string()))
assert built[2].type == EDITS and len(built[2]) == 0
"""
    subprocess.run([sys.executable, "-c", code], check=True)
