"""GEC corpora as ``datasets.Dataset`` of (source, target) pairs, and their edit statistics.

M2 (W&I+LOCNESS, FCE, CoNLL, JFLEG's dev.ref.m2) gives a tokenized source and, per annotator, the
edits that correct it; the target is the source with the edits applied left to right, each one's
offsets moved by how much the earlier edits lengthened or shortened the sentence::

    S  He go to school yesterday .
    A  1 2|||R:VERB:TENSE|||went|||...|||0      tokens 1..2 -> "went"
    A  3 3|||M:DET|||the|||...|||0              insert "the" before token 3
    target  He went to the school yesterday .

``noop`` (no edit), ``UNK`` (error detected, no correction) and ``Um`` lines change nothing. An
annotator without lines in a block made no edits there (JFLEG's m2 omits them). Pairs are
detokenized to natural text by default (see ``editspec.data.tokenized``), the form models train on.

Readers build datasets with ``Dataset.from_generator``: results are cached by the datasets
library (keyed on the file's path, size and mtime), or streamed with ``streaming=True``.
"""

from __future__ import annotations

import os
from pathlib import Path
from statistics import fmean
from typing import Iterator, Sequence

import datasets

from editspec.data.m2 import apply_edits, parse_m2
from editspec.errors import EditspecError
from editspec.data.tokenized import detokenize
from editspec.tokenization.edits import TooFewMarkers, align, convert, realize_aligned
from editspec.tokenization.tokens import encode, marker_ids, render

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The corpus folder: ``path`` > $EDITSPEC_DATA > ``shared/data`` next to or in the repo/cwd."""
    if path is not None or os.environ.get("EDITSPEC_DATA"):
        chosen = Path(path if path is not None else os.environ["EDITSPEC_DATA"]).expanduser()
        if not chosen.is_dir():
            raise EditspecError(f"data directory {chosen} does not exist")
        return chosen
    candidates = [base / rel for base in (REPO_ROOT, Path.cwd())
                  for rel in ("../shared/data", "shared/data")]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    raise EditspecError("no data directory: pass --data-dir or set EDITSPEC_DATA "
                        f"(looked in {', '.join(str(c) for c in candidates)})")


def shown(path: str | os.PathLike) -> str:
    """``path`` as a report records it, naming no machine's folders: under the corpus folder as
    ``$EDITSPEC_DATA/...``, under the working directory relative to it, else the file's name."""
    p = Path(path).expanduser().resolve()
    try:
        data = data_dir().resolve()
    except EditspecError:
        data = None
    for base, prefix in ((data, "$EDITSPEC_DATA/"), (Path.cwd().resolve(), "")):
        if base is not None and p.is_relative_to(base):
            return prefix + p.relative_to(base).as_posix()
    return p.name


def _file(path: str | os.PathLike) -> Path:
    p = Path(path)
    if not p.is_file():
        raise EditspecError(f"no such file: {p}")
    return p


