"""``editspec data``: corpus tools.

``data stats`` reports how well EdiT5's edits represent a corpus's pairs on a tokenizer
(``editspec.data.corpora.stats``)::

    editspec data stats ABCN.dev.gold.bea19.m2
    {"file": ..., "pairs": 4384, "too_few_markers": ..., "roundtrip_exact": ..., ...}

``data roundtrip`` measures the detokenizer (``editspec.data.tokenized``): how often spaCy
re-tokenizes ``detokenize(x)`` back to exactly the tokens ``x`` of an M2 file's S lines (or of a
tokenized text file's lines)::

    editspec data roundtrip ABCN.dev.gold.bea19.m2
    ABCN.dev.gold.bea19.m2: <exact>/<total> = <rate> re-tokenize exactly

Both check their input files before the tokenizer, datasets or spaCy load.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from editspec.data import m2
from editspec.errors import EditspecError
from editspec.data.tokenized import roundtrip_rate


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``data`` subcommand and its own subcommands."""
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
    r = data_sub.add_parser("roundtrip",
                            help="how often spaCy re-tokenizes detokenized sentences to their tokens")
    r.add_argument("files", nargs="+", metavar="file",
                   help="M2 file (its S lines), or a tokenized text file (one sentence a line)")
    p.set_defaults(threads=None)  # no torch here; main() reads args.threads
    return p


def run(args: argparse.Namespace) -> int:
    return run_stats(args) if args.data_command == "stats" else run_roundtrip(args)


def _existing(path: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise EditspecError(f"no such file: {p}")
    return p


def run_stats(args: argparse.Namespace) -> int:
    """``stats`` of an M2 file, a TSV, or a source file with one or more targets."""
    for path in [args.file, *(args.target or [])]:
        _existing(path)
    # here: datasets and transformers take seconds to import, after the files are checked
    from editspec.data.corpora import read_jfleg, read_m2, read_parallel, stats
    from editspec.modeling.loading import DEFAULT_MODEL
    from editspec.tokenization.tokens import load_tokenizer

    tok_dir = Path(args.tokenizer) if args.tokenizer else DEFAULT_MODEL / "t5"
    if not tok_dir.exists():
        raise EditspecError(f"no tokenizer at {tok_dir} (train one with training/train_tokenizer.py)")
    tokenizer = load_tokenizer(tok_dir)
    if args.target:  # plain text is natural unless --detokenize says it is tokenized
        if len(args.target) == 1:
            dataset = read_parallel(args.file, args.target[0], detokenized=args.detokenize)
        else:
            dataset = read_jfleg(args.file, args.target, detokenized=args.detokenize, pairs=True)
    elif m2.is_m2(args.file):
        dataset = read_m2(args.file, annotator=args.annotator, detokenized=not args.tokenized)
    else:
        dataset = read_parallel(args.file, detokenized=args.detokenize)
    result = {"file": str(args.file), **({"target": args.target} if args.target else {}),
              "tokenizer": str(tok_dir), **stats(dataset, tokenizer)}
    print(json.dumps(result, indent=2))
    return 0


def _tokenized_lines(path: Path) -> list[str]:
    """The tokenized sentences of a file: an M2 file's S lines, else every line."""
    if m2.is_m2(path):
        return [" ".join(m2.source_tokens(b)) for b in m2.read_blocks(path)]
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise EditspecError(f"{path} is not UTF-8 text") from None


def run_roundtrip(args: argparse.Namespace) -> int:
    """Per file: how many sentences spaCy re-tokenizes exactly after ``detokenize``."""
    files = {path: _tokenized_lines(_existing(path)) for path in args.files}
    for path, lines in files.items():
        exact, total, _ = roundtrip_rate(lines)
        print(f"{path}: {exact}/{total} = {exact / max(total, 1):.2%} re-tokenize exactly")
    return 0
