"""Learners' edit patterns: (correct -> learner) rewrites and how often learners make each, per word.

Read once from the *train* M2 files of W&I and FCE (never dev or test: ``build`` refuses them)
into a small table, which ``replay.py`` replays on clean sentences. Not committed: it is a
derivative of the corpora. Built by a command::

    python -m training.synthetic.patterns build            # -> runs/synthetic/patterns.json.xz
    python -m training.synthetic.patterns show --top 20    # the most frequent patterns, coverage by type

One edit of one sentence, and what it becomes::

    S I saws the show 's advertisement hanging up of a wall .
    A 1 2|||R:VERB:TENSE|||saw|||...          corrected text:  I saw the show's advertisement hanging up on a wall.
    A 8 9|||R:PREP|||on|||...                 this edit undone: I saw the show's advertisement hanging up of a wall.
                                              -> pattern ("on",) -> ("of",), R:PREP

Each edit is undone alone in the corrected sentence, both texts are detokenized
(``editspec.data.tokenized.detokenize``: W&I and FCE are spaCy-tokenized, ``do n't``) and split
into ``Sentence`` tokens (``don't``, ``medium-sized``, as the Wikipedia text is), and the tokens
that differ are the pattern. So a pattern is keyed on the text the replay sees, case folded
(``fold``: acronyms stay) except in patterns that only change case ("English" -> "english").

Rate of a pattern = times learners wrote X where the correction has Y / occurrences of Y in the
corrected text (the same tokens, folded): replayed on clean text at that rate per occurrence, it
reproduces the learners' error rate for that word or phrase. An insertion (correct "" -> learner
"the", U:DET) is keyed on a neighbour and the class of the token on its other side
(``word_class``): "the" before "people" after a preposition ("of _ people" -> "of the people"),
or "about" after "discuss" before a determiner, whichever of the two the corpus holds more
often; its rate is per occurrence of that neighbour with that class beside it. Patterns seen
fewer than ``min_count`` times are dropped (their rate is noise); ``coverage`` says, per ERRANT
type, which share of the corpus's edits the kept patterns account for, and the rules
(``corruptions.py``) make the rest.

Hand-written rather than ERRANT's own classes: ERRANT needs spaCy (a lent GPU machine has none)
and the table needs only counting over tokens.
"""

from __future__ import annotations

import argparse
import functools
import json
import lzma
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from editspec.data.corpora import data_dir as default_data_dir
from editspec.data.m2 import apply_edits, parse_block, read_blocks
from editspec.errors import EditspecError
from editspec.data.tokenized import detokenize
from training.config import REPO_ROOT
from training.synthetic.profile import first_annotator_edits
from training.synthetic.sentence import fold, tokens
from training.synthetic.words import AUXILIARIES, BE, CONJUNCTIONS, DETERMINERS, MODALS, PREPOSITIONS, PRONOUNS, \
    SUBJECT_PRONOUNS

TRAIN_M2 = ("wi_locness/ABC.train.gold.bea19.m2", "fce/fce.train.gold.bea19.m2")  # inside the data directory
DEFAULT_TABLE = REPO_ROOT / "runs" / "synthetic" / "patterns.json.xz"  # runs/ is git-ignored
MIN_COUNT = 5
MAX_TOKENS = 3  # longest correct or learner side kept as a pattern
FORMAT = 2


class Pattern(NamedTuple):
    """Rewrite ``key[start:end]`` (folded tokens; exact ones when ``exact``) as ``learner``.

    Replacement and deletion: start, end = 0, len(key). Insertion: the key is its neighbour,
    start == end (0: before it, 1: after it), and ``context`` the ``word_class`` of the token on
    the insertion's other side ("the" after "of" and before a "word": "of the people")."""

    key: tuple[str, ...]
    start: int
    end: int
    learner: tuple[str, ...]
    type: str
    count: int
    rate: float
    exact: bool = False  # a case-only pattern, keyed and written in exact case
    context: str = ""


_CLASSES = [("det", DETERMINERS), ("prep", PREPOSITIONS), ("pron", set(PRONOUNS) | SUBJECT_PRONOUNS),
            ("conj", set(CONJUNCTIONS)), ("aux", AUXILIARIES | MODALS | BE)]


@functools.lru_cache(maxsize=1 << 16)
def word_class(tok: str | None) -> str:
    """A token's coarse class, the context of an insertion: "^" (no token: the sentence's edge),
    punct, num, det, prep, pron, conj, aux (closed classes, words.py), cap (another capitalized
    word), word."""
    if tok is None:
        return "^"
    if not tok[:1].isalnum():
        return "punct"
    if tok[:1].isdigit():
        return "num"
    f = fold(tok)
    for name, members in _CLASSES:
        if f in members:
            return name
    return "cap" if tok[:1].isupper() else "word"


Candidate = tuple[tuple[str, ...], int, int, tuple[str, ...], bool, str]  # key, start, end, learner, exact, context


class Event(NamedTuple):
    """One corpus edit as Sentence tokens: the patterns that could count it."""

    type: str
    candidates: tuple[Candidate, ...]


