"""``python -m training.lease {prepare,start,wait,collect,join}``: see training/lease/__init__.py.

    python -m training.lease prepare                        # here: .lease/ and the device calls
    python3 -m training.lease start                         # device, carry [".lease"]
    python3 -m training.lease wait --minutes 7              # device (the plan's wait_minutes)
    python3 -m training.lease collect --out "$OUT"          # device; prepare prints these as one call
    python -m training.lease join FILES_AT runs/lease-bundle    # here
    python -m training.lease pick runs/lease-bundle             # here: ERRANT picks a candidate; --ship

Each command imports its module when it runs: ``start`` runs before the carried wheels are
installed, and ``collect`` imports the training code only after they are on the path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from editspec.errors import EditspecError

PLAN = "configs/lease-gpu.yaml"
CONTINUATION = Path("training/continuation/t5.tar.xz")
LEASE_LOG = Path("reports/lease-log.md")
DATA_DIR = "corpus folder (default $EDITSPEC_DATA or ../shared/data)"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.lease", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    prepare_args(sub.add_parser("prepare", help="here: build the carried folder and print the device calls"))
    device_args(sub)
    here_args(sub)
    r = sub.add_parser("recipe", help="(started by start) run the plan's stages")
    r.add_argument("--run-dir", required=True)
    e = sub.add_parser("exec", help="(used by the recipe) python -m MODULE ARGS, optionally import-guarded")
    e.add_argument("--guard", help="comma-separated carried packages: refuse other missing ones")
    e.add_argument("module")
    e.add_argument("args", nargs=argparse.REMAINDER)
    return p


def prepare_args(q: argparse.ArgumentParser) -> None:
    q.add_argument("--folder", default=".lease")
    q.add_argument("--plan", default=PLAN)
    q.add_argument("--data-dir", help=DATA_DIR)
    q.add_argument("--wheel", action="append", default=[], metavar="NAME|FILE.whl",
                   help="a package (its version here) or a wheel file to carry, repeatable (default: the "
                        "packages the training needs that the machine lacks)")
    q.add_argument("--wheel-cache", default=".whl", help="where fetched wheels are kept (git-ignored)")
    q.add_argument("--m2-sentences", type=int, help="only the first N sentences of each M2 file")
    q.add_argument("--wiki-sentences", type=int, help="at most N Wikipedia sentences (default: as many as fit)")
    q.add_argument("--margin-mib", type=float, default=1.0, help="room left under the call's limit")
    q.add_argument("--limit-mib", type=float, default=64.0, help="what a call carries (default 64 MiB)")
    q.add_argument("--continuation", default=str(CONTINUATION),
                   help="the continuation checkpoint to start from (default: the repository's)")
    q.add_argument("--from-scratch", action="store_true", help="start a new series: no continuation checkpoint")
    q.add_argument("--wiki-start", type=int, help="the first Wikipedia line (default: where the last lease stopped)")
    q.add_argument("--min-wiki-sentences", type=int, default=700_000,
                   help="refuse a call that carries fewer (default 700,000)")
    q.add_argument("--no-park", action="store_true", help="leave the shipped bundle in the index (it then travels)")


def device_args(sub) -> None:
    """The commands the device calls run: start, wait, collect, checks."""
    run_dir = {"default": None, "help": "the recipe's folder (default runs/lease)"}
    s = sub.add_parser("start", help="device: unpack and start the recipe detached")
    s.add_argument("--folder", default=".lease")
    s.add_argument("--plan", help="the plan (default: the one prepare packed the folder for)")
    s.add_argument("--run-dir", **run_dir)
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a recipe override for every stage (training.train --set), repeatable")
    s.add_argument("--check-imports", action="store_true",
                   help="refuse imports the lent machine could not make (for CPU runs: training.lease.imports)")
    w = sub.add_parser("wait", help="device: follow the recipe's log")
    w.add_argument("--run-dir", **run_dir)
    w.add_argument("--minutes", type=float, default=7.0, help="at most this long (default 7: the 15-minute plan's)")
    c = sub.add_parser("collect", help="device: ship, evaluate, write shards and manifest")
    c.add_argument("--run-dir", **run_dir)
    c.add_argument("--out", required=True, help="the folder that comes back ($OUT)")
    c.add_argument("--interim", action="store_true",
                   help="the running stage's newest weights; the recipe goes on (a lease's first call)")
    c.add_argument("--check-minutes", type=float, default=0.0,
                   help="also the CUDA checks at batch 32 within this long, reports in the logs' file")
    k = sub.add_parser("checks", help="device, second call: speculative == greedy and profiles on the GPU")
    k.add_argument("--run-dir", **run_dir)
    k.add_argument("--out", required=True, help="the folder that comes back ($OUT)")
    k.add_argument("--limit", type=int, default=200, help="W&I dev sentences (seed 0)")
    k.add_argument("--device", default="cuda")
    k.add_argument("--minutes", type=float, default=3.0)


def here_args(sub) -> None:
    """The commands run here, after the device calls: join, pick, finetune, park, unpark."""
    j = sub.add_parser("join", help="here: shards -> bundle, checked and loaded; the continuation replaced")
    j.add_argument("src", help="the collect call's files")
    j.add_argument("dest", help="the bundle directory to write")
    j.add_argument("--continuation", default=str(CONTINUATION), help="where the new continuation checkpoint goes")
    j.add_argument("--log", default=str(LEASE_LOG), help="the lease log the lease's row is added to")
    k = sub.add_parser("pick", help="here: the lease's candidates through the shipped pipeline on W&I dev; the "
                                    "best against the shipped T5 (paired bootstrap)")
    k.add_argument("bundle", help="the joined bundle (runs/lease-bundle): t5/, t5-2/, ...")
    k.add_argument("--data-dir", help=DATA_DIR)
    k.add_argument("--log", default=str(LEASE_LOG), help="the lease log whose last row gets the figures")
    k.add_argument("--ship", action="store_true", help="ship the picked T5 when it wins beyond noise")
    f = sub.add_parser("finetune", help="here: a lease's T5 fine-tuned on W&I + FCE in the background; --report compares")
    f.add_argument("model", help="the lease's T5 (runs/lease-bundle/t5), or with --report the fine-tune's folder")
    f.add_argument("--out", default="runs/lease-ft", help="the fine-tune's folder (default runs/lease-ft)")
    f.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a recipe override, repeatable")
    f.add_argument("--foreground", action="store_true", help="train in this process (default: detached)")
    f.add_argument("--report", action="store_true", help="evaluate best/ against the shipped T5 (paired bootstrap)")
    f.add_argument("--data-dir", help=DATA_DIR)
    sub.add_parser("park", help="here: the shipped bundle out of the index, so that it does not travel")
    sub.add_parser("unpark", help="here: the shipped bundle tracked again, as HEAD has it")


def run(args: argparse.Namespace) -> int:
    from training.lease.plan import RUN_DIR

    run_dir = Path(args.run_dir) if getattr(args, "run_dir", None) else RUN_DIR
    if args.command == "prepare":
        from training.lease import prepare
        prepare.main(args)
    elif args.command == "start":
        from training.lease.run import start
        start(Path(args.folder), run_dir, Path(args.plan) if args.plan else None, args.set, args.check_imports)
    elif args.command == "wait":
        from training.lease.run import wait
        return wait(run_dir, args.minutes)
    elif args.command == "recipe":
        from training.lease.run import recipe
        return recipe(run_dir)
    elif args.command == "exec":
        from training.lease.run import exec_module
        exec_module(args.module, args.args, args.guard.split(",") if args.guard is not None else None)
    elif args.command == "collect":
        sys.path.insert(0, str(run_dir / "site"))  # the carried wheels, before the training code's imports
        import contextlib

        from training.lease.imports import guarded
        from training.lease.run import read_json
        carried = read_json(run_dir / "lease.json").get("guard")
        with guarded(carried) if carried is not None else contextlib.nullcontext():
            from training.lease.collect import collect
            collect(run_dir, Path(args.out), args.interim, args.check_minutes)
    elif args.command == "checks":
        from training.lease.checks import checks
        return checks(run_dir, Path(args.out), args.limit, args.device, args.minutes)
    elif args.command == "join":
        from training.lease.join import main as join_main
        join_main(Path(args.src), Path(args.dest), Path(args.continuation), Path(args.log))
    elif args.command == "pick":
        from training.lease.pick import main as pick_main
        pick_main(Path(args.bundle), Path(args.data_dir) if args.data_dir else None, Path(args.log), args.ship)
    elif args.command == "finetune":
        from training.lease import finetune
        if args.report:
            finetune.report(Path(args.model), Path(args.data_dir) if args.data_dir else None)
            return 0
        return finetune.start(Path(args.model), Path(args.out), args.set, args.foreground)
    elif args.command in ("park", "unpark"):
        from training.lease import park
        getattr(park, args.command)()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return run(args)
    except EditspecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