def _cache_key(*paths: Path) -> str:
    """Part of the generator's arguments so that a changed file is not served from cache."""
    return " ".join(f"{p.resolve()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths)


def _build(gen, gen_kwargs: dict, features: datasets.Features, streaming: bool):
    # datasets shards list-valued generator arguments (one generator call per item): no lists here
    assert not any(isinstance(v, list) for v in gen_kwargs.values())
    cls = datasets.IterableDataset if streaming else datasets.Dataset
    if streaming:
        return cls.from_generator(gen, gen_kwargs=gen_kwargs, features=features)
    # datasets shows progress bars while it caches; corpora are small enough to go quietly
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        return cls.from_generator(gen, gen_kwargs=gen_kwargs, features=features)
    except datasets.exceptions.DatasetGenerationError as e:
        if isinstance(e.__cause__, EditspecError):  # a bad input file, raised while generating
            raise e.__cause__ from None
        raise
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


# --- M2 -------------------------------------------------------------------------------------------

def _m2_pairs(path: str, annotator: int | str, detokenized: bool, cache_key=None) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        blocks = list(parse_m2(f))
    if annotator == "all":
        annotators = sorted({e[4] for _, edits in blocks for e in edits}) or [0]
    else:
        annotators = [int(annotator)]
    for source, edits in blocks:
        src = " ".join(source)
        src = detokenize(src) if detokenized else src
        for a in annotators:
            target = " ".join(apply_edits(source, [e for e in edits if e[4] == a]))
            yield {"source": src, "target": detokenize(target) if detokenized else target, "annotator": a}


def evenly_spaced(n: int, limit: int | None) -> list[int]:
    """Indices of ``limit`` of ``n`` items, spread evenly (all when ``limit`` is None or ≥ n): dev
    files are ordered by level or topic, so their first sentences are no sample of the rest."""
    if not limit or n <= limit:
        return list(range(n))
    return [int(i * n / limit) for i in range(limit)]


PAIR_FEATURES = datasets.Features({"source": datasets.Value("string"), "target": datasets.Value("string"),
                                   "annotator": datasets.Value("int32")})


def read_m2(path: str | os.PathLike, annotator: int | str = 0, detokenized: bool = True,
            streaming: bool = False) -> datasets.Dataset:
    """(source, target, annotator) per sentence; ``annotator="all"``: one pair per annotator."""
    p = _file(path)
    if annotator != "all":
        try:
            annotator = int(annotator)
        except ValueError:
            raise EditspecError(f"annotator must be an integer id or 'all', not {annotator!r}") from None
    return _build(_m2_pairs, {"path": str(p), "annotator": annotator, "detokenized": detokenized,
                              "cache_key": _cache_key(p)}, PAIR_FEATURES, streaming)


# --- parallel text and JFLEG ---------------------------------------------------------------------

def _lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").rstrip("\r") for line in f]


def _parallel_pairs(src: str, tgt: str | None, detokenized: bool, cache_key=None) -> Iterator[dict]:
    norm = detokenize if detokenized else str.strip
    if tgt is None:
        for n, line in enumerate(_lines(Path(src)), 1):
            if not line.strip():
                continue
            if "\t" not in line:
                raise EditspecError(f"{src} line {n}: expected source<TAB>target")
            s, t = line.split("\t", 1)
            yield {"source": norm(s), "target": norm(t), "annotator": 0}
    else:
        sources, targets = _lines(Path(src)), _lines(Path(tgt))
        if len(sources) != len(targets):
            raise EditspecError(f"{src} has {len(sources)} lines but {tgt} has {len(targets)}")
        for s, t in zip(sources, targets):
            yield {"source": norm(s), "target": norm(t), "annotator": 0}


def read_parallel(src: str | os.PathLike, tgt: str | os.PathLike | None = None, detokenized: bool = False,
                  streaming: bool = False) -> datasets.Dataset:
    """Pairs from a TSV file (source<TAB>target) or two line-aligned files.

    Plain text is taken as natural text; ``detokenized=True`` detokenizes tokenized files.
    """
    paths = [_file(src)] + ([_file(tgt)] if tgt is not None else [])
    return _build(_parallel_pairs, {"src": str(paths[0]), "tgt": str(paths[1]) if tgt is not None else None,
                                    "detokenized": detokenized, "cache_key": _cache_key(*paths)},
                  PAIR_FEATURES, streaming)


def _jfleg_rows(src: str, refs: tuple[str, ...], detokenized: bool, pairs: bool, cache_key=None) -> Iterator[dict]:
    norm = detokenize if detokenized else (lambda s: " ".join(s.split()))
    sources = _lines(Path(src))
    references = [_lines(Path(r)) for r in refs]
    for r, lines in zip(refs, references):
        if len(lines) != len(sources):
            raise EditspecError(f"{src} has {len(sources)} lines but {r} has {len(lines)}")
    for k, s in enumerate(sources):
        if pairs:
            for a, lines in enumerate(references):
                yield {"source": norm(s), "target": norm(lines[k]), "annotator": a}
        else:
            yield {"source": norm(s), "references": [norm(lines[k]) for lines in references]}


def read_jfleg(src: str | os.PathLike, refs: Sequence[str | os.PathLike], detokenized: bool = True,
               pairs: bool = False, streaming: bool = False) -> datasets.Dataset:
    """JFLEG: (source, references) per sentence; ``pairs=True``: one (source, target) per reference.

    JFLEG files are tokenized (and end in a space); they are detokenized to natural text by
    default, like ``read_m2``. GLEU scoring on tokens wants ``detokenized=False``.
    """
    paths = [_file(src)] + [_file(r) for r in refs]
    if not refs:
        raise EditspecError("read_jfleg needs at least one reference file")
    if pairs:
        features = PAIR_FEATURES
    else:
        features = datasets.Features({"source": datasets.Value("string"),
                                      "references": datasets.Sequence(datasets.Value("string"))})
    return _build(_jfleg_rows, {"src": str(paths[0]), "refs": tuple(str(p) for p in paths[1:]),
                                "detokenized": detokenized, "pairs": pairs,
                                "cache_key": _cache_key(*paths)}, features, streaming)


# --- data stats ----------------------------------------------------------------------------------

def markers_needed(aligned: list[int | None]) -> int:
    """Position markers an alignment needs (``align``'s: None for an inserted target token): the
    last kept-token position an insertion follows."""
    kept = needed = 0
    for i in aligned:
        if i is None:
            needed = max(needed, kept + 1)
        else:
            kept += 1
    return needed


def stats(dataset, tokenizer, batch_size: int = 2048) -> dict:
    """How well EdiT5's edits represent the pairs, on ``tokenizer``'s ids (see ``editspec.tokenization.edits``).

    roundtrip_exact counts pairs with ``realize(convert(s, t)) == t`` (must be every pair that
    does not raise TooFewMarkers); text_roundtrip_exact counts pairs whose realized ids also
    render back to the exact target text with ``editspec.tokenization.tokens.render`` (what a perfect model
    would output; an inserted ``<unk>`` or a normalised character cannot be rendered exactly).
    """
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    n = identical = too_few = exact = text_exact = reordered = 0
    insertions, decoder, target_len, source_len, deletions = [], [], [], [], []
    max_markers = max_decoder = 0
    for batch in dataset.iter(batch_size=batch_size):
        srcs, tgts = encode(tokenizer, batch["source"]), encode(tokenizer, batch["target"])
        for s_text, t_text, s, t in zip(batch["source"], batch["target"], srcs, tgts):
            n += 1
            identical += s_text == t_text
            target_len.append(len(t.ids))
            source_len.append(len(s.ids))
            aligned = align(s.ids, t.ids)
            inserted = sum(i is None for i in aligned)
            insertions.append(inserted)
            deletions.append(len(s.ids) - (len(t.ids) - inserted))
            max_markers = max(max_markers, markers_needed(aligned))
            try:
                edits = convert(s.ids, t.ids, markers, eos)
            except TooFewMarkers:
                too_few += 1
                continue
            decoder.append(len(edits.insertions))
            max_decoder = max(max_decoder, len(edits.insertions))
            reordered += edits.reordered
            realized = realize_aligned(s.ids, edits, markers, eos)
            if [tok for tok, _ in realized] == t.ids:
                exact += 1
                text_exact += render(tokenizer, s, realized) == t_text
    representable = n - too_few
    return {
        "pairs": n,
        "identical_pairs": identical,
        "too_few_markers": too_few,
        "markers": len(markers),
        "max_position_markers_needed": max_markers,
        "roundtrip_exact": exact,
        "roundtrip_rate": exact / representable if representable else None,
        "text_roundtrip_exact": text_exact,
        "reordered_pairs": reordered,
        "mean_source_tokens": fmean(source_len) if n else 0.0,
        "mean_target_tokens": fmean(target_len) if n else 0.0,
        "mean_insertions": fmean(insertions) if n else 0.0,
        "mean_deletions": fmean(deletions) if n else 0.0,
        "mean_decoder_tokens": fmean(decoder) if decoder else 0.0,
        "max_decoder_tokens": max_decoder,
        "max_target_tokens": max(target_len, default=0),
    }
