"""Latency profile of every decoding mode, and of EdiT5/T5 architectures at their real sizes.

``editspec profile`` (``editspec.cli.profile``) times each mode on the same batches, modes taking
turns batch by batch so that a change in machine load hits all of them alike, after untimed
warm-up batches and with a fixed number of CPU threads. A speculative sample of 3 verifier
passes, for example, splits as latency = encoder + (pass 1 + pass 2 + pass 3) + draft + other.
The modules follow one run:

    ../modes.py       the modes (the corrector's, our other drafters, transformers' peers) and
                      the models each needs
    timed.py          how each mode runs and is timed (the corrector's modes: their own objects)
    sentences.py      the sentences (M2, source<TAB>target or plain lines) and their batches
    clock.py          stamps at module boundaries (hooks, CUDA events), and a ``Sample``
    profiler.py       the modes on trained models, batch by batch, against T5's greedy output
    architectures.py  random T5/EdiT5 at real sizes, decoder steps forced to gold lengths
    side_steps.py     spelling before the model and rescoring after it, timed apart
    ct2.py            CTranslate2 on the same T5 weights (the ct2-* modes), converted once
    pipeline.py       ``--pipeline``: editspec correct's whole path, step by step
    stats.py          summaries, and Leviathan et al.'s expected speedup
    report.py         report.json and report.md; plots.py: the plots
    session.py        ``profile``: one whole run, from the data file to the report files
"""
