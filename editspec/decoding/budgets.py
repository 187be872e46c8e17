"""How many tokens a sentence's output may take: one budget per row, from that row's own length.

A row's budget never depends on the rows beside it, so its output is the one it has alone (the
core takes one budget per row; EdiT5's insertion decoder runs to the batch's largest budget and
each row is cut to its own, ``editspec.decoding.edit5``). ``n`` is the source's ids with EOS::

    output_budget(10) == 36      T5's output tokens, EOS not counted
    insertion_budget(10) == 32   EdiT5's insertion tokens, markers and EOS counted
"""

from __future__ import annotations


def output_budget(n: int) -> int:
    """T5's output tokens for a source of ``n`` ids with EOS: GEC output is about as long as its input."""
    return 2 * n + 16


def complete_generation(model, max_length: int | None) -> None:
    """Set ``model``'s saved generation length (a T5's ``generation_config.max_length``) so that
    plain transformers' ``generate(**inputs)`` completes the correction of the longest input it
    was trained on (``max_length`` ids with EOS, else 128) instead of stopping at transformers'
    default of 20 tokens: ``output_budget`` new ids after the decoder's start token."""
    config = getattr(model, "config", None)
    if getattr(model, "generation_config", None) is not None and getattr(config, "is_encoder_decoder", False):
        model.generation_config.max_length = output_budget(max_length or 128) + 1


def insertion_budget(n: int) -> int:
    """EdiT5's insertion tokens (``<marker> span ... </s>``) for a source of ``n`` ids with EOS."""
    return max(32, n + 16)
