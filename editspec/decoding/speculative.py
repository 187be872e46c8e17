"""Speculative T5 decoding: a drafter proposes, T5 verifies many tokens in one decoder pass.

T5 (the verifier) writes the whole corrected sentence one token per decoder pass. A drafter
guesses the continuation; T5 scores a window of up to γ draft tokens in ONE pass, keeps the
longest prefix it agrees with, and adds one token of its own (its prediction after that prefix),
so every pass yields 1 to γ + 1 tokens and the output is exactly T5's greedy output. Example
(words for ids; draft = EdiT5's correction, or the source itself for the copy drafter)::

    source   he go to school yesterday .
    draft    he went to the school yesterday . </s>
    pass 1   feed <s> he went to the      T5 predicts  he went to school ...
             accept "he went to", T5's own token "school" (draft said "the")   4 tokens
    resync   "school" is unique in the draft: drafting continues after it
    pass 2   feed school yesterday . </s>  T5 agrees with all of the draft: done   3 tokens

Two decoder passes instead of seven (six tokens and EOS). The pieces:

* Resynchronisation (Sun et al. 2021): after a mismatch, the last 1-3 output tokens are looked
  up in the draft, then in the source; the first n-gram with exactly one occurrence says where
  T5's output re-joins them, and drafting continues from there. With no unique match the drafter
  guesses that T5 replaced the draft token (the most frequent GEC edit) and drafts on after it;
  it then waits there (T5 may be inserting) and retries the lookup after every new token.
* γ adapts per row: doubles (up to ``max_gamma``) when the whole window was accepted, halves
  when a window was rejected in its first half. ``gamma="all"`` always sends the whole
  remaining draft (input-guided aggressive decoding).
* Sampling (Leviathan et al. 2022) with the draft as a point mass q = onehot(x): accept draft
  token x with probability p(x), else sample from norm(max(0, p - onehot(x))), which is p with
  x removed; p is ``editspec.t5.token_probs`` (temperature, top-p), as in ``t5.sample``. The
  output then has exactly the distribution of ``t5.sample``.
* Batches: rows accept different numbers of tokens. T5's relative position bias uses one cache
  length for the whole batch, so the cache cannot be cropped per row, nor padded inside. The
  cache therefore holds the batch-minimum length (see ``_Decoder``); each pass re-feeds a row's
  accepted tokens beyond it, right-padded (causal attention keeps the padding harmless), and
  finished rows leave the batch.

Exactness holds up to floating-point: a window pass computes the same logits as single-token
steps, but in a different summation order; a near-tie of two logits can flip (never seen in
float64 tests; rare in float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import torch
from transformers import PreTrainedTokenizerBase, T5ForConditionalGeneration

from editspec.modeling import t5
from editspec.errors import EditspecError


@dataclass
class SpecStats:
    """Counts of one ``speculative_generate`` call; lists have one entry per batch row."""

    proposed: list[int]  # draft tokens sent to the verifier
    accepted: list[int]  # draft tokens the verifier accepted
    tokens: list[int]  # tokens generated, EOS included
    row_passes: list[int]  # verifier passes the row took part in
    passes: int = 0  # batched verifier decoder passes

    @classmethod
    def empty(cls, batch: int) -> "SpecStats":
        return cls([0] * batch, [0] * batch, [0] * batch, [0] * batch)

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed draft tokens over the batch (0.0 when nothing was proposed)."""
        return sum(self.accepted) / max(1, sum(self.proposed))

    def as_dict(self) -> dict:
        return {"passes": self.passes, "acceptance_rate": self.acceptance_rate,
                "proposed": self.proposed, "accepted": self.accepted, "tokens": self.tokens,
                "row_passes": self.row_passes}


