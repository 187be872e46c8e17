"""Running a corrector over a whole set: in chunks of similar length, timed, in input order.

``correct_all`` sorts the sentences longest first and hands them to the corrector in chunks, so
each batch pads to about its own length, then puts the outputs back in input order::

    sentences   0 "Hi."   1 "He go to school every day."   2 "She like it."    chunk_size 2
    chunks      [1, 2] -> "He goes to school every day.", "She likes it."
                [0]    -> "Hi."
    outputs     "Hi.", "He goes to school every day.", "She likes it."   seconds: in correct_fn only

``evaluate`` is that plus ERRANT scoring of a gold set (the training script's dev check);
``read_lines`` reads the outputs or sources a script is given.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from tqdm import tqdm

from editspec.errors import EditspecError

if TYPE_CHECKING:  # for hints only: the CLI imports this module before it needs errant
    from editspec.evaluation.errant import ErrantEvaluator, ErrantResult

CorrectFn = Callable[[list[str]], list[str]]


def correct_all(correct_fn: CorrectFn, sentences: Sequence[str], chunk_size: int = 64,
                progress: bool = False, desc: str | None = None) -> tuple[list[str], float]:
    """Outputs of ``correct_fn`` for all sentences, in chunks of similar length (less padding),
    with a tqdm bar on stderr; returns (outputs in input order, seconds spent in correct_fn)."""
    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
    outputs: list[str] = [""] * len(sentences)
    seconds = 0.0
    with tqdm(total=len(sentences), desc=desc, unit="sent", file=sys.stderr,
              disable=not progress, dynamic_ncols=True) as bar:
        for k in range(0, len(order), chunk_size):
            idx = order[k:k + chunk_size]
            t0 = time.perf_counter()
            got = correct_fn([sentences[i] for i in idx])
            seconds += time.perf_counter() - t0
            if len(got) != len(idx):
                raise EditspecError(f"the corrector returned {len(got)} sentences for {len(idx)}")
            for i, out in zip(idx, got):
                outputs[i] = out
            bar.update(len(idx))
    return outputs, seconds


def evaluate(correct_fn: CorrectFn, evaluator: ErrantEvaluator, chunk_size: int = 64,
             progress: bool = False) -> tuple[ErrantResult, list[str], float]:
    """(scores, outputs, seconds) of a corrector on a gold set: the training script's dev check."""
    outputs, seconds = correct_all(correct_fn, evaluator.sources, chunk_size, progress)
    return evaluator.score(outputs), outputs, seconds


def read_lines(path: str | Path) -> list[str]:
    """A text file's lines without their line ends; unreadable, a one-line EditspecError."""
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n").rstrip("\r") for line in f]
    except OSError as e:
        raise EditspecError(f"cannot read {path}: {e.strerror}") from e
    except UnicodeDecodeError:
        raise EditspecError(f"{path} is not UTF-8 text") from None
