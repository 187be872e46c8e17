"""The ``editspec`` command line: correct, data stats, eval, profile, serve.

Each subcommand parses its options here (``data`` and ``eval``: in cli/data.py, cli/eval.py) and
hands them to the module that does the work (imported lazily so ``editspec --help`` stays
instant). Expected failures raise ``EditspecError`` and become one line on stderr and exit
status 2; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys

from editspec import threads
from editspec.config import MODES, QUANTIZATIONS
from editspec.cli import data as data_cli, eval as eval_cli
from editspec.cli import profile as profile_cli
from editspec.errors import EditspecError


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=MODES, default=None,
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
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: editspec.threads)")
    p.add_argument("--dtype", default=None,
                   help="compute type: float32 (default) or bfloat16 (the shipped weights are bfloat16 "
                        "on disk; speculative output is the T5's greedy output in the same type)")
    p.add_argument("--quantize", choices=QUANTIZATIONS, default=None,
                   help="int8: the linears in int8 (CPU only, float32); faster on long inputs and large "
                        "batches, but a sentence's output can change with the batch, and speculative output "
                        "is not always the int8 greedy output")


def _add_correction_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-edit-words", type=int, default=None, metavar="N",
                   help="keep a sentence as written when the model rewrites more than N words in "
                        "one edit (a lost model repeats or skips phrases); 0: off (default: the "
                        "bundle's corrector_config.json, set by eval/tune_guard.py; else 0)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="correct the sentences a round changed again, N rounds at most (default: "
                        "the bundle's corrector_config.json, set by eval/tune_rounds.py; else 1)")
    p.add_argument("--spelling", action=argparse.BooleanOptionalAction, default=None,
                   help="respell words no dictionary holds (or split them in two), restore capitals (\"i\", "
                        "names, sentence starts) and end a long last sentence with a full stop before the "
                        "model reads the text, and undo the model's edits that write a word no dictionary "
                        "holds (default: the bundle's corrector_config.json; else off)")
    p.add_argument("--rescore", action=argparse.BooleanOptionalAction, default=None,
                   help="undo each edit the model scores the sentence better without "
                        "(default: the bundle's corrector_config.json; else off)")
    p.add_argument("--prefix", default=None, metavar="TEXT",
                   help="text put before every T5 input, as some T5 checkpoints expect (\"grammar: \"); "
                        "default: the bundle's corrector_config.json, else none")


class _Parser(argparse.ArgumentParser):
    """An argparse parser (subcommands' too) whose usage errors are one line, like every other
    error, not the usage text first ("editspec correct: error: argument --mode: invalid choice")."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def corrector_from_args(args: argparse.Namespace):
    """The ``Corrector`` that the model and correction options above describe (correct, eval,
    serve). Imported here, when a command runs: bad input fails before seconds of torch."""
    from editspec.corrector import Corrector

    return Corrector.from_pretrained(args.model, mode=args.mode, edit5=args.edit5, t5=args.t5,
                                     device=args.device, batch_size=args.batch_size, dtype=args.dtype,
                                     quantize=args.quantize, max_length=getattr(args, "max_length", None),
                                     max_edit_words=args.max_edit_words, rounds=args.rounds,
                                     spelling=args.spelling, rescore=args.rescore, prefix=args.prefix)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="editspec", description=__doc__.splitlines()[0])
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

    data_cli.add_parser(sub)

    p = eval_cli.add_parser(sub)
    _add_model_options(p)
    _add_correction_options(p)

    p = profile_cli.add_parser(sub)
    _add_model_options(p)
    p.set_defaults(batch_size=1)  # per-sentence latency unless asked

    p = sub.add_parser("serve", help="correction server: JSON API, LanguageTool's /v2 API, a web page")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    p.add_argument("--port", type=int, default=8081)
    p.add_argument("--cors-origin", action="append", default=None, metavar="ORIGIN",
                   help="allow browser pages of this origin to call the API (repeatable; default: none)")
    p.add_argument("--max-chars", type=int, default=20000, help="most characters in one request (else 413)")
    p.add_argument("--max-batch", type=int, default=32, help="most texts corrected together")
    p.add_argument("--batch-wait-ms", type=float, default=2.0,
                   help="how long an idle server waits for more requests to batch with the first")
    p.add_argument("--max-length", type=int, default=None,
                   help="longest model input in tokens with EOS (default: the models' training length)")
    p.add_argument("--graceful-timeout", type=float, default=30.0,
                   help="on SIGTERM, seconds to let requests in flight finish")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    _add_model_options(p)
    _add_correction_options(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.threads is not None and args.threads < 1:
            raise EditspecError("--threads must be 1 or more")
        threads.apply(args.threads)  # --threads, else a default fit for this machine (editspec.threads)
        if args.command == "correct":
            from editspec.cli.correct import run_correct as run
        elif args.command == "data":
            run = data_cli.run
        elif args.command == "eval":
            run = eval_cli.run_eval
        elif args.command == "serve":
            from editspec.cli.serve import run_serve as run
        else:
            run = profile_cli.run_profile
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
