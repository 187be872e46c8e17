"""training.lease on CPU: the GPU lease's very entry points, with tiny sizes and a few steps.

prepare (a tiny data slice, a hand-built wheel) -> start (import-guarded to what the lent machine
has or gets carried) -> wait -> collect (into a temporary $OUT) -> join -> Corrector loads ->
``editspec correct`` on the result.
"""

from __future__ import annotations

import base64
import hashlib
import json
import lzma
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from transformers import T5ForConditionalGeneration

from editspec.cli import main as editspec_main
from editspec.modeling.modeling_edit5 import EdiT5Model
from editspec.tokenization.tokens import load_tokenizer, marker_ids
from editspec.errors import EditspecError
from tests.helpers import sentences
from training.lease.__main__ import PLAN, main as lease
from training.lease.collect import ship
from training.lease.imports import DeviceOnly
from training.lease.plan import REPO_ROOT, load_plan
from training.lease.prepare import device_calls
from training.lease.run import read_json
from training.lease.shards import MAX_FILE, MAX_FILES
from training.config import load_config

TINY = [  # every stage: a tiny T5 (still a 12-layer encoder), a few steps; the plan's minutes stay a cap
    "model.config.d_model=32", "model.config.d_kv=8", "model.config.d_ff=64", "model.config.num_heads=4",
    "model.config.tag_embedding_dim=8", "model.config.max_order_positions=64",
    "data.batch_tokens=1024", "data.max_batch_size=64", "data.pool_size=128", "data.workers=0",
    "data.dev.max_examples=16", "train.max_steps=2", "train.warmup_steps=1", "train.save_every=1",
    "train.eval_every=1", "train.log_every=1", "train.mixed_precision=no",  # bf16 autocast is slow on CPU
]


def m2_file(path: Path, n: int, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"S the {s}\nA 0 1|||U:DET||||||REQUIRED|||-NONE-|||0\n\n" for s in sentences(n, seed)))


