"""How ``editspec profile`` runs and times each mode: one object per mode of ``editspec.modes``.

    Core       our T5 on the decoding core: ``t5`` and ``speculative`` are the corrector's own
               mode objects (``editspec.decoding.runners``: drafter, slots and budgets as
               ``Corrector``'s); ``speculative-*`` the same T5 run with another drafter
    EdiT5      EdiT5 alone: the corrector's edit5 mode object, the insertion decoder's steps marked
    Beams      our beam search (beam4, beam4-drafted: ``decoding.beam``), the best hypothesis
    Peer       transformers' ``generate`` (hf-*)
    CT2        CTranslate2's ``translate_batch`` (ct2-*): one call, timed whole

Each row's output budget is its own (``budgets``), as in ``Corrector``; the peers take one budget
per call, the batch's largest, and each row is cut to its own (greedy output does not depend on
how far it may go). ``TIMED[name]`` is the object of the mode ``name``; the profiler
(``profiling.profiler``) instruments a ``Recorder`` with it, starts the clock and decodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from editspec.decoding import beam, core, drafters
from editspec.decoding import runners
from editspec.decoding.runners import DecodeRequest, Edit5Runner, T5Runner
from editspec.bundle import Bundle
from editspec import modes
from editspec.modes import Mode
from editspec.profiling.clock import Clock, Recorder
from editspec.decoding.drafters import TimedDrafter
from editspec.tokenization.edits import realize
from editspec.tokenization.tokens import render_ids


@dataclass
class Batch:
    index: list[int]  # sentence numbers
    encoded: list  # editspec.tokenization.tokens.Encoded per row (T5's tokenizer; EdiT5's when no T5)
    ids: torch.Tensor
    mask: torch.Tensor
    edit5_encoded: list | None = None
    edit5_ids: torch.Tensor | None = None
    edit5_mask: torch.Tensor | None = None

    @property
    def budgets(self) -> list[int]:
        """Each row's T5 output budget, as the corrector's T5 modes give it."""
        return runners.T5.budgets(self.encoded)


@dataclass
class Decoded:
    outputs: list[list[int]]
    stats: core.SpecStats | None = None  # the core's counts, when a drafter drafted
    end_of_decoder: object = None  # EdiT5: the clock's stamp when generate_edits returned


class Profiled(Protocol):
    """The profiler's loaded models and settings (``profiler.Profiler``)."""

    bundle: Bundle  # the corrector's models
    small: torch.nn.Module | None  # hf-assisted's assistant
    hf_t5: torch.nn.Module | None  # the T5 as transformers' model, for its ``generate`` (hf-*)
    ct2: object  # a ``profiling.ct2.CT2Peer``, or None
    ct2_unavailable: str | None
    window: int | None  # the draft window; None: the core's measured policy
    prompt_lookup_tokens: int
    clock: Clock


Draft = Callable[[Profiled, Batch, "list[list[int]] | None"], drafters.Drafter]


class Timed:
    """A mode as ``editspec profile`` runs it."""

    drafted = False  # a ``draft`` part is timed
    counts_passes = True  # its outputs are what its decoder emitted, one pass per step
    batch_one = False  # transformers refuses it at batch size > 1

    def __init__(self, mode: Mode):
        self.mode = mode

    def unavailable(self, p: Profiled) -> str | None:
        """Why the mode cannot run on ``p``'s models beyond a missing model (``Mode.needs``), or None."""
        return None

    def instrument(self, p: Profiled, rec: Recorder, batch: Batch) -> None:
        """Hooks on the parts to time (and what must be measured untimed, before the clock)."""

    def decode(self, p: Profiled, batch: Batch, reference: list[list[int]] | None, rec: Recorder) -> Decoded:
        raise NotImplementedError

    def steps(self, rec: Recorder, decoded: Decoded) -> list[float]:
        return rec.durations("step")

    def finished(self, batch: Batch, outputs: list[list[int]]) -> list[bool]:
        return [len(o) < b for o, b in zip(outputs, batch.budgets)]

    def same_as_t5(self, p: Profiled, batch: Batch, outputs: list[list[int]],
                   reference: list[list[int]]) -> list[bool]:
        """Per row: the output equals T5's greedy output."""
        return [a == b for a, b in zip(outputs, reference)]

    def report(self, p: Profiled) -> dict:
        """What the report says of the mode beyond its samples."""
        return {}