class Drafter:
    """Proposes draft tokens (verifier ids) for the rows of one batch."""

    tokenizer: PreTrainedTokenizerBase | None = None  # tokenizer of the draft ids, if known

    def begin(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, eos_token_id: int) -> None:
        """Called once per batch, before any proposal (encode the source, build drafts, ...)."""

    def propose(self, rows: list[int], outputs: list[list[int]],
                gammas: list[int | None]) -> list[list[int]]:
        """For each active batch row (index into the batch), given the verifier's output so far,
        up to gamma next tokens (None: as many as it has). May return fewer, or none."""
        raise NotImplementedError


def source_ids(input_ids: torch.Tensor, attention_mask: torch.Tensor, eos_token_id: int) -> list[list[int]]:
    """The source token ids of each row: no padding, no final EOS."""
    out = []
    for ids, n in zip(input_ids.tolist(), attention_mask.sum(-1).tolist()):
        ids = ids[: int(n)]
        out.append(ids[:-1] if ids and ids[-1] == eos_token_id else ids)
    return out


class StaticDrafter(Drafter):
    """Full draft sequences known up front (one per row, ids without EOS), followed through the
    verifier's output, with resynchronisation after mismatches (module docstring)."""

    def __init__(self, drafts: Sequence[Sequence[int]] | None = None, resync: bool = True,
                 max_ngram: int = 3, tokenizer: PreTrainedTokenizerBase | None = None):
        self.drafts, self.resync, self.max_ngram, self.tokenizer = drafts, resync, max_ngram, tokenizer

    def make_drafts(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    sources: list[list[int]]) -> Sequence[Sequence[int]]:
        if self.drafts is None:
            raise ValueError("StaticDrafter needs drafts")
        return self.drafts

    def begin(self, input_ids, attention_mask, eos_token_id):
        self.eos = eos_token_id
        sources = source_ids(input_ids, attention_mask, eos_token_id)
        drafts = self.make_drafts(input_ids, attention_mask, sources)
        if len(drafts) != len(sources):
            raise ValueError(f"{len(drafts)} drafts for a batch of {len(sources)}")
        # references to follow: the draft first, then the source (both end in EOS)
        self._refs = [(list(d) + [eos_token_id], s + [eos_token_id]) for d, s in zip(drafts, sources)]
        self._at: list[tuple[int, int, bool] | None] = [(0, 0, True)] * len(sources)  # (ref, pos, synced)
        self._seen = [0] * len(sources)

    def propose(self, rows, outputs, gammas):
        return [self._draft(r, out, g) for r, out, g in zip(rows, outputs, gammas)]

    def _draft(self, row: int, out: list[int], gamma: int | None) -> list[int]:
        refs = self._refs[row]
        for n in range(self._seen[row], len(out)):  # follow the tokens output since last time
            at = self._at[row]
            if at is None:
                continue
            k, p, synced = at
            if p < len(refs[k]) and refs[k][p] == out[n]:
                self._at[row] = (k, p + 1, True)
            elif not self.resync:
                self._at[row] = None
            else:  # no unique re-join: guess a replaced token once, then wait at that position
                self._at[row] = self._rejoin(refs, out[: n + 1]) or (k, p + synced, False)
        self._seen[row] = len(out)
        if self._at[row] is None:
            return []
        k, p, _ = self._at[row]
        return refs[k][p: None if gamma is None else p + gamma]

    def _rejoin(self, refs: tuple[list[int], ...], out: list[int]) -> tuple[int, int, bool] | None:
        """(reference, position after the match, True) of the shortest output suffix
        (1..max_ngram tokens) that occurs exactly once in a reference, the draft searched first."""
        for k, ref in enumerate(refs):
            for n in range(1, min(self.max_ngram, len(out)) + 1):
                gram = out[-n:]
                hits = [i + n for i in range(len(ref) - n + 1) if ref[i: i + n] == gram]
                if len(hits) == 1:
                    return k, hits[0], True
                if not hits:
                    break
        return None


