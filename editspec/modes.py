"""Every mode by name, the models each one needs and uses, and who runs it: the one table of modes.

A mode's data lives here, torch-free, so that ``CorrectorConfig`` and the CLI check ``--mode`` (and
``editspec profile`` its ``--modes``) before torch loads. How a mode runs is one object holding its
``Mode``: the corrector's in ``editspec.decoding.runners``, the profiler's in
``editspec.profiling.timed``; their tables by name are built from those objects::

    mode                 needs            corrector  what it runs
    t5                   t5               yes        T5 greedy on the decoding core: the reference
    edit5                edit5            yes        EdiT5 alone: tags, pointers, insertions
    speculative          t5 (uses edit5)  yes        T5 greedy, drafted by EdiT5 or the source (the
                                                     source alone without an EdiT5), the cheaper
    speculative-edit5    t5, edit5                   ... EdiT5's draft, mixed with the output's n-grams
    speculative-copy     t5                          ... the source (with resync), mixed likewise
    speculative-perfect  t5                          ... T5's own greedy output: a perfect drafter
    beam4                t5                          T5 beam search, 4 beams, on the decoding core (``--beam 4``)
    beam4-drafted        t5                          ... each beam drafted by the source (same output)
    hf-greedy            t5                          transformers' ``generate``, greedy
    hf-assisted          t5, t5-draft                ... the small T5 as ``assistant_model``
    hf-prompt-lookup     t5                          ... with ``prompt_lookup_num_tokens``
    hf-beam4             t5                          ... ``num_beams=4``
    ct2-greedy           t5                          CTranslate2's greedy search, float32
    ct2-int8             t5                          ... int8 compute
    ct2-beam4            t5                          ... beam search, 4 beams, float32

``ALL`` is in the profile's order: T5 first, the reference every other mode is compared with.
"""

from __future__ import annotations

from dataclasses import dataclass

from editspec.errors import EditspecError


@dataclass(frozen=True)
class Mode:
    """A mode's name, the models it cannot run without (``needs``) and those it loads when present
    (``uses``: ``needs`` unless given); ``corrector``: ``Corrector`` runs it (every mode is
    ``editspec profile``'s). Model kinds: "t5", "edit5", "t5-draft"."""

    name: str
    needs: tuple[str, ...]
    uses: tuple[str, ...] = ()
    corrector: bool = False

    def __post_init__(self) -> None:
        if not self.uses:
            object.__setattr__(self, "uses", self.needs)


T5 = Mode("t5", ("t5",), corrector=True)
EDIT5 = Mode("edit5", ("edit5",), corrector=True)
SPECULATIVE = Mode("speculative", ("t5",), ("t5", "edit5"), corrector=True)  # EdiT5: a candidate beside the source
SPECULATIVE_EDIT5 = Mode("speculative-edit5", ("t5", "edit5"))
SPECULATIVE_COPY = Mode("speculative-copy", ("t5",))
SPECULATIVE_PERFECT = Mode("speculative-perfect", ("t5",))
BEAM4 = Mode("beam4", ("t5",))  # beam modes: outputs differ from greedy by design
BEAM4_DRAFTED = Mode("beam4-drafted", ("t5",))
HF_GREEDY = Mode("hf-greedy", ("t5",))  # transformers' generate
HF_ASSISTED = Mode("hf-assisted", ("t5", "t5-draft"))
HF_PROMPT_LOOKUP = Mode("hf-prompt-lookup", ("t5",))
HF_BEAM4 = Mode("hf-beam4", ("t5",))
CT2_GREEDY = Mode("ct2-greedy", ("t5",))  # CTranslate2's translate_batch
CT2_INT8 = Mode("ct2-int8", ("t5",))
CT2_BEAM4 = Mode("ct2-beam4", ("t5",))

ALL = (T5, EDIT5, SPECULATIVE, SPECULATIVE_EDIT5, SPECULATIVE_COPY, SPECULATIVE_PERFECT, BEAM4, BEAM4_DRAFTED,
       HF_GREEDY, HF_ASSISTED, HF_PROMPT_LOOKUP, HF_BEAM4, CT2_GREEDY, CT2_INT8, CT2_BEAM4)
BY_NAME = {m.name: m for m in ALL}
CORRECTOR = {m.name: m for m in ALL if m.corrector}  # --mode's choices


def check_modes(names: list[str] | tuple[str, ...]) -> list[str]:
    """``names`` without repeats, in the order given; an unknown one is an error."""
    unknown = [m for m in names if m not in BY_NAME]
    if unknown:
        raise EditspecError(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(BY_NAME)} (or none)")
    return list(dict.fromkeys(names))
