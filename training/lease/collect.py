"""``collect`` (on the lent GPU, the lease's last call): what the lease made, into $OUT.

1. a recipe still running is stopped (its stages keep their best/, ranked/ and checkpoints);
2. the bundle is shipped in bf16 (``training.ship``) from the first stage of each of the plan's
   ``bundle`` lists that has a best/, or from a model directory of the repository that a list names
   (the shipped T5 under heads trained on its encoder): runs/lease/bundle/{t5,edit5}, each folder
   with its tokenizer as editspec/models/default is laid out, and corrector_config.json (the
   shipped bundle's run-time settings); with the plan's ``candidates``, the T5 stage's next-best ranked/ models beside it (t5-2/, ...), and the continuation (stable/);
3. the dev loss of each model a stage trained, on the GPU (the stages' dev set), and each
   candidate's approximate F0.5; ERRANT needs spaCy, which only the CPU machine has: ``python -m
   training.lease pick`` there after ``join``;
4. ``shards.split`` into $OUT (the bundle as <= 16 MiB pieces of one compressed tar), the manifest
   carrying the dev losses and the stages' last log entries, and the logs as lease-logs.tar.xz::

    $OUT/lease-bundle.tar.xz.00 ... .04   lease-logs.tar.xz   lease-manifest.json
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import torch

from editspec.data.corpora import data_dir as default_data_dir
from editspec.modeling.loading import DEFAULT_MODEL
from editspec.modeling.t5 import default_device
from editspec.tokenization.tokens import load_tokenizer
from training.lease.plan import REPO_ROOT, load_plan, repo_model
from training.lease.run import environment, read_json, stop
from training.train import EXPORT_REQUEST
from training.lease.shards import check_sizes, split
from training.config import load_config
from training import dev as training_dev
from training.data import build_dev
from training.models import ModelKind

LOGS = "lease-logs.tar.xz"


def ship_interim(run_dir: Path, plan: dict, carried: list[str] | None, seconds: float = 120) -> dict[str, str]:
    """Ask the running continuation stage for its newest weights (training.train's EXPORT file) and
    ship them as the bundle's T5; the next continuation if no later call collects is its stable/
    when the decay has begun, else these weights (the stage is still in its stable phase). The
    recipe goes on."""
    stage, _, stable = plan["continuation"].partition("/")
    request, interim = run_dir / stage / EXPORT_REQUEST, run_dir / stage / "interim"
    request.parent.mkdir(parents=True, exist_ok=True)
    request.touch()
    deadline = time.time() + seconds

    def ended() -> bool:  # a stage that ended serves no request; a later stage keeps the recipe running
        return (run_dir / stage / "DONE").is_file() or (run_dir / stage / "last" / "config.json").is_file()

    while request.exists() and time.time() < deadline and not ended() \
            and read_json(run_dir / "status.json").get("state") == "running":
        time.sleep(1)
    if request.exists() or not (interim / "config.json").is_file():
        request.unlink(missing_ok=True)
        if read_json(run_dir / "status.json").get("state") != "running":
            return {}  # the run ended first: its final models are better than an interim
        if not ended():
            raise SystemExit(f"[collect] {stage} exported no interim/ within {seconds:.0f} s")
        interim = run_dir / stage / "last"  # the stage has ended; a later one (the fine-tune) runs on
        while not (interim / "config.json").is_file() and time.time() < deadline:
            time.sleep(1)  # last/ is the stage's last export: it may still be on its way
    bundle = run_dir / "bundle"
    shutil.rmtree(bundle, ignore_errors=True)
    shipped = {"t5": f"{stage}/{interim.name}", "continuation": f"{stage}/{interim.name}"}
    pairs = [str(interim), str(bundle / "t5")]
    if (run_dir / stage / stable / "config.json").is_file():  # the decay has begun: the true continuation
        shipped["continuation"] = f"{stage}/{stable}"
        pairs += [str(run_dir / stage / stable), str(bundle / "continuation")]
    run_ship(run_dir, pairs, carried)  # each folder with its tokenizer (training.ship): the shipped layout
    shutil.copy(DEFAULT_MODEL / "corrector_config.json", bundle / "corrector_config.json")
    return shipped


def run_ship(run_dir: Path, pairs: list[str], carried: list[str] | None) -> None:
    """``training.ship SRC DEST ...`` in one process (importing torch and transformers takes seconds)."""
    guard = ["--guard", ",".join(carried)] if carried is not None else []
    subprocess.run([sys.executable, "-m", "training.lease", "exec", *guard, "training.ship", *pairs],
                   check=True, cwd=REPO_ROOT, env=environment(run_dir))


def ranked(stage_dir: Path) -> list[Path]:
    """The stage's complete ranked/step-N/ models (train.keep_best), best first; training.json is
    written last, so a folder an interrupted export left (step-N.tmp, or no score yet) is not one."""
    found = [(read_json(p / "training.json"), p) for p in (stage_dir / "ranked").glob("step-*")
             if p.name[5:].isdigit()]
    found = [(info, p) for info, p in found if "score" in info and (p / "config.json").is_file()]
    found.sort(key=lambda r: (-r[0]["score"], r[0].get("step", 0)))  # Trainer.keep_ranked's order
    return [p for _, p in found]


def runners_up(stage_dir: Path, shipped: Path, count: int) -> list[Path]:
    """The stage's ranked/ models other than ``shipped`` (its best/, or ranked/'s top), best first."""
    best = read_json(shipped / "training.json").get("step")
    return [p for p in ranked(stage_dir) if read_json(p / "training.json").get("step") != best][:count]


def best_of(stage_dir: Path) -> Path:
    """What a stage ships: best/, or the top of ranked/ when a stop came between best/'s renames."""
    if (stage_dir / "best" / "config.json").is_file():
        return stage_dir / "best"
    return next(iter(ranked(stage_dir)), stage_dir / "best")


