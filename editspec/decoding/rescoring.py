"""Rescoring: an edit stays only if the model that made it scores the output above the output
without it.

Greedy decoding picks one token (or tag, or insertion) at a time; the output as a whole can be
less likely, under the same model, than that output with one of its edits undone. Rescoring asks
the model that wrote the output, in teacher-forced passes over the variants (batched)::

    source     "I am 20 years old and I like play football."
    output     "I am 20 the years old and I like to play football."     (a greedy EdiT5 output)
    edits      (8, 8) "" -> "the ",  (28, 28) "" -> " to"              (the unit's ``Correction``)
    variants   the output, and the output with each edit undone (all the others kept):
               "I am 20 the years old and I like to play football."    log P = s
               "I am 20 years old and I like to play football."        log P = s1 (no "the")
               "I am 20 the years old and I like play football."       log P = s2 (no "to")
    keep       edit k when s >= sk: here s1 > s >= s2, so "the" goes and "to" stays
    result     "I am 20 years old and I like to play football."

log P is the model's own: T5's teacher-forced probability of the output tokens, computed on the
decoding core (``core.score``: the decoder's own window passes, so a pair scores what the decode
computed for those tokens), EdiT5's of the tags, order and insertions that turn the source into it
(``EdiT5Model.log_likelihood``, features as in training): each mode's ``scorer``
(``decoding.runners``) picks its output model's. The speculative mode's output is the T5's, so the
T5 rescores it and the two modes still return the same text. Each edit is judged
beside all the others, and the kept ones are made together. It costs one batched teacher-forced
pass over the changed units' variants, less the outputs whose score the decode has already
computed (``known``: ``generate(scores=True)``'s, for a pair whose ids are the decoded ones)
(reports/models.md, "Rescoring", has what it does to each model's scores; reports/speed.md its
cost); the biases of ``generate_edits`` (keep, stop) are not part of the score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import torch

from editspec.decoding import core
from editspec.decoding.decoder import Decoders, exact_windows
from editspec.modeling.features import collate_edit5, edit5_features_batch, t5_features_batch
from editspec.modeling.tensors import pad
from editspec.post.diff import Correction, apply

# log P(target | source) for each (source, target) row, or None where the model cannot score it.
# A scorer may also have ``bound(source, output, variant)``: an upper bound of log P(variant) less
# log P(output) from what it knows already, or None (``t5_scorer``'s, from the decode's scores)
Scorer = Callable[[Sequence[str], Sequence[str]], list[float | None]]
SLACK = 1e-4  # nats a bound must clear: far above a forced pass's rounding against the decode's (~1e-6)


@dataclass
class Known:
    """What a T5's decode already computed (``core.generate(scores=True)``): log P per (source
    ids, output ids), both ending in EOS, and the widths of the decoder it ran on
    (``SpecStats.widths``, the widest of a round's calls): forced at those widths, the variants
    score as that decode would, bit for bit only where ``decoder.exact_windows`` (checked per host;
    elsewhere to the kernels' rounding, and a variant's ``prefix`` values are the decode's)."""

    log_probs: dict[tuple[tuple[int, ...], tuple[int, ...]], float] = field(default_factory=dict)
    widths: tuple[int, int] = (0, 0)
    # source -> (output, log P of each of its tokens): a variant that begins as the output has
    # those tokens' values already (``prefix``)
    tokens: dict[tuple[int, ...], list[tuple[tuple[int, ...], list[float]]]] = field(default_factory=dict)
    # (source, output) -> the decode's log P of each of the source's tokens (``core.source_tokens``)
    # at each of the output's positions [output tokens, source tokens]: ``bound``'s exact value
    # where a variant parts from the output on a source token
    sources: dict[tuple[tuple[int, ...], tuple[int, ...]], torch.Tensor] = field(default_factory=dict)
    # source -> the decode's encoder states of it (``SpecStats.states``): its variants' forced passes read them
    states: dict[tuple[int, ...], torch.Tensor] = field(default_factory=dict)

    def record(self, sources: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]], stats: core.SpecStats,
               eos: int) -> None:
        """A ``generate(scores=True)`` call's scores: ``sources`` its rows' ids without EOS, ``outputs``
        what it returned; an output cut by its budget (no EOS) is not a pair rescoring looks up."""
        for source, output, n, log_p, values, others, states in zip(
                sources, outputs, stats.tokens, stats.log_probs, stats.token_log_probs, stats.source_log_probs,
                stats.states):
            if n == len(output) + 1:  # ended with EOS
                key = (tuple(source) + (eos,), tuple(output) + (eos,))
                self.log_probs[key] = log_p
                self.tokens.setdefault(key[0], []).append((key[1], values))
                self.sources[key] = torch.cat(others)
                if states is not None:
                    self.states[key[0]] = states
        self.widths = tuple(map(max, self.widths, stats.widths))

    def values(self, source: tuple[int, ...], output: tuple[int, ...]) -> list[float] | None:
        """The decode's log P of each token of ``output`` (ids ending in EOS) given ``source``, or
        None where the decode did not write it."""
        return next((values for out, values in self.tokens.get(source, ()) if out == output), None)

    def bound(self, source: tuple[int, ...], output: tuple[int, ...], variant: tuple[int, ...]) -> float | None:
        """An upper bound of log P(variant) less log P(output) (ids ending in EOS), from what the
        decode computed for ``output``, or None where it has nothing. Exact: up to the first token
        where they differ, p, the two share their log P; there the variant's token x is another
        than the output's: its log P is the decode's own where x is one of the source's tokens
        (``sources``), else at most log(1 - P(output's token)); after it, each token's is at most 0:

            log P(variant) - log P(output) <= log P(x at p) - (v[p] + v[p+1] + ... )
        """
        values = self.values(source, output)
        p = next((k for k, (a, b) in enumerate(zip(output, variant)) if a != b), None)
        if values is None or p is None:
            return None
        rest = math.fsum(values[p:])
        others = self.sources.get((source, output))
        column = next((k for k, token in enumerate(core.source_tokens(source)) if token == variant[p]), None)
        if others is not None and column is not None:
            return float(others[p, column]) - rest
        return -math.inf if values[p] >= 0.0 else math.log1p(-math.exp(values[p])) - rest

    def prefix(self, source: tuple[int, ...], target: tuple[int, ...]) -> list[float]:
        """The decode's log P of ``target``'s first tokens, as many as it shares with an output of
        ``source`` (the longest such): its logits there are that output's, bit for bit."""
        best: list[float] = []
        for output, values in self.tokens.get(source, ()):
            n = 0
            while n < min(len(output), len(target)) and output[n] == target[n]:
                n += 1
            if n > len(best):
                best = values[:n]
        return best
