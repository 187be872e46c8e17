"""The decoding core: T5 greedy, sampled and speculative decoding over a stream of sentences.

Every sentence is encoded once, when it enters a slot; its decoder then writes its own keys and
values into a static cache at its own positions. A pass feeds each active slot its pending token
(the last token the model chose, not yet in the cache) and, when speculating, a draft::

    slot 0   cache [<s> He went]           feed  to school .       (pending "to", draft "school .")
    slot 1   cache [<s> I]                 feed  like              (no draft)
    slot 2   cache [<s> She likes dogs .]  feed  </s>?             ...

(how a pass runs over the slots: ``editspec.decoding.decoder``). The verifier keeps the longest prefix of the draft that equals its own choices plus one token of
its own (Leviathan et al. 2022; with sampling, their accept/resample rule for a point-mass draft).
The slot's length grows by the accepted tokens + 1: keys of rejected draft tokens stay in the
cache beyond that length, are never attended to (causal mask) and are overwritten by the next
pass, so nothing is cropped or fed twice. A slot whose sentence ends (EOS or its token budget)
takes the next waiting sentence at once: continuous batching over the whole input list.

Sentences are encoded ``slots`` at a time, ahead of the slots they will take: the encoder runs
once per sentence in batches, and a drafter that reads the same encoder (EdiT5's heads sitting
on the T5's encoder) gets those states (``Drafter.encoded``) instead of encoding again.

Each turn of ``generate``'s loop is four functions: ``refill`` (free slots take waiting
sentences), ``draft`` (each row's proposal), ``verify`` (the decoder pass, argmax or the
distributions) and ``accept`` (per row: the tokens kept, the counts, a finished row leaving).
The draft window's cost model is ``editspec.decoding.window``; the drafters,
``editspec.decoding.drafters``.

``generate(scores=True)`` also sums each sentence's log-probability from the passes' own logits,
and ``score`` teacher-forces (source, target) pairs through the same decoder: a pair the decode
produced scores the same number either way (bit for bit in bf16), so rescoring
(``editspec.decoding.rescoring``) reads the decode's scores and forces only the variants.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import torch

from editspec.decoding.decoder import Decoder, Decoders
from editspec.decoding import drafters
from editspec.decoding.drafters import Drafter
from editspec.decoding.costs import LOOSE
from editspec.decoding.window import WindowPolicy
from editspec.modeling import t5
from editspec.modeling.tensors import pad

if TYPE_CHECKING:
    from transformers import T5ForConditionalGeneration


@dataclass
class SpecStats:
    """Counts of one ``generate`` call; lists have one entry per sentence."""

    proposed: list[int]  # draft tokens sent to the verifier
    accepted: list[int]  # draft tokens the verifier accepted
    tokens: list[int]  # tokens generated, EOS included
    row_passes: list[int]  # verifier passes the sentence took part in
    passes: int = 0  # verifier decoder passes (all slots together)
    windows: list[tuple[int, int]] = field(default_factory=list)  # (proposed, accepted) per row and pass
    # with ``generate(scores=True)``: log P(tokens generated, EOS included | source) per sentence,
    # summed token by token as ``score`` sums a teacher-forced pair (the same logits: the same number)
    log_probs: list[float] | None = None
    token_log_probs: list[list[float]] | None = None  # the same, token by token (rescoring reuses a prefix's)
    # and at each of those positions, log P of each of the source's own tokens (``source_tokens``)
    # instead: [tokens, len(source_tokens(source))] per sentence, a tensor per pass (rescoring's
    # variant undoes an edit, so where it parts from the output it mostly takes a source token)
    source_log_probs: list[list[torch.Tensor]] | None = None
    # and each changed sentence's encoder states [source length, d_model] (None: unchanged, or past
    # ``KEPT_STATES`` bytes in the call): a variant's forced pass reads its source's, not encoded again
    states: list[torch.Tensor | None] | None = None
    widths: tuple[int, int] = (0, 0)  # the decoder's cache widths (source, target): ``score``'s ``widths``

    @classmethod
    def empty(cls, n: int, scores: bool = False) -> "SpecStats":
        """Zero counts for ``n`` sentences; with ``scores``, empty scores to fill (``add_scores``)."""
        stats = cls([0] * n, [0] * n, [0] * n, [0] * n)
        if scores:
            stats.log_probs, stats.token_log_probs = [0.0] * n, [[] for _ in range(n)]
            stats.source_log_probs, stats.states = [[] for _ in range(n)], [None] * n
        return stats

    def totals(self) -> dict[str, int]:
        """The per-sentence counts summed over the call."""
        return {k: sum(getattr(self, k)) for k in ("proposed", "accepted", "tokens", "row_passes")}

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed draft tokens (0.0 when nothing was proposed)."""
        return sum(self.accepted) / max(1, sum(self.proposed))


