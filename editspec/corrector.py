"""Correct text: the ``Corrector`` API.

    from editspec import Corrector
    corrector = Corrector.from_pretrained()            # the shipped bundle, or a directory
    corrector.correct(["He have two brothers.  I like it."])
    # -> ["He has two brothers.  I like it."]

What happens to a line, step by step (each a function or method, ``correct`` and
``correct_round`` the chain)::

    line       "  He have two brothers.  I like it."
    segment    (2, 23) "He have two brothers."           (2 spaces before, 2 between:
               (25, 35) "I like it."                       kept verbatim, never modelled;
                                                           ``segment.segment_lines``)
    spelling   with ``spelling`` on, words no dictionary holds are respelled (or split: "infront"),
               capitals restored ("i", names, sentence starts) and a long last sentence given its
               full stop (``editspec.pre.spelling``)
    -- each round (``correct_round``): --
    tokenize   each unit's ids, once (segmenting's encodings serve the first round), and the
               units every model can read whole, longest first (``tokenize``)
    decode     all units, ``batch_size`` at a time (T5 and speculative: ``batch_size`` slots of the
               decoding core; a finished unit's slot takes the next waiting unit at once), by the
               mode (``decode``; ``editspec.decoding.runners``):
               edit5        tags, pointers, insertions -> realize_aligned -> render
               t5           greedy ids -> render_ids (aligned to the source)
               speculative  T5 greedy ids, drafted by EdiT5 or by the source, whichever has
                            cost less on this corrector's sentences -> render_ids
    edits      the unit's ``Correction``: its edits found once (``diff``), then passed along; a step
               that undoes edits passes on what is left (``Correction.keep``)
    checks     (``check``) an edit of characters the model cannot read is undone
               (``keep_unreadable``); a unit whose output rewrites more than ``max_edit_words``
               words in one edit goes back to the unit as written (``guard``); with ``spelling``
               on, an edit that writes a word no dictionary holds ("beingef") is undone (``real_words``)
    rescore    with ``rescore`` on, an edit the output model scores the unit better without is
               undone (``editspec.decoding.rescoring``)
    rounds     with ``rounds`` > 1, the units a round changed are corrected again
    -- then: --
    rejoin     "  She goes to school every day.  I like it."
    edits      word-level diff of line and output: (6, 8) "go" -> "goes", (25, 29) "days" -> "day"
               (``correct_detailed``)

Each step above runs inside ``self.timings(step)``: ``OFF`` (nothing) unless ``editspec profile
--pipeline`` sets a ``timing.Timings``, which then holds each step's share of the wall time.

Rendering copies every kept token's characters from the input (``editspec.tokenization.tokens``), so emoji,
CJK, tabs, unusual spaces survive wherever the model does not edit them.

Models: a bundle directory holds ``edit5/`` and/or ``t5/`` (and ``t5-draft/``, a small T5 that
``editspec profile`` may time as transformers' assistant model; ``Corrector`` does not use it), each the
``save_pretrained`` output of a model plus its tokenizer. A single checkpoint directory works
too; its ``config.json`` ``model_type`` says which model it is. The default mode is speculative
when both models are present (T5's output at a fraction of T5's decoder passes), else the one
present. Inputs are chunked to the model's training length (``training.json`` ``max_length``
from ``training/train.py``, else 128 tokens with EOS, the paper's sequence length).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import torch

from editspec import confidence, threads
from editspec.bundle import KINDS, Bundle
from editspec.config import CorrectorConfig, Level, LoadOptions
from editspec.decoding import drafters, rescoring, window
from editspec.decoding.runners import RUNNERS, Edit5Runner, T5Runner, beam_settings
from editspec.errors import EditspecError
from editspec.modeling import loading
from editspec.modeling.loading import resolve_models, trained_length
from editspec.nbest import ALTERNATIVES, Found, Hyps, line_hypotheses, rejoined
from editspec.nbest import alternatives as other_spans
from editspec.post import error_types
from editspec.pre import segment
from editspec.post.diff import Correction, apply
from editspec.post.checks import guard, keep_content_words, keep_respelled, keep_unreadable, real_words
from editspec.pre.spelling import load_speller, respell_all
from editspec.timing import OFF
from editspec.tokenization.tokens import Encoded, encode, unreadable

DEFAULT_MAX_LENGTH = 128  # model input tokens with EOS, when the checkpoint does not say

# -- the corrector --


class Corrector:
    """Corrects lines of text with EdiT5, T5, or speculative T5 (EdiT5 or the source drafts, T5
    verifies), on the models of a ``Bundle``."""

    def __init__(self, bundle: Bundle, config: CorrectorConfig = CorrectorConfig(), batch_size: int = 16,
                 max_length: int | None = None, num_beams: int = 1):
        """``config``'s settings are kept as attributes that callers may change; without a mode,
        speculative when both models are there, else the one there. ``max_length``: model input
        tokens with EOS (default: the models' training length); ``num_beams`` > 1: the T5's beam
        search (``decoding.beam``)."""
        if batch_size < 1:
            raise EditspecError("batch size must be at least 1")
        mode = config.mode or ("speculative" if bundle.edit5 is not None and bundle.t5 is not None
                               else "edit5" if bundle.edit5 is not None else "t5")
        self.num_beams = beam_settings(num_beams, mode).num_beams
        need = RUNNERS[mode].mode.needs
        missing = [k for k in need if getattr(bundle, k) is None]
        if missing:
            raise EditspecError(f"mode {mode} needs {' and '.join(need)} model(s); "
                                f"missing: {', '.join(missing)}")
        uses = RUNNERS[mode].mode.uses
        self.bundle = bundle if all(getattr(bundle, k) is None for k in KINDS if k not in uses) else bundle.only(*uses)
        self.mode, self.batch_size = mode, batch_size
        self.max_edit_words, self.rounds, self.spelling = config.max_edit_words, config.rounds, config.spelling
        self.rescore, self.prefix = config.rescore, config.prefix
        self.level, self.levels, self.calibrations = config.level, dict(config.levels), dict(config.confidence)
        self.level_of(None)  # one line of error now for a level this mode cannot run
        self.timings = OFF  # a ``timing.Timings`` to see where the time goes (editspec profile --pipeline)
        # rescoring reads the T5 decode's own scores (``rescoring.Known``), in every dtype; False:
        # every pair forced (issue 71: in float32 each pair was forced, a third of a process on a
        # CPU without bf16 units)
        self.reuse_scores = True
        self.guarded = 0  # units the guard has kept as written, over this corrector's life
        self.unreal = 0  # units with an edit undone for a made-up word (``real_words``), likewise
        # the models' own limits, then the training length (chunks never exceed any of them)
        self.max_ids: list[tuple[object, int]] = []  # (tokenizer, max ids without EOS)
        for kind in KINDS:
            if getattr(self.bundle, kind) is not None:
                self.max_ids.append((getattr(self.bundle, f"{kind}_tokenizer"), self._max_ids(max_length, kind)))
        # what each drafter has cost per sentence, measured on this corrector's sentences after what
        # earlier processes measured with these models on this machine (``decoding.measured``)
        self.bundle.fresh_draft_costs(batch_size)

    def _max_ids(self, max_length: int | None, kind: str) -> int:
        length = max_length or trained_length(self.bundle.paths.get(kind)) or DEFAULT_MAX_LENGTH
        if kind == "edit5":
            # order positions 1..n+1 (EOS last), and a marker p for "after kept token p", p <= n
            length = min(length, self.bundle.edit5.config.max_order_positions - 1, len(self.bundle.markers))
        return max(2, length - 1)

    @property
    def limits(self) -> list[tuple[object, int]]:
        """(tokenizer, max ids without EOS) per model: a unit's chunks fit each of them, the T5's
        with the prefix before them."""
        if not self.prefix or self.bundle.t5 is None:
            return self.max_ids
        (tok, max_ids), *rest = self.max_ids
        return [(tok, max(1, max_ids - len(encode(tok, [self.prefix])[0].ids))), *rest]

    @classmethod
    def from_pretrained(cls, model: str | os.PathLike | None = None, options: LoadOptions | None = None,
                        **changes) -> "Corrector":
        """Load a bundle (``DIR/edit5``, ``DIR/t5``) or one checkpoint; default: the shipped bundle.

        ``options`` (``config.LoadOptions``) says what to load and how; ``changes``, names of its
        fields (``mode="t5"``, ``batch_size=32``), change it here; ``model`` is its ``model``.
        The run-time settings (``mode``, ``max_edit_words``, ``rounds``, ``spelling``, ``rescore``,
        ``prefix``: ``CorrectorConfig``) default to the ``corrector_config.json`` of ``model`` (a
        bundle or a checkpoint; without ``model``, of the shipped bundle, or of the output model's
        directory when ``t5``/``edit5`` are given), else to ``CorrectorConfig``'s defaults: a
        checkpoint of your own gives its raw output. Without a mode there, ``speculative`` when both
        models are present, else the one present. Torch's threads are chosen as the CLI chooses
        them (``LoadOptions.threads``), so a Python caller reads the pass costs the CLI measured.
        ``level`` ("default" or "picky"): the level a call runs at when it names none (default: the
        config's ``level``); the settings of each are the config's ``levels``.
        """
        options = (options or LoadOptions()).replace(**changes)
        if model is not None:
            options = options.replace(model=model)
        o = options
        beam_settings(o.num_beams, o.mode)  # before the models load
        if o.threads != 0:
            threads.apply(o.threads, force=True)
        edit5_path, t5_path = resolve_models(o.model, o.edit5, o.t5)
        if o.model is not None:
            where = Path(o.model)
        elif o.edit5 is None and o.t5 is None:
            where = loading.DEFAULT_MODEL
        else:  # the output model's directory (a T5 may be a hub id: no settings then)
            where = Path(t5_path if t5_path and (o.mode or "speculative") != "edit5" else edit5_path)
        config = CorrectorConfig.from_pretrained(where).replace(**o.settings)
        mode = config.mode or ("speculative" if edit5_path and t5_path else "edit5" if edit5_path else "t5")
        if config.level_settings().copy_penalty and (mode == "edit5" or o.num_beams > 1):  # before the models load
            raise EditspecError(f"level {config.level} needs the T5's greedy decode (mode t5 or speculative, no beam)")
        paths = {"edit5": edit5_path, "t5": t5_path}
        for kind in RUNNERS[mode].mode.needs:
            if paths[kind] is None:
                where = o.model if o.model is not None else loading.DEFAULT_MODEL
                raise EditspecError(f"mode {mode} needs {'an EdiT5' if kind == 'edit5' else 'a T5'} "
                                    f"model, and {where} has none (pass --{kind} DIR)")
        bundle = Bundle.load(edit5_path, t5_path, RUNNERS[mode].mode.uses, o.device, o.dtype, o.quantize)
        return cls(bundle, config.replace(mode=mode), batch_size=o.batch_size, max_length=o.max_length,
                   num_beams=o.num_beams)

    @property
    def config(self) -> CorrectorConfig:
        """The run-time settings now in force (``save_pretrained`` stores them with a bundle)."""
        return CorrectorConfig(self.mode, self.max_edit_words, self.rounds, self.spelling, self.rescore, self.prefix,
                               self.level, dict(self.levels), dict(self.calibrations))

    def level_of(self, name: str | None) -> Level:
        """The settings of level ``name`` (None: ``self.level``); one line of error for an unknown
        level, one these models have no settings for, or one the mode cannot run."""
        settings = self.config.level_settings(name)
        if settings.copy_penalty and self.output_kind != "t5":
            raise EditspecError(f"level {settings.name} needs the T5 (mode t5 or speculative), not mode {self.mode}")
        if settings.copy_penalty and self.num_beams > 1:
            raise EditspecError(f"level {settings.name} decodes greedily: it cannot be used with beam search")
        return settings

    @property
    def calibration(self) -> confidence.Calibration:
        """How the output model's margins become confidences (``editspec.confidence``)."""
        return confidence.Calibration.of(self.calibrations.get(self.output_kind))

    @property
    def device(self) -> torch.device:
        return self.output_model.device

    @property
    def output_kind(self) -> str:
        """Which model's output is returned: "t5", except in edit5 mode ("edit5")."""
        return "t5" if self.bundle.t5 is not None else "edit5"

    @property
    def output_model(self):
        """The model whose output is returned."""
        return getattr(self.bundle, self.output_kind)

    @property
    def tokenizer(self):
        """The tokenizer of the model whose output is returned."""
        return getattr(self.bundle, f"{self.output_kind}_tokenizer")

    # -- public API --

    def prepare(self) -> None:
        """Load now what a first call would (the spelling index; the pass costs of every slot
        count ``batch_size`` allows, from the cache or measured): a server's first request is
        then as fast as the next."""
        if self.spelling:
            load_speller()
        if self.bundle.t5 is not None and self._mode.slotted:
            for slots in range(1, self.batch_size + 1):
                window.pass_costs(self.bundle.t5, slots)

    def correct(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
                level: str | None = None) -> list[str]:
        """Corrected texts, one per input text; spacing between and around sentences is kept.
        ``level``: "default" or "picky" (None: ``self.level``)."""
        return self._correct(texts, progress, level, detailed=False)[0]

    def correct_detailed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
                         types: bool = False, level: str | None = None, alternatives: int = 0,
                         nbest: int = 0) -> list[Correction]:
        """Like ``correct``, with each change as character offsets into the input text, whole words
        ("don't" -> "didn't"), each with its confidence (``editspec.confidence``); with
        ``types``, each edit's ERRANT error type and message too (``error_types.typed``: spaCy
        parses the texts with edits, so it costs a second to load and a few ms a text).
        ``alternatives``: up to that many other replacements per edit from the T5's beam n-best
        (``nbest.alternatives``: from the ``nbest`` hypotheses when asked for, else a beam search of
        ``nbest.ALTERNATIVES`` beams besides the correction). ``nbest``: each line's that many best
        hypotheses with their scores (``Correction.nbest``), kept from the beam search of
        ``num_beams`` beams that produced the output (``editspec.nbest``)."""
        if alternatives and self.bundle.t5 is None:
            raise EditspecError("alternatives come from the T5's beam search: this corrector has no T5 (mode edit5)")
        if nbest and self.num_beams < max(2, nbest):
            raise EditspecError(f"n-best lists are a beam search's: {nbest} of them need num_beams >= "
                                f"{max(2, nbest)}, not {self.num_beams}")
        # the search keeps enough for the alternatives too (as many as their own search would give)
        k = max(nbest, min(ALTERNATIVES, self.num_beams)) if nbest and alternatives else nbest
        outputs, spans, scored, hyps = self._correct(texts, progress, level, detailed=True, nbest=k)
        with self.timings("diff"):
            corrections = []
            it = iter(scored)
            for text, out, line_spans in zip(texts, outputs, spans):
                units = [(a, next(it)) for a, _ in line_spans]
                shown = Correction.shown(text, out)
                edits = confidence.spread(shown.edits, [(a, e) for a, c in units if c is not None for e in c.edits])
                corrections.append(Correction(text, out, edits))
        lines = rejoined(texts, spans, hyps, k) if nbest else []
        if nbest:
            corrections = [replace(c, nbest=tuple(h[:nbest])) for c, h in zip(corrections, lines)]
        if alternatives:
            with self.timings("alternatives"):
                changed = [n for n, c in enumerate(corrections) if c.edits]
                hypotheses = ([lines[n] for n in changed] if nbest else
                              line_hypotheses(self, [texts[n] for n in changed], ALTERNATIVES))
                real = load_speller().knows  # alternatives in real words (the spelling step's dictionary)
                found = other_spans([corrections[n] for n in changed], hypotheses, alternatives, real)
                for n, c in zip(changed, found):
                    corrections[n] = c
        if not types:
            return corrections
        with self.timings("types"):
            return error_types.typed(corrections)

    def _correct(self, texts: Sequence[str], progress: Callable[[int], None] | None, level: str | None,
                 detailed: bool, nbest: int = 0) -> tuple[list[str], list, list[Correction | None], list[Hyps]]:
        """(outputs, each line's unit spans, each unit's scored correction or None, each unit's
        ``nbest`` hypotheses): the chain, with the confidences found where they are shown or a
        level's ``min_confidence`` needs them, and with ``nbest``, the beam search's hypotheses."""
        if isinstance(texts, str):
            raise TypeError("correct() takes a list of texts, not one string")
        settings = self.level_of(level)
        memo: dict = {}  # each text tokenized once: segmenting's encodings serve the round's
        with self.timings("segment"):
            spans = segment.segment_lines(texts, self.limits, memo)
            units = segment.unit_texts(texts, spans)
            places = segment.places(texts, spans)
        trace: dict = {}
        outputs = self.correct_units(units, progress, places, memo, settings, trace, nbest)
        # a unit no search read (over a limit; an empty line has none): every hypothesis its output,
        # the unit as read (after spelling)
        read, found = trace.get("spelled", units), trace.get("nbest", {})
        hyps = [found.get(i, [(read[i], 0.0)] * nbest) for i in range(len(units))] if nbest else []
        scored: list[Correction | None] = [None] * len(units)
        if detailed or settings.min_confidence > 0:
            with self.timings("confidence"):
                scored = self.confidences(units, trace.get("spelled", units), outputs, trace.get("scores"), settings)
                if settings.min_confidence > 0:
                    outputs, scored = self.keep_sure(units, outputs, scored, settings.min_confidence)
        with self.timings("rejoin"):
            return segment.rejoin_lines(texts, spans, outputs), spans, scored, hyps

    def confidences(self, units: Sequence[str], read: Sequence[str], outputs: Sequence[str],
                    cache: dict | None = None, level: Level | None = None) -> list[Correction | None]:
        """Each changed unit's correction (from the unit as written) with a confidence on each edit
        (``editspec.confidence``): the output model's margin of the output over the output with
        that edit undone, given ``read`` (the unit as the model read it, after spelling); None for
        a unit left as written. ``cache``: scores the round's rescoring found already; ``level``: its own
        calibration, where it has one (``Level.confidence``)."""
        score = self._cached(self.scorer(), {} if cache is None else cache)
        plan, rows = [], ([], [])
        for i, (unit, source, output) in enumerate(zip(units, read, outputs)):
            if unit != output:
                c, texts = confidence.variants(unit, output)
                plan.append((i, c, len(rows[1]), len(texts)))
                rows[0].extend([source] * len(texts))
                rows[1].extend(texts)
        scores: list[float | None] = []
        for at in range(0, len(rows[1]), rescoring.GROUP):
            scores += self._score_each(score, rows[0][at:at + rescoring.GROUP], rows[1][at:at + rescoring.GROUP])
        out: list[Correction | None] = [None] * len(units)
        calibrate = confidence.Calibration.of(level.confidence) if level is not None and level.confidence \
            else self.calibration
        for i, c, at, n in plan:
            out[i] = confidence.with_confidence(c, [calibrate(m) for m in confidence.margins(scores[at:at + n])])
        return out

    @staticmethod
    def _score_each(score: rescoring.Scorer, sources: Sequence[str], targets: Sequence[str]) -> list[float | None]:
        """``score``'s values; where a pair cannot be scored (an EdiT5 whose order positions a
        variant outgrows), that pair's is None and the others are scored one by one."""
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

    @staticmethod
    def keep_sure(units: Sequence[str], outputs: Sequence[str], scored: Sequence[Correction | None],
                  threshold: float) -> tuple[list[str], list[Correction | None]]:
        """The outputs with each edit less sure than ``threshold`` undone; a unit's edits that are
        left keep their confidence (those the diff finds anew take the least sure of the kept)."""
        outputs, scored = list(outputs), list(scored)
        for i, c in enumerate(scored):
            if c is None or all(e.confidence >= threshold for e in c.edits):
                continue
            kept = [e for e in c.edits if e.confidence >= threshold]
            outputs[i] = apply(units[i], kept)
            if not kept:
                scored[i] = None
                continue
            known = {(e.start, e.end, e.original, e.correction): e.confidence for e in kept}
            again = Correction.of(units[i], outputs[i])
            least = min(known.values())
            scored[i] = confidence.with_confidence(
                again, [known.get((e.start, e.end, e.original, e.correction), least) for e in again.edits])
        return outputs, scored

    @staticmethod
    def _cached(score: rescoring.Scorer, cache: dict) -> rescoring.Scorer:
        """``score`` that keeps each (source, target) pair's score in ``cache`` and asks only for new ones."""
        def cached(sources: Sequence[str], targets: Sequence[str]) -> list[float | None]:
            # every pair not kept yet, repeats too: rescoring's call is the one it made before (in
            # bf16 a pass's numbers can depend on the rows beside it)
            todo = [p for p in zip(sources, targets) if p not in cache]
            if todo:
                cache.update(zip(todo, score([s for s, _ in todo], [t for _, t in todo])))
            return [cache[p] for p in zip(sources, targets)]
        return cached

    # -- the chain: units -> spelling -> rounds of (tokenize, decode, edits, checks, rescore) --

    def correct_units(self, units: Sequence[str], progress: Callable[[int], None] | None = None,
                      places: Sequence[segment.Place] | None = None, memo: dict | None = None,
                      level: Level | None = None, trace: dict | None = None, nbest: int = 0) -> list[str]:
        """The units after the last of ``rounds`` rounds (see ``correct_rounds``)."""
        out = list(units)
        for out in self.correct_rounds(units, progress, places, memo, level, trace, nbest):
            pass
        return out

    def correct_rounds(self, units: Sequence[str], progress: Callable[[int], None] | None = None,
                       places: Sequence[segment.Place] | None = None, memo: dict | None = None,
                       level: Level | None = None, trace: dict | None = None, nbest: int = 0) -> Iterator[list[str]]:
        """All units after each of the ``rounds`` rounds (after spelling, if on; ``places`` as in
        ``spelling.respell_all``, from ``segment.places``; ``memo``: encodings made already, as
        ``tokens.encode`` keeps them).

        A round corrects again only the units the round before changed (so once none changed,
        the rest cost nothing): a one-pass model often fixes an error only once the one beside
        it is fixed. The guard applies in each round (a unit it keeps is that round's input,
        respelled if ``spelling``: the dictionary does not lose its place). ``progress`` counts
        the first round, which reads every unit. ``level``: its decode and rescoring settings
        (None: ``self.level``'s). ``trace``, a dict: gets "spelled" (the units after spelling) and
        "scores" (the last round's rescoring scores, by (source, target) text) and, with ``nbest``,
        "nbest": each unit's ``nbest`` best hypotheses from the last round that decoded it (by unit).
        """
        level = self.level_of(None) if level is None else level
        trace = {} if trace is None else trace
        self.timings.first_round()
        written = units  # as the writer wrote them: ``check`` keeps the words they misspelt
        if self.spelling:
            with self.timings("spelling"):
                units = respell_all(units, places)
        trace["spelled"] = units
        out = list(units)
        todo = list(range(len(units)))
        memo = {} if memo is None else memo
        for round_ in range(self.rounds):
            if round_:
                self.timings.next_round()
            trace["scores"] = {}
            found = Found(nbest) if nbest else None
            fixed = self.correct_round([out[i] for i in todo], progress if round_ == 0 else None, memo,
                                       level, trace["scores"], found, [written[i] for i in todo])
            if found is not None:
                trace.setdefault("nbest", {}).update((todo[k], h) for k, h in found.units.items())
            out, changed = list(out), []  # a new list: the one yielded before stays as it was
            for i, text in zip(todo, fixed):
                if text != out[i]:
                    out[i] = text
                    changed.append(i)
            todo = changed
            yield out
        self.bundle.keep_draft_costs(self.batch_size)

    def correct_round(self, units: Sequence[str], progress: Callable[[int], None] | None = None,
                      memo: dict | None = None, level: Level | None = None, scores: dict | None = None,
                      found: Found | None = None, written: Sequence[str] | None = None) -> list[str]:
        """One round over ``units``: each tokenized once and decoded, its output's edits found
        once, then judged by the checks and rescoring in turn, each undoing those it finds wrong.
        A unit some model cannot read whole (one character that NFKC makes many tokens) stays.
        ``level``: the copy penalty of the decode and rescoring's margin; ``scores``: gets
        rescoring's scores by (source, target) text; ``found``: each unit's hypotheses (beam search);
        ``written``: the units as written, before spelling (``check``)."""
        level = self.level_of(None) if level is None else level
        encoded, order = self.tokenize(units, memo)
        known = rescoring.Known()  # the decode's own scores: rescoring reads them, no forced pass
        changes = dict(self.decode_units(units, encoded, order, progress, known, level.copy_penalty, found))
        with self.timings("edits"):
            changes = {i: Correction.of(units[i], text) for i, text in changes.items()}
        with self.timings("guard"):
            changes = {i: self.check(c, encoded[i], written[i] if written else None) for i, c in changes.items()}
        if self.rescore:  # the output model undoes the edits it scores lower than their absence
            with self.timings("rescore"):
                changed = [i for i in order if changes[i].edits]
                scorer = self._cached(self.scorer(known), {} if scores is None else scores)
                for i, c in zip(changed, rescoring.rescore([changes[i] for i in changed], scorer,
                                                           margin=level.rescore_margin)):
                    changes[i] = c
        return [changes[i].output if i in changes else unit for i, unit in enumerate(units)]

    # -- the steps --

    def tokenize(self, units: Sequence[str], memo: dict | None = None) -> tuple[list[Encoded], list[int]]:
        """Each unit's tokens as the output model reads them (the T5: after the prefix, which
        rendering does not copy), and the units every model can read whole, longest first."""
        prefix = self.prefix if self.bundle.t5 is not None else ""
        with self.timings("tokenize"):
            encoded = encode(self.tokenizer, [prefix + u for u in units], memo)
            fits = [len(e.ids) <= self.max_ids[0][1] for e in encoded]  # the prefix included
            for tok, max_ids in self.max_ids[1:]:
                fits = [f and len(e.ids) <= max_ids for f, e in zip(fits, encode(tok, units, memo))]
        return encoded, sorted((i for i in range(len(units)) if fits[i]), key=lambda i: -len(encoded[i].ids))

    def decode_units(self, units: Sequence[str], encoded: Sequence[Encoded], order: Sequence[int],
                     progress: Callable[[int], None] | None, known: rescoring.Known,
                     copy_penalty: float = 0.0, found: Found | None = None) -> Iterator[tuple[int, str]]:
        """(unit, the model's output text) for the units in ``order``: EdiT5 ``batch_size`` units at
        a time; T5 all of them through the core's ``batch_size`` slots, where a finished unit's
        slot takes the next waiting one at once. ``progress`` gets each unit's characters once done;
        ``found`` each unit's beam hypotheses."""
        for batch in self._mode.batches(order, self.batch_size):
            each = progress is not None and self._mode.slotted  # progress as each unit is done
            done = (lambda k, batch=batch: progress(len(units[batch[k]]))) if each else None
            texts = self.decode([encoded[i] for i in batch], done, known, copy_penalty, found)
            if found is not None:
                found.units.update(zip(batch, found.rows))
            yield from zip(batch, texts)
            if progress is not None and not each:
                progress(sum(len(units[i]) for i in batch))

    def decode(self, encoded: Sequence[Encoded], done: Callable[[int], None] | None = None,
               known: rescoring.Known | None = None, copy_penalty: float = 0.0,
               found: Found | None = None) -> list[str]:
        """The model's output text per unit (the mode's ``run``, then its ``render``); ``done(k)``
        once unit k is decoded (T5 modes). With ``rescore`` (and ``reuse_scores``), ``known`` records the
        decode's scores (``rescoring.Known.record``): a forced pass's bit for bit where
        ``decoder.exact_windows`` (bf16); in float32 the kernels of a window and of a step differ in
        the last bits (~1e-6 of a log P), so an edit whose variant ties the output that closely may
        be judged otherwise than with every pair forced (reports/speed.md, issue 71: how often).
        ``found``: its ``rows`` get each unit's ``found.k`` best (text, score) of the beam search."""
        mode = self._mode
        if not encoded:
            return []
        # beam search: no greedy drafter, no greedy scores (rescoring forces its passes)
        beams = beam_settings(self.num_beams, self.mode, found.k if found else 1) if self.num_beams > 1 else None
        if found is not None and beams is None:
            raise EditspecError("n-best lists are a beam search's: num_beams must be 2 or more")
        scores = known is not None and self.rescore and self.reuse_scores and self.output_kind == "t5" and not beams
        with torch.inference_mode(), self.timings(mode.step):  # the model parts inside: see profiling.pipeline
            drafter = self._drafter(encoded) if mode.drafts and not beams else None
            outputs, stats = mode.run(self.bundle, encoded, self.batch_size, drafter, done, scores=scores,
                                      beams=beams, copy_penalty=copy_penalty)
        if scores:  # T5 modes: one decode a round, so one set of widths
            known.record([e.ids for e in encoded], outputs, stats, self.bundle.t5_tokenizer.eos_token_id)
        with self.timings("render"):
            if found is not None:  # each unit's hypotheses, rendered as its output is
                found.rows = [list(zip(mode.render(self.bundle, [e] * len(best), [h.ids for h in best]),
                                       [h.score for h in best])) for e, best in zip(encoded, stats.hypotheses)]
            return mode.render(self.bundle, encoded, outputs)

    def check(self, c: Correction, encoded: Encoded, written: str | None = None) -> Correction:
        """The checks after the model on one unit's correction (``encoded``: what the model read):
        no edit of what it cannot read, the guard (counted in ``guarded``), no content word deleted,
        and with the spelling step no made-up words (counted in ``unreal``) and no word removed that
        the writer misspelt (``keep_respelled``; ``written``: the unit as written, before spelling)."""
        prefix = len(encoded.text) - len(c.input)  # offsets in the unit: the prefix is not in it
        c = keep_unreadable(c, {k - prefix for k in unreadable(self.tokenizer, encoded)})
        guarded = guard(c, self.max_edit_words)
        self.guarded += guarded.output != c.output
        guarded = keep_content_words(guarded)  # after the guard, which judges the model's own edits
        if not self.spelling:
            return guarded
        checked = real_words(guarded, load_speller().knows)  # the spelling step's dictionary
        self.unreal += checked.output != guarded.output
        return keep_respelled(checked, c.input if written is None else written, load_speller().misspelt)

    def scorer(self, known: rescoring.Known | None = None) -> rescoring.Scorer:
        """Rescoring's scorer: the output model's, as its mode gives it (``known``: a T5 decode's own
        scores, ``rescoring.Known``)."""
        prefix = self.prefix if self.bundle.t5 is not None else ""
        return self._mode.scorer(self.bundle, 4 * self.batch_size, prefix, known)

    @property
    def _mode(self) -> Edit5Runner | T5Runner:
        """How ``self.mode`` runs (``editspec.decoding.runners``)."""
        return RUNNERS[self.mode]

    def _drafter(self, encoded) -> drafters.Drafter:
        """The speculative mode's drafter for ``encoded`` (``SpeculativeRunner.drafter``; EdiT5's
        output or the source, whichever has decoded this corrector's sentences faster), timed as
        ``draft`` when ``timings`` are on (EdiT5 with another vocabulary drafts here, before decoding)."""
        with self.timings("draft"):
            drafter = self._mode.drafter(self.bundle, encoded, self.batch_size)
        return drafter if self.timings is OFF else drafters.TimedDrafter(drafter, self.timings)
