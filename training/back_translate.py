"""Back-translation: learner-like errors in clean Wikipedia sentences, written by an error model.

The rule-based errors of ``training.synthetic`` follow W&I's error types and rates, but not the
way a learner writes: 10,000 steps of them teach a T5 little about learners' text
(reports/models.md). An error model has learnt that from the learners themselves: a T5 trained on
W&I train + FCE train with the pairs turned around (``configs/t5-small-cpu-errors.yaml``,
``reverse: true``), corrected text in, the learner's text out. Sampled token by token
(``editspec.decoding.core.generate(sampling=...)``; greedy would copy nearly every sentence; ``--temperature 0.9`` gives 73%
of sentences changed and 0.09 edits a word, near W&I train's 66% and 0.12, where 1.0 writes word
salad), it writes a different error sentence each time (seed fixed: one Wikipedia sentence, one
model, one seed, one output). A small error model also loses the rare words it cannot spell, and
writes another word in their place: a corrector cannot learn to put "parish" back from "an active
Michelangelo church". So each sampled edit (``editspec.post.diff``) is kept only if a learner could
have made it (``learner_like``), and the others are undone::

    clean    Maltose is released as the main product of starch degradation.
    sampled  Maltose is released like the main product ofì prefect.
    edits    "as" -> "like" (two common words: kept), " of starch degradation" -> " ofì prefect" (undone)
    source   Maltose is released like the main product of starch degradation.

Kept are sentences of 4-60 words whose characters the tokenizer holds (an ``<unk>`` would teach
the corrector to invent characters) and samples that do not rewrite more than ``--max-edit-words``
words in one edit (``editspec.post.checks``: the error model has lost its place). A sample with no edit
left stays (learners write correct sentences too: a third of W&I's) unless ``--changed-only``. Writes ``OUT/source.txt``
and ``OUT/target.txt``, line-aligned, for a ``type: parallel`` data source (``respell: true`` on it
passes the sampled sentences through the spelling step, as ``Corrector`` does); samples are stored
under ``OUT/parts/`` as they finish, so a rerun of the same command resumes::

    python -m training.back_translate runs/t5-errors/best --out runs/bt --sentences 20480 --shards 7 \
        --temperature 0.9
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from pathlib import Path
from typing import Callable

import torch
from rapidfuzz.distance import DamerauLevenshtein
from tqdm import tqdm
from wordfreq import zipf_frequency

from editspec.decoding import core
from editspec.modeling import t5
from editspec.data.corpora import data_dir
from editspec.files import atomic_output
from editspec.post.diff import Correction, Edit, apply, diff
from editspec.post.checks import guard
from editspec.pre.spelling import load_speller
from editspec.tokenization.tokens import encode, render_ids
from training.synthetic.pairs import WIKI_DIR, read_lines, shard_files


def clean_sentences(folder: Path, shards: list[int], skip: int, tok, max_ids: int):
    """Wikipedia sentences of 4-60 words that the tokenizer holds, after ``skip`` of them."""
    lines = itertools.chain.from_iterable(read_lines(f) for f in shard_files(folder, shards))
    words = (s for s in (line.strip() for line in lines) if 4 <= len(s.split()) <= 60)
    held = (s for s in words if (e := encode(tok, [s])[0]) and tok.unk_token_id not in e.ids and len(e.ids) < max_ids)
    return itertools.islice(held, skip, None)


COMMON = 5.0  # wordfreq Zipf frequency of a common word: "the" 7.7, "have" 6.4, "very" 5.9; "parish" 3.6
WORD = re.compile(r"\w+")


def learner_like(edit: Edit, knows: Callable[[str], bool]) -> bool:
    """Could a learner have written ``edit.correction`` for ``edit.original``? Punctuation or case
    alone; one word for one: a misspelling (Damerau-Levenshtein distance at most 2, in plain
    letters) or another form of the same word (the same first four letters, a word the dictionary
    ``knows``); or nothing but common words on both sides ("as" -> "like", a dropped "the")."""
    old, new = (WORD.findall(side.lower()) for side in (edit.original, edit.correction))
    if old == new:
        return True
    if len(old) == len(new) == 1:
        (a,), (b,) = old, new
        if b.isascii() and b.isalpha() and DamerauLevenshtein.distance(a, b) <= 2:
            return True
        if len(a) >= 4 and a[:4] == b[:4] and knows(b):
            return True
    return all(zipf_frequency(w, "en") >= COMMON for w in old + new)


def learner_errors(clean: str, sampled: str, knows: Callable[[str], bool]) -> str:
    """``clean`` with the sampled edits that ``learner_like`` keeps (the module docstring's example)."""
    return apply(clean, [e for e in diff(clean, sampled) if learner_like(e, knows)])


def sample_errors(model, tok, sentences: list[str], seed: int, temperature: float, batch_size: int) -> list[str]:
    """One sampled learner version of each sentence (longest first through the decoding core's
    ``batch_size`` slots: a finished sentence's slot takes the next at once)."""
    generator = torch.Generator().manual_seed(seed)
    encoded = encode(tok, sentences)
    order = sorted(range(len(sentences)), key=lambda i: -len(encoded[i].ids))
    rows = [encoded[i].ids + [tok.eos_token_id] for i in order]
    sampled, _ = core.generate(model, rows, batch_size, max_new_tokens=[len(r) + 16 for r in rows],
                               sampling=core.Sampling(temperature, generator=generator))
    out = [""] * len(sentences)
    for i, ids in zip(order, sampled):
        out[i] = render_ids(tok, encoded[i], ids)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="the error model: a T5 checkpoint directory (configs/t5-small-cpu-errors.yaml)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sentences", type=int, required=True, help="clean sentences to corrupt")
    p.add_argument("--shards", type=int, nargs="+", default=[7], help="Wikipedia shards")
    p.add_argument("--skip", type=int, default=0, help="usable sentences to skip first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.9, help="nearest W&I's error rates (the docstring)")
    p.add_argument("--max-edit-words", type=int, default=3, help="drop samples with a longer edit (0: keep all)")
    p.add_argument("--changed-only", action="store_true",
                   help="drop the pairs with no error left (the learner corpora hold the correct sentences)")
    p.add_argument("--data-dir", default=None, help="default: $EDITSPEC_DATA or ../shared/data")
    p.add_argument("--max-length", type=int, default=96, help="longest clean sentence, in tokens")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--chunk", type=int, default=2048, help="sentences per stored part")
    args = p.parse_args(argv)

    model, tok = t5.load_t5(args.model, device="cpu")
    folder = data_dir(args.data_dir) / WIKI_DIR
    clean = list(itertools.islice(clean_sentences(folder, args.shards, args.skip, tok, args.max_length), args.sentences))
    parts = args.out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    sources, targets = [], []
    knows = load_speller().knows
    how = {"model": str(args.model), "seed": args.seed, "temperature": args.temperature}  # a stored part's origin
    with tqdm(total=len(clean), unit="sent", desc="back-translate") as bar:
        for k in range(0, len(clean), args.chunk):
            part, chunk = parts / f"{k:08d}.json", clean[k:k + args.chunk]
            stored = json.loads(part.read_text()) if part.exists() else None
            if stored is None or stored["target"] != chunk or stored.get("how") != how:
                sampled = sample_errors(model, tok, chunk, args.seed * 1_000_003 + k, args.temperature, args.batch_size)
                stored = {"source": sampled, "target": chunk, "how": how}
                with atomic_output(str(part)) as f:
                    f.write(json.dumps(stored).encode())
            for s, t in zip(stored["source"], stored["target"]):
                if guard(Correction.of(t, s), args.max_edit_words).output != s:  # the error model lost its place
                    continue
                source = learner_errors(t, s, knows)
                if source != t or not args.changed_only:
                    sources.append(source)
                    targets.append(t)
            bar.update(len(chunk))
    for name, lines in (("source", sources), ("target", targets)):
        with atomic_output(str(args.out / f"{name}.txt")) as f:
            f.write("".join(line + "\n" for line in lines).encode())
    changed = sum(s != t for s, t in zip(sources, targets))
    print(f"{len(clean)} sentences, {len(sources)} pairs kept, {changed} with errors -> {args.out}")


if __name__ == "__main__":
    main()
