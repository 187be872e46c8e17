"""Back-translation: learner-like errors in clean Wikipedia sentences, written by an error model.

The rule-based errors of ``editspec.synthetic`` follow W&I's error types and rates, but not the
way a learner writes: 10,000 steps of them teach a T5 little about learners' text (README,
"Models: status"). An error model has learnt that from the learners themselves: a T5 trained on
W&I train + FCE train with the pairs turned around (``configs/t5-small-cpu-errors.yaml``,
``reverse: true``), corrected text in, the learner's text out. Sampled token by token
(``editspec.t5.sample``; greedy would copy nearly every sentence), it writes a different error
sentence each time (seed fixed: one Wikipedia sentence, one model, one seed, one output)::

    clean    The station was opened in 1894 and closed to passengers in 1959.
    sampled  The station was open in 1894 and closed for passengers in 1959.
    pair     source = the sampled sentence, target = the clean one

Kept are sentences of 4-60 words whose characters the tokenizer holds (an ``<unk>`` would teach
the corrector to invent characters) and samples that do not rewrite more than ``--max-edit-words``
words in one edit (``corrector.guard``: the error model has lost its place). A sample equal to its
clean sentence stays: learners write correct sentences too (a third of W&I's). Writes
``OUT/source.txt`` and ``OUT/target.txt``, line-aligned, for a ``type: parallel`` data source
(``respell: true`` on it passes the sampled sentences through the spelling step, as ``Corrector``
does); chunks are stored under ``OUT/parts/`` as they finish, so a rerun resumes::

    python training/back_translate.py runs/t5-errors/last --out runs/bt --sentences 60000 --shards 7
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch
from tqdm import tqdm

from editspec import t5
from editspec.corpora import data_dir
from editspec.corrector import atomic_output, guard
from editspec.synthetic import WIKI_DIR, _read_lines, shard_files
from editspec.tokens import encode, render_ids


def clean_sentences(folder: Path, shards: list[int], skip: int, tok, max_ids: int):
    """Wikipedia sentences of 4-60 words that the tokenizer holds, after ``skip`` of them."""
    lines = itertools.chain.from_iterable(_read_lines(f) for f in shard_files(folder, shards))
    words = (s for s in (line.strip() for line in lines) if 4 <= len(s.split()) <= 60)
    held = (s for s in words if (e := encode(tok, [s])[0]) and tok.unk_token_id not in e.ids and len(e.ids) < max_ids)
    return itertools.islice(held, skip, None)


def sample_errors(model, tok, sentences: list[str], seed: int, temperature: float, batch_size: int) -> list[str]:
    """One sampled learner version of each sentence (longest first in batches: little padding)."""
    generator = torch.Generator().manual_seed(seed)
    encoded = encode(tok, sentences)
    order = sorted(range(len(sentences)), key=lambda i: -len(encoded[i].ids))
    out = [""] * len(sentences)
    for start in range(0, len(order), batch_size):
        rows = [encoded[i] for i in order[start:start + batch_size]]
        width = max(len(e.ids) for e in rows) + 1
        ids = torch.tensor([e.ids + [tok.eos_token_id] + [tok.pad_token_id] * (width - len(e.ids) - 1) for e in rows])
        mask = (torch.arange(width)[None] <= torch.tensor([len(e.ids) for e in rows])[:, None]).long()
        sampled = t5.sample(model, ids, mask, max_new_tokens=width + 16, temperature=temperature,
                            generator=generator)
        for i, e, ids_i in zip(order[start:start + batch_size], rows, sampled):
            out[i] = render_ids(tok, e, ids_i)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="the error model: a T5 checkpoint directory (configs/t5-small-cpu-errors.yaml)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sentences", type=int, required=True, help="clean sentences to corrupt")
    p.add_argument("--shards", type=int, nargs="+", default=[7], help="Wikipedia shards")
    p.add_argument("--skip", type=int, default=0, help="usable sentences to skip first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-edit-words", type=int, default=3, help="drop samples with a longer edit (0: keep all)")
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
    with tqdm(total=len(clean), unit="sent", desc="back-translate") as bar:
        for k in range(0, len(clean), args.chunk):
            part, chunk = parts / f"{k:08d}.json", clean[k:k + args.chunk]
            stored = json.loads(part.read_text()) if part.exists() else None
            if stored is None or stored["target"] != chunk:
                sampled = sample_errors(model, tok, chunk, args.seed * 1_000_003 + k, args.temperature, args.batch_size)
                stored = {"source": sampled, "target": chunk}
                with atomic_output(str(part)) as f:
                    f.write(json.dumps(stored).encode())
            for s, t in zip(stored["source"], stored["target"]):
                if guard(t, s, args.max_edit_words) == s:
                    sources.append(s)
                    targets.append(t)
            bar.update(len(chunk))
    for name, lines in (("source", sources), ("target", targets)):
        with atomic_output(str(args.out / f"{name}.txt")) as f:
            f.write("".join(line + "\n" for line in lines).encode())
    changed = sum(s != t for s, t in zip(sources, targets))
    print(f"{len(clean)} sentences, {len(sources)} pairs kept, {changed} with errors -> {args.out}")


if __name__ == "__main__":
    main()
