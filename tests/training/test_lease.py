"""training.lease on CPU: the GPU lease's very entry points, with tiny sizes and a few steps.

prepare (a tiny data slice, a hand-built wheel) -> start (import-guarded to what the lent machine
has or gets carried) -> wait -> collect (into a temporary $OUT) -> join -> Corrector loads ->
``editspec correct`` on the result.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Callable

import pytest
import torch
from safetensors.torch import load_file

from transformers import T5Config, T5ForConditionalGeneration

from editspec.cli import main as editspec_main
from editspec.modeling.modeling_edit5 import EdiT5Model
from editspec.tokenization.tokens import load_tokenizer, marker_ids
from editspec.errors import EditspecError
from tests.helpers import sentences
from training.lease.__main__ import PLAN, main as lease
from training.lease.collect import ship
from training.lease.imports import DeviceOnly
from training.lease.pick import candidates, fill_lease_log
from training.lease.plan import REPO_ROOT, load_plan
from training.lease import continuation, park, shards
from training.lease.prepare import Room, Wheels, device_calls, prepare
from training.lease.run import read_json
from training.lease.shards import MAX_FILE, MAX_FILES
from training.train import EXPORT_REQUEST
from training.config import load_config

TINY = [  # every stage: a tiny T5 (still a 12-layer encoder), a few steps; the plan's minutes stay a cap
    "model.config.d_model=32", "model.config.d_kv=8", "model.config.d_ff=64", "model.config.num_heads=4",
    "model.config.tag_embedding_dim=8", "model.config.max_order_positions=64",
    "data.batch_tokens=256", "data.max_batch_size=64", "data.pool_size=128", "data.workers=0",
    "data.dev.max_examples=16", "train.max_steps=2", "train.warmup_steps=1", "train.save_every=1",
    "train.eval_every=1", "train.log_every=1", "train.mixed_precision=bf16",  # autocast, as on the GPU
    "train.compile=false", "train.bench_steps=1",  # compiling is tested in test_training; the bench runs
]
# the stages run long enough to be asked for interim/ while they run (``held`` makes that certain, not
# the length); the synthetic stage's decay (stable/) begins at step 12, 3 steps before its end, so that
# the recipe's 1 s poll sees stable/ while it runs; the fine-tune ranks its checkpoints at steps 5, 10
# and 15 (the synthetic stage selects on loss). A step is ~0.3 s here (bf16 autocast on the CPU)
RUNNING = ["train.max_steps=15", "train.save_every=1000", "train.eval_every=1000", "train.log_every=2",
           "train.eval_approx_every=5", "train.max_minutes=30"]  # steps, not the plan's minutes, end them here


def travelling_copy(dest: Path) -> Path:
    """The checkout as a device call carries it: tracked and untracked-not-ignored files, less what
    ``prepare`` parks (the shipped models, reports/). The lease runs there, so that nothing it does on the
    machine can lean on a file that stays behind (the first lease did: the tokenizer)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            check=True, capture_output=True, text=True).stdout.split("\0")
    for rel in listed:
        if rel and (REPO_ROOT / rel).is_file() and not any(rel == p or rel.startswith(p + "/")
                                                            for p in (*park.BUNDLE_MODELS, park.REPORTS)):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / rel, dest / rel)
    return dest


def on_device(tree: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m training.lease ARGS`` run from the travelling copy, as the device call runs it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "training.lease", *args], cwd=tree, env=env, capture_output=True,
                          text=True)


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


@contextlib.contextmanager
def held(pid: int, until: Callable[[], bool], seconds: float = 300):
    """The process group ``pid`` stopped once ``until()`` holds (polled every 10 ms), for the
    block; ``release(when)`` lets it go on once ``when()`` holds; let go at the block's end anyway."""
    def wait(condition: Callable[[], bool]) -> None:
        deadline = time.time() + seconds
        while not condition():
            assert time.time() < deadline, "waited too long"
            time.sleep(0.01)

    def release(when: Callable[[], bool]) -> None:
        wait(when)
        os.killpg(pid, signal.SIGCONT)

    wait(until)
    os.killpg(pid, signal.SIGSTOP)
    try:
        yield release
    finally:
        os.killpg(pid, signal.SIGCONT)