class Core(Timed):
    """A mode of the corrector's on the decoding core (``runner``), or the same T5 run with the
    drafter ``draft`` (the speculative-* modes); ``reads_t5_ids``: its EdiT5 drafter reads T5's ids."""

    def __init__(self, runner: T5Runner, mode: Mode | None = None, draft: Draft | None = None,
                 reads_t5_ids: bool = False):
        super().__init__(mode or runner.mode)
        self.runner, self.draft, self.reads_t5_ids = runner, draft, reads_t5_ids
        self.drafted = draft is not None or runner.drafts

    def unavailable(self, p):
        if self.reads_t5_ids and p.bundle.edit5 is not None and not p.bundle.shared_vocab:
            return "EdiT5 and T5 use different tokenizers (the profiler's EdiT5 drafter reads T5's ids)"
        return None

    def instrument(self, p, rec, batch):
        if self.drafted and p.window is None:  # the window's cost model: measured once, untimed
            p.bundle.costs.passes(len(batch.index))
        rec.time_module(p.bundle.t5.encoder, "encoder")
        rec.time_passes(p.bundle.decoders, "step")  # the core: one span per pass

    def decode(self, p, batch, reference, rec):
        slots = len(batch.index)
        if not self.drafted:
            return Decoded(self.runner.run(p.bundle, DecodeRequest(batch.encoded, slots)).outputs)
        inner = self.draft(p, batch, reference) if self.draft else self.runner.drafter(p.bundle, batch.encoded, slots)
        found = self.runner.run(p.bundle, DecodeRequest(batch.encoded, slots, TimedDrafter(inner, rec), window=p.window))
        return Decoded(found.outputs, found.stats)

    def report(self, p):
        if self.draft is not None or not self.drafted:
            return {}
        # the corrector's speculative mode: the drafter it picked, and what each cost a probed sentence
        costs = p.bundle.costs.drafts
        return {"drafter": costs.names[costs.best],
                "drafter_cost_ms": {n: 1e3 * v for n, v in costs.per_sentence().items()}}


class EdiT5(Timed):
    """The corrector's edit5 mode (``runner``: its edits, each row within its own budget), the
    insertion decoder's steps marked; its outputs are the realized ids, not rendered text."""

    counts_passes = False  # its outputs are realized edits, not what its decoder emits

    def __init__(self, runner: Edit5Runner):
        super().__init__(runner.mode)
        self.runner = runner

    def instrument(self, p, rec, batch):
        rec.time_module(p.bundle.edit5.encoder, "encoder")
        rec.mark_module(p.bundle.edit5.insertion.decoder.block[0], "step")

    def decode(self, p, batch, reference, rec):
        with torch.inference_mode():
            found = self.runner.edits(p.bundle, batch.edit5_encoded, batch.edit5_ids, batch.edit5_mask)
        end = p.clock.stamp()
        eos = p.bundle.edit5_tokenizer.eos_token_id
        return Decoded([realize(e.ids, ed, p.bundle.markers, eos) for e, ed in zip(batch.edit5_encoded, found)], None, end)

    def steps(self, rec, decoded):
        return rec.steps("step", decoded.end_of_decoder)

    def finished(self, batch, outputs):
        return [True] * len(outputs)

    def same_as_t5(self, p, batch, outputs, reference):
        """Ids; text when EdiT5 has another vocabulary, both rendered by aligning them to the source."""
        if p.bundle.shared_vocab:
            return super().same_as_t5(p, batch, outputs, reference)
        mine = [render_ids(p.bundle.edit5_tokenizer, e, o) for e, o in zip(batch.edit5_encoded, outputs)]
        theirs = [render_ids(p.bundle.t5_tokenizer, e, o) for e, o in zip(batch.encoded, reference)]
        return [a == b for a, b in zip(mine, theirs)]


