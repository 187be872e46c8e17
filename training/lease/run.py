"""``start``, the detached recipe, and ``wait``: training on a lent GPU across several calls.

One call runs at most 10 minutes and the machine stays while calls follow each other, so the
recipe must outlive the call that starts it::

    start    unpack .lease/ into runs/lease/ (data, lexicon, wheels -> runs/lease/site), write
             runs/lease/lease.json, start ``python -m training.lease recipe`` in a new session
             (``setsid``: it survives the call's end) and return at once
    recipe   the plan's stages in order, each ``training.train`` with the plan's minutes; a stage
             that finished is marked runs/lease/STAGE/DONE and not run again, an interrupted one
             resumes from its checkpoints; runs/lease/status.json says where it is
    wait     print the recipe's log from where the last wait stopped, a progress line every 30 s,
             for up to ``--minutes``; return early when the recipe has ended

    status.json  {"state": "running", "stage": "t5-ft", "done": ["t5-pre"], "pid": 4711, ...}
"""

from __future__ import annotations

import json
import lzma
import os
import runpy
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from editspec.errors import EditspecError
from training.lease import continuation
from training.lease.imports import guard
from training.lease.plan import REPO_ROOT, WHEELS, load_plan



CONTINUED = "continuation"  # run_dir/continuation: the unpacked continuation checkpoint


def read_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def write_json(path: Path, value: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n")
    tmp.replace(path)


def set_status(run_dir: Path, **fields) -> dict:
    status = {**read_json(run_dir / "status.json"), **fields, "updated": time.time()}
    write_json(run_dir / "status.json", status)
    return status


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a finished child of this process is a zombie until reaped
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def environment(run_dir: Path) -> dict[str, str]:
    """What every process of the recipe sees: the installed wheels first, the unpacked data, the
    saved lexicon, no progress bars (a log file), nothing from the network."""
    path = [str(run_dir / "site"), str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "EDITSPEC_DATA": str(run_dir / "data"),
            "EDITSPEC_LEXICON": str(run_dir / "lexicon.json.xz"), "TQDM_DISABLE": "1", "PYTHONUNBUFFERED": "1",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(run_dir / "hf"),
            "TOKENIZERS_PARALLELISM": "false"}


def unpack(folder: Path, run_dir: Path) -> None:
    """.lease/ -> runs/lease/: M2 files decompressed, sentence shards and lexicon as they are,
    the wheels installed with the device README's pip command into runs/lease/site."""
    data = folder / "data"
    for src in data.rglob("*.xz"):
        dest = run_dir / "data" / src.relative_to(data)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.name.endswith(".m2.xz"):
            with lzma.open(src, "rb") as f, open(dest.with_suffix(""), "wb") as out:
                shutil.copyfileobj(f, out)
        else:
            shutil.copy(src, dest)
    shutil.copy(folder / "lexicon.json.xz", run_dir / "lexicon.json.xz")
    wheels = run_dir / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    with tarfile.open(folder / "wheels.tar.xz") as tar:
        tar.extractall(wheels, filter="data")
    found = sorted(str(w) for w in wheels.glob("*.whl"))
    if found:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(run_dir / "site"), *found], check=True)