@dataclass
class PatternTable:
    patterns: list[Pattern]
    coverage: dict[str, float]  # ERRANT type -> share of the corpus's edits of that type the patterns make
    edits: dict[str, int]  # ERRANT type -> the corpus's edits
    sources: list[str] = field(default_factory=list)
    min_count: int = MIN_COUNT

    @property
    def covered(self) -> float:
        """Share of all the corpus's edits that the patterns make."""
        total = sum(self.edits.values())
        return sum(self.coverage[t] * n for t, n in self.edits.items()) / total if total else 0.0

    def save(self, path: str | os.PathLike) -> Path:
        """xz-compressed JSON, written atomically (a reader never sees half a table)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        doc = {"format": FORMAT, "sources": self.sources, "min_count": self.min_count, "edits": self.edits,
               "coverage": self.coverage, "patterns": [[list(p.key), p.start, p.end, list(p.learner), p.type,
                                                        p.count, p.rate, p.exact, p.context] for p in self.patterns]}
        with lzma.open(tmp, "wt", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"), ensure_ascii=False)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PatternTable":
        try:
            with lzma.open(path, "rt", encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, lzma.LZMAError, json.JSONDecodeError) as e:
            raise EditspecError(f"cannot read pattern table {path}: {e} (build it with "
                                f"`python -m training.synthetic.patterns build --out {path}`)") from e
        if doc.get("format") != FORMAT:
            raise EditspecError(f"pattern table {path} has format {doc.get('format')}, not {FORMAT}: build it again")
        patterns = [Pattern(tuple(k), s, e, tuple(x), t, c, r, bool(exact), ctx) for k, s, e, x, t, c, r, exact, ctx
                    in doc["patterns"]]
        return cls(patterns, doc["coverage"], doc["edits"], doc["sources"], doc["min_count"])


@functools.lru_cache(maxsize=4)
def load_table(path: str) -> PatternTable:
    """``PatternTable.load``, once per process and path."""
    return PatternTable.load(path)


def _undone_edit(target: list[str], edit_at: tuple[int, int], learner: list[str]) -> list[str]:
    start, end = edit_at
    return target[:start] + learner + target[end:]


def _diff(a: list[str], b: list[str]) -> tuple[int, int, int] | None:
    """(start, end in a, end in b) of the tokens that differ between a and b; None if none do."""
    if a == b:
        return None
    p = 0
    while p < len(a) and p < len(b) and a[p] == b[p]:
        p += 1
    s = 0
    while s < len(a) - p and s < len(b) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    return p, len(a) - s, len(b) - s


def edit_events(source: list[str], edits) -> list[Event]:
    """One sentence's edits (the first annotator's), each as the Sentence-token rewrite it is in
    the corrected text (the module docstring); edits whose tokens do not differ there are left out."""
    target = apply_edits(source, edits)
    correct = tokens(detokenize(" ".join(target)))
    folded = [fold(t) for t in correct]
    events = []
    shift = 0
    for e in sorted(edits, key=lambda e: e.start):
        if e.start < 0 or e.correction == ["-NONE-"]:
            continue
        at = (e.start + shift, e.start + shift + len(e.correction))
        shift += len(e.correction) - (e.end - e.start)
        learner_text = tokens(detokenize(" ".join(_undone_edit(target, at, source[e.start:e.end]))))
        d = _diff(correct, learner_text)
        if d is None:
            continue
        i, j, k = d
        y, x = correct[i:j], learner_text[i:k]
        if len(y) > MAX_TOKENS or len(x) > MAX_TOKENS:
            events.append(Event(e.type, ()))
            continue
        exact = len(y) == len(x) and [t.lower() for t in y] == [t.lower() for t in x]
        if exact:  # "English" -> "english": case is the error
            cands = ((tuple(y), 0, len(y), tuple(x), True, ""),)
        elif y:
            cands = ((tuple(folded[i:j]), 0, j - i, tuple(fold(t) for t in x), False, ""),)
        else:  # an insertion: keyed on the token after it and the class before, or the other way round
            ins = tuple(fold(t) for t in x)
            before, after = (correct[i - 1] if i > 0 else None), (correct[i] if i < len(correct) else None)
            cands = tuple(c for c in (((folded[i],), 0, 0, ins, False, word_class(before)) if after else None,
                                      ((folded[i - 1],), 1, 1, ins, False, word_class(after)) if before else None) if c)
        events.append(Event(e.type, cands))
    return events


def _check_train(paths: list[Path]) -> None:
    for p in paths:
        if "dev" in p.name.lower() or "test" in p.name.lower():
            raise EditspecError(f"{p}: patterns are read from train files only, never dev or test data")


def build(m2_paths: list[str | os.PathLike], min_count: int = MIN_COUNT) -> PatternTable:
    """The pattern table of M2 files (the module docstring)."""
    paths = [Path(p) for p in m2_paths]
    _check_train(paths)
    events: list[Event] = []
    sentences: list[list[str]] = []
    for path in paths:
        for block in read_blocks(path):
            source, edits = parse_block(block)
            kept = first_annotator_edits(edits)
            events += edit_events(source, kept)
            sentences.append(tokens(detokenize(" ".join(apply_edits(source, kept)))))
    seen = Counter(c for ev in events for c in ev.candidates)
    # an insertion counts once, for the neighbour that holds it more often (ties: the next token)
    chosen = [max(ev.candidates, key=lambda c: (seen[c], c[1] == 0)) if ev.candidates else None for ev in events]
    counts = Counter(c for c in chosen if c)
    types: dict[tuple, Counter] = defaultdict(Counter)
    for ev, c in zip(events, chosen):
        if c:
            types[c][ev.type] += 1
    kept = {c: n for c, n in counts.items() if n >= min_count}
    occurrences = _occurrences(sentences, {_place(c) for c in kept})
    patterns = sorted((Pattern(key, s, e, x, types[c].most_common(1)[0][0], n, n / occurrences[_place(c)], exact, ctx)
                       for c, n in kept.items() for key, s, e, x, exact, ctx in [c]), key=lambda p: -p.count)
    edits = Counter(ev.type for ev in events)
    covered = Counter(ev.type for ev, c in zip(events, chosen) if c in kept)
    coverage = {t: covered[t] / n for t, n in edits.most_common()}
    return PatternTable(patterns, coverage, dict(edits.most_common()), [p.name for p in paths], min_count)


def _place(c: Candidate) -> tuple:
    """What a pattern's rate is per: its key (exact or folded), and for an insertion the side and
    the class of the token on its other side."""
    key, start, end, _, exact, context = c
    return (key, exact) if start < end else (key, exact, start, context)


def _occurrences(sentences: list[list[str]], places: set[tuple]) -> Counter:
    """How often each ``_place`` occurs in the corrected sentences."""
    lengths = sorted({len(p[0]) for p in places})
    occ: Counter = Counter()
    for toks in sentences:
        folded = [fold(t) for t in toks]
        for n in lengths:
            for i in range(len(toks) - n + 1):
                for exact, seq in ((False, folded), (True, toks)):
                    k = (tuple(seq[i:i + n]), exact)
                    if k in places:
                        occ[k] += 1
                    if n == 1:  # as an insertion's neighbour: the class on the other side
                        for side, other in ((0, toks[i - 1] if i else None), (1, toks[i + 1] if i + 1 < len(toks) else None)):
                            k = (k[0], exact, side, word_class(other))
                            if k in places:
                                occ[k] += 1
    return occ


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.synthetic.patterns", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="read the train M2 files, write the table")
    b.add_argument("--data-dir", help="corpus folder (default $EDITSPEC_DATA or ../shared/data)")
    b.add_argument("--m2", nargs="*", help=f"train M2 files (default: {' and '.join(TRAIN_M2)} in the data directory)")
    b.add_argument("--min-count", type=int, default=MIN_COUNT)
    b.add_argument("--out", default=str(DEFAULT_TABLE))
    s = sub.add_parser("show", help="print a table's most frequent patterns and its coverage by type")
    s.add_argument("table", nargs="?", default=str(DEFAULT_TABLE))
    s.add_argument("--top", type=int, default=30)
    args = p.parse_args(argv)
    try:
        if args.cmd == "build":
            paths = args.m2 or [default_data_dir(args.data_dir) / rel for rel in TRAIN_M2]
            table = build(paths, args.min_count)
            table.save(args.out)
            print(f"{args.out}: {len(table.patterns)} patterns seen >= {args.min_count} times in "
                  f"{', '.join(table.sources)}, making {table.covered:.1%} of their {sum(table.edits.values())} edits")
        else:
            table = PatternTable.load(args.table)
            print(describe(table, args.top))
    except EditspecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def describe(table: PatternTable, top: int = 30) -> str:
    def side(p: Pattern) -> tuple[str, str]:
        if p.start == p.end:  # an insertion next to its key, with the other neighbour's class
            key, x, other = p.key[0], " ".join(p.learner), f"[{p.context}]"
            return (f"{other} _ {key}", f"{other} {x} {key}") if p.start == 0 else \
                (f"{key} _ {other}", f"{key} {x} {other}")
        return " ".join(p.key) or "_", " ".join(p.learner) or "_"

    lines = [f"{len(table.patterns)} patterns (seen >= {table.min_count} times) in {', '.join(table.sources)}: "
             f"{table.covered:.1%} of {sum(table.edits.values())} edits", "",
             "| correct | learner | type | count | rate per occurrence |", "|---|---|---|---:|---:|"]
    for p in table.patterns[:top]:
        y, x = side(p)
        lines.append(f"| {y} | {x} | {p.type} | {p.count} | {p.rate:.4f} |")
    lines += ["", "| type | edits | made by patterns |", "|---|---:|---:|"]
    lines += [f"| {t} | {n} | {table.coverage[t]:.1%} |" for t, n in list(table.edits.items())[:25]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
