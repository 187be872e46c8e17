"""``TimedDrafter``: a drafter of ``editspec.decoding.speculative``, timed, with the draft tokens
each verifier pass accepted counted per row.

The verifier accepts the longest prefix of the (cut) draft that equals its own greedy tokens and
then adds one token of its own, which differs from the next draft token. So the accepted count
of a pass is the common prefix of the draft and the tokens the row gained by the next proposal
(or by the end, EOS included when it was emitted). For example, with the row at ``[a]``::

    draft proposed          b c d e        (γ = 4; cut after EOS if it holds one)
    row at the next pass    a b c x        gained b c x
    recorded pass           (proposed 4, accepted 2)

These (proposed, accepted) pairs give the acceptance histogram and Leviathan et al.'s α
(``editspec.profiling.stats``).
"""

from __future__ import annotations

from editspec.profiling.clock import Recorder


class TimedDrafter:
    """Wraps a ``editspec.decoding.speculative.Drafter``: times it (``draft`` spans) and works out,
    for every verifier pass and row, how many draft tokens were proposed and accepted."""

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
        """Settle the last pass of every row (``stats``: the run's ``SpecStats``)."""
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