def ship(run_dir: Path, plan: dict, carried: list[str] | None) -> dict[str, str]:
    """Ship the bundle into run_dir/bundle; {kind: the stage or repository model directory shipped}."""
    bundle = run_dir / "bundle"
    shutil.rmtree(bundle, ignore_errors=True)
    shipped, pairs = {}, []
    for kind in ("t5", "edit5"):  # the T5 first: an EdiT5 on its encoder ships only beside it
        entries = plan.get("bundle", {}).get(kind, [])
        sources = {e: repo_model(e) or best_of(run_dir / e) for e in entries}
        entry = next((e for e, src in sources.items() if (src / "config.json").is_file()), None)
        if entry is None:
            print(f"[collect] no {kind} to ship: none of {entries} has a best/ or is a shipped model")
            continue
        shipped[kind] = entry if sources[entry].name == "best" or repo_model(entry) else \
            f"{entry}/ranked/{sources[entry].name}"
        pairs += [str(sources[entry]), str(bundle / kind)]
    stable = plan.get("continuation")  # STAGE/DIR
    if stable and (run_dir / stable / "config.json").is_file():  # the next lease starts from it
        shipped["continuation"] = stable
        pairs += [str(run_dir / stable), str(bundle / "continuation")]
    if pairs:
        run_ship(run_dir, pairs, carried)
    t5 = shipped.get("t5", "")
    if t5 and not repo_model(t5):  # the candidates beside it (t5-2/, ...): apart, so that one never costs the rest
        stage = run_dir / t5.partition("/")[0]
        for n, src in enumerate(runners_up(stage, best_of(stage), int(plan.get("candidates", 1)) - 1), 2):
            try:
                run_ship(run_dir, [str(src), str(bundle / f"t5-{n}")], carried)
                shipped[f"t5-{n}"] = f"{t5.partition('/')[0]}/ranked/{src.name}"
            except subprocess.CalledProcessError:
                print(f"[collect] candidate {src} did not ship: left out")
                shutil.rmtree(bundle / f"t5-{n}", ignore_errors=True)
    if "t5" in shipped:  # each folder holds its tokenizer (training.ship): no bundle-level one
        shutil.copy(DEFAULT_MODEL / "corrector_config.json", bundle / "corrector_config.json")
    return shipped


def dev_loss(model_dir: Path, stage_dir: Path, data: Path, device: torch.device) -> dict:
    """Mean dev loss of a shipped model on its stage's dev set (bf16 autocast on a GPU)."""
    cfg = load_config(stage_dir / "config.yaml", [])
    kind = ModelKind(cfg["model"]["type"])
    tok = load_tokenizer(model_dir)
    model = kind.model_cls.from_pretrained(str(model_dir), dtype=torch.float32).to(device).eval()
    dev = build_dev(cfg, kind, tok, data)
    t0 = time.perf_counter()
    autocast = functools.partial(torch.autocast, device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    result = training_dev.dev_loss(model, kind, tok, dev, device, autocast)
    return {"dev_loss": result["dev_loss"], "examples": sum(len(b) for b in dev["batches"]),
            "seconds": round(time.perf_counter() - t0, 2), "device": str(device), "dev": cfg["data"]["dev"]}


def log_entries(stage_dir: Path) -> list[dict]:
    log = stage_dir / "log.jsonl"
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.is_file() else []


def approx(run_dir: Path, shipped: str) -> dict:
    """The approximate dev F0.5 and step of a shipped model: a stage's best (what best/ holds when
    selected on it), or a ranked/ model's own (STAGE/ranked/step-N)."""
    stage, _, inner = shipped.partition("/")
    step = read_json(run_dir / shipped / "training.json").get("step") if inner.startswith("ranked/") else None
    scored = [e for e in log_entries(run_dir / stage) if "dev_approx_f05" in e and step in (None, e["step"])]
    best = max(scored, key=lambda e: e["dev_approx_f05"], default=None)
    return {k: best[k] for k in ("step", "dev_approx_f05", "dev_approx_precision", "dev_approx_recall")} if best else {}


def stage_summary(stage_dir: Path) -> dict | None:
    """A stage's rates for the lease log: steps, pairs seen, training minutes (its log windows'
    steps over their rates), the means over its logged windows after the first (start-up) of
    pairs/s, tokens/s, TFLOP/s and the share of time waiting for data, and its step bench."""
    entries = log_entries(stage_dir)
    steps = [e for e in entries if "loss" in e]
    if not steps:
        return None
    warm = steps[1:] or steps
    mean = lambda key: sum(e.get(key, 0.0) for e in warm) / len(warm)  # noqa: E731
    seconds = sum((e["step"] - before["step"]) / max(e["steps_per_s"], 1e-9)
                  for before, e in zip([{"step": 0}, *steps], steps) if e.get("steps_per_s"))
    return {"step": steps[-1]["step"], "loss": steps[-1]["loss"], "examples": steps[-1].get("examples"),
            "minutes": seconds / 60, "examples_per_s": mean("examples_per_s"), "tokens_per_s": mean("tokens_per_s"),
            "tflops": mean("tflops"), "data_wait": mean("data_wait"), "steps_per_s": mean("steps_per_s"),
            "bench": next((e["bench"] for e in entries if "bench" in e), None)}


def logs(run_dir: Path, plan: dict, dest: Path) -> None:
    names = ["recipe.log", "status.json", "lease.json", "prepared.json", "eval.json"]
    names += sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / "checks").rglob("report.*"))
    for s in plan["stages"]:
        names += [f"{s['name']}/{n}" for n in ("config.yaml", "log.jsonl", "best/training.json", "last/training.json",
                                               "ema/training.json")]
    with tarfile.open(dest, "w:xz") as tar:
        for name in names:
            if (run_dir / name).is_file():
                tar.add(run_dir / name, name)


