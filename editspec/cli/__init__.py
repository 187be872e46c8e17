"""The ``editspec`` command line: correct, data stats, eval, profile, serve.

Each subcommand builds its parser in its own module (cli/correct.py, data.py, eval.py, profile.py,
serve.py; the options they share in cli/model_options.py), whose work imports what it needs lazily
so that ``editspec --help`` stays instant. Expected failures raise ``EditspecError`` and become
one line on stderr and exit status 2; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

from editspec import __version__, threads
from editspec.cli import correct as correct_cli, data as data_cli, eval as eval_cli
from editspec.cli import profile as profile_cli, serve as serve_cli
from editspec.cli.model_options import add_correction_options, add_model_options, check_beam
from editspec.errors import EditspecError


class _Help(argparse.HelpFormatter):
    """Help that shows each option's default, where the default is a value and the help text
    does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text or \
                action.option_strings == [] or isinstance(action, argparse._HelpAction):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """An argparse parser (subcommands' too) whose usage errors are one line, like every other
    error, not the usage text first ("editspec correct: error: argument --mode: invalid choice"),
    and whose help shows the defaults (``_Help``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Said(logging.Handler):
    """What editspec's modules say while they work (``logging.getLogger("editspec")``: the spelling
    index being built, a profile's phases) as "editspec: ..." lines on stderr; on a terminal the
    line "loading models ..." stood on is cleared first."""

    def emit(self, record: logging.LogRecord) -> None:
        clear = "\r\x1b[K" if sys.stderr.isatty() else ""
        print(f"{clear}editspec: {record.getMessage()}", file=sys.stderr, flush=True)


def say_progress(show: bool) -> None:
    """Show editspec's progress messages on stderr (not with --no-progress)."""
    log = logging.getLogger("editspec")
    log.handlers = [h for h in log.handlers if not isinstance(h, _Said)] + ([_Said()] if show else [])
    log.setLevel(logging.INFO if show else logging.WARNING)
    log.propagate = not show


def build_parser() -> argparse.ArgumentParser:
    # the docstring's first line, without reST's ``markup``
    parser = _Parser(prog="editspec", description=__doc__.splitlines()[0].replace("``", ""))
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"editspec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    correct_cli.add_parser(sub)
    data_cli.add_parser(sub)

    p = eval_cli.add_parser(sub)
    add_model_options(p)
    add_correction_options(p)

    p = profile_cli.add_parser(sub)
    add_model_options(p)
    p.set_defaults(batch_size=1)  # per-sentence latency unless asked

    serve_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):  # a bare `editspec`: how to use it
        print(parser.format_usage().rstrip(), file=sys.stderr)
        print("editspec: give a command (editspec --help: what each does)", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version (0); a usage error, said in one line (2)
        return e.code if isinstance(e.code, int) else 2
    try:
        threads.apply(args.threads)  # --threads, else a default fit for this machine (editspec.threads)
        say_progress(not getattr(args, "no_progress", False))
        check_beam(args)  # --beam, --nbest: before any model loads
        if args.command == "correct":
            run = correct_cli.run_correct
        elif args.command == "data":
            run = data_cli.run
        elif args.command == "eval":
            run = eval_cli.run_eval
        elif args.command == "serve":
            run = serve_cli.run_serve
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