def test_gpu_lease_prepare_start_wait_collect_join_correct(tmp_path, data, capsys):
    """The default plan end to end at a tiny size: a new series (from scratch); the call starts the
    run and waits; interim/ is asked of the running stage (``collect --interim``: the run goes on);
    the wait ends with the run, collect brings the candidates and the continuation with the CUDA
    checks' reports; join packs the continuation (from either collect) and the next lease's prepare
    continues from it with the next slice."""
    folder, run_dir, bundle = tmp_path / ".lease", tmp_path / "run", tmp_path / "bundle"
    pack, lease_log = tmp_path / "continuation" / "t5.tar.xz", tmp_path / "lease-log.md"
    common = ["--folder", str(folder), "--data-dir", str(data), "--wheel", str(probe_wheel(tmp_path)),
              "--m2-sentences", "100", "--wiki-sentences", "500", "--min-wiki-sentences", "100", "--no-park",
              "--limit-mib", "200"]  # unparked, the shipped models and any continuation travel
    assert lease(["prepare", *common, "--from-scratch"]) == 0
    prepared = read_json(folder / "prepared.json")
    assert prepared["wiki_sentences"] == 500 and prepared["wiki_start"] == 0 and prepared["continuation"] is None
    assert prepared["m2_sentences"]["wi_locness/ABC.train.gold.bea19.m2"] == 100
    assert prepared["tree_bytes"] + prepared["folder_bytes"] < prepared["limit_bytes"]
    printed = capsys.readouterr().out
    assert "a new series: from scratch" in printed
    calls = [json.loads(line.split("run ", 1)[1]) for line in printed.splitlines() if line.strip().startswith("run {")]
    # one call trains and collects (a second call's machine may be a fresh one: lease 3), then the checks
    assert len(calls) == 2 and [w for w in calls[0]["command"].split() if w in ("start", "wait", "collect")] == \
        ["start", "wait", "collect"] and "--interim" not in calls[0]["command"].split()
    assert [w for w in calls[1]["command"].split() if w in ("checks", "wait", "collect")] == ["checks"]

    tree = travelling_copy(tmp_path / "device")  # start, wait, collect run where the calls do
    assert not (tree / park.BUNDLE / "t5" / "model.safetensors").exists()
    assert (tree / park.BUNDLE / "t5" / "tokenizer.json").is_file()  # the stages' configs read it
    started = on_device(tree, "start", "--folder", str(folder), "--run-dir", str(run_dir), "--check-imports",
                        *[a for s in [*TINY, *RUNNING] for a in ("--set", s)])  # the prepared plan
    assert started.returncode == 0, started.stderr[-3000:]
    assert (run_dir / "site" / "lease_probe" / "__init__.py").is_file()  # the carried wheel, installed
    # call 1: interim/ asked of the running stage (``collect --interim``: the run goes on). Its
    # timeline is the test's, not the host's: the recipe is held (SIGSTOP) before the stage's
    # first step until the collect has asked, and the stage, let go, serves the request at its
    # first step, long before its decay (stable/, step 12): a fast host cannot outrun the request.
    # The collect starts now, its imports (~10 s) beside the stage's start, not after it
    log = run_dir / "t5-wsd" / "log.jsonl"
    first = subprocess.Popen([sys.executable, "-m", "training.lease", "collect", "--run-dir", str(run_dir),
                              "--out", str(tmp_path / "OUT1"), "--interim"], cwd=tree, text=True,
                             env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with held(read_json(run_dir / "status.json")["pid"], until=log.is_file) as release:
        assert '"loss"' not in log.read_text(), "the stage trained before it was held"
        release(when=(run_dir / "t5-wsd" / EXPORT_REQUEST).is_file)
        _, err = first.communicate()
    assert first.returncode == 0, err[-3000:] + (run_dir / "recipe.log").read_text()[-3000:]
    interim = json.loads((tmp_path / "OUT1" / "lease-manifest.json").read_text())
    assert interim["interim"] is True and interim["continuation"] == "t5-wsd/interim"
    assert read_json(run_dir / "status.json")["state"] in ("running", "done"), "the interim collect stopped the run"
    interim_step = json.loads((run_dir / "t5-wsd" / "interim" / "training.json").read_text())["step"]
    # call 2: the run's end, the candidate, the continuation and the checks
    assert on_device(tree, "wait", "--run-dir", str(run_dir), "--minutes", "10").returncode == 0, \
        (run_dir / "recipe.log").read_text()[-3000:]
    status, recipe_log = read_json(run_dir / "status.json"), (run_dir / "recipe.log").read_text()
    assert status["state"] == "done" and status["done"] == ["t5-wsd", "t5-ft"], recipe_log[-3000:]
    # the fine-tune started while the synthetic stage decayed (how it then takes last/: test_training's twin test)
    assert "stage t5-ft starts early" in recipe_log
    ft_log = [json.loads(x) for x in (run_dir / "t5-ft" / "log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in ft_log if "dev_approx_f05" in e] == [5, 10, 15]
    ranked = sorted((run_dir / "t5-ft" / "ranked").glob("step-*"))
    assert len(ranked) == 2 and all(json.loads((r / "training.json").read_text())["score"] >= 0 for r in ranked)
    entries = [json.loads(x) for x in (run_dir / "t5-wsd" / "log.jsonl").read_text().splitlines()]
    steps = [e for e in entries if "loss" in e]
    assert steps[-1]["step"] > interim_step and all("data_wait" in e for e in steps)  # it went on
    bench = next(e["bench"] for e in entries if "bench" in e)  # timed while the data started
    assert bench["sync_free"] is True and {"hf@256", "nosync@256"} <= set(bench["variants"])
    config = json.loads((run_dir / "t5-wsd" / "stable" / "config.json").read_text())  # where the decay began
    assert (config["num_layers"], config["num_decoder_layers"]) == (12, 2)  # the deep-encoder shape
    out = tmp_path / "OUT2"
    collected = on_device(tree, "collect", "--run-dir", str(run_dir), "--out", str(out), "--check-minutes", "4")
    assert collected.returncode == 0, collected.stderr[-3000:]
    files = list(out.iterdir())
    assert len(files) <= MAX_FILES and all(f.stat().st_size <= MAX_FILE for f in files)
    manifest = json.loads((out / "lease-manifest.json").read_text())
    assert manifest["eval"]["t5"]["stage"] == "t5-ft" and manifest["interim"] is False
    assert manifest["eval"]["t5-2"]["stage"].startswith("t5-ft/ranked/step-")  # the runner-up candidate
    assert manifest["eval"]["t5-2"]["dev_approx_f05"] <= manifest["eval"]["t5"]["dev_approx_f05"]
    assert len([n for n in manifest["pieces"]]) == len(list(out.glob("lease-bundle.tar.xz.*")))
    assert manifest["continuation"] == "t5-wsd/stable" and manifest["stages"]["t5-wsd"]["examples"] > 0
    assert manifest["stages"]["t5-wsd"]["minutes"] > 0 and manifest["stages"]["t5-wsd"]["bench"]["sync_free"]
    with tarfile.open(out / "lease-logs.tar.xz") as tar:  # the checks' reports ride in the logs' file
        reports = {n: tar.extractfile(n).read() for n in tar.getnames() if n.startswith("checks/")}
    assert json.loads(reports["checks/report.failed.json"]) == {"failed": 0}, collected.stdout[-2000:]
    b32 = json.loads(reports["checks/profile-b32/report.json"])
    assert b32["modes"]["speculative"]["identical_to_t5"] == 1.0

    assert lease(["join", str(out), str(bundle), "--continuation", str(pack), "--log", str(lease_log)]) == 0
    record = json.loads(pack.with_name("t5.json").read_text())
    assert record["leases"] == 1 and record["wiki_next"] == 500 and record["examples"] > 0
    assert record["this_lease"] == record["examples"]  # the first lease of the series
    assert not (bundle / "continuation").exists() and "| pending |" in lease_log.read_text()
    assert [p.name for p in candidates(bundle)] == ["t5", "t5-2"]
    assert json.loads((bundle / "t5-2" / "training.json").read_text())["step"] in (5, 10, 15)
    (tmp_path / "in.txt").write_text("She go to school yesterday.\n")
    assert editspec_main(["correct", "--model", str(bundle), "--no-progress", str(tmp_path / "in.txt"),
                          "-o", str(tmp_path / "out.txt")]) in (0, None)
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 1
    # had call 2 failed, the interim files alone make the bundle and the continuation
    spare = tmp_path / "spare" / "t5.tar.xz"
    assert lease(["join", str(tmp_path / "OUT1"), str(tmp_path / "bundle1"), "--continuation", str(spare),
                  "--log", str(tmp_path / "lease-log-1.md")]) == 0
    assert json.loads(spare.with_name("t5.json").read_text())["stage"] == "t5-wsd/interim"
    assert (tmp_path / "bundle1" / "t5" / "config.json").is_file()

    # the next lease continues the series: the next slice, the continuation checked and unpacked
    assert lease(["prepare", *common, "--continuation", str(pack)]) == 0
    again = read_json(folder / "prepared.json")
    assert again["wiki_start"] == 500 and again["resumed"]["leases"] == 1
    assert "lease 2 of the series" in capsys.readouterr().out
    continued = continuation.unpack(pack, tmp_path / "continued")
    assert torch.equal(load_file(continued / "model.safetensors")["shared.weight"],
                       load_file(run_dir / "bundle" / "continuation" / "model.safetensors")["shared.weight"])

    # a truncated continuation is refused before anything is packed; so is a damaged shard
    pack.write_bytes(pack.read_bytes()[:-10])
    assert lease(["prepare", *common, "--continuation", str(pack)]) == 2
    assert "truncated" in capsys.readouterr().err
    shard = out / "lease-bundle.tar.xz.00"
    shard.write_bytes(shard.read_bytes()[:-1] + b"\0")
    assert lease(["join", str(out), str(tmp_path / "again"), "--continuation", str(tmp_path / "c2.tar.xz")]) == 2
    assert "sha256" in capsys.readouterr().err


def test_gpu_lease_prepare_refuses_a_call_that_carries_too_little_text(tmp_path, data):
    with pytest.raises(EditspecError, match="fewer than 700000"):
        prepare(tmp_path / ".lease", REPO_ROOT / PLAN, data, wheels=Wheels([], tmp_path), pack=None,
                park_bundle=False, room=Room(limit=200 * 2**20))  # the test data holds 600 sentences
    assert not (tmp_path / ".lease").exists()


def test_gpu_lease_park_keeps_the_bundle_on_disk_and_out_of_what_travels(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    model = tmp_path / "editspec" / "models" / "default" / "t5" / "model.safetensors"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"weights")
    (tmp_path / "code.py").write_text("x = 1\n")
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True, text=True)  # noqa: E731
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    travels = lambda: set(git("ls-files", "--cached", "--others", "--exclude-standard").stdout.split())  # noqa: E731
    park.park(tmp_path)
    assert travels() == {"code.py"} and model.read_bytes() == b"weights"
    refused = subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                              "-qam", "oops"], capture_output=True, text=True)
    assert refused.returncode != 0 and "parked" in refused.stderr
    assert park.unpark(tmp_path) and travels() == {"code.py", "editspec/models/default/t5/model.safetensors"}
    assert git("status", "--porcelain").stdout == ""
    hook = tmp_path / ".git" / "hooks" / "pre-commit"  # someone else's hook: refused, nothing parked
    hook.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(EditspecError, match="pre-commit"):
        park.park(tmp_path)
    assert not park.parked(tmp_path) and "editspec/models/default/t5/model.safetensors" in travels()


