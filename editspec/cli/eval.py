"""``editspec eval``: correct a gold set's sources (or read outputs from a file) and score them.

With ``--m2`` the input is the gold file's S lines, detokenized; the outputs are scored with ERRANT
(``editspec.evaluation.errant``). With ``--src``/``--refs`` (JFLEG) they are scored with GLEU
(``editspec.evaluation.gleu``), and with ERRANT too when ``--m2`` is also given::

    editspec eval --m2 ABCN.dev.gold.bea19.m2 --mode t5 --save-hyp t5.txt
    4384 sentences, mode t5: <seconds> s correcting, <rate> sentences/s
    =========== Span-Based Correction ============    then exactly what errant_compare prints
    TP      FP      FN      Prec    Rec     F0.5

Inputs are checked, and the gold and output files read, before the scorers and models load, so a
bad input fails at once with one line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from editspec.data import m2
from editspec.errors import EditspecError
from editspec.data.tokenized import detokenize


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``eval`` subcommand with its own options (the caller adds the model options)."""
    p = sub.add_parser("eval", help="ERRANT P/R/F0.5 against a gold M2 file; GLEU with --src/--refs")
    p.add_argument("--m2", default=None,
                   help="gold M2 file; its (detokenized) S lines are the input")
    p.add_argument("--src", default=None,
                   help="tokenized source file, one sentence a line (JFLEG dev.src): the input "
                        "when there is no --m2 (with --m2, its S lines must be these sentences)")
    p.add_argument("--refs", nargs="+", default=None,
                   help="tokenized reference files for GLEU, line-aligned with the source "
                        "(JFLEG dev.ref0 .. dev.ref3)")
    p.add_argument("--hyp", default=None,
                   help="score this file of corrected sentences (natural text, one a line) "
                        "instead of running a model")
    p.add_argument("--retokenize", choices=("changed", "all"), default="changed",
                   help="changed: keep the gold tokens of text the model left unchanged and "
                        "spaCy-tokenize only what it changed (default); all: spaCy-tokenize the "
                        "whole output, as errant_parallel -tok does")
    p.add_argument("--cat", type=int, choices=(1, 2, 3), default=None,
                   help="per-type scores as errant_compare -cat: 1 operation, 2 main type, "
                        "3 full type (JSON per_type uses 3 unless given)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--limit", type=int, default=None, help="first N sentences only")
    p.add_argument("--save-hyp", default=None, help="write the corrected sentences (natural text) here")
    p.add_argument("--save-m2", default=None,
                   help="write the hypothesis M2 here (errant_compare -hyp FILE -ref M2 agrees)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def load_corrector(args: argparse.Namespace):
    """The Corrector the eval options describe (a seam the tests replace)."""
    from editspec.cli.model_options import corrector_from_args

    return corrector_from_args(args)


def run_eval(args: argparse.Namespace) -> int:
    """``editspec eval``: correct a gold set's sources and score the outputs (ERRANT, GLEU)."""
    from editspec.evaluation.whole_set import correct_all, read_lines  # here: tqdm, not on --help's path

    if not args.m2 and not args.src:
        raise EditspecError("give a gold set: --m2 FILE, or --src FILE with --refs FILE...")
    if args.src and not args.refs and not args.m2:
        raise EditspecError("--src needs --refs (GLEU) or --m2 (ERRANT)")
    gold = m2.read_blocks(args.m2) if args.m2 else None
    if args.src:
        source_tokens = [line.split() for line in read_lines(args.src)]
        if gold is not None and [m2.source_tokens(b) for b in gold] != source_tokens:
            raise EditspecError(f"the S lines of {args.m2} are not the sentences of {args.src}")
    else:
        source_tokens = [m2.source_tokens(b) for b in gold]
    references = [[line.split() for line in read_lines(p)] for p in args.refs or []]
    for path, refs in zip(args.refs or [], references):
        if len(refs) != len(source_tokens):
            raise EditspecError(f"{path} has {len(refs)} lines for {len(source_tokens)} sources")
    n = len(source_tokens) if args.limit is None else min(args.limit, len(source_tokens))
    source_tokens, references = source_tokens[:n], [refs[:n] for refs in references]
    gold = gold[:n] if gold is not None else None
    sources = [detokenize(" ".join(t)) for t in source_tokens]
    started = time.perf_counter()
    if args.hyp:
        outputs = read_lines(args.hyp)
        if len(outputs) < n or (args.limit is None and len(outputs) != n):
            raise EditspecError(f"{args.hyp} has {len(outputs)} lines for {n} sources")
        outputs = outputs[:n]
    # here: errant loads spaCy (seconds), after the inputs are checked
    from editspec.evaluation.errant import ErrantEvaluator, errant_score, retokenize
    from editspec.evaluation.gleu import gleu

    settings: dict = {}
    if args.hyp:
        seconds, mode = 0.0, "file"
    else:
        corrector = load_corrector(args)
        mode = getattr(corrector, "mode", None) or args.mode
        outputs, seconds = correct_all(corrector.correct, sources, max(args.batch_size, 1) * 4,
                                       progress=not args.no_progress, desc=mode)
        if hasattr(corrector, "guarded"):  # its guard (and how many units it kept), rounds, spelling, rescoring
            settings = {"max_edit_words": corrector.config.max_edit_words, "guarded": corrector.guarded,
                        "unreal": corrector.unreal,
                        "rounds": corrector.config.rounds, "spelling": corrector.config.spelling,
                        "rescore": corrector.config.rescore, "level": corrector.config.level}
    tokens = [retokenize(t, o, s, args.retokenize) for t, o, s in zip(source_tokens, outputs, sources)]

    report: dict = {}
    result = None
    if gold is not None:
        evaluator = ErrantEvaluator(gold, sources=sources, retokenize=args.retokenize)
        hyp_blocks = evaluator.annotate(tokens)
        result = errant_score(hyp_blocks, gold)
        report.update(result.to_dict(args.cat or 3))
        if args.save_m2:
            Path(args.save_m2).write_text("\n\n".join(hyp_blocks) + "\n\n", encoding="utf-8")
    if references:
        report["gleu"] = round(gleu(source_tokens, references, tokens), 4)
    report.update({"sentences": n, "mode": mode, "seconds": round(seconds, 3),
                   "total_seconds": round(time.perf_counter() - started, 3),
                   "retokenize": args.retokenize, **settings})
    if args.save_hyp:
        Path(args.save_hyp).write_text("".join(o + "\n" for o in outputs), encoding="utf-8")

    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return 0
    rate = f", {n / seconds:.1f} sentences/s" if seconds else ""
    print(f"{n} sentences, mode {mode}: {seconds:.1f} s correcting{rate}")
    if settings.get("max_edit_words"):
        print(f"guard: {settings['guarded']} sentence units kept as written (an edit over "
              f"{settings['max_edit_words']} words)")
    if result is not None:
        result.print(args.cat)
    if references:
        print(f"GLEU {report['gleu']:.4f} ({len(references)} references)")
    return 0
