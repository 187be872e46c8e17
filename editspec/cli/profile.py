"""``editspec profile``: a latency report of EdiT5, T5, speculative T5 and their peers.

The flags become the options of ``editspec.profiling.session.profile`` (``ProfileOptions``: what
to time; ``ModelOptions``: which models)::

    editspec profile --data ABCN.dev.gold.bea19.m2 --limit 100 --modes t5 edit5 speculative --out runs/prof
    wrote runs/prof/report.json, runs/prof/report.md and plots
    editspec profile --data dev.m2 --limit 500 --modes t5 speculative ct2-greedy ct2-int8 --pipeline \
        --batch-size 16 --threads 1 --out runs/prof     # against CTranslate2, and where correct's time goes
    editspec profile --data dev.m2 --limit 500 --seed 0 --modes none --end-to-end --batch-size 32 \
        --threads 2 --out runs/e2e                      # correct's whole path vs --mode t5 and CTranslate2
    editspec profile --data dev.m2 --processes --sizes 1 500 2000 --threads 2 --out runs/processes
                                                        # whole processes, start to exit (the README's table)

``--modes`` and ``--gamma`` are checked before torch loads, so a bad one fails at once with one
line; the profiling modules (torch, transformers, matplotlib) load only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from editspec.errors import EditspecError
from editspec.modes import BY_NAME, check_modes


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``profile`` subcommand with its own options (the caller adds the model options)."""
    p = sub.add_parser("profile", help="latency report: EdiT5 vs T5 vs speculative T5 and peers")
    p.add_argument("--data", required=True,
                   help="M2 file (S lines, detokenized; gold targets from annotator 0), "
                        "source<TAB>target lines, or plain text (one sentence a line)")
    p.add_argument("--limit", type=int, default=100, help="first N sentences (see --seed)")
    p.add_argument("--seed", type=int, default=None,
                   help="with --limit: a random sample of N sentences drawn with this seed "
                        "(W&I dev lists CEFR levels A, B, C, N in turn: the first N are level A)")
    p.add_argument("--modes", nargs="+", default=None,
                   help=f"modes to time, or 'none' (default: all; t5 always runs as the reference): "
                        f"{' '.join(BY_NAME)}")
    p.add_argument("--out", required=True, help="output directory for report.json, report.md, plots")
    p.add_argument("--warmup", type=int, default=5, help="untimed batches before timing")
    p.add_argument("--architectures", nargs="*", default=None, metavar="NAME",
                   help="also time these architectures at real sizes with random weights and decoder steps "
                        "forced from the gold targets (none named: t5-small, t5-base, edit5-small, edit5-base; "
                        "t5-shipped and t5-lease are our T5's shape and the lease recipe's)")
    p.add_argument("--pipeline", action="store_true",
                   help="also time editspec correct's whole path step by step (segmenting, spelling, "
                        "tokenizing, encoder, decoder passes, drafting, guard, rescoring, rounds, rendering) "
                        "on the sentences as lines, with the bundle's settings and --batch-size")
    p.add_argument("--end-to-end", action="store_true",
                   help="also time editspec correct's path on the sentences as lines (the bundle's mode and "
                        "settings, --batch-size) against the same with --mode t5 and against CTranslate2's "
                        "bare fp32 greedy decoding of the same lines, taking turns 3 times")
    p.add_argument("--processes", action="store_true",
                   help="time whole processes instead, start to exit: editspec correct (the bundle's defaults), "
                        "--mode t5 and a CTranslate2 script on the first --sizes lines, taking turns --turns times "
                        "(profiling/processes.py; writes processes.json and processes.md)")
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 500, 2000], help="lines per process (--processes)")
    p.add_argument("--turns", type=int, default=3, help="turns of each process and size (--processes)")
    p.add_argument("--cold", action="store_true",
                   help="also time one process with an empty cache: a first process on a machine (--processes)")
    p.add_argument("--trace", action="store_true",
                   help="write a torch.profiler chrome trace of one batch per mode (trace-MODE.json)")
    p.add_argument("--t5-draft", default=None,
                   help="small T5 for hf-assisted's assistant_model "
                        "(default: the bundle's t5-draft/)")
    p.add_argument("--gamma", default="auto",
                   help="draft tokens per row and pass of the speculative modes: 'auto' (sized to the "
                        "batch from the pass costs measured on the model), a fixed number, or 'all' "
                        "(the whole remaining draft, up to 48)")
    p.add_argument("--ct2-cache", default=None, metavar="DIR",
                   help="where the CTranslate2 conversion of the T5 is kept for the ct2-* modes "
                        "(converted once per weights; default: ~/.cache/editspec/ct2, or $EDITSPEC_CACHE/ct2)")
    p.add_argument("--prompt-lookup-tokens", type=int, default=10,
                   help="prompt_lookup_num_tokens of hf-prompt-lookup")
    return p


def _gamma(value: str) -> int | str:
    """--gamma: 'auto', 'all' or a positive integer."""
    if value in ("auto", "all"):
        return value
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise EditspecError(f"--gamma must be 'auto', 'all' or a positive integer, not {value!r}")
    return n


def run_profile(args: argparse.Namespace) -> int:
    if getattr(args, "mode", None):
        raise EditspecError("profile times several modes: use --modes")
    if args.processes:
        return run_processes(args)
    modes = check_modes(args.modes or tuple(BY_NAME)) if set(args.modes or ()) != {"none"} else []
    gamma = _gamma(args.gamma)
    # torch: only once the flags are known to be good
    from editspec.config import LoadOptions
    from editspec.profiling.session import ModelOptions, ProfileOptions, profile

    flags = {k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    what = ProfileOptions(modes, args.architectures, args.pipeline, args.end_to_end, args.trace, args.batch_size,
                          args.limit, args.seed, args.warmup, gamma, args.prompt_lookup_tokens)
    load = LoadOptions(model=args.model, edit5=args.edit5, t5=args.t5, device=args.device, dtype=args.dtype,
                       quantize=args.quantize)
    models = ModelOptions(load, args.t5_draft, args.threads, args.ct2_cache)
    profile(args.data, args.out, what, models, flags, progress=sys.stderr.isatty())
    out = Path(args.out)
    print(f"wrote {out / 'report.json'}, {out / 'report.md'} and plots", file=sys.stderr)
    return 0


def run_processes(args: argparse.Namespace) -> int:
    """``--processes``: whole processes, no models loaded here (``profiling.processes``)."""
    if args.turns < 1 or min(args.sizes) < 1:
        raise EditspecError("--turns and --sizes must be 1 or more")
    from editspec.profiling.processes import markdown, processes

    threads = args.threads or 2
    extra = [*(("--dtype", args.dtype) if args.dtype else ()), *(("--quantize", args.quantize) if args.quantize else ())]
    report = processes(args.data, args.sizes, args.turns, threads, model=args.model, model_args=extra,
                       ct2_cache=args.ct2_cache, cold=args.cold, progress=sys.stderr.isatty())
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise EditspecError(f"--out {out} is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    (out / "processes.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "processes.md").write_text("\n".join(markdown(report)), encoding="utf-8")
    print("\n".join(markdown(report)))
    print(f"wrote {out / 'processes.json'} and {out / 'processes.md'}", file=sys.stderr)
    return 0