@pytest.mark.parametrize("path", [PLAN, "configs/lease-gpu-heads.yaml"])
def test_gpu_lease_15_minute_plans_fit_the_lease(path):
    """The 15-minute plans under the 10-minute call limit and the lease's 900 s: one call (start,
    wait, collect) and a checks call that runs only on a still-warm machine. The default plan's first
    stage continues the series."""
    plan = load_plan(Path(path))
    calls = [json.loads(line.split("run ", 1)[1]) for line in device_calls(REPO_ROOT / ".lease", plan).splitlines()
             if line.strip().startswith("run {")]
    assert len(calls) == 2 and all(c["timeout_s"] <= 600 and len(c["command"]) <= 2000 for c in calls)
    assert [w for w in calls[0]["command"].split() if w in ("start", "wait", "collect")] == ["start", "wait", "collect"]
    machine, unpack, interim, collect, transfers = 90, 30, 45, 60, 30  # seconds, lease 1's measured costs rounded up
    gap = 15  # between the calls: call 1's files come back, call 2's carry goes out
    evaluations = 40  # the fine-tune's approximate F0.5 on 2,000 dev sentences, ~6 evaluations (the clock pauses)
    minutes = sum(s["minutes"] for s in plan["stages"])
    if plan.get("interim_call"):
        assert unpack + 60 * plan["wait_minutes"] + interim <= 600  # call 1
        # the first stage starts ~1 min into call 1 (unpack, the loader's start) and trains its minutes,
        # the fine-tune (set up while the first decays) its own; then call 2's collect and checks: all
        # of it within the lease's 900 s, and at least 8.5 of its minutes training (the goal's 10 less the
        # margin that keeps call 2 inside the lease at its limits, below)
        assert machine + unpack + 60 + 60 * minutes + evaluations + collect + 60 * plan["check_minutes"] \
            + transfers <= 900 and minutes >= 8.5
        assert minutes > plan["wait_minutes"]  # the run goes on after call 1
        # call 2 ends before the lease does even when the fine-tune overruns: collect stops it
        assert machine + unpack + 60 * plan["wait_minutes"] + interim + gap + calls[1]["timeout_s"] + gap <= 900
    else:
        # the call's 600 s hold start (~30 s), the wait, and collect (its 60 s stop grace, shipping, dev loss)
        assert plan["wait_minutes"] * 60 + 150 <= 600 and minutes < plan["wait_minutes"]
        assert machine + 600 + calls[1]["timeout_s"] <= 900
    if path == PLAN:
        first = load_config(REPO_ROOT / plan["stages"][0]["config"], plan["stages"][0].get("set", []))
        assert plan["stages"][0]["continue"] and plan["continuation"] == f"{plan['stages'][0]['name']}/stable"
        assert first["train"]["schedule"] == "warmup_stable_decay" and first["train"]["decay_share"]  # one stage
        t5 = T5ForConditionalGeneration(T5Config(**first["model"]["config"], vocab_size=16256))
        assert (t5.config.num_layers, t5.config.num_decoder_layers) == (12, 2)
        bf16 = 2 * sum(p.numel() for p in t5.parameters())
        # packed with xz, bf16 weights take ~71%: the continuation stays under its 30 MB, and the
        # candidates and the continuation come back in the pieces a call brings (beside logs, manifest)
        assert 0.75 * bf16 < continuation.MAX_BYTES
        assert 0.75 * bf16 * (plan["candidates"] + 1) < (MAX_FILES - 2) * MAX_FILE and plan["candidates"] >= 2
        # the device's minutes end with the gold fine-tune: the decayed end on W&I + FCE train only,
        # respelled as the shipped pipeline feeds the T5, its best checkpoints kept
        ft = plan["stages"][-1]
        gold = load_config(REPO_ROOT / ft["config"], ft.get("set", []))
        assert (ft["init_from"], ft["early"]) == ("t5-wsd/last", "t5-wsd/stable")
        assert plan["bundle"]["t5"][0] == ft["name"]
        assert {(s["path"], s["respell"]) for s in gold["data"]["sources"]} == \
            {("wi_locness/ABC.train.gold.bea19.m2", True), ("fce/fce.train.gold.bea19.m2", True)}
        assert gold["data"]["dev"]["respell"] and gold["train"]["keep_best"] >= plan["candidates"] and plan["respelled"]
        assert gold["train"]["select_on"] == "approx_f05" and gold["train"]["init_wait_minutes"] > 0
    else:  # the heads follow the shipped T5: its corrections, made on the device, then heads on its encoder
        distill, heads = plan["stages"]
        assert distill["module"] == "training.lease.distill" and not plan["park"] and not plan["wiki"]
        heads_cfg = load_config(REPO_ROOT / heads["config"], heads["set"])
        assert heads_cfg["model"]["init_from"] == distill["args"][0] == "editspec/models/default/t5"
        assert (REPO_ROOT / distill["args"][0] / "model.safetensors").is_file()
        assert heads_cfg["data"]["sources"] == [{"name": "distill", "type": "parallel", "source": "distill/source.txt",
                                                 "target": "distill/target.txt"}]


