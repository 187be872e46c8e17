"""The corrector's modes by name, and the models each one needs and uses.

A mode's data lives here, torch-free, so that ``CorrectorConfig`` and the CLI check ``--mode`` (and
``editspec profile`` its ``--modes``, ``editspec.profiling.modes``) before torch loads; how each
mode runs is ``editspec.decoding.modes``, one object per mode holding the ``Mode`` below::

    edit5        needs edit5           EdiT5 alone: tags, pointers, insertions
    t5           needs t5              T5 greedy on the decoding core
    speculative  needs t5, uses edit5  T5 greedy, drafted by EdiT5 or the source (the source
                                       alone without an EdiT5)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    """A mode's name, the models it cannot run without (``needs``) and those it loads when present
    (``uses``: ``needs`` unless given). Model kinds: "t5", "edit5", "t5-draft"."""

    name: str
    needs: tuple[str, ...]
    uses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.uses:
            object.__setattr__(self, "uses", self.needs)


EDIT5 = Mode("edit5", ("edit5",))
T5 = Mode("t5", ("t5",))
SPECULATIVE = Mode("speculative", ("t5",), ("t5", "edit5"))  # EdiT5: a draft candidate beside the source
CORRECTOR = {m.name: m for m in (EDIT5, T5, SPECULATIVE)}
