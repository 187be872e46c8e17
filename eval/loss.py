"""A model's loss per target token on sentences of M2 files, as training's dev loss computes it.

    python eval/loss.py editspec/models/default/t5 --m2 wi_locness/ABC.train.gold.bea19.m2 \\
        fce/fce.train.gold.bea19.m2 wi_locness/ABCN.dev.gold.bea19.m2

The same 1,000 evenly spaced sentences and batches as ``training/train.py``'s dev loss
(``build_dev``, with the recipe's batching: ``--config``, by default the model type's
``configs/*-small-cpu-finetune.yaml``), so a training set's number beside the dev set's measures
over-fitting. Paths are relative to the data directory (``--data-dir``, ``$EDITSPEC_DATA`` or
../shared/data).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training"))
import train as T  # noqa: E402

from editspec.data.corpora import data_dir  # noqa: E402
from editspec.modeling.loading import model_type  # noqa: E402
from editspec.tokenization.tokens import load_tokenizer  # noqa: E402


def loss_on(model: str | os.PathLike, m2: str, recipe: str | os.PathLike | None = None,
            data: Path | None = None, max_examples: int = 1000) -> tuple[float, int]:
    """(mean loss per target token, weighted by sentences per batch as training does; sentences)."""
    kind = T.ModelKind(model_type(model))
    recipe = recipe or T.REPO_ROOT / "configs" / f"{kind.name}-small-cpu-finetune.yaml"
    tok = load_tokenizer(model)
    net = kind.model_cls.from_pretrained(str(model), dtype=torch.float32).eval()
    cfg = T.load_config(recipe, [f"data.dev={{path: {m2}, max_examples: {max_examples}}}"])
    total = n = 0
    with torch.no_grad():
        for examples in T.build_dev(cfg, kind, tok, data or data_dir())["batches"]:
            total += float(net(**kind.collate(examples, tok.pad_token_id)).loss) * len(examples)
            n += len(examples)
    return total / n, n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", type=Path, help="a T5 or EdiT5 checkpoint directory")
    p.add_argument("--m2", nargs="+", required=True)
    p.add_argument("--max-examples", type=int, default=1000)
    p.add_argument("--config", default=None, help="the recipe whose data batching to use")
    p.add_argument("--data-dir", default=None)
    args = p.parse_args()
    for m2 in args.m2:
        loss, n = loss_on(args.model, m2, args.config, data_dir(args.data_dir), args.max_examples)
        print(f"{m2}: loss {loss:.4f} on {n} sentences")


if __name__ == "__main__":
    main()
