"""Dev evaluation during training: the loss, ERRANT F0.5 (where spaCy is), and an approximate F0.5.

A lent GPU machine has no spaCy, so ERRANT cannot run there; checkpoints were chosen by dev loss,
which twice disagreed with F0.5 (reports/models.md). ``ApproxF05`` needs no tagger: it tokenizes
source, gold target and hypothesis with one regular expression, aligns each output with the
source (rapidfuzz's longest common subsequence) and counts the hypothesis's edits that equal a
gold edit. Like ERRANT it scores edits against the source, so copying scores 0 and the gold
target 100; unlike ERRANT it neither merges nor classifies edits, so its numbers rank checkpoints
and are not comparable with published F0.5. The ship decision is ERRANT's, on the CPU machine.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

import torch
from rapidfuzz.distance import Indel

from editspec.data.m2 import read_blocks
from editspec.data.corpora import evenly_spaced
from editspec.bundle import Bundle
from editspec.config import CorrectorConfig
from editspec.corrector import Corrector
from editspec.evaluation.whole_set import evaluate as evaluate_corrections
from editspec.evaluation.stats import detection_auc
from editspec.modeling.modeling_edit5 import tag_margins
from training.models import ModelKind, component_losses

TOKEN = re.compile(r"\w+(?:['’.-]\w+)*|'\w+|\S", re.UNICODE)  # words (with inner ' . -), clitics, marks
DECODE_ROWS = 256  # sentences per EdiT5 batch, T5 slots


def words(text: str) -> list[str]:
    return TOKEN.findall(text)


def edits(source: Sequence[str], target: Sequence[str]) -> set[tuple[int, int, tuple[str, ...]]]:
    """(start, end, replacement) of each change from ``source`` to ``target`` tokens: the gaps of a
    longest common subsequence (rapidfuzz's Indel, the aligner ``post.diff`` and ``tokenization.edits``
    use), a deletion next to an insertion being one edit, as in ``post.diff``."""
    out, gap = set(), None  # gap: [src_start, src_end, dest_start, dest_end] of the changes in a row
    for op in [*Indel.opcodes(list(source), list(target)), None]:
        if op is not None and op.tag != "equal":
            gap = [op.src_start, op.src_end, op.dest_start, op.dest_end] if gap is None else \
                [gap[0], op.src_end, gap[2], op.dest_end]
        elif gap is not None:
            out.add((gap[0], gap[1], tuple(target[gap[2]:gap[3]])))
            gap = None
    return out


class ApproxF05:
    """Edit-level F0.5 of hypotheses against one gold target per source (see the module docstring)."""

    def __init__(self, sources: Sequence[str], targets: Sequence[str]):
        self.sources = [words(s) for s in sources]
        self.gold = [edits(s, words(t)) for s, t in zip(self.sources, targets)]

    def score(self, hypotheses: Sequence[str]) -> dict[str, float]:
        if len(hypotheses) != len(self.gold):
            raise ValueError(f"{len(hypotheses)} hypotheses for {len(self.gold)} sources")
        tp = fp = fn = 0
        for src, gold, hyp in zip(self.sources, self.gold, hypotheses):
            mine = edits(src, words(hyp))
            tp, fp, fn = tp + len(mine & gold), fp + len(mine - gold), fn + len(gold - mine)
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        f = 1.25 * p * r / (0.25 * p + r) if p + r else 0.0
        return {"approx_f05": 100 * f, "approx_precision": 100 * p, "approx_recall": 100 * r}


def correct_fn_for(net, kind: ModelKind, tok, max_length: int, respell: bool = False):
    """list[str] -> list[str] with the model being trained, for ``editspec.evaluation``: a
    ``Corrector`` on it, each text one unit (``Corrector.correct_units``: its kind's mode, greedy,
    the checks; no guard, no rescoring, as ``editspec correct`` runs a checkpoint of one's own),
    ``DECODE_ROWS`` slots; a text of more than ``max_length`` ids with EOS stays as written, as the
    corrector keeps a unit it cannot read whole. With ``respell``, the spelling step and its check.
    Not segmented: the sentence splitter is spaCy's rules, and a lent GPU machine has no spaCy
    (dev sets are sentences already)."""
    models = Bundle(**{kind.name: net, f"{kind.name}_tokenizer": tok})  # its decoder goes with it
    corrector = Corrector(models, CorrectorConfig(kind.name, spelling=respell), batch_size=DECODE_ROWS,
                          max_length=max_length)

    def correct(texts: list[str]) -> list[str]:
        try:
            return corrector.correct_units(list(texts))
        finally:  # the decoding core's cache goes: until the next evaluation, training needs the memory
            models.decoders.release(net)

    return correct


def dev_loss(net, kind: ModelKind, tok, dev: dict, device, autocast) -> dict[str, Any]:
    """Mean dev loss (and its parts; EdiT5: the delete tags' AUC) over the dev batches."""
    total, weight, parts, margins, deleted = 0.0, 0, Counter(), [], []
    with torch.no_grad(), autocast():
        for examples in dev["batches"]:
            batch = {k: v.to(device) for k, v in kind.collate(examples, tok.pad_token_id).items()}
            output = net(**batch)
            total += float(output.loss) * len(examples)
            weight += len(examples)
            for k, v in component_losses(output).items():
                parts[k] += float(v) * len(examples)
            if getattr(output, "tag_logits", None) is not None:  # EdiT5: delete margin per token
                margin, gold = tag_margins(output.tag_logits, batch["tags"])
                margins.append(margin.cpu())
                deleted.append(gold.cpu())
    result: dict[str, Any] = {"dev_loss": total / max(weight, 1)}
    result.update({f"dev_{k}": v / max(weight, 1) for k, v in parts.items()})
    if margins:
        result["dev_tag_auc"] = detection_auc(torch.cat(margins), torch.cat(deleted))
    return result


def dev_approx_f05(net, kind: ModelKind, tok, dev: dict, autocast, max_length: int) -> dict[str, float]:
    """The approximate F0.5 of the model's greedy corrections of the dev sources (no spaCy)."""
    if dev.get("approx") is None:
        dev["approx"] = ApproxF05(dev["sources"], dev["targets"])
    with torch.no_grad(), autocast():
        # dev["sources"] went through the spelling step already (read_pairs, with dev's respell): not again,
        # which a lent machine could not do (training.respelling)
        hyps = correct_fn_for(net, kind, tok, max_length)(dev["sources"])
    return {f"dev_{k}": v for k, v in dev["approx"].score(hyps).items()}


def f05_evaluator(m2_path: str, limit: int | None):
    """ERRANT scorer of (an evenly spaced subset of) a gold M2 file; sources parsed once."""
    # ERRANT (spaCy) only where F0.5 is measured: a lent GPU machine has neither (training.lease)
    from editspec.evaluation.errant import ErrantEvaluator

    blocks = read_blocks(m2_path)
    return ErrantEvaluator([blocks[i] for i in evenly_spaced(len(blocks), limit)])


def dev_f05(net, kind: ModelKind, tok, dev: dict, autocast, max_length: int) -> dict:
    if dev.get("evaluator") is None:
        dev["evaluator"] = f05_evaluator(dev["m2"], dev["f05_max"])
    with autocast():
        correct = correct_fn_for(net, kind, tok, max_length, respell=dev.get("respell", False))
        result, _, seconds = evaluate_corrections(correct, dev["evaluator"])
    p, r, f = result.scores()
    return {"dev_f05": float(f), "dev_precision": float(p), "dev_recall": float(r), "dev_f05_seconds": seconds}
