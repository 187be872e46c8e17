"""The modes on trained models: each mode decodes the same batches, taking turns batch by batch.

``profile_modes`` encodes the sentences once, sorts them longest first and cuts batches (batch
size 1: per sentence); after ``warmup`` untimed batches, every batch runs T5 first (the reference)
and then each other mode, so that a change in machine load hits all of them alike. A
``Profiler.run`` of one mode on one batch gives a ``Sample``::

    latency   input ids on the device -> output ids (tokenizing and rendering text excluded:
              they are the same for every mode)
    encoder   the encoder passes of T5 (the verifier) or of EdiT5
    decoder   one entry per decoder pass: a pass of the decoding core (``core.Decoder.forward``:
              one token per row for greedy, a window of draft tokens per row when speculating),
              a step of ``generate`` (the hf-* peers), or a step of EdiT5's insertion decoder
    draft     the drafter's work: EdiT5's tags, pointers and insertions (its encoder too, unless
              its heads sit on the T5's encoder); the copy/n-gram/perfect drafters' lookups
    other     the rest: EdiT5's tag layer and pointer walk; argmax and bookkeeping

For example, a speculative sample of 3 verifier passes is latency = encoder + (pass 1 + pass 2 +
pass 3) + draft (EdiT5 once, lookups before each pass) + other.

Each mode is one object of ``editspec.profiling.timed`` (``TIMED``), which says what to hook and
how to decode. Our T5 modes run on the decoding core (``editspec.decoding.core``): ``t5`` and
``speculative`` are the corrector's own mode objects (``editspec.decoding.runners``: the same
drafter, the cheaper, as measured, of EdiT5's draft and the source, each mixed with the output's
own n-grams), ``speculative-edit5`` EdiT5's draft and ``speculative-copy`` the source, each mixed
with the n-grams, ``speculative-perfect`` T5's own greedy output; a batch's sentences fill the
core's slots (batch size 1: one slot), each with its own output budget, as in ``Corrector``
(``editspec.decoding.budgets``: a short row beside a long one decodes as alone). The decoding code is
not changed to be timed (``editspec.profiling.clock``): forward hooks on ``model.encoder``, a
span per pass from the bundle's decoders (``Decoders.timed``), forward hooks on the T5 model for
``generate`` (one call per step), a pre-hook on the first block of EdiT5's insertion decoder (a
step runs from one call to the next; the last until ``generate_edits`` returns), a
``TimedDrafter`` around our drafters and a wrapper around the assistant's ``generate`` in
``hf-assisted``; the CTranslate2 peers (``ct2-*``, ``editspec.profiling.ct2``) are one call into
its own threads, timed whole (latency only: the whole call is "other"). The draft window's cost
model is measured before the clock starts. Each output
is compared with T5's greedy output of the same batch (``identical_to_t5``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import torch
from torch.profiler import ProfilerActivity, profile
from tqdm import tqdm

from editspec.modeling.tensors import model_inputs
from editspec.decoding import drafters
from editspec.errors import EditspecError
from editspec.modes import BY_NAME, CT2_GREEDY, T5
from editspec.profiling.clock import Clock, Recorder, Sample
from editspec.profiling.sentences import batches
from editspec.profiling.stats import median, summarize, summary
from editspec.profiling.timed import TIMED, Batch
from editspec.tokenization.tokens import encode

if TYPE_CHECKING:
    from editspec.bundle import Bundle

REFERENCE = T5.name  # every mode's output is compared with T5's greedy output
CT2_REFERENCE = CT2_GREEDY.name  # the peer the speculative mode's speedup is also given against


class Profiler:
    """A bundle's models, and the peers' and settings; each mode (``profiling.timed.TIMED``) runs one batch into a ``Sample``."""

    def __init__(self, bundle: Bundle, small=None, gamma: int | str = "auto", prompt_lookup_tokens: int = 10,
                 ct2=None, ct2_unavailable: str | None = None, hf_t5=None):
        """``bundle``: the corrector's models (``editspec.bundle``); its draft costs start afresh,
        measured by this profile alone. ``small``: hf-assisted's small T5. ``gamma``: the
        speculative modes' draft window: "auto" (the core's, from the measured pass costs), a fixed
        number of tokens, or "all" (the whole remaining draft, up to 48). ``ct2``: a
        ``profiling.ct2.CT2Peer`` of the same T5, or None (``ct2_unavailable`` says why).
        ``hf_t5``: the T5 as transformers' model for the hf-* modes (default: the bundle's, if it is one)."""
        self.bundle, self.ct2, self.ct2_unavailable = bundle, ct2, ct2_unavailable
        bundle.costs.drafts = drafters.DraftCosts()  # the speculative mode's pick, as Corrector's
        t5 = bundle.t5
        self.hf_t5 = hf_t5 if hf_t5 is not None else t5 if hasattr(t5, "generate") else None
        self.small, self.gamma, self.prompt_lookup_tokens = small, gamma, prompt_lookup_tokens
        self.window = None if gamma == "auto" else 48 if gamma == "all" else int(gamma)
        self.device = bundle.device
        self.clock = Clock(self.device)
        self.tokenizer = bundle.t5_tokenizer if t5 is not None else bundle.edit5_tokenizer

    def unavailable(self, mode: str) -> str | None:
        """Why ``mode`` cannot run with these models, or None."""
        have = {"t5": self.bundle.t5, "edit5": self.bundle.edit5, "t5-draft": self.small}
        missing = [k for k in BY_NAME[mode].needs if have[k] is None]
        if missing:
            return f"no {' and no '.join(missing)} model" + (
                " (bundle's t5-draft/ or --t5-draft)" if "t5-draft" in missing else "")
        return TIMED[mode].unavailable(self)

    def make_batch(self, index: list[int], encoded: list, edit5_encoded: list | None) -> Batch:
        tok = self.tokenizer
        ids, mask = model_inputs([encoded[i].ids for i in index], tok.eos_token_id, tok.pad_token_id, self.device)
        batch = Batch(index, [encoded[i] for i in index], ids, mask)
        if self.bundle.edit5 is not None:
            if edit5_encoded is None:
                batch.edit5_encoded, batch.edit5_ids, batch.edit5_mask = batch.encoded, ids, mask
            else:
                rows = [edit5_encoded[i] for i in index]
                batch.edit5_encoded = rows
                batch.edit5_ids, batch.edit5_mask = model_inputs(
                    [r.ids for r in rows], self.bundle.edit5_tokenizer.eos_token_id,
                    self.bundle.edit5_tokenizer.pad_token_id, self.device)
        return batch

    # -- one mode on one batch --

    def run(self, mode: str, batch: Batch, reference: list[list[int]] | None = None) -> Sample:
        """``reference``: T5's greedy outputs of the batch (the perfect drafter's drafts)."""
        timed, rec = TIMED[mode], Recorder(self.clock)
        timed.instrument(self, rec, batch)
        try:
            self.clock.sync()
            start = self.clock.stamp()
            decoded = timed.decode(self, batch, reference, rec)
            end = self.clock.stamp()
            self.clock.sync()
        finally:
            rec.close()
        stats = decoded.stats
        return Sample(
            latency=self.clock.ms(start, end), encoder=rec.total("encoder"), steps=timed.steps(rec, decoded),
            draft=rec.total("draft") if timed.drafted else None, outputs=decoded.outputs,
            finished=timed.finished(batch, decoded.outputs), passes=stats.windows if stats else [],
            spec=stats.totals() if stats else None)

    def same_as_t5(self, mode: str, batch: Batch, outputs: list[list[int]],
                   reference: list[list[int]]) -> list[bool]:
        """Per row: the output equals T5's greedy output (ids; text when EdiT5 has another
        vocabulary, both rendered by aligning them to the source)."""
        return TIMED[mode].same_as_t5(self, batch, outputs, reference)


# -- the whole run --


def profile_modes(profiler: Profiler, sources: list[str], modes: Sequence[str], batch_size: int = 1,
                  warmup: int = 5, max_ids: int | None = None, trace_dir: Path | None = None,
                  progress: bool = False) -> tuple[dict, dict]:
    """(report["modes"], raw per-sample data for the plots). ``t5`` is always run: it is the
    reference of ``speedup_vs_t5`` and ``identical_to_t5`` (and the perfect drafter's draft)."""
    groups, keep = profile_batches(profiler, sources, batch_size, max_ids)
    run_modes, report = runnable(profiler, modes)  # report: so far, the modes skipped and why
    samples: dict[str, list[Sample]] = {m: [] for m in run_modes}
    same: dict[str, list[bool]] = {m: [] for m in run_modes}
    unsupported: dict[str, str] = {}

    def one(mode, batch, reference, keep_sample: bool):
        if mode in unsupported:
            return None
        try:
            sample = profiler.run(mode, batch, reference)
        except ValueError as e:  # transformers refuses assisted generation at batch size > 1
            if TIMED[mode].batch_one and len(batch.index) > 1:
                unsupported[mode] = f"transformers refused batch size {len(batch.index)}: {e}"
                return None
            raise
        if keep_sample:
            samples[mode].append(sample)
        return sample

    if REFERENCE not in run_modes:
        raise EditspecError(f"the profile needs a T5 model (the reference): {report[REFERENCE]['reason']}")
    if not groups:
        raise EditspecError("no sentence fits the models' input length")
    for batch in (groups * (warmup // max(1, len(groups)) + 1))[:warmup]:
        reference = one(REFERENCE, batch, None, False).outputs
        for mode in run_modes[1:]:
            one(mode, batch, reference, False)
    bar = tqdm(total=len(groups), desc="profiling", unit="batch", file=sys.stderr, dynamic_ncols=True,
               disable=not progress)
    for batch in groups:
        reference = one(REFERENCE, batch, None, True).outputs
        same[REFERENCE] += [True] * len(reference)
        for mode in run_modes[1:]:
            sample = one(mode, batch, reference, True)
            if sample is not None:
                same[mode] += profiler.same_as_t5(mode, batch, sample.outputs, reference)
        bar.update(1)
    bar.close()

    if trace_dir is not None:
        reference = profiler.run(REFERENCE, groups[0]).outputs
        for mode in run_modes:
            if mode not in unsupported:
                trace(lambda: profiler.run(mode, groups[0], reference), trace_dir / f"trace-{mode}.json",
                      profiler.device)

    mode_reports(profiler, report, run_modes, samples, same, unsupported)
    ordered = {m: report[m] for m in BY_NAME if m in report}
    return ordered, {"samples": samples, "sentences": keep, "skipped_long": len(sources) - keep}


def profile_batches(profiler: Profiler, sources: list[str], batch_size: int,
                    max_ids: int | None) -> tuple[list, int]:
    """The batches the modes run (``profiler.make_batch``'s), longest first as ``editspec
    correct`` batches, of the sentences that fit ``max_ids`` in each model's ids; and how many fit."""
    encoded = encode(profiler.tokenizer, sources)
    edit5_encoded = None
    if profiler.bundle.edit5 is not None and not profiler.bundle.shared_vocab:
        edit5_encoded = encode(profiler.bundle.edit5_tokenizer, sources)
    fits = lambda e: e.ids and (max_ids is None or len(e.ids) <= max_ids)  # noqa: E731
    keep = [i for i, e in enumerate(encoded) if fits(e) and (edit5_encoded is None or fits(edit5_encoded[i]))]
    order = sorted(keep, key=lambda i: -len(encoded[i].ids))  # as editspec correct batches
    return [profiler.make_batch(b, encoded, edit5_encoded) for b in batches(order, batch_size)], len(keep)


def runnable(profiler: Profiler, modes: Sequence[str]) -> tuple[list[str], dict[str, dict]]:
    """The modes to run, the reference first, and the report of each the bundle cannot run
    (skipped, with why)."""
    run_modes, report = [], {}
    for mode in [REFERENCE] + [m for m in modes if m != REFERENCE]:
        why = profiler.unavailable(mode)
        if why:
            report[mode] = {"status": "skipped", "reason": why}
        else:
            run_modes.append(mode)
    return run_modes, report


def mode_reports(profiler: Profiler, report: dict, run_modes: list[str], samples: dict[str, list[Sample]],
                 same: dict[str, list[bool]], unsupported: dict[str, str]) -> None:
    """Each run mode's entry of ``report``: its samples summarized against T5's (and CTranslate2's)."""
    t5_latency = median(summary([s.latency for s in samples[REFERENCE]]))
    t5_step = median(summary([x for s in samples[REFERENCE] for x in s.steps]))
    for mode in run_modes:
        if mode in unsupported:
            report[mode] = {"status": "unsupported", "reason": unsupported[mode]}
        else:
            report[mode] = summarize(samples[mode], same[mode], "trained", t5_latency, t5_step)
            if not TIMED[mode].counts_passes:  # its outputs are not what its decoder emits / no passes seen
                report[mode].pop("tokens_per_pass", None)
            report[mode].update(TIMED[mode].report(profiler))
    ct2 = report.get(CT2_REFERENCE, {})
    if ct2.get("status") == "ok":  # the peer a user would pick: its median latency / each mode's
        for e in (report[m] for m in run_modes if report[m].get("status") == "ok"):
            e["speedup_vs_ct2_greedy"] = ct2["latency_ms"]["median"] / e["latency_ms"]["median"]


def trace(fn: Callable[[], object], path: Path, device: torch.device) -> None:
    """A torch.profiler chrome trace of one call (the record_function labels ``editspec.t5.encode``
    and ``editspec.decoding.pass`` show)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
    prof.export_chrome_trace(str(path))
