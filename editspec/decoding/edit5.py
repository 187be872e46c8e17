"""EdiT5 inference: a padded batch -> each row's edits within its own insertion budget.

    edits(model, ids, mask, [32, 40])        generate_edits to 40 insertion tokens, row 0 cut to 32

The insertion decoder runs until every row has ended or the largest budget is spent; a row's
first tokens do not depend on the rows beside it, so cutting it to its own budget gives its
output alone. The edit5 mode (``modes.EDIT5``: ``Corrector``, EdiT5 drafting in another
vocabulary, ``editspec profile``, training's dev scoring) and the EdiT5 drafter
(``drafters.EdiT5``) all decode EdiT5 here; each row's budget is ``budgets.insertion_budget``'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch

from editspec.tokenization.edits import Edits


def edits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, budgets: Sequence[int],
          encoder_hidden_states: torch.Tensor | None = None) -> list[Edits]:
    """``model.generate_edits`` per row of a padded batch, row k's insertions at most ``budgets[k]``
    tokens (``encoder_hidden_states``: the encoder's states, when EdiT5's heads sit on it)."""
    found = model.generate_edits(input_ids, attention_mask, max_insertion_tokens=max(budgets),
                                 encoder_hidden_states=encoder_hidden_states)
    return [replace(e, insertions=e.insertions[:b]) for e, b in zip(found, budgets)]

