"""EdiT5's insertion decoder, teacher-forced: does it put each inserted span in the right place?

    python eval/marker_accuracy.py MODEL_DIR [MODEL_DIR ...] --m2 ../shared/data/wi_locness/ABCN.dev.gold.bea19.m2

Gold tags, order and insertion prefix are fed (``forward``), so a wrong marker here is the
decoder's alone: it knew which tokens the edit deletes and still placed the span elsewhere. For
every gold marker of ``--limit`` evenly spaced sentences (training's dev sample), the argmax
over the markers is compared with it, separately for replacements (the span goes where a deleted
token was: "go" -> "went" is DELETE go + <marker after "he"> went) and other insertions. The
other inserted tokens (words, and the EOS that ends the insertions) are scored as plain
next-token accuracy.
"""

from __future__ import annotations

from collections import Counter

import torch
from tag_auc import dev_sample_command

from editspec.tokenization.edits import DELETE
from editspec.data.features import IGNORE, collate_edit5, edit5_features_batch
from editspec.modeling.modeling_edit5 import EdiT5Model
from editspec.tokenization.tokens import load_tokenizer, marker_ids


def marker_offsets(model: EdiT5Model, tok, sources: list[str], targets: list[str], batch_size: int = 32,
                   max_length: int = 128) -> tuple[Counter, Counter, int, int]:
    """(replacement offsets, other offsets, words right, words): an offset is predicted minus gold
    marker number (0 = right) per gold marker; words: the other inserted tokens (EOS included)."""
    markers = marker_ids(tok)
    number = {m: p for p, m in enumerate(markers)}
    marker_tensor = torch.tensor(markers)
    features = [f for f in edit5_features_batch(tok, sources, targets, max_length) if f]
    replace, other, right, words = Counter(), Counter(), 0, 0
    with torch.no_grad():
        for i in range(0, len(features), batch_size):
            batch = collate_edit5(features[i:i + batch_size], tok.pad_token_id)
            logits = model(**batch).insertion_logits
            for row, labels in enumerate(batch["insertion_labels"].tolist()):
                tags, positions = batch["tags"][row].tolist(), batch["order_positions"][row].tolist()
                for t, gold in enumerate(labels):
                    if gold == IGNORE:
                        continue
                    if gold not in number:
                        right += int(logits[row, t].argmax()) == gold
                        words += 1
                        continue
                    p = number[gold]  # after the kept token at new position p (0: at the start)
                    after = positions.index(p) if p else -1
                    is_replacement = after + 1 < len(tags) and tags[after + 1] == DELETE
                    predicted = int(logits[row, t, marker_tensor].argmax())
                    (replace if is_replacement else other)[predicted - p] += 1
    return replace, other, right, words


def describe(offsets: Counter) -> str:
    n = sum(offsets.values())
    if not n:
        return "none"
    near = offsets[-1] + offsets[0] + offsets[1]
    return f"{offsets[0] / n:.1%} exact, {near / n:.1%} within one ({n})"


def main() -> None:
    models, sources, targets = dev_sample_command(__doc__.splitlines()[0])
    for path in models:
        model = EdiT5Model.from_pretrained(path, dtype=torch.float32).eval()
        replace, other, right, words = marker_offsets(model, load_tokenizer(path), sources, targets)
        print(f"{path}: markers of replacements {describe(replace)}; of other insertions {describe(other)}; "
              f"other inserted tokens {right / max(words, 1):.1%} right ({words})")


if __name__ == "__main__":
    main()
