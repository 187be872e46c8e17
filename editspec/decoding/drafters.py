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
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from editspec.errors import EditspecError
from editspec.tokenization.edits import realize
from editspec.tokenization.tokens import encode, render_ids


class Drafter:
    """Proposes draft tokens (verifier ids) for one sentence at a time."""

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

    def finish(self, index: int) -> None:
        """The sentence left its slot: forget its state."""


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
        for k, ref in enumerate(refs):
            for n in range(1, min(self.max_ngram, len(out)) + 1):
                gram = out[-n:]
                hits = [i + n for i in range(len(ref) - n + 1) if ref[i: i + n] == gram]
                if len(hits) == 1:
                    return k, hits[0], True
                if not hits:
                    break
        return None

    def finish(self, index):
        self._state.pop(index, None)


class Copy(Follow):
    """The source is the draft (input-guided aggressive decoding, Sun et al. 2021)."""

    def __init__(self, resync: bool = True, max_ngram: int = 3):
        super().__init__(None, resync, max_ngram)


class Ngram(Drafter):
    """Prompt lookup over the output itself: the latest earlier occurrence of its last n tokens
    (n = max_ngram .. 1) proposes the tokens that followed it."""

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def propose(self, index, output, limit):
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

    def __init__(self, model, markers: Sequence[int], resync: bool = True,
                 max_insertion_tokens: int | None = None):
        super().__init__(None, resync)
        if not markers:
            raise EditspecError("the EdiT5 drafter needs the marker ids: pass the EdiT5 tokenizer's")
        self.model, self.markers = model, list(markers)
        self.max_insertion_tokens = max_insertion_tokens

    def prepare(self, sources, eos):
        super().prepare(sources, eos)
        self.drafts: dict[int, list[int]] = {}  # filled by ``encoded``, before each sentence's turn

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        states = hidden if encoder is self.model.encoder else None  # else EdiT5 encodes itself
        limit = self.max_insertion_tokens or max(32, input_ids.shape[1] + 16)
        edits = self.model.generate_edits(input_ids, attention_mask, max_insertion_tokens=limit,
                                          encoder_hidden_states=states)
        for i, e in zip(indices, edits):
            self.drafts[i] = realize(self.sources[i], e, self.markers, self.eos)

    def finish(self, index):
        super().finish(index)
        self.drafts.pop(index, None)


class Mix(Drafter):
    """Several drafters; each pass, the one whose last proposal the verifier followed longest
    (ties: the earlier one)."""

    def __init__(self, *drafters: Drafter):
        self.drafters = drafters
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

    def finish(self, index):
        self._last.pop(index, None)
        self._best.pop(index, None)
        for d in self.drafters:
            d.finish(index)


def _prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def check_tokenizers(drafter: Drafter, tokenizer: PreTrainedTokenizerBase | None) -> None:
    """Refuse a drafter whose ids come from another vocabulary than the verifier's."""
    theirs = drafter.tokenizer
    if theirs is not None and tokenizer is not None and theirs is not tokenizer \
            and theirs.get_vocab() != tokenizer.get_vocab():
        raise EditspecError(
            "the drafter and the verifier use different tokenizers; render the drafts as text "
            "and re-tokenize them (editspec.decoding.drafters.retokenize_drafts, then Follow)")


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