def accept_sampled(probs: torch.Tensor, draft: list[int],
                   generator: torch.Generator | None) -> tuple[int, int]:
    """(number of draft tokens accepted, the verifier's own next token) for one row's window of
    len(draft) + 1 distributions: Leviathan et al.'s rule with the draft as a point mass
    q = onehot(x): accept x with probability p(x), else sample from norm(max(0, p - onehot(x))),
    which is p with x removed. The output then has exactly the distribution of T5's sampling."""
    if draft:
        p_draft = probs[torch.arange(len(draft), device=probs.device), torch.tensor(draft, device=probs.device)]
        u = torch.rand(len(draft), generator=generator, device=probs.device, dtype=probs.dtype)
        rejected = (u >= p_draft).nonzero()
        if len(rejected):
            n = int(rejected[0])
            residual = probs[n].clone()
            residual[draft[n]] = 0
            return n, int(torch.multinomial(residual, 1, generator=generator))
    return len(draft), int(torch.multinomial(probs[len(draft)], 1, generator=generator))


@dataclass(frozen=True)
class Sampling:
    """``generate``'s sampling: each step's distribution (``t5.token_probs``) and the generator."""

    temperature: float = 1.0
    top_p: float = 1.0
    generator: torch.Generator | None = None


@dataclass
class _Stream:
    """The loop's state over one ``generate`` call: what it runs on (the model's ``Decoder``, its
    EOS id, the drafter and its window, ``sampling`` or greedy, the ``done`` callback), each sentence's output
    and budget, which sentence each slot decodes and the token it feeds next, and the sentences
    still waiting (``staged``: encoded, not yet in a slot)."""

    dec: Decoder
    eos: int
    drafter: Drafter | None
    window: WindowPolicy | None
    sampling: Sampling | None  # None: greedy
    done: Callable[[int], None] | None
    sources: Sequence[Sequence[int]]
    budget: list[int]
    out: list[list[int]]
    stats: SpecStats
    waiting: deque
    sentence: list[int | None]
    pending: list[int]
    staged: tuple[list[int], torch.Tensor | None, torch.Tensor | None] = field(default_factory=lambda: ([], None, None))
    copying: "CopyTracker | None" = None  # with a copy penalty: where each output stands in its source
    kept: int = 0  # bytes of encoder states kept in ``stats.states`` (``keep_states``)

    def rows(self) -> list[int]:
        """The slots decoding a sentence."""
        return [s for s in range(len(self.sentence)) if self.sentence[s] is not None]


