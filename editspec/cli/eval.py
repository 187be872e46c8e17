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
from dataclasses import dataclass, field
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


@dataclass
class GoldSet:
    """A gold set as ``eval`` reads it, cut to ``--limit``: each source's tokens, each ``--refs``
    file's lines' tokens, and the M2 blocks (None without ``--m2``)."""

    source_tokens: list[list[str]]
    references: list[list[list[str]]]
    gold: list[str] | None

    @property
    def sources(self) -> list[str]:
        """The sources as text (what the corrector reads)."""
        return [detokenize(" ".join(t)) for t in self.source_tokens]


def read_gold_set(args: argparse.Namespace) -> GoldSet:
    """The gold set ``--m2`` / ``--src`` / ``--refs`` name, checked line for line."""
    from editspec.evaluation.whole_set import read_lines

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
    return GoldSet(source_tokens[:n], [refs[:n] for refs in references], gold[:n] if gold is not None else None)


def read_hyp(args: argparse.Namespace, n: int) -> list[str]:
    """The first ``n`` lines of ``--hyp`` (all of it, unless ``--limit`` cut the sources)."""
    from editspec.evaluation.whole_set import read_lines

    outputs = read_lines(args.hyp)
    if len(outputs) < n or (args.limit is None and len(outputs) != n):
        raise EditspecError(f"{args.hyp} has {len(outputs)} lines for {n} sources")
    return outputs[:n]


@dataclass
class Corrected:
    """The outputs ``eval`` scores: from a model (its seconds and settings) or from ``--hyp``."""

    outputs: list[str]
    mode: str
    seconds: float = 0.0
    settings: dict = field(default_factory=dict)


def correct_sources(args: argparse.Namespace, sources: list[str]) -> Corrected:
    """The outputs of the corrector the options describe, timed."""
    from editspec.evaluation.whole_set import correct_all  # here: tqdm, not on --help's path

    corrector = load_corrector(args)
    mode = getattr(corrector, "mode", None) or args.mode
    outputs, seconds = correct_all(corrector.correct, sources, max(args.batch_size, 1) * 4,
                                   progress=not args.no_progress, desc=mode)
    settings = {}
    if hasattr(corrector, "guarded"):  # its guard (and how many units it kept), rounds, spelling, rescoring
        c = corrector.config
        settings = {"max_edit_words": c.max_edit_words, "guarded": corrector.guarded, "unreal": corrector.unreal,
                    "rounds": c.rounds, "spelling": c.spelling, "rescore": c.rescore, "grammar": c.grammar,
                    "level": c.level}
    return Corrected(outputs, mode, seconds, settings)


def run_eval(args: argparse.Namespace) -> int:
    """``editspec eval``: correct a gold set's sources and score the outputs (ERRANT, GLEU)."""
    gold_set = read_gold_set(args)
    n, sources = len(gold_set.source_tokens), gold_set.sources
    started = time.perf_counter()
    hyp = read_hyp(args, n) if args.hyp else None
    # here: errant loads spaCy (seconds), after the inputs are checked
    from editspec.evaluation.errant import ErrantEvaluator, errant_score, retokenize
    from editspec.evaluation.gleu import gleu

    done = Corrected(hyp, "file") if hyp is not None else correct_sources(args, sources)
    outputs, references = done.outputs, gold_set.references
    tokens = [retokenize(t, o, s, args.retokenize) for t, o, s in zip(gold_set.source_tokens, outputs, sources)]

    report: dict = {}
    result = None
    if gold_set.gold is not None:
        evaluator = ErrantEvaluator(gold_set.gold, sources=sources, retokenize=args.retokenize)
        hyp_blocks = evaluator.annotate(tokens)
        result = errant_score(hyp_blocks, gold_set.gold)
        report.update(result.to_dict(args.cat or 3))
        if args.save_m2:
            Path(args.save_m2).write_text("\n\n".join(hyp_blocks) + "\n\n", encoding="utf-8")
    if references:
        report["gleu"] = round(gleu(gold_set.source_tokens, references, tokens), 4)
    report.update({"sentences": n, "mode": done.mode, "seconds": round(done.seconds, 3),
                   "total_seconds": round(time.perf_counter() - started, 3),
                   "retokenize": args.retokenize, **done.settings})
    if args.save_hyp:
        Path(args.save_hyp).write_text("".join(o + "\n" for o in outputs), encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        print_report(report, result, len(references), done, args.cat)
    return 0


def print_report(report: dict, result, references: int, done: Corrected, cat: int | None) -> None:
    """The text ``eval`` prints without ``--json``: time, guard, ERRANT's table, GLEU."""
    n, seconds, settings = report["sentences"], done.seconds, done.settings
    rate = f", {n / seconds:.1f} sentences/s" if seconds else ""
    print(f"{n} sentences, mode {done.mode}: {seconds:.1f} s correcting{rate}")
    if settings.get("max_edit_words"):
        print(f"guard: {settings['guarded']} sentence units kept as written (an edit over "
              f"{settings['max_edit_words']} words)")
    if result is not None:
        result.print(cat)
    if references:
        print(f"GLEU {report['gleu']:.4f} ({references} references)")