def collect(run_dir: Path, out: Path, interim: bool = False, check_minutes: float = 0.0) -> dict:
    """What the lease made into ``out``; ``interim``: the running stage's newest weights, the recipe
    left running (a lease's first call), unless it has already ended; ``check_minutes``: the CUDA
    checks (training.lease.checks) of the shipped T5 at batch 32 too, their reports in the logs'
    file (a call brings back 8 files, which three T5s' pieces and the rest already take)."""
    lease = read_json(run_dir / "lease.json")
    if not lease:
        raise SystemExit(f"no lease in {run_dir}: nothing to collect")
    plan = load_plan(Path(lease["plan"]))
    interim = interim and read_json(run_dir / "status.json").get("state") == "running"
    shipped = ship_interim(run_dir, plan, lease["guard"]) if interim else {}
    interim = bool(shipped)
    if not interim:
        if stop(run_dir):
            print("[collect] the recipe was still running: stopped; collecting the stages' best/")
        shipped = ship(run_dir, plan, lease["guard"])
    status = read_json(run_dir / "status.json")
    device = default_device()
    data = default_data_dir(run_dir / "data")
    evaluation = {kind: {"stage": stage, **(approx(run_dir, stage) if not interim else {}),  # candidates: no
                         **({} if kind.startswith("t5-") else  # dev loss (seconds of call 2), their approx F0.5
                            dev_loss(run_dir / "bundle" / kind, run_dir / stage.partition("/")[0], data, device))}
                  for kind, stage in shipped.items() if kind != "continuation" and not repo_model(stage)}
    evaluation["note"] = ("dev_approx_f05 is training.dev's approximate F0.5 (no spaCy here), the shipped model's "
                          "own: ERRANT F0.5 on the CPU machine (`python -m training.lease pick`) decides")
    (run_dir / "eval.json").write_text(json.dumps(evaluation, indent=1) + "\n")
    for kind, result in evaluation.items():
        if kind != "note" and "dev_loss" in result:
            print(f"[collect] {kind} ({result['stage']}): dev loss {result['dev_loss']:.4f} on {result['examples']} "
                  f"sentences, {result['device']}")
    stages = {s["name"]: stage_summary(run_dir / s["name"]) for s in plan["stages"]}
    out.mkdir(parents=True, exist_ok=True)
    manifest = split(run_dir / "bundle", out, {"eval": evaluation, "stages": stages, "status": status,
                                                "prepared": read_json(run_dir / "prepared.json"),
                                                "continuation": shipped.get("continuation"), "interim": interim})
    if check_minutes and "t5" in shipped and not interim:  # after the shards: a call cut short keeps the weights
        from training.lease.checks import checks
        failed = checks(run_dir, None, device=device.type, minutes=check_minutes, batches=(32,))
        (run_dir / "checks").mkdir(exist_ok=True)
        (run_dir / "checks" / "report.failed.json").write_text(json.dumps({"failed": failed}) + "\n")
    logs(run_dir, plan, out / LOGS)
    check_sizes(out)
    total = sum(p.stat().st_size for p in out.iterdir())
    print(f"[collect] {len(list(out.iterdir()))} files, {total / 2**20:.1f} MiB in {out}")
    return manifest
