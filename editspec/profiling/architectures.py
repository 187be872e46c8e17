"""T5 and EdiT5 at their real sizes, with random weights and decoder steps forced to gold lengths.

Random weights decode nonsense of any length, so the work is forced to follow the gold targets:

    T5      may not emit EOS (its logit is -inf) and runs len(target) + 1 steps
    EdiT5   its tag classifier and pointer projections are overridden (forward hooks) to decode
            the gold edits of ``editspec.tokenization.edits.convert``; its insertion decoder
            runs len(insertions) steps (they end with EOS)

For example, "She go to school yesterday." -> "She went to school yesterday." is 6 target
tokens (the shipped tokenizer), so T5 runs 7 steps; EdiT5 keeps all but "go" and inserts "went"
after "She", so its one-layer decoder runs 3 steps (<extra_id_1>, "went", EOS), whatever the weights. The run
checks both: a different number of steps, or other edits than the gold ones, is an error.
These numbers are marked ``forced-length``; the modes of trained models are ``trained``.
Architectures take turns batch by batch, after ``warmup`` untimed batches, as the modes do.

Each T5 also verifies drafts, its choices forced to the gold target (``Oracle``: the LM head's
logits of every fed token are replaced by the gold next token's one-hot, after the real
computation), so the verifier passes a draft needs are those of a T5 whose greedy output is the
gold target. Two drafts per T5 (rows ``t5-base+gold`` and ``t5-base+copy``)::

    gold   the gold target itself: what an edit model that drafts T5's output exactly gives;
           its drafting cost is the EdiT5 heads' (``edit5-base`` latency minus its encoder,
           when they sit on the verifier's encoder)
    copy   the source with resync and the output's n-grams (``speculative-copy``'s drafter)

"She go to school yesterday ." -> "She went to school yesterday .", with a window of 8 draft
tokens a pass: the gold draft is accepted whole in one pass (7 tokens with EOS: all fit); the copy
proposes "go ...", is rejected after "She", the verifier's own "went" re-joins the source and the
next pass accepts the rest: 2 passes. The window is the decoding core's (``WindowPolicy``, from
the verifier's measured pass costs), the same for both drafts. Fluency rewrites (JFLEG) break
the copy far more often. Forcing costs a [tokens, vocab] fill per pass, small against a pass.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Sequence

import torch
from tqdm import tqdm
from transformers import T5Config, T5ForConditionalGeneration

from editspec.errors import EditspecError
from editspec.decoding import core, drafters
from editspec.decoding.decoder import Decoders
from editspec.decoding.costs import LOOSE
from editspec.modeling.modeling_edit5 import EdiT5Config, EdiT5Model
from editspec.profiling.clock import Clock, Recorder, Sample
from editspec.decoding.drafters import TimedDrafter
from editspec.modeling.tensors import model_inputs
from editspec.profiling.sentences import batches
from editspec.profiling.stats import median, summarize, summary
from editspec.tokenization.edits import KEEP, Edits, TooFewMarkers, convert
from editspec.tokenization.tokens import encode, marker_ids

# Real sizes (T5 1.0 small/base; EdiT5 = T5's encoder + a one-layer insertion decoder, pointed markers).
ARCHITECTURES = {
    "t5-small": ("t5", dict(d_model=512, d_kv=64, d_ff=2048, num_heads=8, num_layers=6, num_decoder_layers=6)),
    "t5-base": ("t5", dict(d_model=768, d_kv=64, d_ff=3072, num_heads=12, num_layers=12, num_decoder_layers=12)),
    "edit5-small": ("edit5", dict(d_model=512, d_kv=64, d_ff=2048, num_heads=8, num_layers=6, num_decoder_layers=1)),
    "edit5-base": ("edit5", dict(d_model=768, d_kv=64, d_ff=3072, num_heads=12, num_layers=12, num_decoder_layers=1)),
}
VOCAB = 32128
# Our own shapes (the shipped tokenizer's 16,256 ids): the shipped T5, and the lease recipe's deep
# encoder and shallow decoder (configs/lease-t5-wsd.yaml): their ratio is the speed the deeper
# encoder costs before any lease trains it (issue 53's budget: <= 2x at batch 1, <= 1.5x at 32).
OURS = dict(d_model=256, d_kv=64, num_heads=4, feed_forward_proj="gated-gelu", vocab_size=16256)
EXTRA = {
    "t5-shipped": ("t5", dict(OURS, d_ff=1024, num_layers=4, num_decoder_layers=4)),
    "t5-lease": ("t5", dict(OURS, d_ff=768, num_layers=12, num_decoder_layers=2)),
}


def known() -> dict:
    """Every architecture a profile may name (looked up when called: tests shrink ARCHITECTURES)."""
    return {**ARCHITECTURES, **EXTRA}


def random_architecture(name: str, tokenizer, device, dtype=None, sizes: dict | None = None):
    """(kind, a randomly initialised T5 or EdiT5 of the named size); ``sizes`` overrides the table."""
    kind, size = (sizes or known())[name]
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


def gold_edit5(batch_rows, edits_rows, d_model: int, device, dtype):
    """Tag logits and pointer query/key vectors that make EdiT5 decode the gold edits:
    key j = one-hot(j), query i = 100 · one-hot(gold successor of i), so query·key peaks at the
    successor; EOS (position n) starts and ends the walk."""
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


class Oracle(drafters.Drafter):
    """A drafter's proposals, remembered pass by pass (which sentence each row decodes, how far it
    is, how many tokens it drafts), so that ``force`` can replace the verifier's logits by the gold
    target's next tokens: T5 at its real size, but greedy output = the gold target."""

    def __init__(self, inner: drafters.Drafter, targets: Sequence[Sequence[int]]):
        self.inner, self.targets, self.rows = inner, targets, []

    def prepare(self, sources, eos):
        self.inner.prepare(sources, eos)
        self.eos, self.rows = eos, []

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        self.inner.encoded(indices, input_ids, attention_mask, hidden, encoder)

    def propose(self, index, output, limit):
        draft = list(self.inner.propose(index, output, limit))[:limit]
        draft = draft[: draft.index(self.eos) + 1] if self.eos in draft else draft  # as the core cuts it
        self.rows.append((index, len(output), len(draft)))
        return draft

    def finish(self, index, output):
        self.inner.finish(index, output)

    def force(self, logits: torch.Tensor) -> torch.Tensor:
        """The LM head's logits [T, vocab] of one pass -> one-hot of each fed token's gold successor."""
        gold = []
        for index, done, drafted in self.rows:  # the pending token, then the draft: positions done ...
            target = list(self.targets[index]) + [self.eos]
            gold += [target[min(done + j, len(target) - 1)] for j in range(drafted + 1)]
        if len(gold) != logits.shape[0]:
            raise RuntimeError(f"forced verification: {len(gold)} gold tokens for {logits.shape[0]} fed")
        self.rows = []
        return torch.full_like(logits, -1e4).scatter_(1, torch.tensor(gold, device=logits.device)[:, None], 0.0)


