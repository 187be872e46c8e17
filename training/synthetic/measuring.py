"""ERRANT's view of generated pairs, beside the corpus's own, to check the corruptions.

The generator aims at a corpus's ERRANT type distribution; this measures what it hits. ERRANT
annotates N synthetic pairs, and N of the corpus's own sentences (its gold targets applied,
``m2_pairs``) go through the same measurement, since ERRANT re-annotating gold edits does not
always give back their gold types::

    python -m training.synthetic --measure 2000
    -> one row per ERRANT type (M:PUNCT, R:OTHER, R:PREP, ...): edits per 1000 tokens and share of
       all edits in the corpus's gold M2, in the corpus via ERRANT, in the synthetic pairs via ERRANT
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from editspec.data.m2 import apply_edits, parse_block, read_blocks
from editspec.evaluation.errant import errant_annotator
from training.synthetic.profile import ErrorProfile, first_annotator_edits


def m2_pairs(m2_path: str | Path, n: int, seed: int = 0) -> list[dict[str, str]]:
    """n random sentences of an M2 file as {"source", "target"} (both space-tokenized), the target
    made by applying the first annotator's edits."""
    blocks = read_blocks(m2_path)
    random.Random(seed).shuffle(blocks)
    out = []
    for block in blocks[:n]:
        source, edits = parse_block(block)
        target = apply_edits(source, first_annotator_edits(edits))
        out.append({"source": " ".join(source), "target": " ".join(target)})
    return out


def measure(pairs: Iterable[dict[str, str]], tokenized: bool = False) -> tuple[ErrorProfile, int]:
    """ERRANT's view of (source, target) pairs: edits per source token per type, and the share of
    pairs without edits. Natural text is tokenized by spaCy; tokenized=True splits on spaces."""
    annotator = errant_annotator()
    counts: Counter[str] = Counter()
    tokens = clean = n = 0
    for p in pairs:
        orig = annotator.parse(p["source"], tokenise=not tokenized)
        cor = annotator.parse(p["target"], tokenise=not tokenized)
        edits = [e for e in annotator.annotate(orig, cor) if e.type != "UNK"]
        counts.update(e.type for e in edits)
        tokens += len(orig)
        clean += not edits
        n += 1
    return ErrorProfile({t: c / tokens for t, c in counts.most_common()}, clean / max(n, 1)), n


def type_distance(a: ErrorProfile, b: ErrorProfile) -> float:
    """Total variation distance between two profiles' ERRANT type distributions (shares of all
    edits): 0 the same mix, 1 no type in common; half the sum of the shares' differences."""
    ta, tb = a.total_rate, b.total_rate
    if not ta or not tb:
        return 1.0
    return 0.5 * sum(abs(a.rates.get(t, 0.0) / ta - b.rates.get(t, 0.0) / tb) for t in set(a.rates) | set(b.rates))


def comparison_table(columns: dict[str, ErrorProfile], top: int = 15) -> str:
    """Edits per 1000 tokens (share of all edits) per ERRANT type, ordered by the first column."""
    names = list(columns)
    first = columns[names[0]]
    types = list(first.rates)[:top]
    rows = ["| type | " + " | ".join(f"{n} /1k tok (share)" for n in names) + " |",
            "|---|" + "---:|" * len(names)]

    def cell(p: ErrorProfile, rate: float) -> str:
        return f"{1000 * rate:.2f} ({100 * rate / p.total_rate if p.total_rate else 0:.1f}%)"

    def row(name: str, cells: Iterable[str]) -> str:
        return f"| {name} | " + " | ".join(cells) + " |"

    for t in types:
        rows.append(row(t, (cell(p, p.rates.get(t, 0.0)) for p in columns.values())))
    rows.append(row("(other types)", (cell(p, p.total_rate - sum(p.rates.get(t, 0.0) for t in types))
                                      for p in columns.values())))
    rows.append(row("**all edits**", (f"{1000 * p.total_rate:.2f}" for p in columns.values())))
    rows.append(row("**sentences without edits**",
                    (f"{100 * p.clean_fraction:.1f}%" for p in columns.values())))
    return "\n".join(rows)
