"""The modes ``editspec profile`` times, and the models each one needs.

The corrector's own modes (``editspec.modes``: edit5, t5, speculative, the same objects) come
first, T5 leading as the reference every other mode is compared with; then our other drafters
and the peers::

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
it needs is missing. How each runs and is timed: ``editspec.profiling.timed`` (one object per
mode here). This module imports no torch, so the CLI can check ``--modes`` at once.
"""

from __future__ import annotations

from typing import Sequence

from editspec.errors import EditspecError
from editspec.modes import CORRECTOR, T5, Mode

SPECULATIVE_EDIT5 = Mode("speculative-edit5", ("t5", "edit5"))
SPECULATIVE_COPY = Mode("speculative-copy", ("t5",))
SPECULATIVE_PERFECT = Mode("speculative-perfect", ("t5",))
HF_GREEDY = Mode("hf-greedy", ("t5",))  # transformers' generate
HF_ASSISTED = Mode("hf-assisted", ("t5", "t5-draft"))
HF_PROMPT_LOOKUP = Mode("hf-prompt-lookup", ("t5",))
CT2_GREEDY = Mode("ct2-greedy", ("t5",))  # CTranslate2's translate_batch
CT2_INT8 = Mode("ct2-int8", ("t5",))

REFERENCE = T5.name
CT2_REFERENCE = CT2_GREEDY.name  # the peer the speculative mode's speedup is also given against
ALL = (T5, *(m for m in CORRECTOR.values() if m is not T5), SPECULATIVE_EDIT5,
       SPECULATIVE_COPY, SPECULATIVE_PERFECT, HF_GREEDY, HF_ASSISTED, HF_PROMPT_LOOKUP, CT2_GREEDY, CT2_INT8)
MODES = tuple(m.name for m in ALL)
NEEDS = {m.name: m.needs for m in ALL}


def check_modes(modes: Sequence[str]) -> list[str]:
    """``modes`` without repeats, in the order given; an unknown one is an error."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise EditspecError(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)} (or none)")
    return list(dict.fromkeys(modes))
