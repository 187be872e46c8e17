"""The modes ``editspec profile`` times, and the models each one needs.

The corrector's own modes (``editspec.config.MODES``: edit5, t5, speculative) come first, T5
leading as the reference every other mode is compared with; then our other drafters and the
transformers peers::

    t5                   T5 greedy on our decoding core (``editspec.decoding.core``): the reference
    edit5                EdiT5 alone: tags, pointers, insertions
    speculative          T5 verifies the cheaper draft of the two below, measured on the
                         sentences (the corrector's speculative mode, ``drafters.Cheapest``);
                         with a T5 alone, the source's draft, as Corrector does
    speculative-edit5    ... EdiT5's draft, mixed with the output's own n-grams
    speculative-copy     ... the source (with resync), mixed with the output's n-grams
    speculative-perfect  ... T5's own greedy output as the draft: the limit of a perfect drafter
    hf-greedy            transformers' ``generate``, greedy
    hf-assisted          ... with the small T5 as ``assistant_model`` (batch size 1 only)
    hf-prompt-lookup     ... with ``prompt_lookup_num_tokens`` (batch size 1 only)
    ct2-greedy           CTranslate2's greedy search on the same T5 weights, float32
                         (``editspec.profiling.ct2``; the ``peers`` extra)
    ct2-int8             ... int8 compute

``NEEDS["hf-assisted"] == ("t5", "t5-draft")``: a mode is skipped, with a note, when a model
it needs is missing. This module imports no torch, so the CLI can check ``--modes`` at once.
"""

from __future__ import annotations

from typing import Sequence

from editspec.config import MODES as CORRECTOR_MODES, NEEDS as CORRECTOR_NEEDS
from editspec.errors import EditspecError

REFERENCE = "t5"
SPECULATIVE = ("speculative", "speculative-edit5", "speculative-copy", "speculative-perfect")
PEERS = ("hf-greedy", "hf-assisted", "hf-prompt-lookup")  # transformers' generate
CT2 = ("ct2-greedy", "ct2-int8")  # CTranslate2's translate_batch
CT2_REFERENCE = "ct2-greedy"  # the peer the speculative mode's speedup is also given against
MODES = (REFERENCE, *(m for m in CORRECTOR_MODES if m != REFERENCE),
         *(m for m in SPECULATIVE if m not in CORRECTOR_MODES), *PEERS, *CT2)
NEEDS = {**CORRECTOR_NEEDS, "speculative-edit5": ("t5", "edit5"),  # the corrector's modes need what Corrector's do
         "speculative-copy": ("t5",), "speculative-perfect": ("t5",), "hf-greedy": ("t5",),
         "hf-assisted": ("t5", "t5-draft"), "hf-prompt-lookup": ("t5",), "ct2-greedy": ("t5",),
         "ct2-int8": ("t5",)}
BATCH_ONE = ("hf-assisted", "hf-prompt-lookup")  # transformers: assisted generation, batch 1 only


def check_modes(modes: Sequence[str]) -> list[str]:
    """``modes`` without repeats, in the order given; an unknown one is an error."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise EditspecError(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)} (or none)")
    return list(dict.fromkeys(modes))