DRAFTS = ("gold", "copy")  # the drafts each T5 verifies (``Oracle``)


@dataclass(frozen=True)
class Sweep:
    """Which architectures are timed and how: ``names`` among ``sizes`` (None: all of them; sizes
    None: ``known()``), ``batch_size`` gold pairs a batch after ``warmup`` batches untimed, each
    pair within ``max_ids`` ids."""

    names: Sequence[str] | None = None
    sizes: dict | None = None
    batch_size: int = 1
    warmup: int = 5
    max_ids: int = 127


def profile_architectures(sources: list[str], targets: list[str], tokenizer, device, dtype=None,
                          sweep: Sweep = Sweep(), progress: bool = False) -> dict:
    """report["architectures"]: each architecture of ``sweep`` on the gold pairs, decoder steps
    forced to the gold lengths."""
    names = list(sweep.names or (sweep.sizes or ARCHITECTURES))
    sizes, warmup = sweep.sizes or known(), sweep.warmup
    rows = gold_rows(sources, targets, tokenizer, [sizes[n] for n in names], sweep.max_ids)
    groups = batches(rows, sweep.batch_size)
    models = {name: random_architecture(name, tokenizer, device, dtype, sizes) for name in names}
    runs = names + [f"{n}+{d}" for n in names if models[n][0] == "t5" for d in DRAFTS]
    forced_run = Forced(models, Clock(torch.device(device)), tokenizer, device)
    samples: dict[str, list[Sample]] = {name: [] for name in runs}
    forced: dict[str, list[int]] = {name: [] for name in runs}
    for group in (groups * (warmup // max(1, len(groups)) + 1))[:warmup]:
        for name in runs:
            forced_run(name, group)
    bar = tqdm(total=len(groups), desc="profiling", unit="batch", file=sys.stderr, dynamic_ncols=True,
               disable=not progress)
    for group in groups:
        for name in runs:
            sample, steps = forced_run(name, group)
            samples[name].append(sample)
            forced[name].append(steps)
        bar.update(1)
    bar.close()
    return {name: entry(name, models, samples, forced[name], len(rows)) for name in runs}


def gold_rows(sources: list[str], targets: list[str], tokenizer, sizes: list[tuple[str, dict]],
              max_ids: int) -> list[tuple[int, list[int], list[int], Edits]]:
    """(sentence, source ids, target ids, gold edits) of the pairs every architecture of ``sizes``
    takes, longest source first."""
    markers, eos = marker_ids(tokenizer), tokenizer.eos_token_id
    for kind, size in sizes:  # the gold pointers are one-hot keys over d_model
        if kind == "edit5":
            max_ids = min(max_ids, size["d_model"] - 1)
    rows = []
    for i, (s, t) in enumerate(zip(encode(tokenizer, sources), encode(tokenizer, targets))):
        if not s.ids or len(s.ids) > max_ids or len(t.ids) > 2 * max_ids:
            continue
        try:
            rows.append((i, s.ids, t.ids, convert(s.ids, t.ids, markers, eos)))
        except TooFewMarkers:
            continue
    if not rows:
        raise EditspecError("no sentence pair fits the architectures' input length")
    return sorted(rows, key=lambda r: -len(r[1]))


class Forced:
    """One timed run of an architecture on a group of gold rows, its decoder steps forced to the
    gold lengths: ``forced(name, group)`` -> (``Sample``, forced steps)."""

    def __init__(self, models: dict, clock: Clock, tokenizer, device):
        self.models, self.clock, self.device = models, clock, device
        self.eos, self.pad_id = tokenizer.eos_token_id, tokenizer.pad_token_id

    def no_eos(self, logits):
        logits[..., self.eos] = float("-inf")
        return logits

    def verify(self, name, group):
        """T5 ``name`` verifying the draft ``name``'s suffix names, forced to the gold targets."""
        base, draft = name.split("+")
        model, clock, eos = self.models[base][1], self.clock, self.eos
        targets = [r[2] for r in group]
        inner = drafters.Follow(targets) if draft == "gold" else drafters.copy_draft()
        oracle = Oracle(inner, targets)
        LOOSE.passes(len(group), model)  # the window's cost model: measured once (kept), untimed
        rec, decoders = Recorder(clock), Decoders()
        rec.time_module(model.encoder, "encoder")
        rec.time_passes(decoders, "step")
        rec.override(model.lm_head, oracle.force)
        try:
            clock.sync()
            start = clock.stamp()
            outputs, stats = core.generate(model, [list(r[1]) + [eos] for r in group], len(group),
                                           TimedDrafter(oracle, rec), max_new_tokens=[len(r[2]) + 1 for r in group],
                                           decoders=decoders)
            end = clock.stamp()
            clock.sync()
        finally:
            rec.close()
        if outputs != targets:
            raise RuntimeError(f"{name}: forced verification decoded other tokens than the gold targets")
        return Sample(clock.ms(start, end), rec.total("encoder"), rec.durations("step"), rec.total("draft"),
                      outputs, [True] * len(outputs), stats.windows, stats.totals()), stats.passes

    def __call__(self, name, group):
        if "+" in name:
            return self.verify(name, group)
        (kind, model), clock = self.models[name], self.clock
        ids, mask = model_inputs([r[1] for r in group], self.eos, self.pad_id, self.device)
        rec, decoders = Recorder(clock), Decoders()
        rec.time_module(model.encoder, "encoder")
        if kind == "t5":
            rec.time_passes(decoders, "step")  # one pass of the decoding core per step
            steps = max(len(r[2]) for r in group) + 1  # the target, then EOS
        else:
            rec.mark_module(model.insertion.decoder.block[0], "step")
            steps = max(len(r[3].insertions) for r in group)  # insertions end with EOS
            dt = next(model.parameters()).dtype
            tags, query, key = gold_edit5([r[1] for r in group], [r[3] for r in group],
                                          model.config.d_model, self.device, dt)
            rec.override(model.tagger.classifier, lambda out: tags)
            rec.override(model.pointer.query, lambda out: query)
            rec.override(model.pointer.key, lambda out: key)
        rec.override(model.lm_head if kind == "t5" else model.insertion.lm_head, self.no_eos)
        try:
            with torch.inference_mode():
                clock.sync()
                start = clock.stamp()
                if kind == "t5":
                    outputs = core.generate(model, core.inputs(ids, mask), len(group), max_new_tokens=steps,
                                            decoders=decoders)[0]
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


def entry(name: str, models: dict, samples: dict[str, list[Sample]], forced: list[int], sentences: int) -> dict:
    """The report's entry of the run ``name`` (an architecture, or ``T5+draft``)."""
    kind, model = models[name.split("+")[0]]
    base = median(summary([s.latency for s in samples["t5-base"]])) if "t5-base" in samples else None
    result = summarize(samples[name], None, "forced-length", None)
    result.pop("identical_to_t5"), result.pop("speedup_vs_t5"), result.pop("output_tokens")
    if "+" not in name:
        result.pop("acceptance_rate"), result.pop("tokens_per_pass", None)
    result["speedup_vs_t5_base"] = base / result["latency_ms"]["median"] if base else None
    result["forced_steps"] = summary(forced)
    result["kind"] = kind
    result["config"] = {k: getattr(model.config, k) for k in
                        ("vocab_size", "d_model", "d_ff", "num_heads", "num_layers", "num_decoder_layers")}
    result["parameters"] = sum(p.numel() for p in model.parameters())
    result["sentences"] = sentences
    return result