# variants per ``Scorer`` call: their features are held together, and the ~30,000 variants of a
# 1 MB line of changed sentences, all at once, took GBs (issue 45)
GROUP = 4096


Scored = list[tuple[str, "float | None"]]  # a correction's ``variants``, each with its log P


def variants(c: Correction) -> list[str]:
    """What a scorer reads of a correction: its output, then its output with each edit undone (all
    the others kept). Rescoring and confidence both read these (``score_variants``)."""
    return [c.output] + [apply(c.input, c.edits[:k] + c.edits[k + 1:]) for k in range(len(c.edits))]


def margins(scored: Scored) -> list[float | None]:
    """Each edit's margin from its correction's scored ``variants``: log P of the output less that
    of the output with the edit undone (None where either is missing)."""
    full, undone = scored[0][1], [s for _, s in scored[1:]]
    return [None if full is None or s is None else full - s for s in undone]


def score_variants(sources: Sequence[str], changes: Sequence[Correction], score: Scorer,
                   given: Sequence[Mapping[str, float | None]] | None = None, group: int = GROUP,
                   whole: bool = True, skip: Sequence[Sequence[bool]] | None = None) -> list[Scored]:
    """Each correction's ``variants`` with their log P given its source: from ``given`` (per
    correction, the texts scored already) where it has them, the others from ``score``, about
    ``group`` rows a call (``whole``: a correction's rows in one call; else cut every ``group``
    rows, given ones counted), each (source, text) pair once per call and kept for the later
    calls. A call the scorer refuses (an EdiT5 whose order positions a variant outgrows) is
    scored pair by pair, None where it cannot. ``skip``: per correction, its variants after the
    output not to score (None in their place)."""
    texts = [variants(c) for c in changes]
    rows = [(i, j) for i, t in enumerate(texts) for j in range(len(t)) if not (skip and j and skip[i][j - 1])]
    calls: list[list[tuple[int, int]]] = []
    if whole:
        for i, j in rows:
            if j == 0 and (not calls or len(calls[-1]) >= group):
                calls.append([])
            calls[-1].append((i, j))
    else:
        calls = [rows[at:at + group] for at in range(0, len(rows), group)]
    out: list[list[float | None]] = [[None] * len(t) for t in texts]
    memo: dict[tuple[str, str], float | None] = {}
    for call in calls:
        own = [(i, j) for i, j in call if not given or texts[i][j] not in given[i]]
        # every pair not kept yet, repeats too (in bf16 a pass's numbers can depend on the rows beside it)
        todo = [(sources[i], texts[i][j]) for i, j in own if (sources[i], texts[i][j]) not in memo]
        if todo:
            memo.update(zip(todo, _score_each(score, [s for s, _ in todo], [t for _, t in todo])))
        for i, j in call:
            out[i][j] = given[i][texts[i][j]] if given and texts[i][j] in given[i] else memo[sources[i], texts[i][j]]
    return [list(zip(t, s)) for t, s in zip(texts, out)]