class CopyDrafter(StaticDrafter):
    """The source sentence is the draft: input-guided aggressive decoding (Sun et al. 2021).
    GEC output is mostly a copy of its input, so most windows are accepted."""

    def __init__(self, resync: bool = True, max_ngram: int = 3):
        super().__init__(None, resync, max_ngram)

    def make_drafts(self, input_ids, attention_mask, sources):
        return sources


class EdiT5Drafter(StaticDrafter):
    """EdiT5's correction is the draft: tags, pointers and insertions decoded by EdiT5
    (``generate_edits``), then realized into the corrected token ids.

    EdiT5 reads the verifier's input ids, so both must share one tokenizer; with another
    tokenizer, render EdiT5's output as text and use ``retokenize_drafts`` + ``StaticDrafter``.
    """

    def __init__(self, model, tokenizer: PreTrainedTokenizerBase | None = None,
                 markers: Sequence[int] | None = None, resync: bool = True, max_ngram: int = 3):
        super().__init__(None, resync, max_ngram, tokenizer)
        from editspec.tokenization.tokens import marker_ids

        self.model = model
        self.markers = list(markers if markers is not None
                            else marker_ids(tokenizer) if tokenizer is not None
                            else getattr(getattr(model, "config", None), "marker_ids", None) or [])
        if not self.markers:
            raise EditspecError("EdiT5Drafter needs the marker ids: pass the EdiT5 tokenizer")

    def make_drafts(self, input_ids, attention_mask, sources):
        from editspec.tokenization.edits import realize

        edits = self.model.generate_edits(input_ids, attention_mask)
        return [realize(src, e, self.markers, self.eos) for src, e in zip(sources, edits)]


class SmallT5Drafter(Drafter):
    """A small T5 drafts greedily, γ tokens at a time, with its own cache (Leviathan et al.).

    Its greedy draft is deterministic given the prefix, so the point-mass acceptance rule is
    exact for sampling too. It must share the verifier's tokenizer.
    """

    def __init__(self, model: T5ForConditionalGeneration, max_gamma: int = 16,
                 tokenizer: PreTrainedTokenizerBase | None = None):
        self.model, self.max_gamma, self.tokenizer = model, max_gamma, tokenizer

    def begin(self, input_ids, attention_mask, eos_token_id):
        self._dec = _Decoder(self.model, input_ids, attention_mask)
        self._rows = list(range(input_ids.shape[0]))
        self._eos = eos_token_id

    def propose(self, rows, outputs, gammas):
        dec, by_row = self._dec, dict(zip(rows, outputs))
        dec.commit([[dec.start] + by_row[r] if r in by_row else None for r in self._rows])
        self._rows = list(rows)
        steps = min(self.max_gamma, max((self.max_gamma if g is None else g) for g in gammas))
        drafts: list[list[int]] = [[] for _ in rows]
        for _ in range(steps):
            logits, last = dec.forward()
            next_ids = logits[torch.arange(len(rows), device=logits.device), last].argmax(-1).tolist()
            for d, tok in zip(drafts, next_ids):
                d.append(tok)
            dec.commit([inp + [tok] for inp, tok in zip(dec.inputs, next_ids)])
            if all(self._eos in d for d in drafts):
                break
        return [d[: steps if g is None else g] for d, g in zip(drafts, gammas)]