def test_gpu_lease_distill_writes_the_t5s_greedy_corrections(tmp_path, data, models, capsys):
    from training.lease.distill import main as distill_main
    from training.dev import correct_fn_for
    from training.models import ModelKind

    distill_main([str(models / "bundle" / "t5"), "--m2", "wi_locness/ABC.train.gold.bea19.m2", "--out",
                  str(tmp_path / "d"), "--data-dir", str(data), "--limit", "6"])
    sources = (tmp_path / "d" / "source.txt").read_text().splitlines()
    targets = (tmp_path / "d" / "target.txt").read_text().splitlines()
    assert len(sources) == len(targets) == 6 and "6 sentences" in capsys.readouterr().out
    t5 = T5ForConditionalGeneration.from_pretrained(models / "bundle" / "t5").eval()
    with torch.no_grad():
        assert targets == correct_fn_for(t5, ModelKind("t5"), load_tokenizer(models / "bundle" / "t5"), 128)(sources)


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
    # the shipped layout (editspec/models/default): each model folder with its tokenizer, no bundle-level one
    assert sorted(p.name for p in bundle.iterdir()) == ["corrector_config.json", "edit5", "t5"]
    assert all((bundle / kind / "tokenizer.json").is_file() for kind in ("t5", "edit5"))
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