def _score_each(score: Scorer, sources: Sequence[str], targets: Sequence[str]) -> list[float | None]:
    """``score``'s values; where a pair cannot be scored (an EdiT5 whose order positions a variant
    outgrows), that pair's is None and the others are scored one by one."""
    try:
        return score(sources, targets)
    except ValueError:
        out: list[float | None] = []
        for pair in zip(sources, targets):
            try:
                out += score([pair[0]], [pair[1]])
            except ValueError:
                out.append(None)
        return out


def rescore(changes: Sequence[Correction], score: Scorer, group: int = GROUP,
            margin: float = 0.0) -> list[tuple[Correction, Scored]]:
    """Each of ``changes`` with each edit undone whose undoing ``score`` rates higher than the
    output (by more than ``margin`` nats: a looser level keeps edits that cost that much), and its
    scored variants; a correction that keeps every edit carries their ``margins``, one ``score``
    cannot rate stays as it is. ``score`` is called on about ``group`` variants at a time.

    An edit whose undoing ``score.bound`` puts below the output by more than ``margin`` (and
    ``SLACK``) is kept without its variant scored: that variant is left out of the scored ones
    (a confidence scores it, ``confidence.score_units``) and its margin is None."""
    todo = [c for c in changes if c.edits]  # a unit left as it was costs nothing
    bound = getattr(score, "bound", None)
    sure = [[bound is not None and _below(bound(c.input, c.output, v), -margin - SLACK) for v in variants(c)[1:]]
            for c in todo]
    found = iter(score_variants([c.input for c in todo], todo, score, group=group, skip=sure))
    sure_of = iter(sure)
    out: list[tuple[Correction, Scored]] = []
    for c in changes:
        if not c.edits:
            out.append((c, []))
            continue
        scored, kept = next(found), next(sure_of)
        full, undone = scored[0][1], [s for _, s in scored[1:]]
        if full is not None and all(k or s is not None for k, s in zip(kept, undone)):
            c = c.keep([e for e, k, s in zip(c.edits, kept, undone) if k or full + margin >= s])
        found_margins = tuple(None if k else m for k, m in zip(kept, margins(scored)))
        out.append((replace(c, margins=found_margins) if len(c.edits) == len(scored) - 1 else c,
                    [scored[0]] + [v for v, k in zip(scored[1:], kept) if not k]))
    return out