class _Decoder:
    """A seq2seq decoder over a batch whose rows grow by different amounts per pass.

    T5 computes its relative position bias from one cache length for the batch, so rows cannot
    sit at different cache lengths, and padding inside the cache would shift positions. So the
    cache holds the first ``cached`` decoder inputs of every row (the batch minimum); ``forward``
    feeds each row's inputs beyond that, then the given extra tokens, right-padded: no real token
    attends to the trailing padding (causal mask), and ``commit`` crops it away.
    """

    def __init__(self, model: T5ForConditionalGeneration, input_ids: torch.Tensor,
                 attention_mask: torch.Tensor):
        self.model, self.attention_mask = model, attention_mask
        self.start, self.pad = model.config.decoder_start_token_id, model.config.pad_token_id
        self.encoder_hidden = t5.encode(model, input_ids, attention_mask)
        self.cache = t5.new_cache(model)
        self.inputs = [[self.start] for _ in range(input_ids.shape[0])]  # decoder inputs per row
        self.cached, self._fed = 0, [[] for _ in self.inputs]

    def forward(self, extra: Sequence[Sequence[int]] | None = None) -> tuple[torch.Tensor, list[int]]:
        """Logits [rows, width, vocab], and per row the index of its last input in the window
        (whose logits predict the token after it; the extra tokens follow it)."""
        extra = extra if extra is not None else [[] for _ in self.inputs]
        self._fed = [inp[self.cached:] + list(x) for inp, x in zip(self.inputs, extra)]
        width = max(map(len, self._fed))
        ids = torch.tensor([f + [self.pad] * (width - len(f)) for f in self._fed],
                           device=self.encoder_hidden.device)
        logits = t5.decode_step(self.model, ids, self.encoder_hidden, self.attention_mask, self.cache)
        return logits, [len(inp) - self.cached - 1 for inp in self.inputs]

    def commit(self, inputs: Sequence[list[int] | None]) -> None:
        """Set each row's decoder inputs (None drops the row); keep the cache they still match."""
        in_cache = [inp[: self.cached] + fed for inp, fed in zip(self.inputs, self._fed)]
        keep = [i for i, x in enumerate(inputs) if x is not None]
        if len(keep) < len(inputs):
            idx = torch.tensor(keep, dtype=torch.long, device=self.encoder_hidden.device)
            self.cache.batch_select_indices(idx)
            self.encoder_hidden, self.attention_mask = self.encoder_hidden[idx], self.attention_mask[idx]
        self.inputs = [inputs[i] for i in keep]
        self._fed = [[] for _ in keep]
        if keep:  # every row's last input is (re-)fed next time: its logits are the prediction
            self.cached = min(min(_common_prefix(in_cache[i], inputs[i]), len(inputs[i]) - 1)
                              for i in keep)
            self.cache.crop(self.cached - self.cache.get_seq_length())  # crop(-k): drop the last k


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def _accept_sampled(probs: torch.Tensor, draft: list[int],
                    generator: torch.Generator | None) -> tuple[int, int]:
    """(number of draft tokens accepted, the verifier's own next token) for one row's window of
    len(draft) + 1 distributions: Leviathan et al.'s rule with q = onehot(draft token)."""
    if draft:
        p_draft = probs[torch.arange(len(draft), device=probs.device), torch.tensor(draft, device=probs.device)]
        u = torch.rand(len(draft), generator=generator, device=probs.device, dtype=probs.dtype)
        rejected = (u >= p_draft).nonzero()
        if len(rejected):  # resample from p without the rejected token: norm(max(0, p - onehot(x)))
            n = int(rejected[0])
            residual = probs[n].clone()
            residual[draft[n]] = 0
            return n, int(torch.multinomial(residual, 1, generator=generator))
    return len(draft), int(torch.multinomial(probs[len(draft)], 1, generator=generator))