@torch.inference_mode()
def generate(
    model: T5ForConditionalGeneration, sources: Sequence[Sequence[int]], slots: int = 32,
    drafter: Drafter | None = None, max_new_tokens: int | Sequence[int] = 128,
    window: int | WindowPolicy | None = None, sampling: Sampling | None = None,
    done: Callable[[int], None] | None = None, scores: bool = False, decoders: Decoders | None = None,
    copy_penalty: float = 0.0,
) -> tuple[list[list[int]], SpecStats]:
    """T5's output ids (no start token, no EOS) for each source (ids ending in EOS), greedy or
    sampled (``sampling``; None: greedy), drafted by ``drafter`` (None: one token per pass),
    ``slots`` sentences at a time;
    sentence i's output is at most ``max_new_tokens`` (or its own ``max_new_tokens[i]``) ids.

    ``window``: draft tokens per row and pass, a fixed number or a ``WindowPolicy`` (None: the
    one measured for this model and slot count, see ``editspec.decoding.window``). ``done(i)``
    is called as soon as sentence i is decoded (progress). ``scores``: also each sentence's
    log-probability (``SpecStats.log_probs``; rescoring reads it instead of a forced pass).
    ``decoders``: where the model's decoder is kept (a ``Bundle``'s; None: a new one).
    ``copy_penalty`` (greedy only): subtracted from the logit of the token that would go on copying
    the source (``CopyTracker``) before each choice; the choice is a function of the output so far,
    so drafted and undrafted decodes still give the same output. Scores stay the model's own.

    Each pass: ``refill`` the free slots, ``draft``, ``verify`` (the decoder pass), ``accept``.
    """
    n, eos = len(sources), model.config.eos_token_id
    budget = [max_new_tokens] * n if isinstance(max_new_tokens, int) else list(max_new_tokens)
    out: list[list[int]] = [[] for _ in range(n)]
    stats = SpecStats.empty(n, scores)
    own = SourceTokens(sources, model.device) if scores else None
    slots = max(1, min(slots, n))
    if drafter is not None:
        drafter.prepare([list(s[:-1]) if s and s[-1] == eos else list(s) for s in sources], eos)
        if not isinstance(window, WindowPolicy):
            window = LOOSE.window(slots, model) if window is None else WindowPolicy.fixed_size(window)
    waiting = deque(i for i in range(n) if budget[i] > 0)
    for i in range(n):
        if budget[i] <= 0 and done is not None:
            done(i)
    if not waiting:
        return out, stats
    with (decoders or Decoders()).lease(model, slots, max(map(len, sources)), max(budget) + 1) as dec:
        stats.widths = dec.widths
        st = _Stream(dec=dec, eos=eos, drafter=drafter, window=window if drafter is not None else None,
                     sampling=sampling, done=done, sources=sources, budget=budget, out=out, stats=stats,
                     waiting=waiting, sentence=[None] * slots, pending=[dec.start] * slots)
        if copy_penalty:
            if sampling is not None:
                raise ValueError("copy_penalty is for greedy decoding")
            st.copying = CopyTracker(sources, eos, copy_penalty)
        while True:
            refill(st)
            rows = st.rows()
            if not rows:
                return out, stats
            drafts = draft(st, rows)
            logits, choices = verify(st, rows, drafts)
            stats.passes += 1
            emitted = accept(st, rows, drafts, choices)
            if scores:
                add_scores(stats, logits, emitted, own)


def refill(st: _Stream) -> None:
    """Free slots (their sentence ended) take waiting sentences, encoded ``slots`` at a time in
    one batch ahead of the slots they will take (the drafter sees each batch's encoder states)."""
    free = [s for s in range(len(st.sentence)) if st.sentence[s] is None]
    while free and (st.staged[0] or st.waiting):
        if not st.staged[0]:  # encode the next ``slots`` sentences in one batch
            new = [st.waiting.popleft() for _ in range(min(len(st.sentence), len(st.waiting)))]
            ids, mask, hidden = st.dec.encode([list(st.sources[i]) for i in new])
            if st.drafter is not None:
                st.drafter.encoded(new, ids, mask, hidden, st.dec.model.encoder)
            st.staged = (new, mask, hidden)
        new, mask, hidden = st.staged
        k = min(len(free), len(new))
        st.dec.admit(free[:k], mask[:k], hidden[:k])
        for j, (s, i) in enumerate(zip(free[:k], new[:k])):
            st.sentence[s], st.pending[s] = i, st.dec.start
            if st.stats.states is not None:  # a view until the sentence ends (``accept``)
                st.stats.states[i] = hidden[j, :len(st.sources[i])]
        st.staged, free = (new[k:], mask[k:], hidden[k:]), free[k:]


def draft(st: _Stream, rows: list[int]) -> list[list[int]]:
    """Each row's draft: at most the window and what is left of the row's budget, cut after a
    drafted EOS."""
    gamma = st.window.size(len(rows)) if st.drafter is not None else 0
    drafts = []
    for s in rows:
        i = st.sentence[s]
        room = max(0, min(gamma, st.budget[i] - len(st.out[i]) - 1))
        # every pass asks, even for 0 tokens: a drafter may count passes (``Cheapest``)
        d = list(st.drafter.propose(i, st.out[i], room))[:room] if st.drafter is not None else []
        drafts.append(d[: d.index(st.eos) + 1] if st.eos in d else d)
    return drafts


