"""Plain against drafted beam search on the shipped T5 (the decoding core alone, one process).

    PYTHONPATH=. python eval/beam_drafts.py --limit 128 --batch 32 --window 4 [--threads 1]

The first ``--limit`` W&I dev sentences, longest first, each within the corrector's budget; beam 4
without drafts, then with the source as each beam's draft (``beam.generate(drafter=True)``), then
greedy (``core.generate``) for scale: wall time, passes, rows fed, draft tokens proposed/accepted,
and how many best outputs the two beam searches share (all: the drafted search is exact).
"""

from __future__ import annotations

import argparse
import time

import torch

from editspec.data.corpora import data_dir
from editspec.decoding import beam, core
from editspec.decoding.budgets import output_budget
from editspec.modeling.loading import DEFAULT_MODEL
from editspec.modeling.t5 import load_t5
from editspec.profiling.sentences import read_data
from editspec.tokenization.tokens import encode_ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--window", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gold = data_dir() / "wi_locness" / "ABCN.dev.gold.bea19.m2"
    texts = read_data(gold, args.limit)[0]  # the S lines, detokenized, as `editspec profile` reads them
    model, tok = load_t5(DEFAULT_MODEL / "t5", dtype="float32")
    ids = sorted((i + [tok.eos_token_id] for i in encode_ids(tok, texts)), key=len, reverse=True)
    budgets = [output_budget(len(i)) for i in ids]
    settings = beam.BeamSettings(4)
    beam.generate(model, ids[:4], settings, 4, budgets[:4])  # warm-up
    runs = {}
    for name, drafter in (("plain", None), ("drafted", True)):
        start = time.perf_counter()
        out, st = beam.generate(model, ids, settings, args.batch, budgets, drafter=drafter, window=args.window)
        runs[name] = out
        print(f"{name}: {time.perf_counter() - start:.2f} s, passes {st.passes}, rows fed {sum(st.row_passes)}, "
              f"draft tokens accepted {sum(st.accepted)} of {sum(st.proposed)}")
    same = sum(a[0].ids == b[0].ids for a, b in zip(runs["plain"], runs["drafted"]))
    print(f"best outputs shared: {same} of {len(ids)}")
    start = time.perf_counter()
    _, st = core.generate(model, ids, args.batch, max_new_tokens=budgets)
    print(f"greedy: {time.perf_counter() - start:.2f} s, passes {st.passes}")


if __name__ == "__main__":
    main()
