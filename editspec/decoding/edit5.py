"""EdiT5 inference: a padded batch -> each row's edits within its own insertion budget -> tokens.

    edits(model, ids, mask, [32, 40])        generate_edits to 40 insertion tokens, row 0 cut to 32
    realized(model, sources, ids, mask, markers, eos)
                                             [(token, source index or None), ...] per row

The insertion decoder runs until every row has ended or the largest budget is spent; a row's
first tokens do not depend on the rows beside it, so cutting it to its own budget gives its
output alone. ``Corrector`` (edit5 mode, and EdiT5 drafting in another vocabulary), ``editspec
profile`` and the EdiT5 drafter (``drafters.EdiT5``) all decode EdiT5 here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch

from editspec.decoding.budgets import insertion_budget
from editspec.tokenization.edits import Edits, realize_aligned


def edits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, budgets: Sequence[int],
          encoder_hidden_states: torch.Tensor | None = None) -> list[Edits]:
    """``model.generate_edits`` per row of a padded batch, row k's insertions at most ``budgets[k]``
    tokens (``encoder_hidden_states``: the encoder's states, when EdiT5's heads sit on it)."""
    found = model.generate_edits(input_ids, attention_mask, max_insertion_tokens=max(budgets),
                                 encoder_hidden_states=encoder_hidden_states)
    return [replace(e, insertions=e.insertions[:b]) for e, b in zip(found, budgets)]


def realized(model, sources: Sequence[Sequence[int]], input_ids: torch.Tensor, attention_mask: torch.Tensor,
             markers: Sequence[int], eos: int) -> list[list[tuple[int, int | None]]]:
    """EdiT5's output per row, (token, source index or None) as ``realize_aligned``; ``sources``:
    the rows' ids without EOS, each with its own ``insertion_budget``."""
    budgets = [insertion_budget(len(s) + 1) for s in sources]
    return [realize_aligned(s, e, markers, eos) for s, e in zip(sources, edits(model, input_ids, attention_mask,
                                                                                 budgets))]