def verify(st: _Stream, rows: list[int], drafts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor | list[int]]:
    """One decoder pass over the rows' feeds (pending token + draft): its logits [T, vocab] (in
    >= float32) and the model's choice after each fed token (greedy: argmax ids; sampling: the
    distributions, ``t5.token_probs``)."""
    logits = st.dec.forward(rows, [[st.pending[s]] + d for s, d in zip(rows, drafts)])  # [T, vocab]
    # in >= float32 (exact): torch's bf16 argmax is ~4x slower than its fp32 one (4.7 against 1.2 ms
    # over 160 rows), and the first maximum is the same index either way
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    if st.sampling is None:
        if st.copying is not None:
            return logits, st.copying.penalized(logits, [(st.sentence[s], st.out[st.sentence[s]], d)
                                                         for s, d in zip(rows, drafts)]).argmax(-1).tolist()
        return logits, logits.argmax(-1).tolist()
    return logits, t5.token_probs(logits, st.sampling.temperature, st.sampling.top_p)


def accept(st: _Stream, rows: list[int], drafts: list[list[int]],
           choices: torch.Tensor | list[int]) -> list[tuple[int, int, list[int]]]:
    """Per row: the draft's longest prefix the verifier agrees with (sampling: Leviathan et al.'s
    rule) plus its own next token; the cache, the counts and the output grow by them, and a row
    that ends (EOS or its budget) frees its slot. Returns (sentence, the pass's position of its
    first new token, the new tokens) per row."""
    at, emitted, eos = 0, [], st.eos
    for s, d in zip(rows, drafts):
        i, seg = st.sentence[s], slice(at, at + len(d) + 1)  # predictions for draft + 1
        at += len(d) + 1
        if st.sampling is not None:
            k, own = accept_sampled(choices[seg], d, st.sampling.generator)
        else:
            k = next((j for j, (a, b) in enumerate(zip(d, choices[seg])) if a != b), len(d))
            own = choices[seg][k]
        new = d[:k] if eos in d[:k] else d[:k] + [own]
        emitted.append((i, seg.start, new))
        st.dec.keep(s, st.dec.cached(s) + 1 + k)  # the pending token and the accepted draft are cached now
        st.pending[s] = own
        st.stats.proposed[i] += len(d)
        st.stats.accepted[i] += k
        st.stats.row_passes[i] += 1
        st.stats.tokens[i] += len(new)
        st.out[i] += [t for t in new if t != eos]
        if st.drafter is not None:
            st.stats.windows.append((len(d), k))
            st.window.update(k, len(d))
        if new[-1] == eos or len(st.out[i]) >= st.budget[i]:
            st.sentence[s] = None
            if st.stats.states is not None:
                st.stats.states[i] = keep_states(st, i)
            if st.drafter is not None:
                st.drafter.finish(i, st.out[i])
            if st.done is not None:
                st.done(i)
    return emitted


KEPT_STATES = 64 << 20  # bytes of encoder states one call keeps for rescoring (~2,500 sentences of 25 tokens)


def keep_states(st: _Stream, i: int) -> torch.Tensor | None:
    """Sentence i's encoder states, copied out of their batch, where its output changed its source
    and the call has kept under ``KEPT_STATES`` bytes so far; else None (rescoring encodes it)."""
    states, source = st.stats.states[i], st.sources[i]
    size = 0 if states is None else states.numel() * states.element_size()
    if states is None or st.kept + size > KEPT_STATES or \
            st.out[i] == list(source[:-1] if source and source[-1] == st.eos else source):
        return None
    st.kept += size
    return states.clone()


