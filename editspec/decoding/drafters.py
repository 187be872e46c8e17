"""Drafts for the decoding core, one sentence at a time (sentences come and go in the slots).

A drafter sees every source once (``prepare``), then, for a sentence and the verifier's output
so far, proposes up to ``limit`` next tokens. Example, source "he go to school yesterday ." and
output so far "he went"::

    copy     follows the source through the output: "went" is not in the source, so it
             guesses T5 replaced "go" and proposes "to school yesterday . </s>" (the resync of
             ``speculative``: the last 1-3 output tokens looked up, a unique match re-joins)
    ngram    the output's own earlier n-grams (prompt lookup): output "a lot , and a lot"
             proposes what followed the earlier "a lot": ", and a lot , ..." (ends loops in
             one pass instead of one pass per token)
    static   given drafts (EdiT5's corrections, or gold), followed like the copy, the source
             the second reference
    edit5    EdiT5's realized edits as static drafts, computed when the core encodes the
             sentences (``encoded``): EdiT5 heads that sit on the T5's encoder read the
             states the core computed, so the encoder runs once per sentence
    mix      several drafters: each pass takes the one whose last proposal matched the
             verifier's output longest
    cheapest of several drafters, the one measured to decode these sentences fastest, its
             drafting time and the passes it needs together (``Cheapest``)
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable, Sequence

import torch

from editspec.decoding.budgets import insertion_budget
from editspec.decoding.edit5 import edits
from editspec.errors import EditspecError
from editspec.tokenization.edits import realize
from editspec.tokenization.tokens import encode, render_ids

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from editspec.decoding.costs import Costs


class Drafter:
    """Proposes draft tokens (verifier ids) for one sentence at a time."""

    name = ""  # a speculative candidate's (``CANDIDATES``), as ``DraftCosts`` names it
    tokenizer = None  # tokenizer of the draft ids, if known
    eos: int = 1

    def prepare(self, sources: list[list[int]], eos: int) -> None:
        """Called once per ``generate`` with every source (ids without EOS) and the EOS id."""
        self.sources, self.eos = sources, eos

    def encoded(self, indices: list[int], input_ids: torch.Tensor, attention_mask: torch.Tensor,
                hidden: torch.Tensor, encoder: torch.nn.Module) -> None:
        """The core encoded these sentences (``encoder``'s states ``hidden``, rows as
        ``input_ids``); they take slots next."""

    def propose(self, index: int, output: list[int], limit: int) -> list[int]:
        raise NotImplementedError

    def finish(self, index: int, output: list[int]) -> None:
        """The sentence left its slot with ``output`` (the verifier's ids, no EOS): forget its state."""


class TimedDrafter(Drafter):
    """Wraps a ``Drafter``: each call the decoding core makes to it (``prepare``, ``encoded``: EdiT5's
    tags, pointers and insertions, ``propose``: the lookups, ``finish``) is a ``draft`` span of
    ``timer`` (a ``timing.Timings`` or a ``profiling.clock.Recorder``: ``span(label)``). EdiT5
    drafting 2 sentences at batch 1 over 3 + 4 verifier passes is 1 + 2 + 7 + 2 spans; how many
    draft tokens each pass accepted the core counts itself (``SpecStats.windows``)."""

    def __init__(self, inner: Drafter, timer):
        self.inner, self.timer = inner, timer
        self.tokenizer = inner.tokenizer

    def prepare(self, sources, eos):
        with self.timer.span("draft"):
            self.inner.prepare(sources, eos)

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        with self.timer.span("draft"):
            self.inner.encoded(indices, input_ids, attention_mask, hidden, encoder)

    def propose(self, index, output, limit):
        with self.timer.span("draft"):
            return self.inner.propose(index, output, limit)

    def finish(self, index, output):
        with self.timer.span("draft"):
            self.inner.finish(index, output)


class Follow(Drafter):
    """Follows reference sequences (a draft, then the source) through the verifier's output,
    resynchronising after a mismatch (Sun et al. 2021): the last 1-3 output tokens are looked
    up in the draft, then in the source; the first n-gram with exactly one occurrence says where
    the output re-joins them. With no unique match it guesses that T5 replaced the token (the
    most frequent GEC edit), drafts on after it, and waits there (T5 may be inserting)."""

    def __init__(self, drafts: Sequence[Sequence[int]] | None = None, resync: bool = True,
                 max_ngram: int = 3):
        self.drafts, self.resync, self.max_ngram = drafts, resync, max_ngram

    def prepare(self, sources, eos):
        super().prepare(sources, eos)
        if self.drafts is not None and len(self.drafts) != len(sources):
            raise EditspecError(f"{len(self.drafts)} drafts for {len(sources)} sentences")
        self._state: dict[int, tuple[tuple[list[int], ...], tuple[int, int, bool] | None, int]] = {}

    def refs(self, index: int) -> tuple[list[int], ...]:
        src = list(self.sources[index]) + [self.eos]
        return (src,) if self.drafts is None else (list(self.drafts[index]) + [self.eos], src)

    def propose(self, index, output, limit):
        refs, at, seen = self._state.get(index) or (self.refs(index), (0, 0, True), 0)
        for n in range(seen, len(output)):  # follow the tokens output since last time
            if at is None:
                break
            k, p, synced = at
            if p < len(refs[k]) and refs[k][p] == output[n]:
                at = (k, p + 1, True)
            elif not self.resync:
                at = None
            else:  # no unique re-join: guess a replaced token once, then wait at that position
                at = self._rejoin(refs, output[: n + 1]) or (k, p + synced, False)
        self._state[index] = (refs, at, len(output))
        if at is None:
            return []
        k, p, _ = at
        return refs[k][p: p + limit]

    def _rejoin(self, refs, out):
        return rejoin(refs, out, self.max_ngram)

    def finish(self, index, output):
        self._state.pop(index, None)


def rejoin(refs: Sequence[Sequence[int]], out: Sequence[int], max_ngram: int = 3) -> tuple[int, int, bool] | None:
    """Where ``out`` re-joins a reference: (reference, position after the match, True) for the
    first of its last 1..``max_ngram`` tokens that occur exactly once in a reference; else None."""
    for k, ref in enumerate(refs):
        for n in range(1, min(max_ngram, len(out)) + 1):
            gram = list(out[-n:])
            hits = [i + n for i in range(len(ref) - n + 1) if list(ref[i: i + n]) == gram]
            if len(hits) == 1:
                return k, hits[0], True
            if not hits:
                break
    return None


def follow_source(source: Sequence[int], output: Sequence[int], limit: int, eos: int) -> list[int]:
    """A draft after ``output`` from the source (+ EOS) alone, with no state (beam search's beams
    come and go): the source from the start, or after the output's unique re-joining n-gram
    (``rejoin``), or, when its last token is not in the source, after the source token it
    replaced; else the output's own n-grams (``Ngram``)."""
    ref = list(source) + [eos]
    if not output:
        return ref[:limit]
    at = rejoin((ref,), output)
    if at is None and len(output) > 1 and output[-1] not in ref:
        before = rejoin((ref,), output[:-1])
        at = None if before is None else (0, before[1] + 1, True)
    return ref[at[1]: at[1] + limit] if at is not None else Ngram().propose(0, list(output), limit)


class Copy(Follow):
    """The source is the draft (input-guided aggressive decoding, Sun et al. 2021)."""

    name = "copy"

    def __init__(self, resync: bool = True, max_ngram: int = 3):
        super().__init__(None, resync, max_ngram)

    @classmethod
    def candidate(cls, edit5, markers: Sequence[int]) -> Drafter:
        """The speculative mode's candidate: the source, mixed with the output's n-grams (``copy_draft``)."""
        return copy_draft()


class Ngram(Drafter):
    """Prompt lookup over the output itself: the latest earlier occurrence of its last n tokens
    (n = max_ngram .. 1) proposes the tokens that followed it."""

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def propose(self, index, output, limit):
        if limit <= 0:  # the core asks every pass, even for nothing
            return []
        for n in range(min(self.max_ngram, len(output) - 1), self.min_ngram - 1, -1):
            gram = output[-n:]
            for i in range(len(output) - n - 1, -1, -1):
                if output[i: i + n] == gram:  # copy on from there, into the copy itself
                    draft = list(output)
                    for j in range(i + n, i + n + limit):
                        draft.append(draft[j])
                    return draft[len(output):]
        return []


class EdiT5(Follow):
    """EdiT5's corrections are the drafts: ``generate_edits`` on each batch of sentences the core
    encodes, realized into token ids. EdiT5 reads the verifier's ids: both share one tokenizer.
    When its heads sit on the verifier's encoder (``EdiT5Model.sit_on``), they read the states
    the core computed: one encoder pass per sentence serves the draft and the verification."""

    name = "edit5"

    def __init__(self, model, markers: Sequence[int], resync: bool = True,
                 max_insertion_tokens: int | None = None):
        super().__init__(None, resync)
        if not markers:
            raise EditspecError("the EdiT5 drafter needs the marker ids: pass the EdiT5 tokenizer's")
        self.model, self.markers = model, list(markers)
        self.max_insertion_tokens = max_insertion_tokens

    @classmethod
    def candidate(cls, edit5, markers: Sequence[int]) -> Drafter:
        """The speculative mode's candidate: EdiT5's output, mixed with the output's n-grams."""
        return Mix(cls(edit5, markers), Ngram())

    def prepare(self, sources, eos):
        super().prepare(sources, eos)
        self.drafts: dict[int, list[int]] = {}  # filled by ``encoded``, before each sentence's turn

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        states = hidden if encoder is self.model.encoder else None  # else EdiT5 encodes itself
        # one budget for the batch, from its widest row: a draft only changes how fast T5 decodes
        limit = self.max_insertion_tokens or insertion_budget(input_ids.shape[1])
        found = edits(self.model, input_ids, attention_mask, [limit] * len(indices), encoder_hidden_states=states)
        for i, e in zip(indices, found):
            self.drafts[i] = realize(self.sources[i], e, self.markers, self.eos)

    def finish(self, index, output):
        super().finish(index, output)
        self.drafts.pop(index, None)


class Mix(Drafter):
    """Several drafters; each pass, the one whose last proposal the verifier followed longest
    (ties: the earlier one)."""

    def __init__(self, *drafters: Drafter):
        self.drafters = drafters
        self.name = drafters[0].name  # the lead drafter's: "copy" is the source mixed with n-grams
        self.tokenizer = next((d.tokenizer for d in drafters if d.tokenizer is not None), None)

    def prepare(self, sources, eos):
        for d in self.drafters:
            d.prepare(sources, eos)
        self._last: dict[int, tuple[int, list[list[int]]]] = {}
        self._best: dict[int, int] = {}

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        for d in self.drafters:
            d.encoded(indices, input_ids, attention_mask, hidden, encoder)

    def propose(self, index, output, limit):
        if index in self._last:
            start, proposals = self._last[index]
            gained = output[start:]
            matched = [_prefix(p, gained) for p in proposals]
            if max(matched) > 0:
                self._best[index] = matched.index(max(matched))
        proposals = [list(d.propose(index, output, limit)) for d in self.drafters]
        self._last[index] = (len(output), proposals)
        best = self._best.get(index, 0)
        return proposals[best] or next((p for p in proposals if p), [])

    def finish(self, index, output):
        self._last.pop(index, None)
        self._best.pop(index, None)
        for d in self.drafters:
            d.finish(index, output)


class DraftCosts:
    """Seconds per sentence of each candidate drafter, measured on probed sentences over a
    corrector's life: shared by its calls and threads (hence the lock). The first ``probe`` of
    every ``period`` sentences (in the order they are encoded) are probed; once the pick is clear
    (after ``settled`` probes, the runner-up costs at least ``margin`` times the best), only the
    first ``settled`` of each period: a probe pays every loser's drafting, which a clear pick no
    longer needs as often (at batch 1, EdiT5's draft costs ~25 ms a probed sentence, against ~36 ms
    for the whole sentence's decoding)."""

    def __init__(self, names: Sequence[str] | None = None, probe: int = 32, period: int = 1024, settled: int = 8,
                 margin: float = 1.25):
        # default: the speculative mode's candidates (``CANDIDATES``, from the drafters themselves)
        self.names, self.probe, self.period = list(names or CANDIDATES), probe, period
        self.settled, self.margin = min(settled, probe), margin
        self.seconds, self.probed, self.seen = [0.0] * len(self.names), 0, 0
        self.lock = threading.Lock()

    def reserve(self, n: int) -> list[bool]:
        """Which of the next ``n`` sentences are probes."""
        with self.lock:
            first, self.seen = self.seen, self.seen + n
            probe = self.settled if self._clear() else self.probe
            return [(first + k) % self.period < probe for k in range(n)]

    def _clear(self) -> bool:
        """Whether the best candidate leads by ``margin`` after at least ``settled`` probes (lock held)."""
        if self.probed < self.settled or len(self.seconds) < 2:
            return False
        best, runner_up = sorted(self.seconds)[:2]
        return runner_up >= self.margin * best

    def add(self, seconds: Sequence[float]) -> None:
        """One probed sentence's cost under each candidate."""
        with self.lock:
            self.seconds = [a + b for a, b in zip(self.seconds, seconds)]
            self.probed += 1

    @property
    def best(self) -> int:
        """The candidate with the least seconds so far (the first before any probe)."""
        with self.lock:
            return min(range(len(self.seconds)), key=lambda c: self.seconds[c])

    def per_sentence(self) -> dict[str, float]:
        """Mean seconds per probed sentence, by candidate name."""
        with self.lock:
            return {n: s / max(1, self.probed) for n, s in zip(self.names, self.seconds)}

    def state(self) -> dict:
        """What ``restore`` takes: the candidates, their summed seconds and the probes."""
        with self.lock:
            return {"names": list(self.names), "seconds": list(self.seconds), "probed": self.probed}

    def restore(self, kept: dict | None) -> None:
        """Start from costs an earlier process measured (``state``; ``decoding.measured`` keeps
        them): their means, counted as at most ``probe`` probes, so that this process's own probes
        still move them; a clear pick counts as this period's probes taken (a process of a few
        lines probes nothing). Anything else (another candidate list, a damaged value) is ignored."""
        try:
            names, seconds, probed = kept["names"], [float(x) for x in kept["seconds"]], int(kept["probed"])
        except (TypeError, KeyError, ValueError):
            return
        if names != self.names or len(seconds) != len(names) or probed <= 0 or min(seconds) < 0:
            return
        with self.lock:
            count = min(probed, self.probe)
            self.seconds, self.probed = [x / probed * count for x in seconds], count
            if self._clear():  # this period's few probes were taken: the next at the next period
                self.seen = self.settled


class Cheapest(Drafter):
    """Of several candidate drafters, the one that decodes these sentences fastest, measured.

    A drafter pays when the verifier passes it saves cost more than its drafting; both depend on
    the text, the models and the batch, so they are measured on the sentences themselves. A
    probed sentence (``DraftCosts``) is drafted by the cheapest candidate so far, live, and
    replayed for every other one once the verifier's output is known: greedy output does not
    depend on the draft, so a candidate's passes follow from its own proposals, each pass
    proposing as many tokens as the live pass asked for. A candidate's cost is its drafting time
    (``encoded`` and ``propose``, timed) plus its passes, each one row's share of a pass of that
    width (``pass_seconds``, from the core's measured cost model). Other sentences go to the
    cheapest candidate alone; the pick is made for each batch the core encodes. Example, batch 1,
    a pass ~17 ms::

        candidate         drafting   passes   cost
        EdiT5 + n-grams    32.0 ms      2.1   67.7 ms
        copy + n-grams      0.1 ms      2.2   37.5 ms   <- drafts the sentences that follow

    One instance serves one ``core.generate`` call (its candidates are fresh); ``costs`` carries
    the measurements from call to call. Only the speed depends on the pick, never the output.
    """

    def __init__(self, candidates: Sequence[Drafter], costs: DraftCosts, pass_seconds: Callable[[int], float]):
        self.candidates, self.costs, self.pass_seconds = list(candidates), costs, pass_seconds
        self.tokenizer = next((d.tokenizer for d in candidates if d.tokenizer is not None), None)

    def prepare(self, sources, eos):
        self.eos = eos
        # sentence -> probed or not, reserved batch by batch as the core encodes them: by then the
        # probes before may have made the pick clear (``DraftCosts``: fewer probes)
        self.probes: dict[int, bool] = {}
        self.live: dict[int, int] = {}  # sentence -> the candidate drafting it, fixed when encoded
        self.seconds: dict[int, list[float]] = {}  # probed sentence -> drafting seconds per candidate
        self.limits: dict[int, list[int]] = {}  # probed sentence -> its live passes' draft limits
        for d in self.candidates:
            d.prepare(sources, eos)

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        live = self.costs.best  # for this batch: the sentences before it may have changed the pick
        self.probes.update(zip(indices, self.costs.reserve(len(indices))))
        rows = [k for k, i in enumerate(indices) if self.probes[i]]
        for i in indices:
            self.live[i] = live
            if self.probes[i]:
                self.seconds[i], self.limits[i] = [0.0] * len(self.candidates), []
        for c, d in enumerate(self.candidates):
            if c != live and not rows:
                continue
            start = time.perf_counter()
            if c == live:  # drafts every sentence of the batch; a probe pays its share
                d.encoded(indices, input_ids, attention_mask, hidden, encoder)
            else:  # drafts the probes alone
                at = torch.tensor(rows, device=input_ids.device)
                d.encoded([indices[k] for k in rows], input_ids[at], attention_mask[at], hidden[at], encoder)
            share = (time.perf_counter() - start) / (len(indices) if c == live else len(rows))
            for k in rows:
                self.seconds[indices[k]][c] += share

    def propose(self, index, output, limit):
        live = self.candidates[self.live[index]]
        if index not in self.limits:
            return live.propose(index, output, limit)
        start = time.perf_counter()
        draft = live.propose(index, output, limit)
        self.seconds[index][self.live[index]] += time.perf_counter() - start
        self.limits[index].append(limit)
        return draft

    def finish(self, index, output):
        if index in self.limits:
            seconds, limits, live = self.seconds.pop(index), self.limits.pop(index), self.live[index]
            for c, d in enumerate(self.candidates):
                widths = limits
                if c != live:  # its proposals, timed: the same lookups as live ones
                    start = time.perf_counter()
                    widths = replay(d, index, output, self.eos, limits)
                    seconds[c] += time.perf_counter() - start
                seconds[c] += sum(map(self.pass_seconds, widths))
            self.costs.add(seconds)
        self.live.pop(index, None)
        for d in self.candidates:
            d.finish(index, output)


CANDIDATE_DRAFTERS = (EdiT5, Copy)  # the speculative mode's drafters, in ``DraftCosts`` order
CANDIDATES = tuple(d.name for d in CANDIDATE_DRAFTERS)  # ("edit5", "copy"): ``DraftCosts`` names


def copy_draft() -> Mix:
    """The source as the draft, mixed with the output's own n-grams (a looping row)."""
    return Mix(Copy(), Ngram())


def speculative(edit5, markers: Sequence[int], costs: Costs, slots: int) -> Cheapest:
    """The speculative mode's drafter (``Corrector``, ``editspec profile``): the cheaper, as
    measured (``costs.drafts``), of EdiT5's output and the source, each mixed with the output's own
    n-grams; a pass costs what ``costs`` measured for the T5 at ``slots`` rows, shared by them."""
    policy = costs.window(slots)
    return Cheapest([d.candidate(edit5, markers) for d in CANDIDATE_DRAFTERS], costs.drafts,
                    lambda width: policy.cost(width) / slots)


def replay(drafter: Drafter, index: int, output: list[int], eos: int, limits: Sequence[int]) -> list[int]:
    """The draft limit of each verifier pass ``drafter`` takes to a greedy ``output`` (ids, no
    EOS): pass j proposes up to ``limits[j]`` tokens (the last limit repeats), accepts its longest
    matching prefix, and adds the verifier's own next token."""
    target, n, widths = list(output) + [eos], 0, []
    while n < len(target):
        limit = limits[min(len(widths), len(limits) - 1)] if limits else 0
        draft = list(drafter.propose(index, target[:n], limit))[:limit]
        n += _prefix(draft, target[n:]) + 1
        widths.append(limit)
    return widths


def _prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def retokenize_drafts(drafts: Sequence[Sequence[int]], draft_tokenizer: PreTrainedTokenizerBase,
                      verifier_tokenizer: PreTrainedTokenizerBase,
                      sources: Sequence[str] | None = None) -> list[list[int]]:
    """Drafts in the drafter's ids -> text -> the verifier's ids. With the source texts, the
    text of copied tokens comes from the source (``render_ids``), so characters the drafter's
    vocabulary lacks (its ``<unk>``) are spelled as in the input."""
    if sources is not None:
        texts = [render_ids(draft_tokenizer, src, d)
                 for src, d in zip(encode(draft_tokenizer, sources), drafts)]
    else:
        texts = [draft_tokenizer.decode(d, skip_special_tokens=True) for d in drafts]
    return [e.ids for e in encode(verifier_tokenizer, texts)]
