"""How each mode of ``editspec.modes`` runs: one object per mode, holding that mode's data.

    EDIT5        rows in batches of ``batch_size``: EdiT5's edits, realized (``decoding.edit5``),
                 rendered from the alignment they carry
    T5           all rows through the decoding core's slots (``core.generate``), no draft; each
                 row's output within ``budgets.output_budget`` of its own length; with ``beams``
                 (``--beam N``, both T5 modes), the best hypothesis of ``beam.generate`` instead
    SPECULATIVE  as T5, drafted by the source when there is no EdiT5; by the cheaper, as measured,
                 of EdiT5 and the source when EdiT5 reads T5's ids (``drafters.speculative``);
                 else by EdiT5's output in its own vocabulary, re-tokenized into T5's

Each runs on a ``Bundle`` (``editspec.bundle``): the corrector's, ``editspec profile``'s (whose
``speculative`` is the corrector's, drafter and budgets included), and in training's dev scoring
one holding the model being trained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import torch

from editspec import modes
from editspec.config import check_beams
from editspec.modeling.tensors import model_inputs
from editspec.decoding import beam, core, drafters, edit5, rescoring
from editspec.decoding.budgets import insertion_budget, output_budget
from editspec.decoding.beam import BeamSettings
from editspec.decoding.drafters import Drafter
from editspec.errors import EditspecError
from editspec.decoding.decoder import Decoders
from editspec.decoding.costs import Costs
from editspec.decoding.window import WindowPolicy
from editspec.tokenization.edits import Edits, realize_aligned
from editspec.tokenization.tokens import Encoded, encode, render, render_ids


def beam_settings(num_beams: int, mode: str | None, num_return: int = 1) -> BeamSettings:
    """The corrector's beam search of ``num_beams`` beams returning the ``num_return`` best (one
    line of error if it cannot be: ``config.check_beams``); transformers' defaults otherwise."""
    check_beams(num_beams, mode)
    return BeamSettings(num_beams, num_return)


@dataclass(frozen=True)
class DecodeRequest:
    """What one ``run`` decodes, and how: each runner reads the fields it has and refuses the others.

    encoded       the rows, as the mode's tokenizer read them
    slots         rows decoded together (EdiT5: a batch; T5: the core's slots, or beam groups)
    drafter       the speculative mode's draft (T5 greedy only); None: one token a pass
    done          ``done(k)`` once row k is decoded (progress)
    window        draft tokens a row and pass (``core.generate``'s; None: measured)
    scores        each row's log P of its output too (``DecodeResult.stats.log_probs``; T5 greedy)
    beams         a beam search instead of greedy (T5 only): the best hypothesis is the output
    copy_penalty  the copy penalty of a level (T5 greedy only, ``core.CopyTracker``)
    """

    encoded: Sequence[Encoded]
    slots: int
    drafter: Drafter | None = None
    done: Callable[[int], None] | None = None
    window: int | WindowPolicy | None = None
    scores: bool = False
    beams: BeamSettings | None = None
    copy_penalty: float = 0.0

    def refuse(self, mode: str, *names: str) -> None:
        """One line of error for a field set that ``mode`` cannot do."""
        asked = [n for n in names if getattr(self, n) not in (None, False, 0.0)]
        if asked:
            raise EditspecError(f"mode {mode} cannot decode with {', '.join(asked)}")


@dataclass
class DecodeResult:
    """What one ``run`` found: per row its output (EdiT5: (token, source index or None) pairs; T5:
    ids without EOS), the core's counts (T5 modes) and, for a beam search, each row's
    ``beams.num_return`` best hypotheses, best first (``beam.Hypothesis``)."""

    outputs: list
    stats: core.SpecStats | None = None
    hypotheses: list[list[beam.Hypothesis]] | None = None


class Models(Protocol):
    """What a mode reads of the models it runs on: an ``editspec.bundle.Bundle``."""

    t5: torch.nn.Module | None
    t5_tokenizer: object
    edit5: torch.nn.Module | None
    edit5_tokenizer: object
    markers: list[int]  # EdiT5's marker ids
    shared_vocab: bool  # EdiT5 reads T5's ids
    decoders: Decoders  # each T5's decoding-core decoder, kept across calls
    costs: Costs  # the T5's pass costs and the speculative drafters', over the models' life
    device: torch.device


