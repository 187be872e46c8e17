"""Beam search on the decoding core: transformers' ``generate(num_beams=K)``, its length penalty and
early stopping, exactly, over a stream of sentences; n-best lists with their scores; drafts.

A sentence takes a group of K rows of the core's static cache (``decoding.decoder``), a beam a
row; the encoder runs once per sentence and its states fill the cross-attention of its K rows::

    group 0   rows 0-3   sentence 7   beam b's keys and values in row 4*0 + b, at its own positions
    group 1   rows 4-7   sentence 2   ...

Each turn of ``generate``'s loop is five functions: ``refill`` (free groups take waiting
sentences), ``draft`` (the rows that need a pass: their pending token and a draft after it),
``verify`` (one decoder pass; each fed token's log-softmax), ``advance`` (beam steps, as many as
the known log-probs allow: one without drafts) and ``reorder`` (each new beam's row becomes a copy
of the row it came from, up to that row's cached tokens). A beam step is transformers' own
(``GenerationMixin._beam_search``), the same float32 tensor operations on each group's rows:

    scores    running [K] + log_softmax(logits) [K, V], flattened to [K*V]; the top 2K
    running   the best K of those that end neither by EOS nor by the budget
    finished  of the top K, those that end, scored sum / length ** length_penalty (EOS counted),
              merged with the finished so far; the best K kept
    ends      early_stopping True: K finished; False: the best running score over its current
              length cannot beat the worst finished one; "never": over the longest length (when
              length_penalty > 0); and always at the budget

A sentence whose search has ended leaves its group at once (transformers runs it on with the
batch, but its finished list can no longer change), and its group takes the next sentence.

Drafts: a pass may feed a row its pending token and a draft after it (the source, followed past
the beam's own output, ``drafters.follow_source``): the log-probs of the draft's positions are
those of the beam's continuations along it. A new beam whose token is the next draft token of the
row it came from needs no pass: its log-probs are known, its key and value cached. The group steps
on while all its beams are so known; a beam off its draft waits for the next pass. The steps are
the plain search's on the same log-probs, so the output is the plain search's (in float32 up to the
last bits of a wider pass, ``decoding.decoder``). Hand-written: transformers' beam search runs on
its own cache, one step a pass, and refuses drafts (assisted generation needs ``num_beams=1``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import torch

from editspec.decoding.core import SpecStats
from editspec.decoding.decoder import Decoder, Decoders
from editspec.decoding.drafters import follow_source
from editspec.decoding.window import WindowPolicy
from editspec.errors import EditspecError

if TYPE_CHECKING:
    from transformers import T5ForConditionalGeneration

NEG = -1.0e9  # transformers' "never" score


@dataclass(frozen=True)
class BeamSettings:
    """``num_beams`` beams, the best ``num_return`` finished hypotheses returned, transformers'
    ``length_penalty`` (a finished hypothesis scores its log P / length ** length_penalty) and
    ``early_stopping`` (True, False or "never")."""

    num_beams: int = 4
    num_return: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | str = False

    def __post_init__(self) -> None:
        if isinstance(self.num_beams, bool) or not isinstance(self.num_beams, int) or self.num_beams < 1:
            raise EditspecError(f"beams must be 1 or more, not {self.num_beams!r}")
        if isinstance(self.num_return, bool) or not isinstance(self.num_return, int) or self.num_return < 1:
            raise EditspecError(f"n-best must be 1 or more, not {self.num_return!r}")
        if self.num_return > self.num_beams:
            raise EditspecError(f"n-best {self.num_return} is more than the {self.num_beams} beams")
        if self.early_stopping is not True and self.early_stopping is not False and self.early_stopping != "never":
            raise EditspecError(f"early stopping must be True, False or 'never', not {self.early_stopping!r}")


BeamDrafter = Callable[[int, list[int], int], Sequence[int]]  # (sentence, a beam's output, limit) -> draft


def source_drafter(sources: Sequence[Sequence[int]], eos: int) -> BeamDrafter:
    """Drafts from each sentence's source (ids ending in EOS), followed past a beam's output
    (``drafters.follow_source``: no state, since beams come and go)."""
    plain = [list(s[:-1]) if s and s[-1] == eos else list(s) for s in sources]
    return lambda i, output, limit: follow_source(plain[i], output, limit, eos)


@dataclass(frozen=True)
class Hypothesis:
    """A finished beam: output ids (no start token, no EOS) and its score (log P / length ** length_penalty)."""

    ids: list[int]
    score: float


@dataclass
class _Search:
    """The loop's state over one ``generate`` call. Per group g (tensors' first dimension): the
    sentence, the steps taken, transformers' running and finished beams. Per row r (K a group):
    the token chosen but not yet cached (``pending``), the draft tokens cached after its path
    (``spec``) and the log-probs after its path and after each of them (``known``, [len(spec) + 1, V])."""

    dec: Decoder
    eos: int
    beams: BeamSettings
    drafter: BeamDrafter | None
    window: WindowPolicy | None
    done: Callable[[int], None] | None
    sources: Sequence[Sequence[int]]
    budget: list[int]
    out: list[list[Hypothesis]]
    stats: SpecStats
    waiting: deque
    sentence: list[int | None]
    steps: list[int]
    running: torch.Tensor  # [G, K] float32 running beams' log P
    seqs: torch.Tensor  # [G, K, T] their tokens
    fin_seqs: torch.Tensor  # [G, K, T] finished hypotheses' tokens (EOS included)
    fin_len: torch.Tensor  # [G, K] their lengths
    fin_scores: torch.Tensor  # [G, K] their scores (NEG: none yet)
    fin_done: torch.Tensor  # [G, K] bool: a hypothesis holds the place
    pending: list[list[int]]
    spec: list[list[int]]
    known: list[torch.Tensor | None]
    staged: tuple[list[int], torch.Tensor | None, torch.Tensor | None] = field(
        default_factory=lambda: ([], None, None))

    @property
    def k(self) -> int:
        return self.beams.num_beams

    def groups(self) -> list[int]:
        """The groups searching for a sentence."""
        return [g for g, i in enumerate(self.sentence) if i is not None]

    def rows(self, g: int) -> range:
        return range(g * self.k, (g + 1) * self.k)


@torch.inference_mode()
def generate(
    model: T5ForConditionalGeneration, sources: Sequence[Sequence[int]], beams: BeamSettings,
    slots: int = 8, max_new_tokens: int | Sequence[int] = 128, drafter: BeamDrafter | bool | None = None,
    window: int | WindowPolicy | None = None, done: Callable[[int], None] | None = None,
    decoders: Decoders | None = None,
) -> tuple[list[list[Hypothesis]], SpecStats]:
    """Each source's ``beams.num_return`` best hypotheses, best first (sources: ids ending in EOS),
    ``slots`` sentences at a time (``slots * num_beams`` cache rows); sentence i's outputs are at
    most ``max_new_tokens`` (or its own ``max_new_tokens[i]``) ids. ``drafter(i, output, limit)``:
    passes verify its draft after each beam's output (True: the source's, ``source_drafter``;
    ``window`` tokens a row, a number or a ``WindowPolicy``; None: 8); the output is the same.
    ``done(i)`` once sentence i is decoded; ``decoders``: where the model's decoder is kept (a
    ``Bundle``'s; None: a new one). One beam is not greedy search (transformers too decodes
    ``num_beams=1`` greedily): ``core.generate`` is."""
    n, k = len(sources), beams.num_beams
    budget = [max_new_tokens] * n if isinstance(max_new_tokens, int) else list(max_new_tokens)
    out: list[list[Hypothesis]] = [[Hypothesis([], 0.0)] * beams.num_return for _ in range(n)]
    stats = SpecStats.empty(n)
    for i in (i for i in range(n) if budget[i] <= 0 and done is not None):
        done(i)
    waiting = deque(i for i in range(n) if budget[i] > 0)
    if not waiting:
        return out, stats
    eos = model.config.eos_token_id
    if 2 * k > model.config.vocab_size:  # the start's K beams share one row (``verify``): 2K real candidates
        raise EditspecError(f"{k} beams need a vocabulary of at least {2 * k} tokens")
    if drafter is True:
        drafter = source_drafter(sources, eos)
    if drafter and not isinstance(window, WindowPolicy):
        window = WindowPolicy.fixed_size(8 if window is None else window)
    groups, width = max(1, min(slots, len(waiting))), max(budget)
    with (decoders or Decoders()).lease(model, groups * k, max(map(len, sources)), width + 1) as dec:
        stats.widths = dec.widths

        def fill(*shape: int, value: float = 0, dtype: torch.dtype = torch.long) -> torch.Tensor:
            return torch.full(shape, value, dtype=dtype, device=dec.device)

        st = _Search(dec=dec, eos=eos, beams=beams, drafter=drafter or None, window=window if drafter else None,
                     done=done, sources=sources, budget=budget, out=out, stats=stats, waiting=waiting,
                     sentence=[None] * groups, steps=[0] * groups, running=fill(groups, k, dtype=torch.float32),
                     seqs=fill(groups, k, width), fin_seqs=fill(groups, k, width), fin_len=fill(groups, k),
                     fin_scores=fill(groups, k, value=NEG, dtype=torch.float32),
                     fin_done=fill(groups, k, dtype=torch.bool), pending=[[] for _ in range(groups * k)],
                     spec=[[] for _ in range(groups * k)], known=[None] * (groups * k))
        while True:
            refill(st)
            if not st.groups():
                return out, stats
            rows = [r for g in st.groups() for r in st.rows(g) if st.known[r] is None]
            verify(st, rows, draft(st, rows))
            stats.passes += 1
            advance(st)


def refill(st: _Search) -> None:
    """Free groups take waiting sentences, encoded ``groups`` at a time, each sentence's states in
    its K rows; its beams start as transformers' (beam 0 at 0, the others at NEG: one start)."""
    free = [g for g, i in enumerate(st.sentence) if i is None]
    while free and (st.staged[0] or st.waiting):
        if not st.staged[0]:
            new = [st.waiting.popleft() for _ in range(min(len(st.sentence), len(st.waiting)))]
            _, mask, hidden = st.dec.encode([list(st.sources[i]) for i in new])
            st.staged = (new, mask, hidden)
        new, mask, hidden = st.staged
        m = min(len(free), len(new))
        rows = [r for g in free[:m] for r in st.rows(g)]
        st.dec.admit(rows, mask[:m].repeat_interleave(st.k, 0), hidden[:m].repeat_interleave(st.k, 0))
        for g, i in zip(free[:m], new[:m]):
            st.sentence[g], st.steps[g] = i, 0
            st.running[g] = NEG
            st.running[g, 0] = 0.0
            st.seqs[g], st.fin_seqs[g], st.fin_len[g] = 0, 0, 0
            st.fin_scores[g], st.fin_done[g] = NEG, False
            for r in st.rows(g):
                st.pending[r], st.spec[r], st.known[r] = [st.dec.start], [], None
        st.staged, free = (new[m:], mask[m:], hidden[m:]), free[m:]