class Beams(Timed):
    """Our beam search of ``k`` beams on the decoding core (``drafted``: the source drafts each
    beam), each row within its own budget; its outputs, the best hypotheses, are not greedy's."""

    counts_passes = False  # K rows a sentence, and a pass is no step of one output

    def __init__(self, mode: Mode, k: int, drafted: bool = False):
        super().__init__(mode)
        self.settings, self.drafted = beam.BeamSettings(k), drafted

    def instrument(self, p, rec, batch):
        rec.time_module(p.bundle.t5.encoder, "encoder")
        rec.time_passes(p.bundle.decoders, "step")  # one span per pass

    def decode(self, p, batch, reference, rec):
        eos = p.bundle.t5_tokenizer.eos_token_id
        hyps, stats = beam.generate(p.bundle.t5, [e.ids + [eos] for e in batch.encoded], self.settings,
                                    len(batch.index), batch.budgets, drafter=self.drafted or None,
                                    decoders=p.bundle.decoders)
        return Decoded([h[0].ids for h in hyps], stats)


class Peer(Timed):
    """transformers' ``generate``, greedy unless ``extra(p)``'s arguments say (num_beams)."""

    def __init__(self, mode: Mode, extra: Callable[[Profiled], dict] = lambda p: {}, batch_one: bool = False,
                 assisted: bool = False):
        super().__init__(mode)
        self.extra, self.batch_one, self.drafted = extra, batch_one, assisted

    def unavailable(self, p):
        return None if p.hf_t5 is not None else "no transformers T5 loaded"

    def instrument(self, p, rec, batch):
        rec.time_module(p.hf_t5.encoder, "encoder")
        rec.time_module(p.hf_t5, "step")  # generate: one call of the model per step
        if self.drafted:  # the assistant's work is the draft
            rec.time_module(p.small.encoder, "draft")
            rec.wrap(p.small, "generate", "draft")

    def decode(self, p, batch, reference, rec):
        budgets = batch.budgets
        with torch.inference_mode():
            out = p.hf_t5.generate(input_ids=batch.ids, attention_mask=batch.mask, do_sample=False,
                                   max_new_tokens=max(budgets), **{"num_beams": 1, **self.extra(p)})
        eos = p.hf_t5.config.eos_token_id
        rows = [row[1:] for row in out.tolist()]  # no start token; cut at EOS (then padding)
        return Decoded([(row[: row.index(eos)] if eos in row else row)[:b] for row, b in zip(rows, budgets)])


class CT2(Timed):
    """One call into CTranslate2's own threads: latency only, no parts."""

    counts_passes = False

    def unavailable(self, p):
        return None if p.ct2 is not None else p.ct2_unavailable or "no CTranslate2 conversion of the T5"

    def decode(self, p, batch, reference, rec):
        budgets, eos = batch.budgets, p.bundle.t5_tokenizer.eos_token_id
        outputs = p.ct2.translate(self.mode.name, [e.ids + [eos] for e in batch.encoded], max(budgets))
        return Decoded([o[:b] for o, b in zip(outputs, budgets)])


TIMED: dict[str, Timed] = {t.mode.name: t for t in (
    Core(runners.T5),
    EdiT5(runners.EDIT5),
    Core(runners.SPECULATIVE, reads_t5_ids=True),
    Core(runners.T5, modes.SPECULATIVE_EDIT5, reads_t5_ids=True,
         draft=lambda p, batch, reference: drafters.Mix(drafters.EdiT5(p.bundle.edit5, p.bundle.markers), drafters.Ngram())),
    Core(runners.T5, modes.SPECULATIVE_COPY, draft=lambda p, batch, reference: drafters.copy_draft()),
    Core(runners.T5, modes.SPECULATIVE_PERFECT, draft=lambda p, batch, reference: drafters.Follow(reference)),
    Beams(modes.BEAM4, 4),
    Beams(modes.BEAM4_DRAFTED, 4, drafted=True),
    Peer(modes.HF_GREEDY),
    Peer(modes.HF_ASSISTED, lambda p: {"assistant_model": p.small}, batch_one=True, assisted=True),
    Peer(modes.HF_PROMPT_LOOKUP, lambda p: {"prompt_lookup_num_tokens": p.prompt_lookup_tokens}, batch_one=True),
    Peer(modes.HF_BEAM4, lambda p: {"num_beams": 4}),
    CT2(modes.CT2_GREEDY),
    CT2(modes.CT2_INT8),
    CT2(modes.CT2_BEAM4),
)}
