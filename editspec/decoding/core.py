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

The draft window's cost model is ``editspec.decoding.window``; the drafters,
``editspec.decoding.drafters``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
from transformers import T5ForConditionalGeneration

from editspec.decoding.decoder import Decoder
from editspec.decoding.drafters import Drafter
from editspec.decoding.window import WindowPolicy
from editspec.modeling import t5


@dataclass
class SpecStats:
    """Counts of one ``generate`` call; lists have one entry per sentence."""

    proposed: list[int]  # draft tokens sent to the verifier
    accepted: list[int]  # draft tokens the verifier accepted
    tokens: list[int]  # tokens generated, EOS included
    row_passes: list[int]  # verifier passes the sentence took part in
    passes: int = 0  # verifier decoder passes (all slots together)
    windows: list[tuple[int, int]] = field(default_factory=list)  # (proposed, accepted) per row and pass

    @classmethod
    def empty(cls, n: int) -> "SpecStats":
        return cls([0] * n, [0] * n, [0] * n, [0] * n)

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


@torch.inference_mode()
def generate(
    model: T5ForConditionalGeneration, sources: Sequence[Sequence[int]], slots: int = 32,
    drafter: Drafter | None = None, max_new_tokens: int | Sequence[int] = 128,
    window: int | WindowPolicy | None = None, do_sample: bool = False, temperature: float = 1.0,
    top_p: float = 1.0, generator: torch.Generator | None = None,
    done: Callable[[int], None] | None = None,
) -> tuple[list[list[int]], SpecStats]:
    """T5's output ids (no start token, no EOS) for each source (ids ending in EOS), greedy or
    sampled, drafted by ``drafter`` (None: one token per pass), ``slots`` sentences at a time.

    ``window``: draft tokens per row and pass, a fixed number or a ``WindowPolicy`` (None: the
    one measured for this model and slot count, see ``editspec.decoding.window``). ``done(i)``
    is called as soon as sentence i is decoded (progress).
    """
    n, eos = len(sources), model.config.eos_token_id
    budget = [max_new_tokens] * n if isinstance(max_new_tokens, int) else list(max_new_tokens)
    out: list[list[int]] = [[] for _ in range(n)]
    stats = SpecStats.empty(n)
    slots = max(1, min(slots, n))
    if drafter is not None:
        drafter.prepare([list(s[:-1]) if s and s[-1] == eos else list(s) for s in sources], eos)
        if not isinstance(window, WindowPolicy):
            window = WindowPolicy.measured(model, slots) if window is None else WindowPolicy.fixed_size(window)
    waiting = deque(i for i in range(n) if budget[i] > 0)
    for i in range(n):
        if budget[i] <= 0 and done is not None:
            done(i)
    if not waiting:
        return out, stats
    dec = Decoder(model, slots, max(map(len, sources)), max(budget) + 1)
    sentence: list[int | None] = [None] * slots  # which sentence each slot decodes
    pending: list[int] = [dec.start] * slots  # the token each slot feeds next
    staged: tuple[list[int], torch.Tensor, torch.Tensor] = ([], None, None)  # encoded, not yet admitted

    while True:
        free = [s for s in range(slots) if sentence[s] is None]
        while free and (staged[0] or waiting):  # finished rows leave; waiting sentences take their slots
            if not staged[0]:  # encode the next ``slots`` sentences in one batch
                new = [waiting.popleft() for _ in range(min(slots, len(waiting)))]
                ids, mask, hidden = dec.encode([list(sources[i]) for i in new])
                if drafter is not None:
                    drafter.encoded(new, ids, mask, hidden, model.encoder)
                staged = (new, mask, hidden)
            new, mask, hidden = staged
            k = min(len(free), len(new))
            dec.admit(free[:k], mask[:k], hidden[:k])
            for s, i in zip(free[:k], new[:k]):
                sentence[s], pending[s] = i, dec.start
            staged, free = (new[k:], mask[k:], hidden[k:]), free[k:]
        rows = [s for s in range(slots) if sentence[s] is not None]
        if not rows:
            return out, stats
        # draft: at most the row's budget, cut after a drafted EOS
        gamma = window.size(len(rows)) if drafter is not None else 0
        drafts = []
        for s in rows:
            i = sentence[s]
            room = max(0, min(gamma, budget[i] - len(out[i]) - 1))
            # every pass asks, even for 0 tokens: a drafter may count passes (``Cheapest``)
            d = list(drafter.propose(i, out[i], room))[:room] if drafter is not None else []
            drafts.append(d[: d.index(eos) + 1] if eos in d else d)
        logits = dec.forward(rows, [[pending[s]] + d for s, d in zip(rows, drafts)])  # [T, vocab]
        stats.passes += 1
        if do_sample:
            probs = t5.token_probs(logits, temperature, top_p)
        else:
            preds = logits.argmax(-1).tolist()
        at = 0
        for s, draft in zip(rows, drafts):
            i, seg = sentence[s], slice(at, at + len(draft) + 1)  # predictions for draft + 1
            at += len(draft) + 1
            if do_sample:
                k, own = accept_sampled(probs[seg], draft, generator)
            else:
                k = next((j for j, (a, b) in enumerate(zip(draft, preds[seg])) if a != b), len(draft))
                own = preds[seg][k]
            new = draft[:k] if eos in draft[:k] else draft[:k] + [own]
            dec.length[s] += 1 + k  # the pending token and the accepted draft are cached now
            pending[s] = own
            stats.proposed[i] += len(draft)
            stats.accepted[i] += k
            stats.row_passes[i] += 1
            stats.tokens[i] += len(new)
            out[i] += [t for t in new if t != eos]
            if drafter is not None:
                stats.windows.append((len(draft), k))
                window.update(k, len(draft))
            if new[-1] == eos or len(out[i]) >= budget[i]:
                sentence[s] = None
                if drafter is not None:
                    drafter.finish(i, out[i])
                if done is not None:
                    done(i)


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
    return generate(model, rows, slots or len(rows), max_new_tokens=max_new_tokens, do_sample=True,
                    temperature=temperature, top_p=top_p, generator=generator)[0]
