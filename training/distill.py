"""Distillation pairs for EdiT5: a T5's own corrections of the training sources.

In speculative mode EdiT5 drafts and T5 verifies, and a draft token pays only where T5 agrees
with it. An EdiT5 trained on the gold corrections learns edits that a small T5 does not make, so
T5 rejects its drafts there; trained on T5's outputs (sequence-level knowledge distillation, Kim &
Rush 2016), it learns the edits T5 does make. One W&I train sentence, with the shipped T5::

    source   then we return to Toluca to continue with my boring life.
    gold     Then we returned to Toluca to continue with my boring life.
    T5       Then we return to Toluca to continue with my boring life.    <- the target written here

The student learns to capitalise "then" as T5 does, and to leave "return" as T5 leaves it.
Sources are the M2 files' detokenized source sentences as the models read them: after the
spelling step when the teacher's config turns it on (``editspec.pre.spelling``; the student then reads
respelled text at run time too, and learns only the edits the T5 makes beyond the dictionary's);
targets are ``Corrector`` outputs with the teacher's own guard (``max_edit_words``), so a sentence
T5 would rewrite wholesale stays as written here too. Writes ``OUT/source.txt`` and ``OUT/target.txt``,
line-aligned, for a ``type: parallel`` data source::

    python -m training.distill editspec/models/default --out runs/distill \\
        --m2 wi_locness/ABC.train.gold.bea19.m2 fce/fce.train.gold.bea19.m2

With ``--synthetic N`` the sources are instead N sentences of Wikipedia with synthetic errors
(``training.synthetic``; shard, seed and a skip of the lines earlier runs trained on), which the
teacher has never seen. On its own training sources an over-fitted T5 mostly recites the gold
corrections, and a student trained on them over-fits too (the EdiT5's training loss 0.08 against
0.5 on W&I dev). On new text the T5 shows the edits it really makes, but out of its domain most of
them are wrong (on 2,048 of these sentences: 166 of its edits right, 507 wrong). ``--right-edits``
keeps only the teacher's edits that the clean sentence has too (same words replaced, same
correction; ``diff``'s word-level edits)::

    source   Its was now mostly used in chidren's programming in commercials
    clean    It was then mostly used in children's programming in commercials
    teacher  It was now mostly used in chidlren's programming in commercials
    target   It was now mostly used in chidren's programming in commercials

"Its" -> "It" is in both and stays; "chidren's" -> "chidlren's" is the teacher's alone and is
undone; "now" -> "then", which the teacher missed, stays missed, so the student still learns
which errors this teacher leaves alone::

    python -m training.distill editspec/models/default --out runs/distill-wiki \\
        --synthetic 40000 --shards 9 --skip 40000 --right-edits

Chunks are stored under ``OUT/parts/`` as they finish, so a rerun of the same command resumes.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from tqdm import tqdm

from editspec.data.corpora import data_dir, read_m2
from editspec.corrector import Corrector
from editspec.files import atomic_output
from editspec.post.diff import apply, diff
from editspec.pre.spelling import respell_all
from training.synthetic.pairs import WI_TRAIN_M2, WIKI_DIR, synthetic_pairs


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("teacher", help="a bundle with t5/ inside, or a T5 checkpoint directory")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--m2", nargs="+", help="M2 files, relative to the data directory")
    what.add_argument("--synthetic", type=int, metavar="N",
                      help="N Wikipedia sentences with synthetic errors (W&I train's error rates)")
    p.add_argument("--shards", type=int, nargs="+", default=[9], help="Wikipedia shards (--synthetic)")
    p.add_argument("--skip", type=int, default=0, help="synthetic pairs to skip first (--synthetic)")
    p.add_argument("--seed", type=int, default=0, help="corruption seed (--synthetic)")
    p.add_argument("--right-edits", action="store_true",
                   help="keep only the teacher's edits that the clean sentence has too (--synthetic)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--data-dir", default=None, help="default: $EDITSPEC_DATA or ../shared/data")
    p.add_argument("--mode", default=None,
                   help="t5, or speculative (the same output, ~1.5x faster; the default with both models)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--chunk", type=int, default=2048, help="sentences per stored part")
    args = p.parse_args(argv)
    if args.right_edits and not args.synthetic:
        p.error("--right-edits needs --synthetic (only synthetic pairs have a clean sentence)")

    root = data_dir(args.data_dir)
    if args.m2:
        sources = [s for m2 in args.m2 for s in read_m2(root / m2)["source"]]
    else:
        stream = synthetic_pairs(root / WIKI_DIR, args.seed, args.shards, root / WI_TRAIN_M2)
        gold = list(itertools.islice(stream, args.skip, args.skip + args.synthetic))
        sources = [pair["source"] for pair in gold]
    corrector = Corrector.from_pretrained(args.teacher, mode=args.mode, batch_size=args.batch_size)
    parts = args.out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    pairs: list[dict] = []
    with tqdm(total=len(sources), unit="sent", desc="distill") as bar:
        for k in range(0, len(sources), args.chunk):
            part, chunk = parts / f"{k:08d}.json", sources[k:k + args.chunk]
            stored = json.loads(part.read_text()) if part.exists() else None
            if stored is None or stored["source"] != chunk:
                stored = {"source": chunk, "target": corrector.correct(chunk)}
                with atomic_output(str(part)) as f:
                    f.write(json.dumps(stored).encode())
            pairs.append(stored)
            bar.update(len(chunk))
    targets = [t for part in pairs for t in part["target"]]
    if corrector.config.spelling:  # the text the teacher read, and the student will read
        sources = respell_all(sources)
    if args.right_edits:  # checked above: only with --synthetic; a respelling is the source's, not an edit
        targets = [right_edits(s, t, g["target"]) for s, t, g in zip(sources, targets, gold)]
    for name, lines in (("source", sources), ("target", targets)):
        with atomic_output(str(args.out / f"{name}.txt")) as f:
            f.write("".join(line + "\n" for line in lines).encode())
    changed = sum(s != t for s, t in zip(sources, targets))
    print(f"{len(sources)} pairs, {changed} changed in target.txt "
          f"({corrector.guarded} sentence units kept by its guard in this run) -> {args.out}")


def right_edits(source: str, teacher: str, clean: str) -> str:
    """``source`` with the teacher's edits that turning it into ``clean`` also makes (the
    module docstring's example)."""
    right = set(diff(source, clean))
    return apply(source, [e for e in diff(source, teacher) if e in right])


if __name__ == "__main__":
    main()
