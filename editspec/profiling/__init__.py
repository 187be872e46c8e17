"""Latency profile of every decoding mode, and of EdiT5/T5 architectures at their real sizes.

``editspec profile`` times each mode on the same batches (batch size 1: per sentence), modes
taking turns batch by batch so that a change in machine load hits all of them alike, after
``--warmup`` untimed batches and with a fixed number of CPU threads. A sample splits into::

    latency   input ids on the device -> output ids (tokenizing and rendering text excluded:
              they are the same for every mode)
    encoder   the encoder pass of T5 (the verifier) or of EdiT5
    decoder   one entry per decoder pass: a T5 step (one token per row), a verifier pass over
              a window of draft tokens, or a step of EdiT5's one-layer insertion decoder
    draft     the drafter's work: EdiT5's tags, pointers and insertions; the small T5's
              encoder and steps; the copy/perfect drafters' n-gram lookups
    other     the rest: EdiT5's tag layer and pointer walk; argmax and bookkeeping

For example, a speculative sample of 3 verifier passes is latency = encoder + (pass 1 + pass 2 +
pass 3) + draft (EdiT5 once, lookups before each pass) + other.

The decoding code is not changed to be timed; the stamps are taken at module boundaries:
forward hooks on ``model.encoder`` and on the T5 model itself (every pass of
``editspec.t5.decode_step`` and of ``generate`` is one call of the model), a pre-hook on the
first block of EdiT5's insertion decoder (a step runs from one call to the next; the last
until ``generate_edits`` returns), a wrapper around our drafters (``TimedDrafter``) and around
the assistant's ``generate`` in ``hf-assisted``. On CUDA a stamp is a ``torch.cuda.Event``,
all read after one ``synchronize`` per sample; on CPU it is ``time.perf_counter``.

Speculative modes also count, per verifier pass and row, the draft tokens proposed and
accepted (``TimedDrafter``), which gives the acceptance histogram and the per-token acceptance
α of Leviathan et al.'s model: each draft token is accepted with probability α until the first
rejection, so α = accepted / (accepted + rejections). With γ draft tokens per pass and c the
cost of drafting one token relative to one verifier step, the expected speedup is
(1 - α^(γ+1)) / ((1 - α)(γc + 1)); the report sets it beside the measured one.

``--architectures`` times T5 and EdiT5 at real sizes with random weights. Random weights decode
nonsense of any length, so the work is forced to follow the gold targets: T5 may not emit EOS
and runs len(target) + 1 steps; EdiT5's tags and pointers are overridden (forward hooks on its
tag classifier and pointer projections) to the gold edits of ``editspec.edits.convert``, and its
insertion decoder runs len(insertions) steps. These numbers are marked ``forced-length``; the
modes of trained models are marked ``trained``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch

from editspec.errors import EditspecError

MODES = ("t5", "edit5", "speculative", "speculative-copy", "speculative-small",
         "speculative-perfect", "hf-greedy", "hf-assisted", "hf-prompt-lookup")
NEEDS = {"t5": ("t5",), "edit5": ("edit5",), "speculative": ("t5", "edit5"),
         "speculative-copy": ("t5",), "speculative-small": ("t5", "t5-draft"),
         "speculative-perfect": ("t5",), "hf-greedy": ("t5",), "hf-assisted": ("t5", "t5-draft"),
         "hf-prompt-lookup": ("t5",)}
SPECULATIVE = ("speculative", "speculative-copy", "speculative-small", "speculative-perfect")
BATCH_ONE = ("hf-assisted", "hf-prompt-lookup")  # transformers: assisted generation, batch 1 only

# Real sizes (T5 1.0 small/base; EdiT5 = T5's encoder + a one-layer insertion decoder, pointed markers).
ARCHITECTURES = {
    "t5-small": ("t5", dict(d_model=512, d_kv=64, d_ff=2048, num_heads=8, num_layers=6, num_decoder_layers=6)),
    "t5-base": ("t5", dict(d_model=768, d_kv=64, d_ff=3072, num_heads=12, num_layers=12, num_decoder_layers=12)),
    "edit5-small": ("edit5", dict(d_model=512, d_kv=64, d_ff=2048, num_heads=8, num_layers=6, num_decoder_layers=1)),
    "edit5-base": ("edit5", dict(d_model=768, d_kv=64, d_ff=3072, num_heads=12, num_layers=12, num_decoder_layers=1)),
}
VOCAB = 32128
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16,
          "float16": torch.float16}


# -- data --


def read_data(path: str | os.PathLike, limit: int | None = None,
              seed: int | None = None) -> tuple[list[str], list[str] | None]:
    """(sources, gold targets or None) as natural text: M2 (S lines and annotator 0's edits,
    detokenized), ``source<TAB>target`` lines, or plain text (one sentence a line, no targets).
    ``limit``: the first N sentences, or with ``seed`` a random sample of N (in file order)."""
    from editspec.data.m2 import apply_edits, is_m2, parse_m2
    from editspec.text.tokenized import detokenize

    p = Path(path)
    if not p.is_file():
        raise EditspecError(f"no such file: {p}")
    sources, targets = [], []
    try:
        if is_m2(p):
            with open(p, encoding="utf-8") as f:
                for tokens, edits in parse_m2(f):
                    if tokens:
                        sources.append(detokenize(" ".join(tokens)))
                        targets.append(detokenize(" ".join(apply_edits(tokens, [e for e in edits if e[4] == 0]))))
        else:
            lines = [line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
            if lines and all("\t" in line for line in lines):
                for line in lines:
                    s, t = line.split("\t", 1)
                    sources.append(s.strip())
                    targets.append(t.strip())
            else:
                sources, targets = [line.strip() for line in lines], None
    except UnicodeDecodeError as e:
        raise EditspecError(f"{p} is not UTF-8 text") from e
    if not sources:
        raise EditspecError(f"{p} holds no sentences")
    if limit is not None:
        import random

        keep = range(min(limit, len(sources))) if seed is None else \
            sorted(random.Random(seed).sample(range(len(sources)), min(limit, len(sources))))
        sources = [sources[i] for i in keep]
        targets = [targets[i] for i in keep] if targets is not None else None
    return sources, targets


# -- stamps --


class Clock:
    """Time stamps: CUDA events on the current stream (read after one synchronize), or
    ``time.perf_counter`` on CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def stamp(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def ms(self, a, b) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


class Recorder:
    """Spans (start, end) and marks per label, taken by hooks and wrappers it installs and
    removes again (``close``)."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.spans: dict[str, list] = defaultdict(list)
        self.marks: dict[str, list] = defaultdict(list)
        self._undo: list[Callable[[], None]] = []

    @contextlib.contextmanager
    def span(self, label: str):
        start = self.clock.stamp()
        try:
            yield
        finally:
            self.spans[label].append((start, self.clock.stamp()))

    def mark(self, label: str) -> None:
        self.marks[label].append(self.clock.stamp())

    def time_module(self, module: torch.nn.Module, label: str) -> None:
        """Every call of ``module`` is a span."""
        starts = []
        pre = module.register_forward_pre_hook(lambda m, args: starts.append(self.clock.stamp()))
        post = module.register_forward_hook(
            lambda m, args, out: self.spans[label].append((starts.pop(), self.clock.stamp())))
        self._undo += [pre.remove, post.remove]

    def mark_module(self, module: torch.nn.Module, label: str) -> None:
        """Every call of ``module`` is a mark (when it starts)."""
        self._undo.append(module.register_forward_pre_hook(lambda m, args: self.mark(label)).remove)

    def override(self, module: torch.nn.Module, output: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Replace ``module``'s output by ``output(its output)`` (forced-length runs)."""
        self._undo.append(module.register_forward_hook(lambda m, args, out: output(out)).remove)

    def wrap(self, obj, name: str, label: str) -> None:
        """Time calls of the method ``obj.name`` (an instance attribute shadows the class's)."""
        original = getattr(obj, name)

        def timed(*args, **kwargs):
            with self.span(label):
                return original(*args, **kwargs)

        setattr(obj, name, timed)
        self._undo.append(lambda: delattr(obj, name))

    def close(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo = []

    def total(self, label: str) -> float:
        return sum(self.clock.ms(a, b) for a, b in self.spans.get(label, []))

    def durations(self, label: str) -> list[float]:
        return [self.clock.ms(a, b) for a, b in self.spans.get(label, [])]

    def steps(self, label: str, end) -> list[float]:
        """Durations between consecutive marks, the last one until ``end``."""
        marks = self.marks.get(label, []) + [end]
        return [self.clock.ms(a, b) for a, b in zip(marks, marks[1:])] if len(marks) > 1 else []


# -- drafters --


class TimedDrafter:
    """Wraps a ``editspec.speculative.Drafter``: times it (``draft`` spans) and works out, for
    every verifier pass and row, how many draft tokens were proposed and accepted.

    The verifier accepts the longest prefix of the (cut) draft that equals its own greedy
    tokens and then adds one token of its own, which differs from the next draft token; so the
    accepted count of a pass is the common prefix of the draft and the tokens the row gained
    by the next proposal (or by the end, EOS included when it was emitted).
    """

    def __init__(self, inner, recorder: Recorder):
        self.inner, self.recorder = inner, recorder
        self.tokenizer = inner.tokenizer
        self.passes: list[tuple[int, int]] = []  # (proposed, accepted) per row and pass
        self._pending: dict[int, tuple[int, list[int]]] = {}

    def begin(self, input_ids, attention_mask, eos_token_id):
        self.eos = eos_token_id
        with self.recorder.span("draft"):
            self.inner.begin(input_ids, attention_mask, eos_token_id)

    def propose(self, rows, outputs, gammas):
        for r, out in zip(rows, outputs):
            self._settle(r, out, eos=False)
        with self.recorder.span("draft"):
            drafts = self.inner.propose(rows, outputs, gammas)
        for r, out, d, g in zip(rows, outputs, drafts, gammas):
            d = list(d[:g])  # as speculative_generate cuts it: to gamma, then after EOS
            self._pending[r] = (len(out), d[: d.index(self.eos) + 1] if self.eos in d else d)
        return drafts

    def finish(self, outputs: list[list[int]], stats) -> None:
        for r in list(self._pending):
            self._settle(r, outputs[r], eos=stats.tokens[r] > len(outputs[r]))

    def _settle(self, row: int, out: list[int], eos: bool) -> None:
        if row in self._pending:
            start, draft = self._pending.pop(row)
            new = out[start:] + [self.eos] * eos
            n = 0
            while n < len(draft) and n < len(new) and draft[n] == new[n]:
                n += 1
            self.passes.append((len(draft), n))


# -- samples and summaries --


@dataclass
class Sample:
    """One mode on one batch."""

    latency: float
    encoder: float
    steps: list[float]
    draft: float | None
    outputs: list[list[int]]
    finished: list[bool]  # EOS emitted (not cut by max_new_tokens)
    passes: list[tuple[int, int]] = field(default_factory=list)  # speculative: (proposed, accepted)
    spec: dict | None = None  # speculative: summed SpecStats

    @property
    def decoder(self) -> float:
        return sum(self.steps)

    @property
    def other(self) -> float:
        return self.latency - self.encoder - self.decoder - (self.draft or 0.0)


def summary(values: Sequence[float]) -> dict | None:
    if not values:
        return None
    ordered = sorted(values)

    def q(p):  # nearest rank
        return ordered[min(len(ordered) - 1, max(0, math.ceil(p * len(ordered)) - 1))]

    return {"median": statistics.median(ordered), "p90": q(0.90), "p95": q(0.95),
            "mean": statistics.fmean(ordered), "n": len(ordered)}


def expected_tokens_per_pass(alpha: float, gamma: float) -> float:
    """Leviathan et al.: E[tokens per verifier pass] = (1 - α^(γ+1)) / (1 - α)."""
    return gamma + 1 if alpha >= 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def expected_speedup(alpha: float, gamma: float, c: float) -> float:
    """Leviathan et al.: (1 - α^(γ+1)) / ((1 - α)(γc + 1))."""
    return expected_tokens_per_pass(alpha, gamma) / (gamma * c + 1)


def time_spelling(sources: Sequence[str], warmup: int) -> dict:
    """ms per sentence of ``editspec.spelling``: a text step before every mode, the same for all,
    so it is timed apart from them (after ``warmup`` untimed sentences), and the seconds its first
    load took (0 if this process had loaded it before)."""
    from editspec.text.spelling import load_speller

    start = time.perf_counter()
    speller = load_speller()  # the first call loads the dictionaries: a once-per-process cost
    load_seconds = time.perf_counter() - start
    for text in sources[:warmup]:
        speller.respell(text)
    times = []
    for text in sources:
        start = time.perf_counter()
        speller.respell(text)
        times.append((time.perf_counter() - start) * 1e3)
    return {**summary(times), "load_seconds": load_seconds}


def time_rescoring(corrector, sources: Sequence[str], warmup: int) -> dict:
    """ms per sentence of ``editspec.rescoring`` for each model ``corrector`` holds ({"edit5": ...,
    "t5": ...}): a step after the model, so it is timed apart from the modes, on that model's own
    outputs of ``sources`` (as the corrector reads them), one sentence at a time after ``warmup``
    untimed ones; ``changed`` counts the outputs it had edits to score. With the spelling step on,
    ``real_words`` times the check for made-up words (``corrector.real_words``) on the same outputs,
    a step after the model too."""
    from editspec.corrector import Corrector
    from editspec.text.guard import real_words
    from editspec.decoding.rescoring import rescore, scorer

    units = list(sources)
    if corrector.spelling:
        from editspec.text.spelling import load_speller, respell_all

        units, knows = respell_all(units), load_speller().knows
    timed = {}
    for kind in ("edit5", "t5"):
        model, tok = getattr(corrector, kind), getattr(corrector, f"{kind}_tokenizer")
        if model is None:
            continue
        plain = Corrector(kind, **{kind: model, f"{kind}_tokenizer": tok}, paths=corrector.paths,
                          max_edit_words=corrector.max_edit_words)
        outputs, score = plain.correct(units), scorer(model, tok)
        for unit, output in zip(units[:warmup], outputs[:warmup]):
            rescore([unit], [output], score)
        times = []
        for unit, output in zip(units, outputs):
            start = time.perf_counter()
            rescore([unit], [output], score)
            times.append((time.perf_counter() - start) * 1e3)
        timed[kind] = {**summary(times), "changed": sum(o != u for o, u in zip(outputs, units))}
        if corrector.spelling:
            times = []
            for unit, output in zip(units, outputs):
                start = time.perf_counter()
                real_words(unit, output, knows)
                times.append((time.perf_counter() - start) * 1e3)
            timed[kind]["real_words"] = summary(times)
    return timed


def _median(s: dict | None) -> float | None:
    return None if s is None else s["median"]


def summarize(samples: list[Sample], same: list[bool] | None, source: str, t5_latency: float | None,
              t5_step: float | None = None) -> dict:
    """The report entry of one mode (``same``: per sentence, output equal to T5's; ``t5_latency``,
    ``t5_step``: medians of plain T5, for the speedup and Leviathan's cost ratio c)."""
    latency = summary([s.latency for s in samples])
    steps = [len(s.steps) for s in samples]
    step_ms = summary([x for s in samples for x in s.steps])
    drafts = [s.draft for s in samples if s.draft is not None]
    entry = {
        "status": "ok", "source": source,
        "latency_ms": latency,
        "encoder_ms": summary([s.encoder for s in samples]),
        "decoder_ms": summary([s.decoder for s in samples]),
        "decoder_step_ms": step_ms,
        "decoder_steps": summary(steps),
        "draft_ms": summary(drafts) if drafts else None,
        "other_ms": summary([s.other for s in samples]),
        "output_tokens": summary([len(o) for s in samples for o in s.outputs]),
        "speedup_vs_t5": t5_latency / latency["median"] if t5_latency and latency else None,
        "identical_to_t5": sum(same) / len(same) if same else None,
        "acceptance_rate": None,
    }
    if samples and all(len(s.outputs) == 1 for s in samples):  # batch 1: passes are the row's
        tokens = sum(len(s.outputs[0]) + s.finished[0] for s in samples)
        entry["tokens_per_pass"] = tokens / max(1, sum(steps))
    specs = [s.spec for s in samples if s.spec is not None]
    if specs:
        total = {k: sum(sp[k] for sp in specs) for k in ("proposed", "accepted", "tokens", "row_passes")}
        passes = [p for s in samples for p in s.passes]
        rejections = sum(1 for proposed, accepted in passes if accepted < proposed)
        alpha = total["accepted"] / max(1, total["accepted"] + rejections)
        gamma = total["proposed"] / max(1, total["row_passes"])
        c = (sum(drafts) / max(1, total["proposed"])) / t5_step if t5_step else None
        entry["acceptance_rate"] = total["accepted"] / max(1, total["proposed"])
        entry["tokens_per_pass"] = total["tokens"] / max(1, total["row_passes"])
        entry["leviathan"] = {
            "alpha": alpha, "gamma": gamma, "c": c,
            "expected_tokens_per_pass": expected_tokens_per_pass(alpha, gamma),
            "expected_speedup": expected_speedup(alpha, gamma, c) if c is not None else None,
        }
        entry["accepted_per_pass"] = dict(sorted(Counter(a for _, a in passes).items()))
        entry["counts"] = total
    return entry


# -- the profiler --


@dataclass
class Batch:
    index: list[int]  # sentence numbers
    encoded: list  # editspec.tokens.Encoded per row (T5's tokenizer; EdiT5's when no T5)
    ids: torch.Tensor
    mask: torch.Tensor
    edit5_encoded: list | None = None
    edit5_ids: torch.Tensor | None = None
    edit5_mask: torch.Tensor | None = None

    @property
    def max_new(self) -> int:
        return 2 * self.ids.shape[1] + 16  # as editspec.corrector: GEC output is about as long as its input


def _tensors(sequences: Sequence[Sequence[int]], eos: int, pad: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Model inputs ``ids + [EOS]``, right-padded, and the attention mask."""
    rows = [list(s) + [eos] for s in sequences]
    width = max(map(len, rows))
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=device)
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
    return ids, mask


def batches(order: list[int], size: int) -> list[list[int]]:
    return [order[i:i + size] for i in range(0, len(order), size)]


class Profiler:
    """Loaded models and the mode functions; each mode runs one batch into a ``Sample``."""

    def __init__(self, t5=None, t5_tokenizer=None, edit5=None, edit5_tokenizer=None, small=None,
                 gamma: int | str = 4, prompt_lookup_tokens: int = 10):
        from editspec.tokenization.tokens import marker_ids

        self.t5, self.t5_tokenizer = t5, t5_tokenizer
        self.edit5, self.edit5_tokenizer = edit5, edit5_tokenizer
        self.small, self.gamma, self.prompt_lookup_tokens = small, gamma, prompt_lookup_tokens
        self.markers = marker_ids(edit5_tokenizer) if edit5 is not None else []
        self.shared_vocab = (t5 is not None and edit5 is not None
                             and t5_tokenizer.get_vocab() == edit5_tokenizer.get_vocab())
        model = t5 if t5 is not None else edit5
        self.device = model.device
        self.clock = Clock(self.device)
        self.tokenizer = t5_tokenizer if t5 is not None else edit5_tokenizer

    def unavailable(self, mode: str) -> str | None:
        """Why ``mode`` cannot run with these models, or None."""
        have = {"t5": self.t5, "edit5": self.edit5, "t5-draft": self.small}
        missing = [k for k in NEEDS[mode] if have[k] is None]
        if missing:
            return f"no {' and no '.join(missing)} model" + (
                " (bundle's t5-draft/ or --t5-draft)" if "t5-draft" in missing else "")
        if mode == "speculative" and not self.shared_vocab:
            return "EdiT5 and T5 use different tokenizers (the profiler's EdiT5 drafter reads T5's ids)"
        return None

    def make_batch(self, index: list[int], encoded: list, edit5_encoded: list | None) -> Batch:
        tok = self.tokenizer
        ids, mask = _tensors([encoded[i].ids for i in index], tok.eos_token_id, tok.pad_token_id, self.device)
        batch = Batch(index, [encoded[i] for i in index], ids, mask)
        if self.edit5 is not None:
            if edit5_encoded is None:
                batch.edit5_encoded, batch.edit5_ids, batch.edit5_mask = batch.encoded, ids, mask
            else:
                rows = [edit5_encoded[i] for i in index]
                batch.edit5_encoded = rows
                batch.edit5_ids, batch.edit5_mask = _tensors(
                    [r.ids for r in rows], self.edit5_tokenizer.eos_token_id,
                    self.edit5_tokenizer.pad_token_id, self.device)
        return batch

    # -- one mode on one batch --

    def run(self, mode: str, batch: Batch, reference: list[list[int]] | None = None) -> Sample:
        """``reference``: T5's greedy outputs of the batch (the perfect drafter's drafts)."""
        rec = Recorder(self.clock)
        timed = None
        if mode == "edit5":
            rec.time_module(self.edit5.encoder, "encoder")
            rec.mark_module(self.edit5.decoder.block[0], "step")
        else:
            rec.time_module(self.t5.encoder, "encoder")
            rec.time_module(self.t5, "step")
        if mode == "hf-assisted":
            rec.time_module(self.small.encoder, "draft")
            rec.wrap(self.small, "generate", "draft")
        spec = None
        try:
            self.clock.sync()
            start = self.clock.stamp()
            if mode == "edit5":
                outputs, end_of_decoder = self._edit5(batch)
            elif mode in SPECULATIVE:
                timed = TimedDrafter(self._drafter(mode, reference), rec)
                outputs, stats = self._speculative(batch, timed)
            else:
                outputs = self._t5(mode, batch)
            end = self.clock.stamp()
            self.clock.sync()
        finally:
            rec.close()
        if timed is not None:
            timed.finish(outputs, stats)
            spec = {"proposed": sum(stats.proposed), "accepted": sum(stats.accepted),
                    "tokens": sum(stats.tokens), "row_passes": sum(stats.row_passes)}
        if mode == "edit5":
            steps = rec.steps("step", end_of_decoder)
            finished = [True] * len(outputs)
        else:
            steps = rec.durations("step")
            finished = [len(o) < batch.max_new for o in outputs]
        return Sample(
            latency=self.clock.ms(start, end), encoder=rec.total("encoder"), steps=steps,
            draft=rec.total("draft") if (timed is not None or mode == "hf-assisted") else None,
            outputs=outputs, finished=finished, passes=timed.passes if timed else [], spec=spec)

    def _edit5(self, batch: Batch):
        from editspec.tokenization.edits import realize

        ids = batch.edit5_ids
        with torch.inference_mode():
            edits = self.edit5.generate_edits(ids, batch.edit5_mask, max_insertion_tokens=max(32, ids.shape[1] + 16))
        end_of_decoder = self.clock.stamp()
        eos = self.edit5_tokenizer.eos_token_id
        return [realize(e.ids, ed, self.markers, eos) for e, ed in zip(batch.edit5_encoded, edits)], end_of_decoder

    def _drafter(self, mode: str, reference):
        from editspec.decoding import speculative

        if mode == "speculative":
            return speculative.EdiT5Drafter(self.edit5, tokenizer=self.t5_tokenizer, markers=self.markers)
        if mode == "speculative-copy":
            return speculative.CopyDrafter()
        if mode == "speculative-small":
            return speculative.SmallT5Drafter(self.small, tokenizer=self.t5_tokenizer)
        return speculative.StaticDrafter(reference, tokenizer=self.t5_tokenizer)

    def _speculative(self, batch: Batch, drafter):
        from editspec.decoding.speculative import speculative_generate

        return speculative_generate(self.t5, batch.ids, batch.mask, drafter, max_new_tokens=batch.max_new,
                                    gamma=self.gamma, tokenizer=self.t5_tokenizer)

    def _t5(self, mode: str, batch: Batch) -> list[list[int]]:
        from editspec.modeling import t5

        if mode == "t5":
            return t5.greedy(self.t5, batch.ids, batch.mask, max_new_tokens=batch.max_new)
        extra = {}
        if mode == "hf-assisted":
            extra = {"assistant_model": self.small}
        elif mode == "hf-prompt-lookup":
            extra = {"prompt_lookup_num_tokens": self.prompt_lookup_tokens}
        with torch.inference_mode():
            out = self.t5.generate(input_ids=batch.ids, attention_mask=batch.mask, do_sample=False, num_beams=1,
                                   max_new_tokens=batch.max_new, **extra)
        eos = self.t5.config.eos_token_id
        rows = [row[1:] for row in out.tolist()]  # no start token; cut at EOS (then padding)
        return [row[: row.index(eos)] if eos in row else row for row in rows]

    def same_as_t5(self, mode: str, batch: Batch, outputs: list[list[int]],
                   reference: list[list[int]]) -> list[bool]:
        """Per row: the output equals T5's greedy output (ids; text when EdiT5 has another
        vocabulary, both rendered by aligning them to the source)."""
        if mode != "edit5" or self.shared_vocab:
            return [a == b for a, b in zip(outputs, reference)]
        from editspec.tokenization.tokens import render_ids

        mine = [render_ids(self.edit5_tokenizer, e, o) for e, o in zip(batch.edit5_encoded, outputs)]
        theirs = [render_ids(self.t5_tokenizer, e, o) for e, o in zip(batch.encoded, reference)]
        return [a == b for a, b in zip(mine, theirs)]


# -- the whole run --


def profile_modes(profiler: Profiler, sources: list[str], modes: Sequence[str], batch_size: int = 1,
                  warmup: int = 5, max_ids: int | None = None, trace_dir: Path | None = None,
                  progress: bool = False) -> tuple[dict, dict]:
    """(report["modes"], raw per-sample data for the plots). ``t5`` is always run: it is the
    reference of ``speedup_vs_t5`` and ``identical_to_t5`` (and the perfect drafter's draft)."""
    from editspec.tokenization.tokens import encode

    encoded = encode(profiler.tokenizer, sources)
    edit5_encoded = None
    if profiler.edit5 is not None and not profiler.shared_vocab:
        edit5_encoded = encode(profiler.edit5_tokenizer, sources)
    fits = lambda e: e.ids and (max_ids is None or len(e.ids) <= max_ids)  # noqa: E731
    keep = [i for i, e in enumerate(encoded) if fits(e) and (edit5_encoded is None or fits(edit5_encoded[i]))]
    order = sorted(keep, key=lambda i: -len(encoded[i].ids))  # as editspec correct batches
    groups = [profiler.make_batch(b, encoded, edit5_encoded) for b in batches(order, batch_size)]
    report: dict = {}
    run_modes = []
    for mode in ["t5"] + [m for m in modes if m != "t5"]:
        why = profiler.unavailable(mode)
        if why:
            report[mode] = {"status": "skipped", "reason": why}
        else:
            run_modes.append(mode)
    samples: dict[str, list[Sample]] = {m: [] for m in run_modes}
    same: dict[str, list[bool]] = {m: [] for m in run_modes}
    unsupported: dict[str, str] = {}

    def one(mode, batch, reference, keep_sample: bool):
        if mode in unsupported:
            return None
        try:
            sample = profiler.run(mode, batch, reference)
        except ValueError as e:  # transformers refuses assisted generation at batch size > 1
            if mode in BATCH_ONE and len(batch.index) > 1:
                unsupported[mode] = f"transformers refused batch size {len(batch.index)}: {e}"
                return None
            raise
        if keep_sample:
            samples[mode].append(sample)
        return sample

    if "t5" not in run_modes:
        raise EditspecError(f"the profile needs a T5 model (the reference): {report['t5']['reason']}")
    if not groups:
        raise EditspecError("no sentence fits the models' input length")
    for batch in (groups * (warmup // max(1, len(groups)) + 1))[:warmup]:
        reference = one("t5", batch, None, False).outputs
        for mode in run_modes[1:]:
            one(mode, batch, reference, False)
    bar = _bar(len(groups), progress)
    for batch in groups:
        reference = one("t5", batch, None, True).outputs
        same["t5"] += [True] * len(reference)
        for mode in run_modes[1:]:
            sample = one(mode, batch, reference, True)
            if sample is not None:
                same[mode] += profiler.same_as_t5(mode, batch, sample.outputs, reference)
        bar.update(1)
    bar.close()

    if trace_dir is not None:
        reference = profiler.run("t5", groups[0]).outputs
        for mode in run_modes:
            if mode not in unsupported:
                trace(lambda: profiler.run(mode, groups[0], reference), trace_dir / f"trace-{mode}.json",
                      profiler.device)

    t5_latency = _median(summary([s.latency for s in samples["t5"]]))
    t5_step = _median(summary([x for s in samples["t5"] for x in s.steps]))
    for mode in run_modes:
        if mode in unsupported:
            report[mode] = {"status": "unsupported", "reason": unsupported[mode]}
        else:
            report[mode] = summarize(samples[mode], same[mode], "trained", t5_latency, t5_step)
            if mode == "edit5":  # its outputs are not what its decoder emits
                report[mode].pop("tokens_per_pass", None)
    ordered = {m: report[m] for m in MODES if m in report}
    return ordered, {"samples": samples, "sentences": len(keep), "skipped_long": len(sources) - len(keep)}


def trace(fn: Callable[[], object], path: Path, device: torch.device) -> None:
    """A torch.profiler chrome trace of one call (record_function labels of editspec.t5 show)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
    prof.export_chrome_trace(str(path))


def _bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc="profiling", unit="batch", file=sys.stderr, dynamic_ncols=True,
                disable=not enabled)


# -- architectures at real sizes, forced lengths --


def random_architecture(name: str, tokenizer, device, dtype=None, sizes: dict | None = None):
    """A randomly initialised T5 or EdiT5 of the named size (``sizes`` overrides the table)."""
    from transformers import T5Config, T5ForConditionalGeneration

    from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model
    from editspec.tokenization.tokens import marker_ids

    kind, size = (sizes or ARCHITECTURES)[name]
    common = dict(vocab_size=max(size.get("vocab_size", VOCAB), len(tokenizer)), dropout_rate=0.0,
                  pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                  decoder_start_token_id=tokenizer.pad_token_id)
    size = {k: v for k, v in size.items() if k != "vocab_size"}
    torch.manual_seed(0)
    if kind == "t5":
        model = T5ForConditionalGeneration(T5Config(**common, **size))
    else:
        model = EdiT5Model(EdiT5Config(**common, marker_ids=marker_ids(tokenizer), **size))  # as shipped
    model = model.to(device=device, dtype=dtype) if dtype is not None else model.to(device)
    return kind, model.eval()


def _gold_edit5(batch_rows, edits_rows, d_model: int, device, dtype):
    """Tag logits and pointer query/key vectors that make EdiT5 decode the gold edits:
    key j = one-hot(j), query i = 100 · one-hot(gold successor of i), so query·key peaks at the
    successor; EOS (position n) starts and ends the walk."""
    from editspec.tokenization.edits import KEEP

    batch, width = len(batch_rows), max(len(r) for r in batch_rows) + 1
    tags = torch.full((batch, width, 2), 0.0)
    query = torch.zeros(batch, width, d_model)
    key = torch.zeros(batch, width, d_model)
    key[:, torch.arange(width), torch.arange(width)] = 1.0
    for b, (src, edits) in enumerate(zip(batch_rows, edits_rows)):
        n = len(src)
        keep = torch.tensor([t == KEEP for t in edits.tags] + [True])
        tags[b, : n + 1, 1] = torch.where(keep, 10.0, -10.0)
        tags[b, : n + 1, 0] = -tags[b, : n + 1, 1]
        walk = [n] + list(edits.order) + [n]
        for a, c in zip(walk, walk[1:]):
            query[b, a, c] = 100.0
    return tags.to(device, dtype), query.to(device, dtype), key.to(device, dtype)


def profile_architectures(sources: list[str], targets: list[str], tokenizer, device, dtype=None,
                          batch_size: int = 1, warmup: int = 5, names: Sequence[str] | None = None,
                          sizes: dict | None = None, max_ids: int = 127, progress: bool = False) -> dict:
    """report["architectures"]: each architecture on the gold pairs, decoder steps forced to the
    gold lengths (see the module docstring). Architectures take turns batch by batch."""
    from editspec.modeling import t5 as t5_module
    from editspec.tokenization.edits import TooFewMarkers, convert
    from editspec.tokenization.tokens import encode, marker_ids

    sizes = sizes or ARCHITECTURES
    names = list(names or sizes)
    markers, eos, pad = marker_ids(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id
    for kind, size in (sizes[n] for n in names):  # the gold pointers are one-hot keys over d_model
        if kind == "edit5":
            max_ids = min(max_ids, size["d_model"] - 1)
    src_enc, tgt_enc = encode(tokenizer, sources), encode(tokenizer, targets)
    rows = []  # (sentence, source ids, target ids, edits)
    for i, (s, t) in enumerate(zip(src_enc, tgt_enc)):
        if not s.ids or len(s.ids) > max_ids or len(t.ids) > 2 * max_ids:
            continue
        try:
            rows.append((i, s.ids, t.ids, convert(s.ids, t.ids, markers, eos)))
        except TooFewMarkers:
            continue
    if not rows:
        raise EditspecError("no sentence pair fits the architectures' input length")
    rows.sort(key=lambda r: -len(r[1]))
    groups = batches(rows, batch_size)
    models = {name: random_architecture(name, tokenizer, device, dtype, sizes) for name in names}
    clock = Clock(torch.device(device))
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    forced: dict[str, list[int]] = {name: [] for name in names}

    def no_eos(logits):
        logits[..., eos] = float("-inf")
        return logits

    def run(name, group):
        kind, model = models[name]
        ids, mask = _tensors([r[1] for r in group], eos, pad, device)
        rec = Recorder(clock)
        rec.time_module(model.encoder, "encoder")
        if kind == "t5":
            rec.time_module(model, "step")
            steps = max(len(r[2]) for r in group) + 1  # the target, then EOS
        else:
            rec.mark_module(model.decoder.block[0], "step")
            steps = max(len(r[3].insertions) for r in group)  # insertions end with EOS
            dt = next(model.parameters()).dtype
            tags, query, key = _gold_edit5([r[1] for r in group], [r[3] for r in group],
                                           model.config.d_model, device, dt)
            rec.override(model.tag_classifier, lambda out: tags)
            rec.override(model.pointer_query, lambda out: query)
            rec.override(model.pointer_key, lambda out: key)
        rec.override(model.lm_head, no_eos)
        try:
            with torch.inference_mode():
                clock.sync()
                start = clock.stamp()
                if kind == "t5":
                    outputs = t5_module.greedy(model, ids, mask, max_new_tokens=steps)
                    end_dec = None
                else:
                    edits = model.generate_edits(ids, mask, max_insertion_tokens=steps)
                    end_dec = clock.stamp()
                    outputs = [e.insertions for e in edits]
                end = clock.stamp()
                clock.sync()
        finally:
            rec.close()
        step_ms = rec.durations("step") if kind == "t5" else rec.steps("step", end_dec)
        if len(step_ms) != steps:
            raise RuntimeError(f"{name}: {len(step_ms)} decoder steps instead of the forced {steps}")
        if kind == "edit5":  # the forcing must have produced the gold edits
            for r, e in zip(group, edits):
                if e.tags != r[3].tags or e.order != r[3].order:
                    raise RuntimeError(f"forced EdiT5 decoded other edits than the gold ones (sentence {r[0]})")
        return Sample(clock.ms(start, end), rec.total("encoder"), step_ms, None, outputs,
                      [True] * len(outputs)), steps

    for group in (groups * (warmup // max(1, len(groups)) + 1))[:warmup]:
        for name in names:
            run(name, group)
    bar = _bar(len(groups), progress)
    for group in groups:
        for name in names:
            sample, steps = run(name, group)
            samples[name].append(sample)
            forced[name].append(steps)
        bar.update(1)
    bar.close()

    report = {}
    base = _median(summary([s.latency for s in samples["t5-base"]])) if "t5-base" in samples else None
    for name in names:
        kind, model = models[name]
        entry = summarize(samples[name], None, "forced-length", None)
        entry.pop("identical_to_t5"), entry.pop("acceptance_rate"), entry.pop("speedup_vs_t5")
        entry.pop("output_tokens"), entry.pop("tokens_per_pass", None)
        entry["speedup_vs_t5_base"] = base / entry["latency_ms"]["median"] if base else None
        entry["forced_steps"] = summary(forced[name])
        entry["kind"] = kind
        entry["config"] = {k: getattr(model.config, k) for k in
                           ("vocab_size", "d_model", "d_ff", "num_heads", "num_layers", "num_decoder_layers")}
        entry["parameters"] = sum(p.numel() for p in model.parameters())
        entry["sentences"] = len(rows)
        report[name] = entry
    return report


# -- report files --


def write_report(out: Path, report: dict, raw: dict | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    plots(out, report, raw)


def _f(x, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def markdown(report: dict) -> str:
    unit = "sentence" if report["batch_size"] == 1 else f"batch of {report['batch_size']}"
    lines = [
        "# editspec latency profile", "",
        f"- device: {report['device']}; threads: {report['threads']}; dtype: {report['dtype']}",
        f"- torch {report['torch']}, transformers {report['transformers']}",
        f"- data: {report['data']}: {report['sentences']} sentences "
        f"({report['skipped_long']} longer than the models' input skipped); batch size "
        f"{report['batch_size']}; warm-up {report['warmup']} batches; γ = {report['gamma']}",
        "- options: " + ", ".join(f"{k}={v}" for k, v in report.get("options", {}).items()
                                  if v not in (None, False) and k != "command"), "",
    ]
    if report.get("spelling"):
        s = report["spelling"]
        lines[-1:-1] = [f"- spelling (`editspec.spelling`, on the text before every mode, not in the "
                        f"latencies below): median {s['median']:.3f} ms per sentence, p90 {s['p90']:.3f}; "
                        f"loaded once in {s['load_seconds']:.1f} s"]
    for kind, r in (report.get("rescoring") or {}).items():
        name = "EdiT5" if kind == "edit5" else "T5"
        lines[-1:-1] = [f"- rescoring with the {name} (`editspec.rescoring`, on its "
                        f"output, not in the latencies below): median {r['median']:.2f} ms per sentence, p90 "
                        f"{r['p90']:.2f}, mean {r['mean']:.2f} ({r['changed']} of {r['n']} outputs changed)"]
        if r.get("real_words"):
            w = r["real_words"]
            lines[-1:-1] = [f"- made-up words check on the {name}'s output "
                            f"(`editspec.corrector.real_words`, not in the latencies below): median "
                            f"{w['median']:.3f} ms per sentence, p90 {w['p90']:.3f}"]
    modes = report.get("modes") or {}
    if modes:
        lines += [
            f"## Modes (trained models; ms per {unit}, medians unless marked)", "",
            "| mode | latency | p90 | mean | encoder | decoder ms/step | steps | decoder | draft | other "
            "| speedup vs t5 | identical to t5 | acceptance | tokens/pass |",
            "|---|" + "---:|" * 13,
        ]
        notes = []
        for mode, e in modes.items():
            if e.get("status") != "ok":
                notes.append(f"- `{mode}`: {e['status']}: {e['reason']}")
                continue
            lines.append("| " + " | ".join([
                f"`{mode}`", _f(e["latency_ms"]["median"]), _f(e["latency_ms"]["p90"]), _f(e["latency_ms"]["mean"]),
                _f(_median(e["encoder_ms"])), _f(_median(e["decoder_step_ms"]), 3),
                _f(_median(e["decoder_steps"]), 1), _f(_median(e["decoder_ms"])), _f(_median(e["draft_ms"])),
                _f(_median(e["other_ms"])), _f(e["speedup_vs_t5"]), _f(e["identical_to_t5"], 3),
                _f(e["acceptance_rate"], 3), _f(e.get("tokens_per_pass")),
            ]) + " |")
        lines += [""] + notes + ([""] if notes else [])
        lines += [
            "Steps: decoder passes per " + unit + " (T5: one per token; speculative and hf-assisted/"
            "prompt-lookup: verifier passes; edit5: insertion-decoder steps). Draft: time in the "
            "drafter (EdiT5, small T5, n-gram lookups). Other: latency minus encoder, decoder and "
            "draft (edit5: tag layer and pointer walk). Identical: share of sentences whose output "
            "equals our T5 greedy output (ids; text for an EdiT5 with another vocabulary). "
            "Acceptance: accepted / proposed draft tokens. `hf-prompt-lookup` looks n-grams up in "
            "the decoder's own ids (transformers), never in the source sentence, unlike "
            "`speculative-copy`.", "",
        ]
        spec = {m: e for m, e in modes.items() if e.get("status") == "ok" and e.get("leviathan")}
        if spec:
            lines += [
                "## Speculative decoding: expected (Leviathan et al.) vs measured", "",
                "α: per-token acceptance (accepted / (accepted + rejections)); γ: mean draft tokens "
                "per verifier pass (adaptive here, fixed in the formula); c: draft time per proposed "
                "token / median single-token step of `t5`. Expected speedup (1 − α^(γ+1)) / ((1 − α)(γc + 1)) "
                "assumes a verifier pass costs one single-token step; the measured speedup is "
                "median t5 latency / median mode latency in this run. `speculative-perfect` "
                "(T5's own greedy output as the draft) is the limit of a perfect drafter.", "",
                "| mode | α | γ | c | expected tokens/pass | measured tokens/pass | expected speedup "
                "| measured speedup |",
                "|---|---:|---:|---:|---:|---:|---:|---:|",
            ]
            for mode, e in spec.items():
                lv = e["leviathan"]
                lines.append(f"| `{mode}` | {_f(lv['alpha'], 3)} | {_f(lv['gamma'])} | {_f(lv['c'], 3)} | "
                             f"{_f(lv['expected_tokens_per_pass'])} | {_f(e['tokens_per_pass'])} | "
                             f"{_f(lv['expected_speedup'])} | {_f(e['speedup_vs_t5'])} |")
            lines.append("")
    arch = report.get("architectures") or {}
    if arch:
        lines += [
            "## Architectures at real sizes (random weights, FORCED lengths)", "",
            "Not trained models: decoder steps are forced to the gold targets (T5: target tokens + "
            "EOS; EdiT5: gold tags and order, insertion tokens + EOS). These numbers reproduce the "
            f"structure of the EdiT5 case study (encoder ms, decoder ms/step × steps). ms per {unit}, medians.", "",
            "| architecture | parameters | latency | encoder | decoder ms/step | steps | decoder | other "
            "| speedup vs t5-base |",
            "|---|" + "---:|" * 8,
        ]
        for name, e in arch.items():
            lines.append("| " + " | ".join([
                f"`{name}`", f"{e['parameters'] / 1e6:.0f}M", _f(e["latency_ms"]["median"]),
                _f(_median(e["encoder_ms"])), _f(_median(e["decoder_step_ms"]), 3), _f(_median(e["decoder_steps"]), 1),
                _f(_median(e["decoder_ms"])), _f(_median(e["other_ms"])), _f(e["speedup_vs_t5_base"]),
            ]) + " |")
        lines.append("")
        for big, small in (("t5-base", "edit5-base"), ("t5-small", "edit5-small")):
            if big in arch and small in arch:
                a, b = _median(arch[big]["decoder_ms"]), _median(arch[small]["decoder_ms"])
                if a and b:
                    paper = " (the paper's GPU case study: 14.5×)" if big == "t5-base" else ""
                    lines.append(f"- median decoder time {big} / {small}: {a / b:.1f}×{paper}")
        lines.append("")
    files = (["latency_breakdown.png", "latency_vs_length.png", "accepted_per_pass.png"] if modes else []) \
        + (["architectures.png"] if arch else [])
    lines += ["Plots: " + ", ".join(f"`{f}`" for f in files) + ".", ""]
    return "\n".join(lines)


def plots(out: Path, report: dict, raw: dict | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    unit = "sentence" if report["batch_size"] == 1 else f"batch of {report['batch_size']}"
    parts = [("encoder_ms", "encoder"), ("decoder_ms", "decoder"), ("draft_ms", "draft"), ("other_ms", "other")]

    def stacked(entries: dict, path: Path, title: str):
        names = list(entries)
        fig, ax = plt.subplots(figsize=(8, 0.5 * len(names) + 1.5))
        left = [0.0] * len(names)
        for key, label in parts:
            values = [max(0.0, (entries[n].get(key) or {}).get("mean", 0.0)) for n in names]
            ax.barh(names, values, left=left, label=label)
            left = [a + b for a, b in zip(left, values)]
        ax.invert_yaxis()
        ax.set_xlabel(f"mean ms per {unit}")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)

    ok = {m: e for m, e in (report.get("modes") or {}).items() if e.get("status") == "ok"}
    if report.get("architectures"):
        stacked(report["architectures"], out / "architectures.png",
                "Architectures at real sizes (random weights, forced lengths)")
    if not ok:
        return
    stacked(ok, out / "latency_breakdown.png", "Latency: encoder / decoder / draft / other (trained models)")

    fig, ax = plt.subplots(figsize=(7, 5))
    for mode, samples in (raw or {}).get("samples", {}).items():
        xs = [statistics.fmean(len(o) for o in s.outputs) for s in samples]
        ax.scatter(xs, [s.latency for s in samples], s=8, label=mode, alpha=0.6)
    ax.set_xlabel("output tokens (mean per batch row)")
    ax.set_ylabel(f"ms per {unit}")
    ax.set_title("Latency vs output length")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out / "latency_vs_length.png", dpi=120)
    plt.close(fig)

    spec = {m: e["accepted_per_pass"] for m, e in ok.items() if e.get("accepted_per_pass")}
    fig, ax = plt.subplots(figsize=(8, 5))
    width = 0.8 / max(1, len(spec))
    for k, (mode, hist) in enumerate(spec.items()):
        total = sum(hist.values())
        xs = sorted(int(a) for a in hist)
        ax.bar([x + k * width for x in xs], [hist[x] / total for x in xs], width=width, label=mode)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("draft tokens accepted in a verifier pass (per row)")
    ax.set_ylabel("share of passes")
    ax.set_title("Accepted draft tokens per verifier pass")
    if spec:
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accepted_per_pass.png", dpi=120)
    plt.close(fig)


# -- the command --


def _versions() -> tuple[str, str]:
    import transformers

    return torch.__version__, transformers.__version__


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device}: {torch.cuda.get_device_name(device)}"
    name = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"cpu: {name} ({os.cpu_count()} cores)"


def run_profile(args) -> int:
    from editspec.corrector import Corrector
    from editspec.modeling.loading import DEFAULT_MODEL, quiet_transformers, resolve_device, resolve_models

    if getattr(args, "mode", None):
        raise EditspecError("profile times several modes: use --modes")
    modes = list(dict.fromkeys(args.modes or MODES))
    if modes == ["none"]:
        modes = []
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise EditspecError(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)} (or none)")
    if args.batch_size < 1:
        raise EditspecError("batch size must be at least 1")
    if args.warmup < 0:
        raise EditspecError("--warmup must be 0 or more")
    gamma = args.gamma if args.gamma == "all" else _positive_int(args.gamma, "--gamma")
    dtype = None
    if args.dtype:
        if args.dtype not in DTYPES:
            raise EditspecError(f"unknown dtype {args.dtype!r}; choose one of {', '.join(DTYPES)}")
        dtype = DTYPES[args.dtype]
    if not modes and not args.architectures:
        raise EditspecError("nothing to profile: give --modes or --architectures")
    sources, targets = read_data(args.data, args.limit, args.seed)
    if args.architectures and targets is None:
        raise EditspecError("--architectures forces decoder steps from gold targets: give an M2 file or "
                            "source<TAB>target lines")
    torch.set_num_threads(args.threads or torch.get_num_threads())  # fixed for the whole run
    device = resolve_device(args.device)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise EditspecError(f"--out {out} is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    torch_version, transformers_version = _versions()
    report: dict = {
        "device": _device_name(device), "threads": torch.get_num_threads(), "sentences": 0,
        "batch_size": args.batch_size, "torch": torch_version, "transformers": transformers_version,
        "dtype": args.dtype or "the checkpoints' (random architectures: float32)",
        "data": str(args.data), "limit": args.limit, "seed": args.seed,
        "warmup": args.warmup, "gamma": gamma, "prompt_lookup_tokens": args.prompt_lookup_tokens,
        "skipped_long": 0,
        "options": {k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, list, type(None)))},
        "modes": {}, "architectures": {},
    }
    raw = None
    tokenizer = None
    with quiet_transformers():
        if modes:
            corrector = Corrector.from_pretrained(args.model, edit5=args.edit5, t5=args.t5, device=device)
            small = None
            draft_dir = args.t5_draft
            if draft_dir is None:
                root = Path(args.model) if args.model else DEFAULT_MODEL
                draft_dir = root / "t5-draft" if (root / "t5-draft" / "config.json").is_file() else None
            if draft_dir is not None and any(NEEDS[m][-1] == "t5-draft" for m in modes):
                from editspec.modeling.t5 import load_t5

                small, small_tok = load_t5(draft_dir, device=device)
                if corrector.t5_tokenizer is not None and small_tok.get_vocab() != corrector.t5_tokenizer.get_vocab():
                    raise EditspecError(f"the small T5 at {draft_dir} has another tokenizer than the T5")
            models = [m for m in (corrector.t5, corrector.edit5, small) if m is not None]
            if dtype is not None:
                for m in models:
                    m.to(dtype)
            profiler = Profiler(corrector.t5, corrector.t5_tokenizer, corrector.edit5, corrector.edit5_tokenizer,
                                small, gamma=gamma, prompt_lookup_tokens=args.prompt_lookup_tokens)
            max_ids = min(limit for _, limit in corrector.limits)
            report["modes"], raw = profile_modes(
                profiler, sources, modes, args.batch_size, args.warmup, max_ids,
                out if args.trace else None, progress=sys.stderr.isatty())
            report["sentences"], report["skipped_long"] = raw["sentences"], raw["skipped_long"]
            if corrector.spelling:
                report["spelling"] = time_spelling(sources, args.warmup)
            if corrector.rescore:
                report["rescoring"] = time_rescoring(corrector, sources, args.warmup)
            tokenizer = profiler.tokenizer
        if args.architectures:
            if tokenizer is None:
                from editspec.tokenization.tokens import load_tokenizer

                edit5_path, t5_path = resolve_models(args.model, args.edit5, args.t5) \
                    if (args.model or args.edit5 or args.t5) else (None, None)
                tok_path = t5_path or edit5_path or DEFAULT_MODEL / "tokenizer"
                tokenizer = load_tokenizer(tok_path)
            report["architectures"] = profile_architectures(
                sources, targets, tokenizer, device, dtype, args.batch_size, args.warmup,
                progress=sys.stderr.isatty())
            if not modes:
                report["sentences"] = next(iter(report["architectures"].values()))["sentences"]
    write_report(out, report, raw)
    print(f"wrote {out / 'report.json'}, {out / 'report.md'} and plots", file=sys.stderr)
    return 0


def _positive_int(value, name: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise EditspecError(f"{name} must be a positive integer or 'all', not {value!r}") from None
    if n < 1:
        raise EditspecError(f"{name} must be a positive integer or 'all', not {value!r}")
    return n