def start(folder: Path, run_dir: Path, plan_path: Path | None, sets: list[str], check_imports: bool) -> dict:
    status = read_json(run_dir / "status.json")
    if status.get("state") == "running" and alive(status.get("pid")):
        print(f"the recipe already runs (pid {status['pid']}, stage {status.get('stage')})")
        return status
    if not (folder / "prepared.json").is_file():
        raise EditspecError(f"{folder} holds no prepared lease (run `python -m training.lease prepare` here, "
                            f"and name the folder in the call's carry)")
    packed = read_json(folder / "prepared.json").get("plan")
    if plan_path is None and packed is None:
        raise EditspecError(f"{folder}/prepared.json names no plan: run `python -m training.lease prepare` again")
    plan_path = plan_path or Path(packed)  # what prepare packed the folder for
    load_plan(plan_path)  # a plan that cannot load fails here, not in the detached recipe
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    prepared = read_json(folder / "prepared.json")
    if prepared.get("continuation"):  # checked again here: the stable stage starts from it
        pack = Path(prepared["continuation"])
        continuation.unpack(pack if pack.is_absolute() else REPO_ROOT / pack, run_dir / CONTINUED)
    else:  # a new series: nothing an earlier call left on a warm machine
        shutil.rmtree(run_dir / CONTINUED, ignore_errors=True)
    unpack(folder, run_dir)
    shutil.copy(folder / "prepared.json", run_dir / "prepared.json")
    write_json(run_dir / "lease.json", {"plan": str(plan_path), "sets": sets,
                                        "guard": list(WHEELS) if check_imports else None})
    log = open(run_dir / "recipe.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "training.lease", "recipe", "--run-dir", str(run_dir)],
                            cwd=REPO_ROOT, env=environment(run_dir), stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    status = set_status(run_dir, state="running", pid=proc.pid, started=time.time(), stage=None)
    print(f"unpacked in {time.time() - t0:.0f} s; the recipe runs detached (pid {proc.pid}), "
          f"log {run_dir / 'recipe.log'}")
    return status


def exec_module(module: str, argv: list[str], carried: list[str] | None) -> None:
    """``python -m MODULE ARGV`` in this process, behind the import guard when ``carried`` is given."""
    if carried is not None:
        guard(carried)
    sys.argv = [module, *argv]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def stage_command(run_dir: Path, stage: dict, sets: list[str], carried: list[str] | None) -> list[str]:
    command = [sys.executable, "-m", "training.lease", "exec"]
    if carried is not None:
        command += ["--guard", ",".join(carried)]
    if stage.get("module"):  # another step than training (training.lease.distill): its args, {run_dir} filled in
        return command + [stage["module"], *(str(a).replace("{run_dir}", str(run_dir)) for a in stage.get("args", []))]
    command += ["training.train", "--config", str(REPO_ROOT / stage["config"]),
                "--output-dir", str(run_dir / stage["name"]), "--set", f"train.max_minutes={stage['minutes']}"]
    if stage.get("init_from"):  # NAME: that stage's best/; NAME/last: its last/ (a stable phase's end)
        name, _, which = stage["init_from"].partition("/")
        command += ["--init-from", str(run_dir / name / (which or "best"))]
    elif stage.get("continue") and read_json(run_dir / "prepared.json").get("continuation"):
        if not (run_dir / CONTINUED / "config.json").is_file():  # never a silent start from scratch
            raise EditspecError(f"{run_dir / CONTINUED} holds no model, but the lease continues a series")
        command += ["--init-from", str(run_dir / CONTINUED)]  # else a new series: the recipe's fresh model
    return command + [a for s in [*stage.get("set", []), *sets] for a in ("--set", s)]  # the call's sets win


def launch(run_dir: Path, stage: dict, lease: dict) -> subprocess.Popen | None:
    """The stage's process, or None when its command cannot be made (said in the log)."""
    try:
        command = stage_command(run_dir, stage, lease["sets"], lease["guard"])
    except EditspecError as e:
        print(f"[lease] stage {stage['name']}: {e}", flush=True)
        return None
    if not stage.get("early"):
        return subprocess.Popen(command, cwd=REPO_ROOT)
    # started before the stage it continues ends, built from the twin meanwhile: at a lower priority and
    # with few compile workers, so that the running stage's data workers keep their cores
    command += ["--set", f"model.init_twin={run_dir / stage['early']}"]
    return subprocess.Popen(command, cwd=REPO_ROOT, env={**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "2"},
                            preexec_fn=lambda: os.nice(10))


def follow(proc: subprocess.Popen, run_dir: Path, lease: dict, after: dict | None,
           early: dict[str, subprocess.Popen | None]) -> int:
    """Wait for ``proc``; meanwhile start the ``after`` stage once its ``early`` twin appears, and
    say at once when that early stage ends (a failure there is known before ``proc`` ends)."""
    said = False
    while (rc := proc.poll()) is None:
        if after and after.get("early") and after["name"] not in early \
                and (run_dir / after["early"] / "config.json").is_file():
            print(f"[lease] stage {after['name']} starts early: {after['early']} is there", flush=True)
            early[after["name"]] = launch(run_dir, after, lease)
        other = early.get(after["name"]) if after else None
        if other is not None and other.poll() not in (None, 0) and not said:
            print(f"[lease] stage {after['name']} (started early) exited with {other.returncode}", flush=True)
            said = True
        time.sleep(1)
    return rc


def recipe(run_dir: Path) -> int:
    """The plan's stages in order; a stage with ``early: STAGE/DIR`` starts while the one before it
    still runs, as soon as that folder (a model of the shape it continues) is there."""
    lease = read_json(run_dir / "lease.json")
    plan = load_plan(Path(lease["plan"]))
    stages = plan["stages"]
    done = [s["name"] for s in stages if (run_dir / s["name"] / "DONE").is_file()]
    set_status(run_dir, state="running", pid=os.getpid(), done=done)
    early: dict[str, subprocess.Popen | None] = {}
    for i, stage in enumerate(stages):
        if stage["name"] in done:
            continue
        t0 = time.time()
        set_status(run_dir, stage=stage["name"], stage_started=t0)
        print(f"[lease] stage {stage['name']}: {stage.get('config') or stage.get('module')}, {stage['minutes']} min",
              flush=True)
        proc = early.pop(stage["name"]) if stage["name"] in early else launch(run_dir, stage, lease)
        after = stages[i + 1] if i + 1 < len(stages) else None
        rc = follow(proc, run_dir, lease, after, early) if proc is not None else 2
        if rc != 0:
            set_status(run_dir, state="failed", error=f"stage {stage['name']} exited with {rc}")
            print(f"[lease] stage {stage['name']} failed (exit {rc})", flush=True)
            if early:  # a stage that continues the failed one has nothing to wait for: the recipe's whole
                os.killpg(os.getpgrp(), signal.SIGTERM)  # group goes (its loader, compile workers), this too
            return rc
        (run_dir / stage["name"]).mkdir(parents=True, exist_ok=True)  # a module stage writes elsewhere
        (run_dir / stage["name"] / "DONE").touch()
        done.append(stage["name"])
        set_status(run_dir, done=done)
        print(f"[lease] stage {stage['name']} done in {(time.time() - t0) / 60:.1f} min", flush=True)
    set_status(run_dir, state="done", stage=None)
    print("[lease] recipe done", flush=True)
    return 0


def progress(run_dir: Path, status: dict) -> str:
    stage = status.get("stage")
    line = f"[wait] {status.get('state')}; done {status.get('done', [])}"
    log = run_dir / stage / "log.jsonl" if stage else None
    if log and log.is_file():
        entries = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        steps = [e for e in entries if "loss" in e]
        devs = [e for e in entries if "dev_loss" in e]
        minutes = (time.time() - status.get("stage_started", time.time())) / 60
        line += f"; {stage} {minutes:.1f} min"
        if steps:
            line += f", step {steps[-1]['step']}, loss {steps[-1]['loss']:.3f}, {steps[-1]['steps_per_s']:.2f} steps/s"
        if devs:
            line += f", dev loss {devs[-1]['dev_loss']:.3f}"
    return line


def wait(run_dir: Path, minutes: float, every: float = 30.0) -> int:
    """Follow the recipe; 0 while it runs or when it is done, 1 when it failed or died."""
    log, mark = run_dir / "recipe.log", run_dir / "wait.offset"
    if not log.is_file():
        raise EditspecError(f"no recipe in {run_dir}: run `python -m training.lease start` first")
    offset = int(mark.read_text()) if mark.is_file() else 0
    deadline, last = time.time() + 60 * minutes, 0.0
    while True:
        with open(log, "rb") as f:
            f.seek(offset)
            new = f.read()
        offset += len(new)
        mark.write_text(str(offset))
        if new:
            sys.stdout.write(new.decode("utf-8", "replace"))
        status = read_json(run_dir / "status.json")
        if status.get("state") == "running" and not alive(status.get("pid")):
            status = set_status(run_dir, state="died")
        if status.get("state") != "running" or time.time() >= deadline:
            print(progress(run_dir, status), flush=True)
            return 0 if status.get("state") in ("running", "done") else 1
        if time.time() - last >= every:
            print(progress(run_dir, status), flush=True)
            last = time.time()
        time.sleep(min(1.0, every))  # a read of the log's tail: the call returns within 1 s of the recipe's end


def stop(run_dir: Path, grace: float = 20.0) -> bool:
    """End a running recipe and its stages (its whole session); whether one was running."""
    status = read_json(run_dir / "status.json")
    pid = status.get("pid")
    if status.get("state") != "running" or not alive(pid):
        return False
    os.killpg(pid, signal.SIGTERM)
    deadline = time.time() + grace
    while alive(pid) and time.time() < deadline:
        time.sleep(1)
    if alive(pid):
        os.killpg(pid, signal.SIGKILL)
    set_status(run_dir, state="stopped")
    return True
