"""The chain's steps as the ``Corrector`` runs them (its base class): its models' limits, the
tokens, the decode (the mode's runner on a ``DecodeRequest``), the beam searches' hypotheses, the
checks after the model and rescoring's scorer. ``corrector.py`` orchestrates them."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import torch

from editspec import confidence
from editspec.bundle import Bundle
from editspec.chain import Hyps, Unit
from editspec.config import CorrectorConfig, Level
from editspec.decoding import drafters, rescoring
from editspec.decoding.beam import BeamSettings
from editspec.decoding.runners import RUNNERS, T5, DecodeRequest, Edit5Runner, T5Runner, beam_settings
from editspec.modeling.loading import trained_length
from editspec.post.checks import guard, keep_content_words, keep_respelled, keep_unreadable, real_words
from editspec.nbest import alternatives as other_spans
from editspec.post.diff import Correction, Edit
from editspec.pre.spelling import load_speller
from editspec.timing import OFF
from editspec.tokenization.tokens import Encoded, encode, unreadable

DEFAULT_MAX_LENGTH = 128  # model input tokens with EOS, when the checkpoint does not say


class Steps:
    """The steps of a ``Corrector`` (which sets these attributes)."""

    bundle: Bundle
    config: CorrectorConfig
    batch_size: int
    num_beams: int
    max_ids: list[tuple[object, int]]
    guarded: int
    unreal: int
    reuse_scores: bool
    timings: object

    @property
    def mode(self) -> str:
        return self.config.mode

    def _max_ids(self, max_length: int | None, kind: str) -> int:
        length = max_length or trained_length(self.bundle.paths.get(kind)) or DEFAULT_MAX_LENGTH
        if kind == "edit5":
            # order positions 1..n+1 (EOS last), and a marker p for "after kept token p", p <= n
            length = min(length, self.bundle.edit5.config.max_order_positions - 1, len(self.bundle.markers))
        return max(2, length - 1)

    @property
    def limits(self) -> list[tuple[object, int]]:
        """(tokenizer, max ids without EOS) per model: a unit's chunks fit each of them, the T5's
        with the prefix before them."""
        if not self.config.prefix or self.bundle.t5 is None:
            return self.max_ids
        (tok, max_ids), *rest = self.max_ids
        return [(tok, max(1, max_ids - len(encode(tok, [self.config.prefix])[0].ids))), *rest]

    @property
    def calibration(self) -> confidence.Calibration:
        """How the output model's margins become confidences (``editspec.confidence``)."""
        return confidence.Calibration.of(self.config.confidence.get(self.output_kind))

    def calibration_of(self, level: Level) -> confidence.Calibration:
        """``level``'s own calibration where it has one (``Level.confidence``: picky's edits are
        fitted apart), else the output model's."""
        return confidence.Calibration.of(level.confidence) if level.confidence else self.calibration

    @property
    def device(self) -> torch.device:
        return self.output_model.device

    @property
    def output_kind(self) -> str:
        """Which model's output is returned: "t5", except in edit5 mode ("edit5")."""
        return "t5" if self.bundle.t5 is not None else "edit5"

    @property
    def output_model(self):
        """The model whose output is returned."""
        return getattr(self.bundle, self.output_kind)

    @property
    def tokenizer(self):
        """The tokenizer of the model whose output is returned."""
        return getattr(self.bundle, f"{self.output_kind}_tokenizer")

    def prepare(self) -> None:
        """Load now what a first call would (the spelling index; the pass costs of every slot
        count ``batch_size`` allows, from the cache or measured): a server's first request is
        then as fast as the next."""
        if self.config.spelling:
            load_speller()
        if self.bundle.t5 is not None and self._mode.slotted:
            for slots in range(1, self.batch_size + 1):
                self.bundle.costs.passes(slots)

    # -- the steps --

    def tokenize(self, units: Sequence[str], memo: dict | None = None) -> tuple[list[Encoded], list[int]]:
        """Each unit's tokens as the output model reads them (the T5: after the prefix, which
        rendering does not copy), and the units every model can read whole, longest first."""
        prefix = self.config.prefix if self.bundle.t5 is not None else ""
        with self.timings("tokenize"):
            encoded = encode(self.tokenizer, [prefix + u for u in units], memo)
            fits = [len(e.ids) <= self.max_ids[0][1] for e in encoded]  # the prefix included
            for tok, max_ids in self.max_ids[1:]:
                fits = [f and len(e.ids) <= max_ids for f, e in zip(fits, encode(tok, units, memo))]
        return encoded, sorted((i for i in range(len(units)) if fits[i]), key=lambda i: -len(encoded[i].ids))

    def decode_units(self, units: Sequence[str], encoded: Sequence[Encoded], order: Sequence[int],
                     progress: Callable[[int], None] | None, known: rescoring.Known, copy_penalty: float = 0.0,
                     hypotheses: int = 0) -> dict[int, tuple[str, Hyps]]:
        """unit -> (the model's output text, its hypotheses) for the units in ``order``: EdiT5
        ``batch_size`` units at a time; T5 all of them through the core's ``batch_size`` slots,
        where a finished unit's slot takes the next waiting one at once. ``progress`` gets each
        unit's characters once done."""
        out: dict[int, tuple[str, Hyps]] = {}
        for batch in self._mode.batches(order, self.batch_size):
            each = progress is not None and self._mode.slotted  # progress as each unit is done
            done = (lambda k, batch=batch: progress(len(units[batch[k]]))) if each else None
            out.update(zip(batch, self.decode([encoded[i] for i in batch], done, known, copy_penalty, hypotheses)))
            if progress is not None and not each:
                progress(sum(len(units[i]) for i in batch))
        return out

    def decode(self, encoded: Sequence[Encoded], done: Callable[[int], None] | None = None,
               known: rescoring.Known | None = None, copy_penalty: float = 0.0,
               hypotheses: int = 0) -> list[tuple[str, Hyps]]:
        """The model's output text per unit (the mode's ``run``, then its ``render``) and, with beam
        search, its ``hypotheses`` best; ``done(k)`` once unit k is decoded (T5 modes). With
        ``rescore`` (and ``reuse_scores``), ``known`` records the decode's scores
        (``rescoring.Known.record``): a forced pass's bit for bit where ``decoder.exact_windows``
        (bf16); in float32 the kernels of a window and of a step differ in the last bits (~1e-6 of
        a log P), so an edit whose variant ties the output that closely may be judged otherwise
        than with every pair forced (reports/speed.md, issue 71: how often)."""
        mode = self._mode
        if not encoded:
            return []
        # beam search: no greedy drafter, no greedy scores (rescoring forces its passes)
        beams = beam_settings(self.num_beams, self.mode, hypotheses or 1) if self.num_beams > 1 else None
        scores = known is not None and self.config.rescore and self.reuse_scores and self.output_kind == "t5" and not beams
        with torch.inference_mode(), self.timings(mode.step):  # the model parts inside: see profiling.pipeline
            drafter = self._drafter(encoded) if mode.drafts and not beams else None
            found = mode.run(self.bundle, DecodeRequest(encoded, self.batch_size, drafter, done, scores=scores,
                                                        beams=beams, copy_penalty=copy_penalty))
        if scores:  # T5 modes: one decode a round, so one set of widths
            known.record([e.ids for e in encoded], found.outputs, found.stats, self.bundle.t5_tokenizer.eos_token_id)
        with self.timings("render"):
            hyps = self._rendered(encoded, found.hypotheses) if hypotheses and beams else [()] * len(encoded)
            return list(zip(mode.render(self.bundle, encoded, found.outputs), hyps))

    def search(self, encoded: Sequence[Encoded], k: int) -> list[Hyps]:
        """Each unit's ``k`` best of a beam search of ``k`` beams on the T5 (the alternatives')."""
        if not encoded:
            return []
        with torch.inference_mode():
            found = T5.run(self.bundle, DecodeRequest(encoded, self.batch_size, beams=BeamSettings(k, k)))
        return self._rendered(encoded, found.hypotheses)

    def _rendered(self, encoded: Sequence[Encoded], hypotheses) -> list[Hyps]:
        """Each unit's hypotheses rendered as its output is, with their scores."""
        return [tuple(zip(self._mode.render(self.bundle, [e] * len(best), [h.ids for h in best]),
                          [h.score for h in best])) for e, best in zip(encoded, hypotheses)]

    def check(self, c: Correction, encoded: Encoded, written: str | None = None) -> Correction:
        """The checks after the model on one unit's correction (``encoded``: what the model read):
        no edit of what it cannot read, the guard (counted in ``guarded``), no content word deleted,
        and with the spelling step no made-up words (counted in ``unreal``) and no word removed that
        the writer misspelt (``keep_respelled``; ``written``: the unit as written, before spelling)."""
        prefix = len(encoded.text) - len(c.input)  # offsets in the unit: the prefix is not in it
        c = keep_unreadable(c, {k - prefix for k in unreadable(self.tokenizer, encoded)})
        guarded = guard(c, self.config.max_edit_words)
        self.guarded += guarded.output != c.output
        guarded = keep_content_words(guarded)  # after the guard, which judges the model's own edits
        if not self.config.spelling:
            return guarded
        checked = real_words(guarded, load_speller().knows)  # the spelling step's dictionary
        self.unreal += checked.output != guarded.output
        return keep_respelled(checked, c.input if written is None else written, load_speller().misspelt)

    def scorer(self, known: rescoring.Known | None = None) -> rescoring.Scorer:
        """Rescoring's scorer: the output model's, as its mode gives it (``known``: a T5 decode's own
        scores, ``rescoring.Known``)."""
        prefix = self.config.prefix if self.bundle.t5 is not None else ""
        return self._mode.scorer(self.bundle, 4 * self.batch_size, prefix, known)

    @property
    def _mode(self) -> Edit5Runner | T5Runner:
        """How ``self.mode`` runs (``editspec.decoding.runners``)."""
        return RUNNERS[self.mode]

    def _drafter(self, encoded) -> drafters.Drafter:
        """The speculative mode's drafter for ``encoded`` (``SpeculativeRunner.drafter``; EdiT5's
        output or the source, whichever has decoded this corrector's sentences faster), timed as
        ``draft`` when ``timings`` are on (EdiT5 with another vocabulary drafts here, before decoding)."""
        with self.timings("draft"):
            drafter = self._mode.drafter(self.bundle, encoded, self.batch_size)
        return drafter if self.timings is OFF else drafters.TimedDrafter(drafter, self.timings)

    @staticmethod
    def _shown(unit: Unit, output: str, scored: Correction | None, alternatives: int) -> list[Edit]:
        """A unit's edits as a user is shown them (whole words, ``Correction.shown``), each with the
        confidence of the scored edits it covers (``confidence.spread``) and its alternatives."""
        if output == unit.text:
            return []
        shown = Correction.shown(unit.text, output)
        shown = replace(shown, edits=confidence.spread(shown.edits, [(0, e) for e in scored.edits] if scored else []))
        if alternatives:
            shown = other_spans([shown], [unit.hypotheses], alternatives, load_speller().knows)[0]
        return shown.edits
