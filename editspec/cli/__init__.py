"""The ``editspec`` command line: correct, data stats, eval, profile.

Each subcommand parses its options here and hands them to the module that does the work
(imported lazily so ``editspec --help`` stays instant). Expected failures raise
``EditspecError`` and become one line on stderr and exit status 2; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys

from editspec.errors import EditspecError

MODES = ("edit5", "t5", "speculative")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=MODES, default=None,
                   help="edit5 (fastest), t5, or speculative (T5 output, EdiT5-drafted; "
                        "the default when both models are present)")
    p.add_argument("--model", default=None,
                   help="model directory: a bundle with edit5/ and/or t5/ inside, or a single "
                        "EdiT5 or T5 checkpoint (default: the models shipped with editspec)")
    p.add_argument("--edit5", default=None, help="EdiT5 checkpoint directory (overrides --model)")
    p.add_argument("--t5", default=None,
                   help="T5 checkpoint directory or hub id (overrides --model)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")


def _add_correction_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-edit-words", type=int, default=None, metavar="N",
                   help="keep a sentence as written when the model rewrites more than N words in "
                        "one edit (a lost model repeats or skips phrases); 0: off (default: the "
                        "model's config.json max_edit_words, set by eval/tune_guard.py; else 0)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="correct the sentences a round changed again, N rounds at most (default: "
                        "the model's config.json rounds, set by eval/tune_rounds.py; else 1)")
    p.add_argument("--spelling", action=argparse.BooleanOptionalAction, default=None,
                   help="respell words no dictionary holds (or split them in two), restore capitals (\"i\", "
                        "names, sentence starts) and end a long last sentence with a full stop before the "
                        "model reads the text, and undo the model's edits that write a word no dictionary "
                        "holds (default: the model's config.json spelling; else off)")
    p.add_argument("--rescore", action=argparse.BooleanOptionalAction, default=None,
                   help="undo each edit the model scores the sentence better without "
                        "(default: the model's config.json rescore; else off)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="editspec", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("correct", help="correct the text of a file (one output line per input line)")
    p.add_argument("input", help="input text file, or - for stdin")
    p.add_argument("-o", "--output", default="-", help="output file (written atomically), - for stdout")
    p.add_argument("--format", choices=("text", "jsonl", "diff"), default="text")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour for --format diff")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--max-length", type=int, default=None,
                   help="longest model input in tokens with EOS; longer sentences are split "
                        "(default: the length the models were trained with)")
    _add_model_options(p)
    _add_correction_options(p)

    p = sub.add_parser("data", help="corpus tools")
    data_sub = p.add_subparsers(dest="data_command", required=True)
    s = data_sub.add_parser("stats", help="edit statistics of an M2 or parallel corpus (JSON)")
    s.add_argument("file", help="M2 file, TSV (source<TAB>target), or source file with --target")
    s.add_argument("--target", nargs="+", default=None,
                   help="target file for a two-file parallel corpus; several (JFLEG references): "
                        "one pair per reference")
    s.add_argument("--tokenizer", default=None, help="tokenizer directory (default: the shipped one)")
    s.add_argument("--annotator", default="0",
                   help="M2 annotator id, or 'all' for one pair per annotator")
    s.add_argument("--tokenized", action="store_true",
                   help="keep the M2 spaCy tokenization instead of detokenizing to natural text")
    s.add_argument("--detokenize", action="store_true",
                   help="detokenize a tokenized parallel corpus (e.g. JFLEG) to natural text")
    s.set_defaults(threads=None)  # no torch here; main() reads args.threads

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
    _add_model_options(p)
    _add_correction_options(p)

    p = sub.add_parser("profile", help="latency report: EdiT5 vs T5 vs speculative T5 and peers")
    p.add_argument("--data", required=True,
                   help="M2 file (S lines, detokenized; gold targets from annotator 0), "
                        "source<TAB>target lines, or plain text (one sentence a line)")
    p.add_argument("--limit", type=int, default=100, help="first N sentences (see --seed)")
    p.add_argument("--seed", type=int, default=None,
                   help="with --limit: a random sample of N sentences drawn with this seed "
                        "(W&I dev lists CEFR levels A, B, C, N in turn: the first N are level A)")
    p.add_argument("--modes", nargs="+", default=None,
                   help="modes to time, or 'none' (default: all; t5 always runs as the reference): "
                        "t5 edit5 speculative speculative-copy speculative-small speculative-perfect "
                        "hf-greedy hf-assisted hf-prompt-lookup")
    p.add_argument("--out", required=True, help="output directory for report.json, report.md, plots")
    p.add_argument("--warmup", type=int, default=5, help="untimed batches before timing")
    p.add_argument("--architectures", action="store_true",
                   help="also time t5-small, t5-base, EdiT5-small and EdiT5-base at real sizes with "
                        "random weights and decoder steps forced from the gold targets")
    p.add_argument("--trace", action="store_true",
                   help="write a torch.profiler chrome trace of one batch per mode (trace-MODE.json)")
    p.add_argument("--t5-draft", default=None,
                   help="small T5 drafter for speculative-small and hf-assisted "
                        "(default: the bundle's t5-draft/)")
    p.add_argument("--gamma", default="4",
                   help="initial draft window of the speculative modes (adapts up to 64), or 'all'")
    p.add_argument("--prompt-lookup-tokens", type=int, default=10,
                   help="prompt_lookup_num_tokens of hf-prompt-lookup")
    p.add_argument("--dtype", default=None,
                   help="float32, bfloat16, float16 or float64 (default: the checkpoints' own)")
    _add_model_options(p)
    p.set_defaults(batch_size=1)  # per-sentence latency unless asked
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        if args.command == "correct":
            from editspec.cli.correct import run_correct as run
        elif args.command == "data":
            from editspec.data.corpora import run_stats as run
        elif args.command == "eval":
            from editspec.evaluation import run_eval as run
        else:
            from editspec.profiling import run_profile as run
        return run(args) or 0
    except EditspecError as e:
        if args.debug:
            raise
        print(f"editspec: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("editspec: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
