"""Why drafted beams still take passes: each new beam of each step, on its row's draft or not, and why not.

    PYTHONPATH=. python eval/beam_branches.py --limit 40 --window 8

Runs the drafted beam search (4 beams, batch 1, the source as each beam's draft) on the first
``--limit`` W&I dev sentences with ``beam.reorder`` wrapped to classify every new beam: ``on`` (its
token is its origin row's next draft token: no pass needed), ``no draft`` (the origin row had no
draft token left), or ``rank r``: the origin row had a draft and the beam took the model's r-th
best token instead (3: third or worse; 0: the draft disagreed with the model's own choice); and
how many beams of each group step were off their drafts (any: the group waits for a pass).
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch

from editspec.data.corpora import data_dir
from editspec.decoding import beam
from editspec.decoding.budgets import output_budget
from editspec.modeling.loading import DEFAULT_MODEL
from editspec.modeling.t5 import load_t5
from editspec.profiling.sentences import read_data
from editspec.tokenization.tokens import encode_ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--window", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(1)
    gold = data_dir() / "wi_locness" / "ABCN.dev.gold.bea19.m2"
    texts = read_data(gold, args.limit)[0]  # the S lines, detokenized, as `editspec profile` reads them
    model, tok = load_t5(DEFAULT_MODEL / "t5", dtype="float32")
    ids = [i + [tok.eos_token_id] for i in encode_ids(tok, texts)]
    counts, plain_reorder = Counter(), beam.reorder

    def classify(st, gs, origin, token):
        for g, origins, tokens in zip(gs, origin, token):
            off = 0
            for o, x in zip(origins, tokens):
                s = g * st.k + o
                if st.spec[s] and st.spec[s][0] == x:
                    counts["on"] += 1
                    continue
                off += 1
                if not st.spec[s]:
                    counts["no draft"] += 1
                else:
                    counts[f"rank {min(3, int((st.known[s][0] > st.known[s][0][x]).sum()))}"] += 1
            counts[f"group steps with {off} off"] += 1
        return plain_reorder(st, gs, origin, token)

    beam.reorder = classify
    _, stats = beam.generate(model, ids, beam.BeamSettings(4), 1, [output_budget(len(i)) for i in ids],
                             drafter=True, window=args.window)
    beam.reorder = plain_reorder
    print(f"passes {stats.passes}")
    for name, n in sorted(counts.items()):
        print(f"{name}: {n}")


if __name__ == "__main__":
    main()
