"""Time the old greedy loop, the core's greedy and speculative decoding on W&I dev sentences.

    python -m editspec.decoding.bench --batch 1 --sentences 100

Each mode decodes the same sentences (the first N of W&I dev, longest first in batches of
``--batch``; the core gets them all at once with ``--batch`` slots), after one untimed warm-up
batch, on 1 thread. Reports mean ms per sentence, the ratio to the old greedy loop measured in
the same run, and whether every output equals the old greedy loop's.
"""

from __future__ import annotations

import argparse
import time

import torch

from editspec.corrector import Corrector
from editspec.data import m2
from editspec.decoding import core, drafters
from editspec.modeling import t5
from editspec.tokenization.tokens import encode

WI_DEV = "/work/shared/data/wi_locness/ABCN.dev.gold.bea19.m2"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--sentences", type=int, default=100)
    ap.add_argument("--m2", default=WI_DEV)
    args = ap.parse_args()
    torch.set_num_threads(1)
    corrector = Corrector.from_pretrained(device="cpu")
    model, tok = corrector.t5, corrector.t5_tokenizer
    texts = [" ".join(m2.source_tokens(b)) for b in m2.read_blocks(args.m2)][: args.sentences]
    rows = sorted(([*e.ids[:127], tok.eos_token_id] for e in encode(tok, texts)), key=len, reverse=True)
    max_new = max(2 * len(r) + 16 for r in rows)

    def old(batch: list[list[int]]) -> list[list[int]]:
        width = max(map(len, batch))
        ids = torch.tensor([r + [0] * (width - len(r)) for r in batch])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in batch])
        return t5.greedy(model, ids, mask, max_new)

    modes = {
        "old greedy": lambda rs: [o for at in range(0, len(rs), args.batch) for o in old(rs[at: at + args.batch])],
        "core greedy": lambda rs: core.generate(model, rs, args.batch, max_new_tokens=max_new)[0],
        "core copy": lambda rs: core.generate(model, rs, args.batch, drafters.Mix(drafters.Copy(), drafters.Ngram()),
                                             max_new_tokens=max_new)[0],
        "core edit5": lambda rs: core.generate(model, rs, args.batch, drafters.Mix(
            drafters.EdiT5(corrector.edit5, corrector.markers, max(args.batch, 8)), drafters.Ngram()),
            max_new_tokens=max_new)[0],
    }
    results, ref = {}, None
    for name, run in modes.items():
        run(rows[: args.batch])  # warm-up (and the window's cost model)
        start = time.perf_counter()
        out = run(rows)
        results[name] = (time.perf_counter() - start) / len(rows) * 1000
        ref = ref or out
        same = sum(a == b for a, b in zip(out, ref))
        print(f"{name:12s} {results[name]:8.2f} ms/sentence  {results['old greedy'] / results[name]:5.2f}x  "
              f"identical {same}/{len(rows)}", flush=True)


if __name__ == "__main__":
    main()
