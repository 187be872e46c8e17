"""``TimedDrafter``: a drafter of ``editspec.decoding.drafters``, its work timed as ``draft``.

Every call the decoding core makes to the drafter is one ``draft`` span of the recorder: the
drafts prepared for a call of ``core.generate`` (``prepare``), for each batch of sentences the
core encodes (``encoded``: EdiT5's tags, pointers and insertions), and each pass's proposal
(``propose``: the copy/n-gram lookups). For example, EdiT5 drafting 2 sentences at batch 1 over
3 + 4 verifier passes is 1 + 2 + 7 + 2 spans (prepare, encoded, propose, finish). How many draft
tokens each pass accepted is counted by the core itself (``SpecStats.windows``).
"""

from __future__ import annotations

from editspec.decoding.drafters import Drafter
from editspec.profiling.clock import Recorder


class TimedDrafter(Drafter):
    """Wraps a ``Drafter``: each of its calls is a ``draft`` span of ``recorder``."""

    def __init__(self, inner: Drafter, recorder: Recorder):
        self.inner, self.recorder = inner, recorder
        self.tokenizer = inner.tokenizer

    def prepare(self, sources, eos):
        with self.recorder.span("draft"):
            self.inner.prepare(sources, eos)

    def encoded(self, indices, input_ids, attention_mask, hidden, encoder):
        with self.recorder.span("draft"):
            self.inner.encoded(indices, input_ids, attention_mask, hidden, encoder)

    def propose(self, index, output, limit):
        with self.recorder.span("draft"):
            return self.inner.propose(index, output, limit)

    def finish(self, index, output):
        with self.recorder.span("draft"):
            self.inner.finish(index, output)
