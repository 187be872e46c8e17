"""Training on a lent GPU within a lease's limits, proven on CPU first (issue 44).

A lease: one GPU machine, 15 minutes of device time from its start (30 until 2026-11), one call at
most 10 minutes, the machine given back 30 s after a call ends unless another follows; a call
carries the repository and named git-ignored folders (64 MiB in all) and brings back at most 8
files of 16 MiB. ``python -m training.lease`` fits a whole training into that, in six commands::

    here     prepare    check the continuation checkpoint, park the shipped bundle; .lease/: M2 files,
                        this lease's Wikipedia slice (>= 700k sentences), the lexicon, the wheels;
                        prints the device call (refused when it would carry too much or too little)
    device   start      unpack (the continuation checked again), install the wheels, start the
                        plan's stages detached, return  (~0.5 min)
    device   wait       follow the log for up to the plan's minutes, returning when it ends
    device   collect    --interim (call 1): the running stage's newest weights, the run goes on;
                        else (call 2): stop what still runs, ship bf16, dev loss, the CUDA checks
                        (--check-minutes), shards (xz) + manifest -> $OUT
    here     join       check the sha256s, rebuild the bundle, pack the new continuation checkpoint,
                        unpark, load it with Corrector, add the lease's row to reports/lease-log.md
    here     pick       each candidate the device ranked (t5/, t5-2/) through the shipped pipeline on
                        all of W&I dev (ERRANT); the best against the shipped T5 (paired bootstrap);
                        --ship ships it when it wins beyond noise

The plan (configs/lease-gpu.yaml): a warmup-stable-decay schedule across leases. Its first stage
continues the series from training/continuation/t5.tar.xz (``continuation``) and trains through
both calls; its decayed end is fine-tuned on the gold pairs on the device (the second stage,
started early: it sets itself up while the first decays), whose best checkpoints are the
candidates, shipped only if one beats the shipped T5 (paired bootstrap). Modules: plan (the plan
file), prepare, park (the bundle out of what travels), continuation, run (start, the detached
recipe, wait), collect, checks, shards (the pieces that come back), imports (the lent machine's
packages, checked in CPU runs), join, pick, finetune (the CPU route for a T5 without the stage).
"""