def _below(value: float | None, limit: float) -> bool:
    return value is not None and value < limit


def t5_scorer(model, tokenizer, batch_size: int = 64, prefix: str = "", known: Known | None = None,
              decoders: Decoders | None = None) -> Scorer:
    """The ``Scorer`` of a T5 (the t5 and speculative modes' output model, ``T5Runner.scorer``) and its
    tokenizer: ``prefix`` goes before every source (the T5 read it there); a pair in ``known`` takes
    the decode's log P as is, the others are forced (``core.score`` on ``decoders``): at the
    decode's widths where that gives the decode's numbers bit for bit (``decoder.exact_windows``),
    else at their own (elsewhere the widths move only the last bits, and the decode's were the
    longest sentence's: 249 positions where a variant needs ~25)."""
    known = known or Known()
    widths = known.widths if exact_windows(model) else (0, 0)

    def score(sources: Sequence[str], targets: Sequence[str]) -> list[float | None]:
        rows = t5_features_batch(tokenizer, [prefix + s for s in sources], targets, max_length=1 << 30)
        keys = [(tuple(r["input_ids"]), tuple(r["labels"])) for r in rows]
        out = [known.log_probs.get(key) for key in keys]
        todo = [i for i, value in enumerate(out) if value is None]
        forced = core.score(model, [keys[i][0] for i in todo], [keys[i][1] for i in todo], batch_size,
                            widths, [known.prefix(*keys[i]) for i in todo], decoders,
                            [known.states.get(keys[i][0]) for i in todo])
        for i, value in zip(todo, forced):
            out[i] = value
        return out

    def bound(source: str, output: str, variant: str) -> float | None:
        """``Known.bound`` of the texts (rescoring keeps an edit unscored where it is low enough)."""
        (src, out), (_, var) = ((tuple(r["input_ids"]), tuple(r["labels"])) for r in
                                t5_features_batch(tokenizer, [prefix + source] * 2, [output, variant], max_length=1 << 30))
        return known.bound(src, out, var)

    score.bound = bound
    return score


def edit5_scorer(model, tokenizer, batch_size: int = 64) -> Scorer:
    """The ``Scorer`` of an EdiT5 (the edit5 mode's, ``Edit5Runner.scorer``) and its tokenizer: log P
    of the edits training would take for each pair (None where it takes none); no prefix, and no
    decode's scores to reuse (they are not the decode's)."""

    def log_likelihood(rows, inputs, which):
        labels = collate_edit5(rows, tokenizer.pad_token_id)
        del labels["input_ids"], labels["attention_mask"]
        return model.log_likelihood(**_on(model, {**inputs, **labels, "rows": which}))

    def score(sources: Sequence[str], targets: Sequence[str]) -> list[float | None]:
        rows = edit5_features_batch(tokenizer, sources, targets, model.config.max_order_positions)
        out: list[float | None] = [None] * len(rows)
        todo = sorted((i for i, r in enumerate(rows) if r is not None), key=lambda i: len(rows[i]["input_ids"]))
        for start in range(0, len(todo), batch_size):  # similar lengths together: little padding
            chunk = [rows[i] for i in todo[start:start + batch_size]]
            # the encoder reads each distinct source once: a unit's variants share theirs
            distinct = list(dict.fromkeys(tuple(r["input_ids"]) for r in chunk))
            index = {ids: n for n, ids in enumerate(distinct)}
            inputs = {"input_ids": pad(distinct, tokenizer.pad_token_id),
                      "attention_mask": pad([[1] * len(ids) for ids in distinct], 0)}
            which = torch.tensor([index[tuple(r["input_ids"])] for r in chunk])
            with torch.inference_mode():
                for i, value in zip(todo[start:start + batch_size], log_likelihood(chunk, inputs, which).tolist()):
                    out[i] = value
        return out

    return score


def _on(model, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.to(model.device) for k, v in batch.items()}