def test_the_committed_continuation_is_a_trained_model_and_nothing_else(tmp_path):
    """training/continuation/t5.tar.xz (23 MB in git) holds a model's files only, no data: a pack
    with anything else is refused before it is unpacked."""
    assert continuation.verify()["bytes"] < continuation.MAX_BYTES
    assert set(continuation.members(continuation.PACK)) <= {*continuation.MEMBERS, *continuation.OPTIONAL}
    bad = tmp_path / "t5.tar.xz"
    with lzma.open(bad, "wb") as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        (tmp_path / "train.src").write_text("I has a cat .\n")
        for name in (*continuation.MEMBERS, "train.src"):
            tar.add(tmp_path / "train.src", name)
    with pytest.raises(EditspecError, match="not a model checkpoint: it holds train.src"):
        continuation.members(bad)



def test_pieces_of_the_bundle_come_back_whole_or_are_refused(tmp_path):
    """split cuts one compressed tar into pieces of at most the call's file size; join reads them
    back as they were, file for file, and refuses a missing or damaged piece."""
    bundle = tmp_path / "bundle"
    (bundle / "t5").mkdir(parents=True)
    (bundle / "t5" / "model.safetensors").write_bytes(os.urandom(300_000))  # incompressible: several pieces
    (bundle / "t5-2").mkdir()
    (bundle / "t5-2" / "config.json").write_text('{"d_model": 8}')
    (bundle / "corrector_config.json").write_text("{}")
    manifest = shards.split(bundle, tmp_path / "out", {"note": "x"}, piece=100_000)
    pieces = sorted((tmp_path / "out").glob("lease-bundle.tar.xz.*"))
    assert len(pieces) == len(manifest["pieces"]) >= 3 and all(p.stat().st_size <= 100_000 for p in pieces)
    assert manifest["note"] == "x" and set(manifest["bundle"]) == {"t5/model.safetensors", "t5-2/config.json",
                                                                   "corrector_config.json"}
    joined = tmp_path / "joined"
    shards.join(tmp_path / "out", joined)
    assert all((joined / rel).read_bytes() == (bundle / rel).read_bytes() for rel in manifest["bundle"])
    pieces[1].write_bytes(pieces[1].read_bytes()[:-1] + b"\0")
    with pytest.raises(EditspecError, match="sha256"):
        shards.join(tmp_path / "out", tmp_path / "again")
    pieces[1].unlink()
    with pytest.raises(EditspecError, match="missing"):
        shards.join(tmp_path / "out", tmp_path / "again")
    assert not (tmp_path / "again").exists()