class CopyTracker:
    """Which token would go on copying the source after an output (a copy penalty's target): the
    output is followed through its source token by token, as ``drafters.Follow`` follows it: a
    token equal to the source's next moves on; another re-joins the source after its last 1-3
    tokens where they occur once (``drafters.rejoin``), else is taken as the source token it
    replaced. Each sentence's place is kept between passes; a function of the output alone."""

    def __init__(self, sources: Sequence[Sequence[int]], eos: int, penalty: float):
        self.refs = [list(s[:-1]) if s and s[-1] == eos else list(s) for s in sources]
        self.eos, self.penalty = eos, penalty
        self.state: dict[int, tuple[int, int, bool]] = {}  # sentence -> (tokens followed, place, in step)

    def _follow(self, i: int, state: tuple[int, int, bool], output: Sequence[int]) -> tuple[int, int, bool]:
        seen, p, synced = state
        ref = self.refs[i]
        for n in range(seen, len(output)):
            if p < len(ref) and ref[p] == output[n]:
                p, synced = p + 1, True
            else:
                at = drafters.rejoin((ref,), output[: n + 1])
                p, synced = (at[1], True) if at is not None else (p + synced, False)
        return len(output), p, synced

    def next_tokens(self, i: int, output: Sequence[int], draft: Sequence[int]) -> list[int | None]:
        """The copying token after ``output`` and after each prefix of ``draft`` that follows it
        (None: none, or the source's end); ``output``'s place is kept for the next pass."""
        state = self.state[i] = self._follow(i, self.state.get(i, (0, 0, True)), output)
        ref, out = self.refs[i], list(output)
        tokens = []
        for j in range(len(draft) + 1):
            if j:
                out.append(draft[j - 1])
                state = self._follow(i, state, out)
            tokens.append(ref[state[1]] if state[1] < len(ref) else None)
        return tokens

    def penalized(self, logits: torch.Tensor, rows: Sequence[tuple[int, Sequence[int], Sequence[int]]]) -> torch.Tensor:
        """``logits`` [T, vocab] of a pass (rows: sentence, its output, its draft, in feed order)
        with the penalty off each position's copying token."""
        at, where = 0, []
        for i, output, draft in rows:
            for k, token in enumerate(self.next_tokens(i, output, draft)):
                if token is not None:
                    where.append((at + k, token))
            at += len(draft) + 1
        if not where:
            return logits
        out = logits.clone()
        pos, tok = zip(*where)
        out[list(pos), list(tok)] -= self.penalty
        return out


def source_tokens(source: Sequence[int]) -> list[int]:
    """A source's distinct ids in the order they first occur (``SpecStats.source_log_probs``'s columns)."""
    return list(dict.fromkeys(source))


class SourceTokens:
    """Each source's ``source_tokens`` as a row of one table [sources, widest], a short row
    padded with repeats of its own ids: a pass gathers its positions' columns in one index."""

    def __init__(self, sources: Sequence[Sequence[int]], device: torch.device):
        own = [source_tokens(s) for s in sources]
        self.lengths, width = [len(o) for o in own], max(map(len, own), default=1)
        self.table = torch.tensor([(o * width)[:width] for o in own], device=device)  # [sources, width]


def add_scores(stats: SpecStats, logits: torch.Tensor, emitted: list[tuple[int, int, list[int]]],
               own: SourceTokens) -> None:
    """Each sentence's log-probability grows by its new tokens' (``t5.token_log_probs``'s numbers,
    at the positions that predicted them, added one by one as ``score`` adds them), and its
    ``source_log_probs`` by those positions' log P of its ``source_tokens`` (``own``)."""
    dev = logits.device
    # rows are independent: the pass's rows whole, not a copy of the emitted ones (a copy cost more)
    log_probs = t5.log_softmax(logits)  # [T, vocab]
    positions = torch.tensor([at + j for _, at, new in emitted for j in range(len(new))], device=dev)  # [P]
    tokens = torch.tensor([t for _, _, new in emitted for t in new], device=dev)  # [P]
    sentences = torch.tensor([i for i, _, new in emitted for _ in new], device=dev)  # [P]
    values = iter(log_probs[positions, tokens].tolist())
    width = max(own.lengths[i] for i, _, _ in emitted)
    others = log_probs[positions[:, None], own.table[sentences, :width]].cpu()  # [P, width]
    at = 0
    for i, _, new in emitted:
        for _ in new:
            value = next(values)
            stats.log_probs[i] += value
            stats.token_log_probs[i].append(value)
        stats.source_log_probs[i].append(others[at:at + len(new), :own.lengths[i]])
        at += len(new)


