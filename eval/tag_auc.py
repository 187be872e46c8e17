"""EdiT5's error detection, free of calibration: how well its tagger ranks the tokens that the
gold edits delete above those they keep.

    python eval/tag_auc.py MODEL_DIR [MODEL_DIR ...] --m2 ../shared/data/wi_locness/ABCN.dev.gold.bea19.m2

A tagger that never dares to delete scores the prior's tag loss and F0.5 ≈ 0 whether or not it
knows where the errors are. This prints, per model, the ROC AUC of the delete margin
(logit DELETE - logit KEEP) over the gold tags of ``--limit`` evenly spaced sentences (the dev
sample training uses, whose ``dev_tag_auc`` is the same number), and the share of true
deletions among the tokens with the top 1% and 5% of margins.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from editspec.data.corpora import evenly_spaced, read_m2
from editspec.evaluation import detection_auc
from editspec.data.features import collate_edit5, edit5_features_batch
from editspec.modeling.modeling_edit5 import EdiT5Model, tag_margins
from editspec.tokenization.tokens import load_tokenizer


def delete_margins(model: EdiT5Model, tok, sources: list[str], targets: list[str], batch_size: int = 32,
                   max_length: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """(delete margin, is a gold deletion) for every tagged input token of the pairs."""
    features = [f for f in edit5_features_batch(tok, sources, targets, max_length) if f]
    margins, deleted = [], []
    with torch.no_grad():
        for i in range(0, len(features), batch_size):
            batch = collate_edit5(features[i:i + batch_size], tok.pad_token_id)
            margin, gold = tag_margins(model(**batch).tag_logits, batch["tags"])
            margins.append(margin)
            deleted.append(gold)
    return torch.cat(margins), torch.cat(deleted)


def dev_sample_command(description: str) -> tuple[list[Path], list[str], list[str]]:
    """The command line of the teacher-forced EdiT5 probes (this one, ``marker_accuracy.py``):
    (model directories, sources, targets) of ``--limit`` evenly spaced pairs of ``--m2``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("models", type=Path, nargs="+", help="EdiT5 checkpoint directories")
    p.add_argument("--m2", required=True)
    p.add_argument("--limit", type=int, default=1000, help="evenly spaced sentences (training's dev sample)")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    pairs = read_m2(args.m2)
    pairs = pairs.select(evenly_spaced(len(pairs), args.limit))
    return args.models, list(pairs["source"]), list(pairs["target"])


def main() -> None:
    models, sources, targets = dev_sample_command(__doc__.splitlines()[0])
    for path in models:
        model = EdiT5Model.from_pretrained(path).eval()
        margins, deleted = delete_margins(model, load_tokenizer(path), sources, targets)
        order = margins.argsort(descending=True)
        top = {q: deleted[order[: max(1, round(q * len(order)))]].float().mean().item() for q in (0.01, 0.05)}
        print(f"{path}: tag AUC {detection_auc(margins, deleted):.3f}  deletions in top 1% {top[0.01]:.1%}, "
              f"top 5% {top[0.05]:.1%}  ({len(margins)} tokens, {deleted.float().mean():.1%} deleted)")


if __name__ == "__main__":
    main()
