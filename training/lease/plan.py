"""The lease plan (configs/lease-gpu.yaml): which data travels, which stages run, what ships.

    m2: [wi_locness/ABC.train.gold.bea19.m2, ...]     the M2 files prepare packs
    stages:                                           run in order by the detached recipe
      - {name: t5-wsd, config: configs/lease-t5-wsd.yaml, continue: true, minutes: 4.6}
                                                      continue: from the continuation checkpoint
      - {name: t5-ft, config: configs/lease-t5-finetune.yaml, init_from: t5-wsd, minutes: 0.9,
         set: [train.lr=3e-4, ...]}                   init_from: that stage's best/; set: its --set overrides
      - {name: t5-x, init_from: t5-wsd/last}          NAME/DIR: that stage's DIR/, not its best/
      - {name: t5-ft, init_from: t5-wsd/last,         early: started as soon as that folder is there (a
         early: t5-wsd/stable}                        model of init_from's shape) while t5-wsd still runs
    continuation: t5-wsd/stable                       STAGE/DIR: the model that becomes the next continuation
    bundle: {t5: [t5-ft, t5-wsd], edit5: [edit5]}    the first stage with a best/ ships; an entry may
                                                      also be a model directory the package ships
                                                      (editspec/models/default/t5): EdiT5 heads
                                                      trained on the shipped T5's encoder ship beside it
      - {name: distill, module: training.lease.distill, args: [...]}   another step: python -m MODULE ARGS
    candidates: 2                                     the t5 stage's ranked/ models that come back too
                                                      (train.keep_best): t5/ (its best), t5-2/, ...
    respelled: true                                   prepare carries the M2 sources after the spelling
                                                      step (training.respelling: the machine has no dictionaries)
    park: false                                       the shipped bundle travels (default: parked)
    wiki: false                                       no Wikipedia slice (default: >= 700k sentences)
    interim_call: true, wait_minutes: 8,              two calls that the run trains through: start, a wait and
      final_wait_minutes: 2.5, check_minutes: 1.2     an interim collect (the run goes on); then the rest of
                                                      the wait, the final collect and the CUDA checks
    one_call: true, wait_minutes: 7                   start, one wait, collect in one device call
    waits: 2, wait_minutes: 9                         or: separate calls, `waits` wait calls (30-minute plan)
"""

from __future__ import annotations

from pathlib import Path

import yaml

from editspec.errors import EditspecError

REPO_ROOT = Path(__file__).resolve().parents[2]
# packages the training imports that the lent machine lacks: carried as wheels (prepare), installed by start
WHEELS = ("datasets", "dill", "multiprocess", "rapidfuzz")
RUN_DIR = REPO_ROOT / "runs" / "lease"  # on the lent machine: kept between calls, outside the carried folder


def load_plan(path: Path) -> dict:
    path = path if path.is_absolute() or path.exists() else REPO_ROOT / path
    try:
        plan = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise EditspecError(f"cannot read lease plan {path}: {e}") from e
    names = [s.get("name") for s in plan.get("stages", [])]
    if not names or len(set(names)) != len(names):
        raise EditspecError(f"lease plan {path}: stages need distinct names")
    for s in plan["stages"]:
        if bool(s.get("config")) == bool(s.get("module")):
            raise EditspecError(f"lease plan {path}: stage {s['name']} needs a config (training) or a module")
        if not all(isinstance(x, str) and "=" in x for x in s.get("set", [])):
            raise EditspecError(f"lease plan {path}: stage {s['name']}'s set needs KEY=VALUE strings")
        earlier = names[:names.index(s["name"])]
        if s.get("init_from") not in (None, *earlier, *[f"{n}/last" for n in earlier]):
            raise EditspecError(f"lease plan {path}: stage {s['name']} starts from {s['init_from']}, not an earlier stage")
        if s.get("early") and s["early"].partition("/")[0] not in earlier:
            raise EditspecError(f"lease plan {path}: stage {s['name']} starts early on {s['early']}, not an earlier "
                                f"stage's folder (t5-wsd/stable)")
    stage, _, folder = (plan.get("continuation") or "").partition("/")
    if plan.get("continuation") and (stage not in names or not folder):
        raise EditspecError(f"lease plan {path}: continuation is not STAGE/DIR of a stage (t5-wsd/stable)")
    for kind, stages in plan.get("bundle", {}).items():
        unknown = [s for s in stages if s not in names and not repo_model(s)]
        if kind not in ("t5", "edit5") or unknown:
            raise EditspecError(f"lease plan {path}: bundle.{kind} names unknown stages or model directories {unknown}")
    return plan


SHIPPED = "editspec/models/"  # model directories a bundle entry may name: the package's own, tracked


def repo_model(entry: str) -> Path | None:
    """A bundle entry that names a model directory the package ships (tracked, so it travels with
    every call, unlike runs/), or None."""
    path = REPO_ROOT / entry
    return path if entry.startswith(SHIPPED) and (path / "config.json").is_file() else None
