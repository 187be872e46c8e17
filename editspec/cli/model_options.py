"""The model and correction options that several subcommands share (correct, eval, profile, serve),
and the ``Corrector`` they describe. Subcommands import these from here, never from the package
``__init__`` (which imports the subcommands)."""

from __future__ import annotations

import argparse
import gc

from editspec.config import LEVELS, QUANTIZATIONS
from editspec.modes import CORRECTOR

DTYPE_CHOICES = ("float32", "bfloat16")  # what --dtype names (the API takes more: modeling.precision)


def positive(value: str) -> int:
    """An argparse type: an integer of 1 or more (``--batch-size 0`` fails with the usage line,
    before anything loads)."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be an integer of 1 or more, not {value!r}")
    return n


def add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=tuple(CORRECTOR), default=None,
                   help="edit5 (fastest), t5, or speculative (T5 output, drafted by EdiT5 or the source, "
                        "whichever measures faster; "
                        "default: the bundle's corrector_config.json, else speculative when both "
                        "models are present)")
    p.add_argument("--model", default=None,
                   help="model directory: a bundle with edit5/ and/or t5/ inside, or a single "
                        "EdiT5 or T5 checkpoint (default: the models shipped with editspec)")
    p.add_argument("--edit5", default=None, help="EdiT5 checkpoint directory (overrides --model)")
    p.add_argument("--t5", default=None,
                   help="T5 checkpoint directory or hub id (overrides --model)")
    p.add_argument("--batch-size", type=positive, default=16,
                   help="sentences decoded together (EdiT5: a batch; T5 and speculative: the decoding "
                        "slots, each refilled as its sentence finishes); larger is faster per sentence "
                        "up to a point, and uses more memory")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    p.add_argument("--threads", type=positive, default=None,
                   help="torch CPU threads (default: up to 4, one per free core this process may use, shared "
                        "among the processes launched together; OMP_NUM_THREADS, when set, instead)")
    p.add_argument("--dtype", choices=DTYPE_CHOICES, default=None,
                   help="compute type: float32 or bfloat16 (default: float32, faster as a whole process "
                        "where measured, bf16 units or not; speculative output is the T5's greedy "
                        "output in the same type)")
    p.add_argument("--quantize", choices=QUANTIZATIONS, default=None,
                   help="int8: the linears in int8 (CPU only, float32); faster on long inputs and large "
                        "batches, but a sentence's output can change with the batch, and speculative output "
                        "is not always the int8 greedy output")


def add_correction_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam", type=int, default=None, metavar="N",
                   help="the T5 decodes by beam search with N beams (t5 and speculative modes; the output "
                        "is transformers' generate(num_beams=N)); slower than greedy (default: 1, greedy)")
    p.add_argument("--level", choices=LEVELS, default=None,
                   help="picky: more suggestions, the less sure among them (recall for a writer who reviews "
                        "each one; the models' corrector_config.json \"levels\"); default: the bundle's level")
    p.add_argument("--max-edit-words", type=int, default=None, metavar="N",
                   help="keep a sentence as written when the model rewrites more than N words in "
                        "one edit (a lost model repeats or skips phrases); 0: off (default: the "
                        "bundle's corrector_config.json, tuned on FCE dev for the shipped models; else 0)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="correct the sentences a round changed again, N rounds at most (default: "
                        "the bundle's corrector_config.json, tuned on FCE dev for the shipped models; else 1)")
    p.add_argument("--spelling", action=argparse.BooleanOptionalAction, default=None,
                   help="respell words no dictionary holds (or split them in two), restore capitals (\"i\", "
                        "names, sentence starts) and end a long last sentence with a full stop before the "
                        "model reads the text, and undo the model's edits that write a word no dictionary "
                        "holds (default: the bundle's corrector_config.json; else off)")
    p.add_argument("--rescore", action=argparse.BooleanOptionalAction, default=None,
                   help="undo each edit the model scores the sentence better without "
                        "(default: the bundle's corrector_config.json; else off)")
    p.add_argument("--grammar", action=argparse.BooleanOptionalAction, default=None,
                   help="after the model, fix agreement, noun number, verb forms and articles that the "
                        "sentence's parse and a language model of English agree on (default: the bundle's "
                        "corrector_config.json; else off)")
    p.add_argument("--prefix", default=None, metavar="TEXT",
                   help="text put before every T5 input, as some T5 checkpoints expect (\"grammar: \"); "
                        "default: the bundle's corrector_config.json, else none")


def corrector_options(args: argparse.Namespace):
    """``Corrector.from_pretrained``'s ``LoadOptions`` from the options above (the local run's
    corrector and each Ray actor's, ``editspec.ray_data.CorrectBatch``). Threads are not the
    load's: the command chose them before torch loaded (``editspec.threads``), an actor its own."""
    from editspec.config import LoadOptions

    settings = {"mode": args.mode, "max_edit_words": args.max_edit_words, "rounds": args.rounds,
                "spelling": args.spelling, "rescore": args.rescore, "grammar": args.grammar, "prefix": args.prefix,
                "level": getattr(args, "level", None)}
    return LoadOptions(model=args.model, edit5=args.edit5, t5=args.t5, settings=settings, device=args.device,
                       batch_size=args.batch_size, dtype=args.dtype, quantize=args.quantize,
                       max_length=getattr(args, "max_length", None), num_beams=getattr(args, "beam", None) or 1)


def check_beam(args: argparse.Namespace) -> None:
    """--beam (and correct's --nbest) checked before torch loads: one line of error."""
    from editspec.config import check_beams
    from editspec.errors import EditspecError

    beam, nbest = getattr(args, "beam", None), getattr(args, "nbest", None)
    if beam is not None and beam < 1:
        raise EditspecError(f"--beam must be 1 or more, not {beam}")
    check_beams(beam or 1, getattr(args, "mode", None))  # the corrector's rule (``config``)
    if nbest is not None:
        if nbest < 1:
            raise EditspecError(f"--nbest must be 1 or more, not {nbest}")
        if (beam or 1) < 2:
            raise EditspecError("--nbest lists a beam search's hypotheses: give --beam 2 or more")
        if nbest > beam:
            raise EditspecError(f"--nbest {nbest} is more than the {beam} beams: give --beam {nbest} or more")


def corrector_from_args(args: argparse.Namespace):
    """The ``Corrector`` that the options above describe (correct, eval, serve). ``Corrector`` is
    imported here, when a command runs: bad input fails before seconds of torch. Python's cyclic
    collector is off meanwhile: importing torch and loading the models make many objects and
    almost no garbage, and its passes over them cost 0.12 s of `import torch` alone (issue 71,
    Intel Xeon); what they made is then frozen (``gc.freeze``: later passes skip it)."""
    from editspec.grammar import parser

    # the grammar step's parser loads spaCy in a process of its own while this one imports torch:
    # started now where the step will run (asked for, or the shipped bundle's settings, which turn
    # it on), and ended once the corrector's settings say otherwise
    guess = args.grammar or (args.grammar is None and args.model is None and args.edit5 is None and args.t5 is None)
    if guess:
        parser.start()
    was = gc.isenabled()
    gc.disable()
    try:
        from editspec.corrector import Corrector

        corrector = Corrector.from_pretrained(options=corrector_options(args))
        if guess and not corrector.config.grammar:
            parser.release()
        return corrector
    finally:
        gc.freeze()
        if was:
            gc.enable()