def probe_wheel(folder: Path) -> Path:
    """A real (tiny, pure-Python) wheel, so that start's pip install runs as on the machine."""
    files = {"lease_probe/__init__.py": b"CARRIED = True\n",
             "lease_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: lease-probe\nVersion: 1.0\n",
             "lease_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for name, data in files.items()) + "lease_probe-1.0.dist-info/RECORD,,\n"
    wheel = folder / "lease_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in {**files, "lease_probe-1.0.dist-info/RECORD": record.encode()}.items():
            z.writestr(name, data)
    return wheel


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shared-data")
    m2_file(root / "wi_locness" / "ABC.train.gold.bea19.m2", 120, 1)
    m2_file(root / "wi_locness" / "ABCN.dev.gold.bea19.m2", 30, 2)
    m2_file(root / "fce" / "fce.train.gold.bea19.m2", 80, 3)
    wiki = root / "wikipedia_en_sentences"
    wiki.mkdir()
    with lzma.open(wiki / "enwiki_sentences.00.txt.xz", "wt", encoding="utf-8") as f:
        f.write("\n".join(s.replace(".", ", which the teachers liked very much.") for s in sentences(600, 4)) + "\n")
    return root


def test_gpu_lease_prepare_start_wait_collect_join_correct(tmp_path, data, capsys):
    folder, run_dir, out, bundle = tmp_path / ".lease", tmp_path / "run", tmp_path / "OUT", tmp_path / "bundle"
    # the 30-minute plan: a 12-layer T5 from scratch (TINY shrinks it), four calls
    assert lease(["prepare", "--folder", str(folder), "--data-dir", str(data), "--wheel", str(probe_wheel(tmp_path)),
                  "--m2-sentences", "100", "--wiki-sentences", "500", "--plan", "configs/lease-gpu-30min.yaml"]) == 0
    prepared = read_json(folder / "prepared.json")
    assert prepared["wiki_sentences"] == 500 and prepared["m2_sentences"]["wi_locness/ABC.train.gold.bea19.m2"] == 100
    assert prepared["tree_bytes"] + prepared["folder_bytes"] < prepared["limit_bytes"]
    printed = capsys.readouterr().out
    calls = [json.loads(line.split("run ", 1)[1]) for line in printed.splitlines() if line.strip().startswith("run {")]
    assert [c["command"].split()[4] for c in calls] == ["start", "wait", "wait", "collect"]
    assert all(c["carry"] for c in calls) and all(len(c["command"]) <= 2000 and c["timeout_s"] <= 600 for c in calls)

    assert lease(["start", "--folder", str(folder), "--run-dir", str(run_dir), "--check-imports",  # prepared plan
                  *[a for s in TINY for a in ("--set", s)]]) == 0
    assert (run_dir / "site" / "lease_probe" / "__init__.py").is_file()  # the carried wheel, installed
    assert lease(["wait", "--run-dir", str(run_dir), "--minutes", "2.5"]) == 0
    status = read_json(run_dir / "status.json")
    assert status["state"] == "done", (run_dir / "recipe.log").read_text()[-3000:]
    assert status["done"] == ["t5-pre", "t5-ft", "edit5"]
    pre = [json.loads(x) for x in (run_dir / "t5-pre" / "log.jsonl").read_text().splitlines()]
    assert max(e["step"] for e in pre) == 2 and any("dev_loss" in e for e in pre)
    assert json.loads((run_dir / "t5-pre" / "best" / "config.json").read_text())["num_layers"] == 12

    assert lease(["collect", "--run-dir", str(run_dir), "--out", str(out)]) == 0
    files = list(out.iterdir())
    assert len(files) <= MAX_FILES and all(f.stat().st_size <= MAX_FILE for f in files)
    manifest = json.loads((out / "lease-manifest.json").read_text())
    assert manifest["eval"]["t5"]["stage"] == "t5-ft" and manifest["eval"]["edit5"]["stage"] == "edit5"
    assert all(manifest["eval"][k]["dev_loss"] > 0 for k in ("t5", "edit5"))

    assert lease(["join", str(out), str(bundle)]) == 0
    assert json.loads((bundle / "edit5" / "config.json").read_text())["t5_encoder"] == "../t5"
    (tmp_path / "in.txt").write_text("She go to school yesterday.\n")
    assert editspec_main(["correct", "--model", str(bundle), "--no-progress", str(tmp_path / "in.txt"),
                          "-o", str(tmp_path / "out.txt")]) in (0, None)
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 1

    # a damaged shard is caught by its checksum
    shard = out / "lease-weights-00.safetensors"
    shard.write_bytes(shard.read_bytes()[:-1] + b"\0")
    assert lease(["join", str(out), str(tmp_path / "again")]) == 2
    assert "sha256" in capsys.readouterr().err


@pytest.mark.parametrize("path", [PLAN, "configs/lease-gpu-heads.yaml"])
def test_gpu_lease_15_minute_plans_are_one_call_from_the_shipped_t5(path):
    """The 15-minute plans: start, wait and collect in one call under the 10-minute call limit, and
    stage 1 starts from the shipped T5 (a from-scratch T5 cannot reach it in a few minutes)."""
    plan = load_plan(Path(path))
    calls = [json.loads(line.split("run ", 1)[1]) for line in device_calls(REPO_ROOT / ".lease", plan).splitlines()
             if line.strip().startswith("run {")]
    assert len(calls) == 1 and calls[0]["timeout_s"] <= 600 and len(calls[0]["command"]) <= 2000
    assert [w for w in calls[0]["command"].split() if w in ("start", "wait", "collect")] == ["start", "wait", "collect"]
    # the call's 600 s hold start (~30 s), the wait, and collect (its 60 s stop grace, shipping, dev loss)
    assert plan["wait_minutes"] * 60 + 150 <= 600 and sum(s["minutes"] for s in plan["stages"]) < plan["wait_minutes"]
    first = load_config(REPO_ROOT / plan["stages"][0]["config"], plan["stages"][0].get("set", []))
    assert (REPO_ROOT / first["model"]["init_from"] / "model.safetensors").is_file()


def test_gpu_lease_collect_ships_heads_beside_the_shipped_t5(tmp_path):
    """Issue 42's plan (configs/lease-gpu-heads.yaml): its bundle's T5 is the shipped one, a
    repository model directory, shipped tensor for tensor; the heads a stage trained on its encoder
    (here fresh ones, saved as training saves them) ship beside it and load on it."""
    shipped_dir = REPO_ROOT / "editspec/models/default/t5"
    t5 = T5ForConditionalGeneration.from_pretrained(shipped_dir, dtype=torch.float32)
    best = tmp_path / "run" / "heads" / "best"
    EdiT5Model.on_t5(t5, t5_encoder=str(shipped_dir), marker_ids=marker_ids(load_tokenizer(shipped_dir))).save_pretrained(best)
    load_tokenizer(shipped_dir).save_pretrained(best)
    plan = load_plan(Path("configs/lease-gpu-heads.yaml"))
    assert ship(tmp_path / "run", plan, None) == {"t5": "editspec/models/default/t5", "edit5": "heads"}
    bundle = tmp_path / "run" / "bundle"
    shipped = load_file(shipped_dir / "model.safetensors")
    joined = load_file(bundle / "t5" / "model.safetensors")
    assert shipped.keys() == joined.keys() and all(torch.equal(shipped[k], joined[k]) for k in shipped)
    assert json.loads((bundle / "edit5" / "config.json").read_text())["t5_encoder"] == "../t5"
    heads = EdiT5Model.from_pretrained(bundle / "edit5")  # reads the encoder of the T5 beside it
    assert torch.equal(heads.encoder.block[0].layer[0].SelfAttention.q.weight,
                       joined["encoder.block.0.layer.0.SelfAttention.q.weight"].to(heads.dtype))


def test_gpu_lease_plan_refuses_an_unknown_bundle_entry(tmp_path):
    plan = tmp_path / "plan.yaml"
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")  # a model, but not one the package ships (travels)
    for entry in ("editspec/models/none", str(tmp_path / "m"), "b"):  # b: no stage either
        plan.write_text(f"stages: [{{name: a, config: x.yaml, minutes: 1}}]\nbundle: {{t5: [{entry}]}}\n")
        with pytest.raises(EditspecError, match="unknown stages or model directories"):
            load_plan(plan)


def test_gpu_lease_start_refuses_a_folder_without_a_plan(tmp_path, capsys):
    (tmp_path / "prepared.json").write_text("{}")
    assert lease(["start", "--folder", str(tmp_path), "--run-dir", str(tmp_path / "run")]) == 2
    assert "names no plan" in capsys.readouterr().err
    assert lease(["start", "--folder", str(tmp_path), "--run-dir", str(tmp_path / "run"), "--plan", "nope.yaml"]) == 2
    assert "cannot read lease plan" in capsys.readouterr().err and not (tmp_path / "run" / "recipe.log").exists()


def test_gpu_lease_import_guard_refuses_what_the_machine_lacks():
    finder = DeviceOnly(["datasets", "dill", "multiprocess", "rapidfuzz"])  # as this repository's code imports
    assert finder.find_spec("torch") is None and finder.find_spec("rapidfuzz") is None  # there / carried
    assert finder.find_spec("training") is None  # this repository
    with pytest.raises(ModuleNotFoundError, match="not on the lent GPU machine"):
        finder.find_spec("spacy")  # installed here, not there