def draft(st: _Search, rows: list[int]) -> list[list[int]]:
    """Each row's draft after its beam's output (``source_drafter``: the source followed past it),
    at most the window and what its budget can still use, cut after a drafted EOS."""
    if st.drafter is None:
        return [[] for _ in rows]
    gamma, drafts = st.window.size(len(rows)), []
    for r in rows:
        g, b = divmod(r, st.k)
        i, s = st.sentence[g], st.steps[g]
        room = max(0, min(gamma, st.budget[i] - s - 1))
        d = list(st.drafter(i, st.seqs[g, b, :s].tolist(), room))[:room] if room else []
        drafts.append(d[: d.index(st.eos) + 1] if st.eos in d else d)
    return drafts


def verify(st: _Search, rows: list[int], drafts: list[list[int]]) -> None:
    """One decoder pass over ``rows`` (pending token + draft): each row's log-probs after its path
    and after each draft token (a log-softmax of the logits in float32, as transformers takes it).
    A new sentence's K beams are one start token: its first row alone is fed, the others share
    its log-probs. The pass runs over consecutive rows (views of the cache, no gather), the rows
    between fed nothing."""
    first = {r: r - r % st.k for r in rows if st.steps[r // st.k] == 0}  # a new group's rows -> its first
    fed = {r: d for r, d in zip(rows, drafts) if first.get(r, r) == r}
    span = list(range(min(fed), max(fed) + 1))
    logits = st.dec.forward(span, [st.pending[r] + fed[r] if r in fed else [] for r in span])  # [T, V]
    logp = logits.to(torch.float32).log_softmax(-1)
    at = 0
    for r in (r for r in span if r in fed):
        d = fed[r]
        st.known[r], st.spec[r] = logp[at: at + len(d) + 1], d
        st.dec.keep(r, st.dec.cached(r) + 1)
        st.pending[r] = []
        at += len(d) + 1
        st.stats.proposed[st.sentence[r // st.k]] += len(d)
        st.stats.row_passes[st.sentence[r // st.k]] += 1
    for r, f in first.items():
        if r != f:  # the same start token on the same encoder states: the same cache and log-probs
            st.known[r], st.spec[r], st.pending[r] = st.known[f], st.spec[f], []
            st.dec.keep(r, st.dec.cached(f))


def advance(st: _Search) -> None:
    """Beam steps for every group whose beams all have known log-probs, again while they do."""
    while True:
        ready = [g for g in st.groups() if all(st.known[r] is not None for r in st.rows(g))]
        if not ready:
            return
        origin, token, ended = step(st, ready)
        for g in (g for g, end in zip(ready, ended) if end):
            finish(st, g)
        on = [n for n, end in enumerate(ended) if not end]
        reorder(st, [ready[n] for n in on], [origin[n] for n in on], [token[n] for n in on])


def step(st: _Search, gs: list[int]) -> tuple[list[list[int]], list[list[int]], list[bool]]:
    """One beam step of groups ``gs`` (transformers' ``_beam_search`` loop body, on each group's
    rows): (each new running beam's origin beam and token, whether the group's search ended)."""
    k, dev = st.k, st.running.device
    at = torch.tensor(gs, device=dev)
    logp = torch.stack([st.known[r][0] for g in gs for r in st.rows(g)])  # [A*K, V]
    vocab = logp.shape[-1]
    scores = (logp.view(len(gs), k, vocab) + st.running[at][:, :, None]).view(len(gs), k * vocab)
    top, index = torch.topk(scores, 2 * k)  # [A, 2K]
    origin, token = index // vocab, index % vocab
    steps = torch.tensor([st.steps[g] for g in gs], device=dev)
    limit = torch.tensor([st.budget[st.sentence[g]] for g in gs], device=dev)
    seqs = _gather(st.seqs[at], origin)  # [A, 2K, T]
    seqs.scatter_(2, steps[:, None, None].expand(-1, 2 * k, 1), token[:, :, None])
    hits = (token == st.eos) | (steps + 1 >= limit)[:, None]  # [A, 2K] EOS, or the budget reached
    # running: the best K that go on
    running = top + hits.to(torch.float32) * NEG
    keep = torch.topk(running, k)[1]
    st.running[at], st.seqs[at] = running.gather(1, keep), _gather(seqs, keep)
    # finished: the top K's ends, scored with the length penalty (EOS counted), merged with the
    # finished so far. transformers also adds NEG for a batch row whose search has ended; here
    # such a group has left (``finish``): its finished list could no longer change
    just = hits.clone()
    just[:, k:] = False
    length = torch.tensor([float((s + 1) ** st.beams.length_penalty) for s in steps.tolist()], device=dev)  # [A]
    scored = top / length[:, None] + (~just) * NEG
    both = torch.cat((st.fin_scores[at], scored), 1)  # [A, 3K]
    merged = torch.topk(both, k)[1]
    st.fin_scores[at] = both.gather(1, merged)
    st.fin_seqs[at] = _gather(torch.cat((st.fin_seqs[at], seqs), 1), merged)
    st.fin_len[at] = torch.cat((st.fin_len[at], (steps + 1)[:, None].expand(-1, 2 * k)), 1).gather(1, merged)
    st.fin_done[at] = torch.cat((st.fin_done[at], just), 1).gather(1, merged)
    for g in gs:
        st.steps[g] += 1
    ended = (~_improvable(st, at, gs)) | hits.all(1)
    if st.beams.early_stopping is True:
        ended |= st.fin_done[at].all(1)
    return origin.gather(1, keep).tolist(), token.gather(1, keep).tolist(), ended.tolist()


def _improvable(st: _Search, at: torch.Tensor, gs: list[int]) -> torch.Tensor:
    """transformers' early-stop heuristic per group: whether the best running beam, scored at its
    best hypothetical length, beats a finished place (an empty place: any score does)."""
    lp = st.beams.length_penalty
    if st.beams.early_stopping == "never" and lp > 0.0:
        lengths = [st.budget[st.sentence[g]] for g in gs]  # max_length - the start token
    else:
        lengths = [st.steps[g] for g in gs]
    best = st.running[at][:, :1] / torch.tensor([float(n ** lp) for n in lengths], device=at.device)[:, None]
    worst = torch.where(st.fin_done[at], st.fin_scores[at].min(1, keepdim=True)[0], NEG)
    return (best > worst).any(1)


def _gather(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x[a, index[a, j], ...] for x [A, n, ...] and index [A, m]: [A, m, ...]."""
    return x[torch.arange(x.shape[0], device=x.device)[:, None], index]


def reorder(st: _Search, gs: list[int], origin: list[list[int]], token: list[list[int]]) -> None:
    """Each group's new beam j takes the row of its origin beam: a copy of its cache up to the
    tokens it shares (its path, and the rest of the draft if j's token was the draft's next), its
    known log-probs shifted by one token, or its token pending when it left the draft."""
    dst, src, width = [], [], 0
    new: dict[int, tuple[list[int], list[int], torch.Tensor | None, int]] = {}
    for g, origins, tokens in zip(gs, origin, token):
        for j, (o, x) in enumerate(zip(origins, tokens)):
            r, s = g * st.k + j, g * st.k + o
            spec = st.spec[s]
            on = bool(spec) and spec[0] == x
            if st.window is not None and spec:
                st.window.update(int(on), 1)
            if on:
                st.stats.accepted[st.sentence[g]] += 1
                new[r] = ([], spec[1:], st.known[s][1:], st.dec.cached(s) + 1)
            else:
                new[r] = ([x], [], None, st.dec.cached(s))
            if r != s:
                dst.append(r)
                src.append(s)
                width = max(width, new[r][3] + len(new[r][1]))
    st.dec.copy_rows(dst, src, width)  # the right-hand side is gathered first: rows may swap
    for r, (pending, spec, known, length) in new.items():
        st.pending[r], st.spec[r], st.known[r] = pending, spec, known
        st.dec.keep(r, length)


def finish(st: _Search, g: int) -> None:
    """The group's sentence ends: its best ``num_return`` finished hypotheses (no EOS); the group is free."""
    i = st.sentence[g]
    hyps = []
    for seq, n, score in zip(st.fin_seqs[g].tolist(), st.fin_len[g].tolist(), st.fin_scores[g].tolist()):
        ids = seq[:n]
        hyps.append(Hypothesis(ids[:-1] if ids and ids[-1] == st.eos else ids, score))
    st.out[i] = hyps[: st.beams.num_return]
    st.stats.tokens[i] = st.fin_len[g, 0].item()
    st.sentence[g] = None
    for r in st.rows(g):
        st.known[r], st.spec[r] = None, []
    if st.done is not None:
        st.done(i)