class Edit5Runner:
    """EdiT5 alone: a run's outputs are (token, source index or None) per row."""

    slotted = False  # batches of ``batch_size`` rows, not the core's slots
    drafts = False
    step = "edit5"  # the corrector's timing step (``editspec profile --pipeline``)

    def __init__(self, mode: modes.Mode):
        self.mode = mode

    def batches(self, order: list[int], batch_size: int) -> list[list[int]]:
        """The rows (indices, longest first) in the groups ``run`` takes, one call each."""
        return [order[a:a + batch_size] for a in range(0, len(order), batch_size)]

    def budgets(self, encoded: Sequence[Encoded]) -> list[int]:
        """Each row's insertion budget, from its own length alone."""
        return [insertion_budget(len(e.ids) + 1) for e in encoded]

    def edits(self, models: Models, encoded: Sequence[Encoded], input_ids: torch.Tensor,
              attention_mask: torch.Tensor) -> list[Edits]:
        """EdiT5's edits of ``encoded``, padded as ``input_ids`` (ids with EOS), each within its budget."""
        return edit5.edits(models.edit5, input_ids, attention_mask, self.budgets(encoded))

    def run(self, models: Models, request: DecodeRequest) -> DecodeResult:
        """The rows' outputs, ``slots`` rows at a time; the T5's fields (a drafter, a window,
        scores, beams, a copy penalty) are refused."""
        request.refuse(self.mode.name, "drafter", "window", "scores", "beams", "copy_penalty")
        tok, encoded, slots, done = models.edit5_tokenizer, request.encoded, request.slots, request.done
        out = []
        for at in range(0, len(encoded), slots):
            rows = encoded[at:at + slots]
            ids, mask = model_inputs([e.ids for e in rows], tok.eos_token_id, tok.pad_token_id, models.device)
            out += [realize_aligned(e.ids, found, models.markers, tok.eos_token_id)
                    for e, found in zip(rows, self.edits(models, rows, ids, mask))]
            for k in range(at, at + len(rows)) if done is not None else ():
                done(k)
        return DecodeResult(out)

    def render(self, models: Models, encoded: Sequence[Encoded], outputs) -> list[str]:
        """The outputs as text, each kept token's characters copied from the source."""
        return [render(models.edit5_tokenizer, e, pairs) for e, pairs in zip(encoded, outputs)]

    def scorer(self, models: Models, batch_size: int = 64, prefix: str = "",
               known: rescoring.Known | None = None) -> rescoring.Scorer:
        """Rescoring's scores of the outputs: EdiT5's own (``prefix`` and ``known`` are T5's alone)."""
        return rescoring.edit5_scorer(models.edit5, models.edit5_tokenizer, batch_size)


class T5Runner:
    """T5 greedy on the decoding core: a run's outputs are T5 ids per row (no EOS)."""

    slotted = True  # one call for all rows: a finished row's slot takes the next at once
    drafts = False
    step = "decode"

    def __init__(self, mode: modes.Mode):
        self.mode = mode

    def batches(self, order: list[int], batch_size: int) -> list[list[int]]:
        return [order] if order else []

    def budgets(self, encoded: Sequence[Encoded]) -> list[int]:
        """Each row's output budget, from its own length alone."""
        return [output_budget(len(e.ids) + 1) for e in encoded]

    def drafter(self, models: Models, encoded: Sequence[Encoded], slots: int) -> Drafter | None:
        """The drafter of one run over ``encoded`` (None: one token per pass)."""
        return None

    def run(self, models: Models, request: DecodeRequest) -> DecodeResult:
        """The rows' outputs and the core's counts (``core.generate``: ``window``, ``scores`` and
        ``copy_penalty`` as its). ``beams``: the best hypothesis of a beam search instead
        (``beam.generate``, ``slots`` sentences of K rows), and its ``num_return`` best; a beam
        search takes no drafter, scores or copy penalty."""
        r, eos = request, models.t5_tokenizer.eos_token_id
        sources, budgets = [e.ids + [eos] for e in r.encoded], self.budgets(r.encoded)
        if r.beams is not None:
            r.refuse("beam search", "drafter", "window", "scores", "copy_penalty")
            hyps, stats = beam.generate(models.t5, sources, r.beams, r.slots, budgets, done=r.done,
                                        decoders=models.decoders)
            return DecodeResult([h[0].ids for h in hyps], stats, hyps)
        window = r.window
        if r.drafter is not None and window is None:  # the bundle's measured costs (``decoding.costs``)
            window = models.costs.window(max(1, min(r.slots, len(r.encoded))))
        outputs, stats = core.generate(models.t5, sources, r.slots, r.drafter, max_new_tokens=budgets,
                                       window=window, done=r.done, scores=r.scores, decoders=models.decoders,
                                       copy_penalty=r.copy_penalty)
        return DecodeResult(outputs, stats)

    def render(self, models: Models, encoded: Sequence[Encoded], outputs) -> list[str]:
        """The outputs as text, aligned to the source (``render_ids``)."""
        return [render_ids(models.t5_tokenizer, e, out) for e, out in zip(encoded, outputs)]

    def scorer(self, models: Models, batch_size: int = 64, prefix: str = "",
               known: rescoring.Known | None = None) -> rescoring.Scorer:
        """Rescoring's scores of the outputs: the T5's, ``prefix`` before each source, ``known`` the
        decode's own scores (``rescoring.t5_scorer``)."""
        return rescoring.t5_scorer(models.t5, models.t5_tokenizer, batch_size, prefix, known, models.decoders)


class SpeculativeRunner(T5Runner):
    """T5 greedy, drafted (see the module docstring): the output is T5's, only the passes differ."""

    drafts = True

    def drafter(self, models: Models, encoded: Sequence[Encoded], slots: int) -> Drafter:
        if models.edit5 is None:  # a T5 alone: the source is the draft
            return drafters.copy_draft()
        if models.shared_vocab:  # EdiT5 reads T5's input ids; the source is the other candidate
            return drafters.speculative(models.edit5, models.markers, models.costs, min(slots, len(encoded)))
        # another vocabulary: EdiT5 reads its own ids, and its drafts go text -> T5 ids
        texts = [e.text for e in encoded]
        pairs = EDIT5.run(models, DecodeRequest(encode(models.edit5_tokenizer, texts), slots)).outputs
        drafts = drafters.retokenize_drafts([[t for t, _ in p] for p in pairs], models.edit5_tokenizer,
                                            models.t5_tokenizer, sources=texts)
        return drafters.Mix(drafters.Follow(drafts), drafters.Ngram())


EDIT5 = Edit5Runner(modes.EDIT5)
T5 = T5Runner(modes.T5)
SPECULATIVE = SpeculativeRunner(modes.SPECULATIVE)
RUNNERS = {m.mode.name: m for m in (EDIT5, T5, SPECULATIVE)}
