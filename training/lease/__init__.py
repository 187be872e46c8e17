"""Training on a lent GPU within a lease's limits, proven on CPU first (issue 44).

A lease: one GPU machine, 15 minutes of device time from its start (30 until 2026-11), one call at
most 10 minutes, the machine given back 30 s after a call ends unless another follows; a call
carries the repository and named git-ignored folders (64 MiB in all) and brings back at most 8
files of 16 MiB. ``python -m training.lease`` fits a whole training into that, in five commands::

    here     prepare    .lease/: M2 files, a Wikipedia slice, the synthetic errors' lexicon and the
                        missing packages' wheels, sized to the limit; prints the device calls
    device   start      unpack, install the wheels, start the plan's stages detached, return  (~0.5 min)
    device   wait       follow the log for up to the plan's minutes, returning when it ends
    device   collect    stop what still runs, ship bf16, dev loss, shards + manifest -> $OUT  (~0.5 min)
    here     join       check the sha256s, rebuild the bundle, load it with Corrector

The plan (configs/lease-gpu.yaml, 15 minutes): the shipped T5 continued on synthetic errors,
fine-tuned on W&I + FCE, then EdiT5 heads on that T5's own encoder; each stage ends by the clock;
start, wait and collect run in one call (``one_call``). configs/lease-gpu-30min.yaml: a 12+4-layer
T5 from scratch in four calls, for a 30-minute lease.
Modules: plan (the plan file), prepare, run (start, the detached recipe, wait), collect, shards
(split and join), imports (the lent machine's packages, checked in CPU runs).
"""