def test_pick_finds_the_candidates_and_fills_the_lease_logs_row(tmp_path):
    for name in ("t5", "t5-2", "t5-10", "t5-x"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    assert [p.name for p in candidates(tmp_path)] == ["t5", "t5-2", "t5-10"]
    log = tmp_path / "lease-log.md"
    log.write_text("| a | b |\n|---|---|\n| 2026-11-26 | pending |\n| 2026-11-28 | pending |\n")
    boot = {"delta": 0.021, "ci95": [0.01, 0.03], "p": 0.004}
    summary = {"shipped": {"f0.5": 30.55}, "picked": "t5-2", "ship": True, "candidates": [
        {"candidate": "t5", "scores": {"f0.5": 31.0, "precision": 50.0, "recall": 14.0}, "bootstrap": boot},
        {"candidate": "t5-2", "scores": {"f0.5": 32.7, "precision": 51.0, "recall": 15.0}, "bootstrap": boot,
         "picked": True}]}
    assert fill_lease_log(log, summary)
    rows = log.read_text().splitlines()
    assert rows[2].endswith("| pending |") and "t5 31.00 (P 50.00 / R 14.00); t5-2 32.70" in rows[3]
    assert rows[3].endswith("picked t5-2: +2.10 against the shipped 30.55, p = 0.004: shipped |")


def test_collect_ships_each_ranked_model_once_even_without_best(tmp_path):
    """A stop between best/'s two renames: the top of ranked/ ships as the T5, and the runner-up
    beside it is the next one, never the same model twice (nor a folder an export left half-made)."""
    from training.lease.collect import best_of, runners_up

    stage = tmp_path / "t5-ft"
    for step, score in [(20, 7.0), (40, 9.0), (60, 8.0)]:
        (stage / "ranked" / f"step-{step}").mkdir(parents=True)
        (stage / "ranked" / f"step-{step}" / "config.json").write_text("{}")
        (stage / "ranked" / f"step-{step}" / "training.json").write_text(json.dumps({"step": step, "score": score}))
    (stage / "ranked" / "step-80.tmp").mkdir()  # an interrupted export
    (stage / "ranked" / "step-80.tmp" / "config.json").write_text("{}")
    assert best_of(stage) == stage / "ranked" / "step-40"
    assert runners_up(stage, best_of(stage), 2) == [stage / "ranked" / "step-60", stage / "ranked" / "step-20"]
    shutil.copytree(stage / "ranked" / "step-40", stage / "best")
    assert best_of(stage) == stage / "best" and runners_up(stage, best_of(stage), 1) == [stage / "ranked" / "step-60"]