@torch.inference_mode()
def score(model: T5ForConditionalGeneration, sources: Sequence[Sequence[int]],
          targets: Sequence[Sequence[int]], slots: int = 64, widths: tuple[int, int] = (0, 0),
          given: Sequence[Sequence[float]] | None = None, decoders: Decoders | None = None,
          states: Sequence[torch.Tensor | None] | None = None) -> list[float]:
    """log P(target | source) per pair (both ids ending in EOS), teacher-forced: each target is one
    window (start token + target) in a slot of the core's decoder. At a decode's cache ``widths``
    (``SpecStats.widths``; wider if a pair needs it) its logits are those that decode computes for
    the same tokens (bit for bit where ``decoder.exact_windows``) and the sum is
    ``generate(scores=True)``'s. ``given``: per pair, the log P of its first tokens, known already
    (a decode's, for a target that begins as its output): those tokens are fed, their logits not
    computed, and the sum adds the given values first, as it would have added them. ``slots``
    pairs a pass, similar lengths together, each distinct source encoded once per pass unless
    ``states`` has its encoder states (per pair, a decode's ``SpecStats.states`` or None)
    (``decoders``: as ``generate``'s)."""
    out = [0.0] * len(targets)
    if not targets:
        return out
    given = given or [()] * len(targets)
    order = sorted(range(len(targets)), key=lambda i: (len(sources[i]), len(targets[i])))
    decoders = decoders or Decoders()
    for at in range(0, len(order), slots):
        chunk = order[at:at + slots]
        # each pass at its own pairs' widths, unless a decode's are given: attention runs over the
        # whole cache, and one call's longest pair made every pass as wide (249 positions for
        # W&I dev's first 500 lines, whose variants are ~25 tokens)
        with decoders.lease(model, len(chunk), max(widths[0], *(len(sources[i]) for i in chunk)),
                            max(widths[1], *(len(targets[i]) for i in chunk))) as dec:
            distinct: dict[tuple[int, ...], torch.Tensor | None] = {tuple(sources[i]): None for i in chunk}
            for i in chunk:
                if states is not None and states[i] is not None:
                    distinct[tuple(sources[i])] = states[i]
            todo = [src for src, h in distinct.items() if h is None]
            if todo:
                _, _, encoded = dec.encode([list(src) for src in todo])
                distinct.update((src, encoded[n, :len(src)]) for n, src in enumerate(todo))
            index = {src: n for n, src in enumerate(distinct)}
            hidden = torch.nn.utils.rnn.pad_sequence(list(distinct.values()), batch_first=True)  # [b, S, d_model]
            mask = pad([[1] * len(src) for src in distinct], 0).to(hidden.device)  # [b, S]
            which = torch.tensor([index[tuple(sources[i])] for i in chunk], device=hidden.device)
            rows = list(range(len(chunk)))
            dec.admit(rows, mask[which], hidden[which])
            # the packed positions whose logits are new: each pair's tokens after its given ones
            wanted, offset = [], 0
            for i in chunk:
                wanted += range(offset + len(given[i]), offset + len(targets[i]))
                offset += len(targets[i])
            logits = dec.forward(rows, [[dec.start, *targets[i][:-1]] for i in chunk],
                                 None if len(wanted) == offset else wanted)  # [new tokens, vocab]
            values = iter(t5.token_log_probs(logits, [t for i in chunk for t in targets[i][len(given[i]):]]))
            for i in chunk:
                for value in given[i]:
                    out[i] += value
                for _ in targets[i][len(given[i]):]:
                    out[i] += next(values)
    return out


def inputs(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> list[list[int]]:
    """The rows of a padded batch as id lists (EOS kept, padding dropped)."""
    return [ids[: int(n)] for ids, n in zip(input_ids.tolist(), attention_mask.sum(-1).tolist())]


def greedy(model: T5ForConditionalGeneration, input_ids: torch.Tensor, attention_mask: torch.Tensor,
           max_new_tokens: int = 128, slots: int | None = None) -> list[list[int]]:
    """Greedy output ids per row of a padded batch (no start token, no EOS, no padding)."""
    rows = inputs(input_ids, attention_mask)
    return generate(model, rows, slots or len(rows), max_new_tokens=max_new_tokens)[0]


def sample(model: T5ForConditionalGeneration, input_ids: torch.Tensor, attention_mask: torch.Tensor,
           max_new_tokens: int = 128, temperature: float = 1.0, top_p: float = 1.0,
           generator: torch.Generator | None = None, slots: int | None = None) -> list[list[int]]:
    """Sampled output ids per row of a padded batch (``t5.token_probs`` at every step)."""
    rows = inputs(input_ids, attention_mask)
    return generate(model, rows, slots or len(rows), max_new_tokens=max_new_tokens,
                    sampling=Sampling(temperature, top_p, generator))[0]
