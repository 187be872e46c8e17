"""Correct text: the ``Corrector`` API, and the chain it runs.

    from editspec import Corrector
    corrector = Corrector.from_pretrained()            # the shipped bundle, or a directory
    corrector.correct(["He have two brothers.  I like it."])
    # -> ["He has two brothers.  I like it."]

A line, step by step (``_correct``; each round ``correct_round``; the data, ``editspec.chain``)::

    segment    the line's units: sentences, or chunks each model reads whole (``segment``);
               the text between them is kept verbatim, never modelled
    spelling   each unit as the model reads it (``editspec.pre.spelling``): ``Unit.read``
    rounds     tokenize, decode (the mode's runner), the edits found once (``Correction``), the
               checks (``steps.Steps.check``) and rescoring each undoing edits; a ``Unit`` comes
               back; the units a round changed are read again, up to ``rounds`` rounds
    confidence each changed unit's edits from the unit as written, with margins and confidences
               (``confidence.score_units``: rescoring's scores read, the rest scored)
    rejoin     the units' outputs into the line; ``correct_detailed``: their edits lifted to the
               line's offsets (``chain.lift``), n-best and alternatives from ``Unit.hypotheses``

Each step runs inside ``self.timings(step)`` (``editspec profile --pipeline``). Models: a bundle
(``edit5/`` and/or ``t5/``) or one checkpoint; inputs are chunked to their training length.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import torch

from editspec import confidence, grammar, threads
from editspec.bundle import KINDS, Bundle
from editspec.chain import Corrected, Unit, lift
from editspec.config import (CorrectorConfig, Level, LoadOptions, check_batch_size, check_beams, check_level,
                             check_models, resolve_mode)
from editspec.decoding import rescoring
from editspec.decoding.runners import RUNNERS
from editspec.errors import EditspecError
from editspec.grammar import parser as parsing
from editspec.modeling import loading, precision
from editspec.modeling.loading import resolve_models
from editspec.nbest import ALTERNATIVES, rejoined
from editspec.post import error_types
from editspec.post.diff import Correction
from editspec.pre import segment
from editspec.pre.spelling import respell_all
from editspec.steps import Steps
from editspec.timing import OFF

class Corrector(Steps):
    """Corrects lines of text with EdiT5, T5, or speculative T5 (EdiT5 or the source drafts, T5
    verifies), on the models of a ``Bundle``, as its ``config`` says."""

    def __init__(self, bundle: Bundle, config: CorrectorConfig = CorrectorConfig(), batch_size: int = 16,
                 max_length: int | None = None, num_beams: int = 1):
        """``config``: the run-time settings, kept whole (a caller may replace it: ``config.replace``),
        its mode resolved (without one, speculative when both models are there, else the one
        there). ``max_length``: model input tokens with EOS (default: the models' training
        length); ``num_beams`` > 1: the T5's beam search (``decoding.beam``)."""
        self.batch_size, self.num_beams = check_batch_size(batch_size), num_beams
        mode = resolve_mode(config.mode, bundle.edit5 is not None, bundle.t5 is not None)
        check_beams(num_beams, mode)
        check_models(mode, {k: getattr(bundle, k) is not None for k in KINDS})
        uses = RUNNERS[mode].mode.uses
        self.bundle = bundle if all(getattr(bundle, k) is None for k in KINDS if k not in uses) else bundle.only(*uses)
        self.config = config.replace(mode=mode)
        self.level_of(None)  # one line of error now for a level this mode cannot run
        if self.config.grammar:  # its files checked now, its parser started (spaCy loads meanwhile)
            grammar.check_files()
            parsing.start()
        self._grammar: dict[str, object] = {}  # the grammar step per level, built once (``grammar_step``)
        self.timings = OFF  # a ``timing.Timings`` to see where the time goes (editspec profile --pipeline)
        # rescoring reads the T5 decode's own scores (``rescoring.Known``); False: every pair forced
        self.reuse_scores = True
        self.guarded = 0  # units the guard has kept as written, over this corrector's life
        self.unreal = 0  # units with an edit undone for a made-up word (``real_words``), likewise
        # the models' own limits, then the training length (chunks never exceed any of them)
        self.max_ids = [(getattr(self.bundle, f"{kind}_tokenizer"), self._max_ids(max_length, kind))
                        for kind in KINDS if getattr(self.bundle, kind) is not None]  # (tokenizer, max ids without EOS)
        # what each drafter has cost per sentence, measured on this corrector's sentences after what
        # earlier processes measured with these models on this machine (``decoding.measured``)
        self.bundle.costs.fresh_drafts(batch_size)
        if threads.DEFAULT:  # the process's thread count is ours to choose: by its passes' costs here
            torch.set_num_threads(self.bundle.costs.fastest_threads(batch_size, threads.DEFAULT))

    @classmethod
    def from_pretrained(cls, model: str | os.PathLike | None = None, options: LoadOptions | None = None,
                        **changes) -> "Corrector":
        """Load a bundle (``DIR/edit5``, ``DIR/t5``) or one checkpoint; default: the shipped bundle.

        ``options`` (``config.LoadOptions``) says what to load and how; ``changes``, names of its
        fields or of ``CorrectorConfig``'s (``mode="t5"``, ``batch_size=32``), change it here;
        ``model`` is its ``model``. The run-time settings (``CorrectorConfig``) default to the
        ``corrector_config.json`` of ``model`` (a bundle or a checkpoint; without ``model``, of the
        shipped bundle, or of the output model's directory when ``t5``/``edit5`` are given), else
        to ``CorrectorConfig``'s defaults: a checkpoint of your own gives its raw output. They are
        resolved and checked (``config.resolve_mode``, ``check_*``) before the models load.
        Threads are the caller's: ``editspec.threads.apply(None)`` first chooses them as the CLI does.
        """
        o = (options or LoadOptions()).replace(**changes, **({"model": model} if model is not None else {}))
        edit5_path, t5_path = resolve_models(o.model, o.edit5, o.t5)
        if o.model is not None:
            where = Path(o.model)
        elif o.edit5 is None and o.t5 is None:
            where = loading.DEFAULT_MODEL
        else:  # the output model's directory (a T5 may be a hub id: no settings then)
            where = Path(t5_path if t5_path and (o.settings.get("mode") or "speculative") != "edit5" else edit5_path)
        config = CorrectorConfig.from_pretrained(where).replace(**o.settings)
        mode = resolve_mode(config.mode, bool(edit5_path), bool(t5_path))
        check_beams(o.num_beams, mode)
        check_level(config.level_settings(), mode, o.num_beams)
        check_models(mode, {"edit5": bool(edit5_path), "t5": bool(t5_path)},
                     str(o.model if o.model is not None else loading.DEFAULT_MODEL))
        if config.grammar:
            grammar.check_files()
        uses = RUNNERS[mode].mode.uses
        device = loading.resolve_device(o.device)
        shape = precision.shape_of(t5_path if "t5" in uses and t5_path else edit5_path)
        dtype = o.dtype
        if dtype is None and precision.chooses(device, o.quantize, shape):  # this machine's measured type
            key = precision.choice_key(device, shape)
            dtype = precision.chosen(key) or cls._measure_dtype(edit5_path, t5_path, uses, device, key,
                                                                config.replace(mode=mode), o)
        bundle = Bundle.load(edit5_path, t5_path, uses, device, dtype, o.quantize)
        return cls(bundle, config.replace(mode=mode), batch_size=o.batch_size, max_length=o.max_length,
                   num_beams=o.num_beams)

    @classmethod
    def _measure_dtype(cls, edit5_path: str | None, t5_path: str | None, uses: Sequence[str], device,
                       key: dict, config: CorrectorConfig, o: LoadOptions) -> torch.dtype:
        """float32 against bfloat16 on this machine, once (``precision``'s module docstring): a whole
        correction of the sample text in each, without the steps no type changes the cost of (the
        spelling index's first build, the grammar step); the faster, kept under ``key``."""
        probe = config.replace(spelling=False, grammar=False)
        seconds = {precision.dtype_name(t): timed_correction(
            lambda t=t: Bundle.load(edit5_path, t5_path, uses, device, t),
            lambda b: cls(b, probe, batch_size=o.batch_size, max_length=o.max_length)) for t in (torch.float32, torch.bfloat16)}
        return precision.keep(key, seconds)

    def level_of(self, name: str | None) -> Level:
        """The settings of level ``name`` (None: the config's ``level``); one line of error for an
        unknown level, one these models have no settings for, or one the mode cannot run."""
        return check_level(self.config.level_settings(name), self.mode, self.num_beams)

    # -- public API --

    def correct(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
                level: str | None = None) -> list[str]:
        """Corrected texts, one per input text; spacing between and around sentences is kept.
        ``level``: "default" or "picky" (None: the config's)."""
        return self._correct(texts, progress, level).lines

    def correct_detailed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
                         types: bool = False, level: str | None = None, alternatives: int = 0,
                         nbest: int = 0) -> list[Correction]:
        """Like ``correct``, with each unit's edits (whole words, "don't" -> "didn't") at the line's
        offsets (``chain.lift``), each with its confidence (``editspec.confidence``); ``types``:
        their ERRANT types and messages (``error_types.typed``, spaCy: ~1 s to load, a few ms a
        text). ``alternatives``: up to that many other replacements per edit, and ``nbest``: each
        line's that many best hypotheses with their scores, from ``Unit.hypotheses`` (``nbest``)."""
        if alternatives and self.bundle.t5 is None:
            raise EditspecError("alternatives come from the T5's beam search: this corrector has no T5 (mode edit5)")
        check_beams(self.num_beams, self.mode, nbest)
        # the decode's beam search keeps enough for the alternatives too; greedy: a search of their own
        k = max(nbest, min(ALTERNATIVES, self.num_beams) if alternatives else 0) if self.num_beams > 1 else \
            (ALTERNATIVES if alternatives else 0)
        done = self._correct(texts, progress, level, detailed=True, hypotheses=k)
        with self.timings("diff"):
            shown = [Correction(u.text, out, self._shown(u, out, c, alternatives))
                     for u, out, c in zip(done.units, done.outputs, done.scored)]
        if types:  # each unit's edits typed in their unit, as the sentence alone gets them
            with self.timings("types"):
                shown = error_types.typed(shown)
        if any(done.grammar):  # the step's edits carry its type, message and confidence
            from editspec.grammar import chain as grammar_chain

            shown = [replace(c, edits=grammar_chain.own(c.edits, grammar_chain.spans(g, m), m))
                     for c, g, m in zip(shown, done.grammar, done.scored)]
        corrections = lift(texts, done.spans, done.lines, [c.edits for c in shown])
        if nbest:
            corrections = [replace(c, nbest=h[:nbest]) for c, h in
                           zip(corrections, rejoined(texts, done.spans, done.units, k))]
        return corrections

    def _correct(self, texts: Sequence[str], progress: Callable[[int], None] | None, level: str | None,
                 detailed: bool = False, hypotheses: int = 0) -> Corrected:
        """The chain over lines: segment, the rounds, and the confidences where they are shown or a
        level's ``min_confidence`` needs them; ``hypotheses``: each unit's, as ``correct_round``'s."""
        if isinstance(texts, str):
            raise TypeError("correct() takes a list of texts, not one string")
        settings = self.level_of(level)
        memo: dict = {}  # each text tokenized once: segmenting's encodings serve the round's
        with self.timings("segment"):
            spans = segment.segment_lines(texts, self.limits, memo)
            written = segment.unit_texts(texts, spans)
            places = segment.places(texts, spans)
        units = self.units(written, progress, places, memo, settings, hypotheses)
        outputs, scored = [u.output for u in units], [None] * len(units)
        if detailed or settings.min_confidence > 0:
            with self.timings("confidence"):
                scored = confidence.score_units(units, outputs, self.scorer(), self.calibration_of(settings))
                if settings.min_confidence > 0:
                    outputs, scored = confidence.keep_sure(written, outputs, scored, settings.min_confidence)
        made: list[Correction | None] = [None] * len(units)
        if self.config.grammar:  # once, after the last round, on what the model chain kept
            from editspec.grammar import chain as grammar_chain

            with self.timings("grammar"):
                units, outputs, made = grammar_chain.run(self.grammar_step(settings), units, outputs,
                                                         settings.min_confidence)
        with self.timings("rejoin"):
            return Corrected(segment.rejoin_lines(texts, spans, outputs), spans, units, outputs, scored, made)

    def grammar_step(self, level: Level):
        """The grammar step at ``level`` (picky adds its pattern), built at the first call: the
        language model once per corrector, shared by the levels, and the process's parser."""
        if level.name not in self._grammar:
            from editspec.grammar.step import GrammarStep, Settings

            first = next(iter(self._grammar.values()), None)
            settings = Settings.from_file(grammar.DEFAULT_SETTINGS, level.name)
            self._grammar[level.name] = GrammarStep.load(settings, grammar.DEFAULT_LM) if first is None else \
                GrammarStep(first.lm, settings, first.parser)
        return self._grammar[level.name]

    # -- the chain: units -> spelling -> rounds of (tokenize, decode, edits, checks, rescore) --

    def correct_units(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
                      places: Sequence[segment.Place] | None = None, memo: dict | None = None,
                      level: Level | None = None) -> list[str]:
        """The units' outputs after the last of ``rounds`` rounds (``units``)."""
        return [u.output for u in self.units(texts, progress, places, memo, level)]

    def units(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
              places: Sequence[segment.Place] | None = None, memo: dict | None = None,
              level: Level | None = None, hypotheses: int = 0) -> list[Unit]:
        """The units after the last of ``rounds`` rounds (``correct_rounds``)."""
        units = [Unit.of(t, t) for t in texts]
        for units in self.correct_rounds(texts, progress, places, memo, level, hypotheses):
            pass
        return units

    def correct_rounds(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
                       places: Sequence[segment.Place] | None = None, memo: dict | None = None,
                       level: Level | None = None, hypotheses: int = 0) -> Iterator[list[Unit]]:
        """The units (``texts`` as written) after each round, read after spelling if on (``places``:
        ``segment.places``; ``memo``: encodings made already, ``tokens.encode``'s). A round reads
        again only the units whose output the round before changed (a one-pass model often fixes
        an error once the one beside it is fixed); ``progress`` counts the first round. ``level``:
        None, the config's; ``hypotheses``: as ``correct_round``'s."""
        level = self.level_of(None) if level is None else level
        self.timings.first_round()
        read = texts
        if self.config.spelling:
            with self.timings("spelling"):
                read = respell_all(texts, places)
        units = [Unit.of(text, r) for text, r in zip(texts, read)]
        todo = list(range(len(units)))
        memo = {} if memo is None else memo
        for round_ in range(self.config.rounds):
            if round_:
                self.timings.next_round()
            done = self.correct_round([units[i] for i in todo], progress if round_ == 0 else None, memo, level,
                                      hypotheses)
            units, was = list(units), units  # a new list: the one yielded before stays as it was
            for i, u in zip(todo, done):
                units[i] = u
            todo = [i for i in todo if units[i].output != was[i].output]
            yield units
        self.bundle.costs.keep_drafts(self.batch_size)

    def correct_round(self, units: Sequence[Unit], progress: Callable[[int], None] | None = None,
                      memo: dict | None = None, level: Level | None = None, hypotheses: int = 0) -> list[Unit]:
        """One round: each unit reads its output so far, is tokenized and decoded, its edits found
        once and judged by the checks and rescoring, each undoing those it finds wrong; it comes
        back with the round's correction, tokens, rescoring's scores and its ``hypotheses`` best of
        a beam search (the decode's; greedy: a search of its own on the units left changed). A unit
        some model cannot read whole comes back as it was. ``level``: copy penalty, rescore margin."""
        level = self.level_of(None) if level is None else level
        texts = [u.output for u in units]
        encoded, order = self.tokenize(texts, memo)
        known = rescoring.Known()  # the decode's own scores: rescoring reads them, no forced pass
        decoded = self.decode_units(texts, encoded, order, progress, known, level.copy_penalty, hypotheses)
        with self.timings("edits"):
            changes = {i: Correction.of(texts[i], text) for i, (text, _) in decoded.items()}
        with self.timings("guard"):
            changes = {i: self.check(c, encoded[i], units[i].text) for i, c in changes.items()}
        scores: dict[int, dict] = {}
        if self.config.rescore:  # the output model undoes the edits it scores lower than their absence
            with self.timings("rescore"):
                changed = [i for i in order if changes[i].edits]
                for i, (c, scored) in zip(changed, rescoring.rescore([changes[i] for i in changed], self.scorer(known),
                                                                     margin=level.rescore_margin)):
                    changes[i], scores[i] = c, dict(scored)
        hyps = {i: h for i, (_, h) in decoded.items()}
        if hypotheses and self.num_beams == 1:  # the alternatives' search, on what this round read
            with self.timings("alternatives"):
                redo = [i for i in order if changes[i].output != units[i].text]
                hyps.update(zip(redo, self.search([encoded[i] for i in redo], hypotheses)))
        return [u.after(changes[i], encoded=encoded[i], scores=scores.get(i, {}), hypotheses=hyps[i])
                if i in changes else u for i, u in enumerate(units)]


PROBE = Path(__file__).resolve().parent / "samples" / "learner.txt"  # ``editspec correct --sample``'s text


def timed_correction(load: Callable[[], Bundle], make: Callable[[Bundle], Corrector]) -> float:
    """Seconds of a whole correction of the sample text (twice: its shapes' first use, then warm)
    from its models' load, leaving out only what a machine measures once (the corrector's pass
    costs): how ``from_pretrained`` compares float32 and bfloat16 on a CPU with bf16 units."""
    texts = PROBE.read_text(encoding="utf-8").splitlines()
    start = time.perf_counter()
    bundle = load()
    loaded = time.perf_counter() - start
    corrector = make(bundle)
    start = time.perf_counter()
    corrector.correct(texts)
    corrector.correct(texts)
    return loaded + time.perf_counter() - start
