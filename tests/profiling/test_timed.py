"""editspec/profiling/timed.py: each row's output budget is its own, as in Corrector."""

import torch

from editspec.bundle import Bundle
from editspec.profiling.profiler import Profiler
from editspec.tokenization.tokens import encode
from tests.helpers import random_t5


def test_a_short_rows_budget_is_its_own(tokenizer):
    """A short row decoded beside a long one gives its output alone, cut by its own budget (the
    budget binds: this T5 never chooses EOS); the batch's padded width used to give it more."""
    t5 = random_t5(4, vocab=len(tokenizer), d_model=16, layers=1, heads=2)
    eos = tokenizer.eos_token_id
    t5.lm_head.register_forward_hook(lambda module, args, out: out.index_fill(-1, torch.tensor([eos]), -1e9))
    profiler = Profiler(Bundle(t5, tokenizer))
    short, long = encode(tokenizer, ["I go.", "Yesterday we went to the big school by the river and sang."])
    assert len(long.ids) > len(short.ids) + 5
    for mode in ("t5", "speculative", "speculative-copy", "hf-greedy"):
        alone = profiler.run(mode, profiler.make_batch([0], [short], None))
        both = profiler.run(mode, profiler.make_batch([0, 1], [short, long], None))
        budget = 2 * (len(short.ids) + 1) + 16
        assert len(alone.outputs[0]) == budget and alone.finished == [False], mode
        assert both.outputs[0] == alone.outputs[0] and both.finished[0] is False, mode
        assert len(both.outputs[1]) == 2 * (len(long.ids) + 1) + 16, mode
