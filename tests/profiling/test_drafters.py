"""editspec/profiling/drafters.py: the accepted draft tokens of every verifier pass and row."""

import torch

from editspec.profiling.clock import Clock, Recorder
from editspec.profiling.drafters import TimedDrafter

EOS = 1


class Fixed:
    """A drafter proposing the given drafts in turn (per row)."""

    tokenizer = None

    def __init__(self, drafts: dict[int, list[list[int]]]):
        self.drafts = drafts

    def begin(self, input_ids, attention_mask, eos_token_id):
        pass

    def propose(self, rows, outputs, gammas):
        return [self.drafts[r].pop(0) for r in rows]


class Stats:
    def __init__(self, tokens):
        self.tokens = tokens


def test_accepted_is_the_common_prefix_of_the_draft_and_what_the_row_gained():
    rec = Recorder(Clock(torch.device("cpu")))
    timed = TimedDrafter(Fixed({0: [[2, 3, 4, 5], [6, 7, EOS, 9]], 1: [[8, 8, 8]]}), rec)
    timed.begin(None, None, EOS)
    timed.propose([0, 1], [[10], []], [4, 2])   # row 1's draft is cut to γ = 2
    timed.propose([0], [[10, 2, 3, 11]], [4])   # row 0 gained 2 3 11: 2 of 4 accepted
    # row 0 ends with 6 7 and EOS (3 tokens counted, EOS included); row 1 ended with 8 9 (no EOS)
    timed.finish([[10, 2, 3, 11, 6, 7], [8, 9]], Stats(tokens=[7, 2]))
    # row 0's second draft is cut after EOS: 6 7 EOS, all accepted; row 1: 8 8 against 8 9
    assert sorted(timed.passes) == sorted([(4, 2), (2, 1), (3, 3)])
    assert len(rec.spans["draft"]) == 3  # begin and two proposals timed
