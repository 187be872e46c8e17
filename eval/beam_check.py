"""Our beam search against transformers' ``generate(num_beams=N)`` on the shipped T5, in float32.

    PYTHONPATH=. python eval/beam_check.py --limit 500 --beams 4 --out reports/beam/check-500.json

The first ``--limit`` W&I dev sentences (``S`` lines of ABCN.dev.gold.bea19.m2, detokenized as
``editspec eval`` reads them), tokenized once; both decoders get the same ids and, per batch of
``--batch`` sentences (longest first), one budget: the corrector's (``budgets.output_budget``) of
the batch's longest. Ours: ``decoding.beam`` on the corrector's model (``InferenceT5``);
transformers': ``T5ForConditionalGeneration.generate`` on the same weights. Reports how many
sentences' best outputs and n-best lists differ, each difference with both scores (a near-tie
that float32's last bits decide, or a real disagreement), and the wall time of each.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from editspec.data.corpora import data_dir
from editspec.decoding import beam
from editspec.decoding.budgets import output_budget
from editspec.modeling.t5 import load_t5
from editspec.profiling.sentences import read_data
from editspec.modeling.loading import DEFAULT_MODEL
from editspec.tokenization.tokens import encode_ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--beams", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="write the result as JSON here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gold = data_dir() / "wi_locness" / "ABCN.dev.gold.bea19.m2"
    texts = read_data(gold, args.limit)[0]  # the S lines, detokenized, as `editspec profile` reads them
    ours, tok = load_t5(DEFAULT_MODEL / "t5", dtype="float32")
    theirs, _ = load_t5(DEFAULT_MODEL / "t5", dtype="float32", transformers=True)
    eos, pad = tok.eos_token_id, tok.pad_token_id
    ids = [i + [eos] for i in encode_ids(tok, texts)]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    settings = beam.BeamSettings(args.beams, args.beams)
    mine, hf, seconds = {}, {}, {"ours": 0.0, "transformers": 0.0}
    for at in range(0, len(order), args.batch):
        rows = order[at: at + args.batch]
        budget = output_budget(max(len(ids[i]) for i in rows))
        start = time.perf_counter()
        found, _ = beam.generate(ours, [ids[i] for i in rows], settings, len(rows), budget)
        seconds["ours"] += time.perf_counter() - start
        width = max(len(ids[i]) for i in rows)
        x = torch.tensor([ids[i] + [pad] * (width - len(ids[i])) for i in rows])
        mask = torch.tensor([[1] * len(ids[i]) + [0] * (width - len(ids[i])) for i in rows])
        start = time.perf_counter()
        with torch.inference_mode():
            out = theirs.generate(input_ids=x, attention_mask=mask, num_beams=args.beams, do_sample=False,
                                  num_return_sequences=args.beams, max_new_tokens=budget, output_scores=True,
                                  return_dict_in_generate=True)
        seconds["transformers"] += time.perf_counter() - start
        seqs, scores = out.sequences.tolist(), out.sequences_scores.tolist()
        for n, i in enumerate(rows):
            mine[i] = [(h.ids, h.score) for h in found[n]]
            hf[i] = [(_cut(seqs[n * args.beams + k][1:], eos), scores[n * args.beams + k]) for k in range(args.beams)]
    result = compare(texts, tok, mine, hf, args, seconds)
    print(json.dumps({k: v for k, v in result.items() if k != "differences"}, indent=1))
    for d in result["differences"]:
        print(json.dumps(d, ensure_ascii=False))
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _cut(row: list[int], eos: int) -> list[int]:
    return row[: row.index(eos)] if eos in row else row


def compare(texts, tok, mine: dict, hf: dict, args, seconds: dict) -> dict:
    """Counts of differing best outputs and n-best lists; each difference with both scores."""
    best = [i for i in range(len(texts)) if mine[i][0][0] != hf[i][0][0]]
    lists = [i for i in range(len(texts)) if [h for h, _ in mine[i]] != [h for h, _ in hf[i]]]
    gaps = [abs(a - b) for i in range(len(texts)) if i not in lists for (_, a), (_, b) in zip(mine[i], hf[i])]
    differences = [{"sentence": i, "source": texts[i],
                    "ours": [(tok.decode(h), s) for h, s in mine[i]],
                    "transformers": [(tok.decode(h), s) for h, s in hf[i]]} for i in lists]
    return {"sentences": len(texts), "beams": args.beams, "batch": args.batch, "threads": args.threads,
            "dtype": "float32", "best_differ": len(best), "nbest_differ": len(lists),
            "max_score_gap_when_equal": max(gaps, default=0.0), "seconds": seconds, "torch": torch.__version__,
            "differences": differences}


if __name__ == "__main__":
    main()