def _next_gamma(gamma: int | None, accepted: int, proposed: int, max_gamma: int) -> int | None:
    if gamma is None:  # "all"
        return None
    if accepted == proposed == gamma:
        return min(max_gamma, 2 * gamma)
    if accepted < proposed and accepted < gamma // 2:
        return max(1, gamma // 2)
    return gamma


def check_tokenizers(drafter: Drafter, tokenizer: PreTrainedTokenizerBase | None) -> None:
    """Refuse a drafter whose ids come from another vocabulary than the verifier's."""
    theirs = drafter.tokenizer
    if theirs is not None and tokenizer is not None and theirs is not tokenizer \
            and theirs.get_vocab() != tokenizer.get_vocab():
        raise EditspecError(
            "the drafter and the verifier use different tokenizers; render the drafts as text "
            "and re-tokenize them (editspec.speculative.retokenize_drafts, then StaticDrafter)")


def retokenize_drafts(drafts: Sequence[Sequence[int]], draft_tokenizer: PreTrainedTokenizerBase,
                      verifier_tokenizer: PreTrainedTokenizerBase,
                      sources: Sequence[str] | None = None) -> list[list[int]]:
    """Drafts in the drafter's ids -> text -> the verifier's ids. With the source texts, the
    text of copied tokens comes from the source (``render_ids``), so characters the drafter's
    vocabulary lacks (its ``<unk>``) are spelled as in the input."""
    from editspec.tokenization.tokens import encode, render_ids

    if sources is not None:
        texts = [render_ids(draft_tokenizer, src, d)
                 for src, d in zip(encode(draft_tokenizer, sources), drafts)]
    else:
        texts = [draft_tokenizer.decode(d, skip_special_tokens=True) for d in drafts]
    return [e.ids for e in encode(verifier_tokenizer, texts)]


@torch.inference_mode()
def speculative_generate(
    verifier: T5ForConditionalGeneration, input_ids: torch.Tensor, attention_mask: torch.Tensor,
    drafter: Drafter, max_new_tokens: int = 128, gamma: int | Literal["all"] = 4, max_gamma: int = 64,
    do_sample: bool = False, temperature: float = 1.0, top_p: float = 1.0,
    generator: torch.Generator | None = None, tokenizer: PreTrainedTokenizerBase | None = None,
) -> tuple[list[list[int]], SpecStats]:
    """T5's output ids per row (greedy, or sampled with ``do_sample``), drafted by ``drafter``.

    ``tokenizer`` (the verifier's) lets the call refuse a drafter with another vocabulary.
    """
    check_tokenizers(drafter, tokenizer)
    eos, batch = verifier.config.eos_token_id, input_ids.shape[0]
    drafter.begin(input_ids, attention_mask, eos)
    dec = _Decoder(verifier, input_ids, attention_mask)
    out: list[list[int]] = [[] for _ in range(batch)]
    stats = SpecStats.empty(batch)
    gammas: list[int | None] = [None if gamma == "all" else int(gamma)] * batch
    rows = list(range(batch)) if max_new_tokens > 0 else []
    while rows:
        # a window never reaches past max_new_tokens, nor past an EOS it proposes
        budget = [max_new_tokens - len(out[r]) - 1 for r in rows]
        limits = [b if gammas[r] is None else min(b, gammas[r]) for r, b in zip(rows, budget)]
        drafts = [_until_eos(d[:g], eos) for d, g in
                  zip(drafter.propose(rows, [out[r] for r in rows], limits), limits)]
        logits, last = dec.forward(drafts)
        stats.passes += 1
        probs = t5.token_probs(logits, temperature, top_p) if do_sample else None
        preds = None if do_sample else logits.argmax(-1).tolist()
        inputs: list[list[int] | None] = []
        for k, (r, draft) in enumerate(zip(rows, drafts)):
            window = slice(last[k], last[k] + len(draft) + 1)  # predictions for draft + 1 tokens
            if do_sample:
                n, own = _accept_sampled(probs[k, window], draft, generator)
            else:
                n = _common_prefix(draft, preds[k][window])
                own = preds[k][window][n]
            new = draft[:n] if eos in draft[:n] else draft[:n] + [own]
            stats.proposed[r] += len(draft)
            stats.accepted[r] += n
            stats.row_passes[r] += 1
            stats.tokens[r] += len(new)
            gammas[r] = _next_gamma(gammas[r], n, len(draft), max_gamma)
            out[r] += [tok for tok in new if tok != eos]
            done = new[-1] == eos or len(out[r]) >= max_new_tokens
            inputs.append(None if done else [dec.start] + out[r])
        dec.commit(inputs)
        rows = [r for r, x in zip(rows, inputs) if x is not None]
    return out, stats


def _until_eos(draft: list[int], eos: int) -> list[int]:
    return draft[: draft.index(eos) + 1] if eos in draft else draft
