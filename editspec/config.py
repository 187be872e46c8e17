"""``CorrectorConfig``: a bundle's run-time settings, kept apart from the models' own configs (as
transformers keeps ``GenerationConfig`` apart from a model's ``config.json``).

A model's ``config.json`` says what the weights are; this file says how ``Corrector`` runs them::

    editspec/models/default/
        corrector_config.json   {"max_edit_words": 3, "spelling": true, "rescore": true, ...}
        t5/config.json          d_model, layers, vocabulary: the T5 itself
        edit5/config.json       the EdiT5 itself

``eval/tune_*.py --write`` store what they tune here; ``training/ship.py`` replaces weights without
touching it. Arguments to ``Corrector.from_pretrained`` (and the CLI's flags) override it; a
directory without one runs with the defaults below (the model's raw output, no extra steps).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from editspec.errors import EditspecError
from editspec.modes import CORRECTOR

CONFIG_NAME = "corrector_config.json"
QUANTIZATIONS = ("int8",)  # --quantize (editspec.modeling.quantization)
LEVELS = ("default", "picky")  # LanguageTool's level parameter; --level


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _calibration(value) -> bool:
    """``value`` is a calibration's knots: [[margin, confidence], ...], margins rising, confidences
    in [0, 1] not falling (``confidence.Calibration``)."""
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        isinstance(k, (list, tuple)) and len(k) == 2 and all(map(_number, k)) and 0 <= k[1] <= 1 for k in value) and all(
        a[0] < b[0] and a[1] <= b[1] for a, b in zip(value, value[1:]))


@dataclass(frozen=True)
class Level:
    """What a level changes (``CorrectorConfig.levels``; all 0: the bundle's plain settings).

    copy_penalty     subtracted from the logit of the token that copies the source, at every step
                     of the T5's greedy decode: the model writes its second choice where it was
                     nearly as sure of it (``decoding.core``); T5 modes only
    rescore_margin   rescoring keeps an edit that costs up to this many nats of log P (0: only
                     edits that do not lower it)
    min_confidence   an edit less sure than this is left as written (``editspec.confidence``)
    confidence       this level's own calibration of the output model's margins, [[margin,
                     confidence], ...] (as ``CorrectorConfig.confidence``'s): a level that keeps
                     edits of lower margins is fitted on its own edits; none: the model's
    """

    name: str = "default"
    copy_penalty: float = 0.0
    rescore_margin: float = 0.0
    min_confidence: float = 0.0
    confidence: list | tuple = ()

    def __post_init__(self) -> None:
        if self.confidence and not _calibration(self.confidence):
            raise EditspecError(f"level {self.name}: confidence must be [[margin, confidence], ...] "
                                f"(margins rising, confidences in [0, 1] not falling)")
        for key in ("copy_penalty", "rescore_margin", "min_confidence"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise EditspecError(f"level {self.name}: {key} must be a number >= 0, not {value!r}")
        if self.min_confidence > 1:
            raise EditspecError(f"level {self.name}: min_confidence must be at most 1")


@dataclass(frozen=True)
class CorrectorConfig:
    """How a ``Corrector`` runs its models.

    mode            edit5, t5 or speculative; None: speculative when both models are there
    max_edit_words  the guard: a unit whose output rewrites more words in one edit is kept as
                    written (``editspec.post.checks``); 0: no guard
    rounds          correct again what the round before changed, up to this many rounds
    spelling        the dictionary step before the model and the made-up-word check after it
    rescore         keep an edit only if the output model scores the output at least as high
                    with it (``editspec.decoding.rescoring``)
    grammar         the grammar step after the last round (``editspec.grammar``: agreement, noun
                    number, verb form, articles from the parse, judged by an n-gram LM)
    prefix          text put before every T5 input ("grammar: "), as some T5 checkpoints expect
    level           the level a call runs at when it names none: "default" or "picky"
    levels          each level's settings (``Level``), by name; a level not here: none can be asked
                    for, except "default" (the plain settings)
    confidence      per output model ("t5", "edit5"), how an edit's margin becomes its confidence:
                    [[margin, confidence], ...] knots or [scale, bias] of a sigmoid
                    (``editspec.confidence.Calibration``); none: sigmoid of the margin
    """

    mode: str | None = None
    max_edit_words: int = 0
    rounds: int = 1
    spelling: bool = False
    rescore: bool = False
    prefix: str = ""
    level: str = "default"
    levels: dict = field(default_factory=dict)
    confidence: dict = field(default_factory=dict)
    grammar: bool = False  # last: the fields before keep their positions

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in CORRECTOR:  # ``editspec.modes``: the one table
            raise EditspecError(f"unknown mode {self.mode!r}; choose one of {', '.join(CORRECTOR)}")
        for name, kind in (("max_edit_words", int), ("rounds", int), ("spelling", bool), ("rescore", bool),
                           ("grammar", bool), ("prefix", str)):
            value = getattr(self, name)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise EditspecError(f"{name} must be {kind.__name__}, not {value!r}")
        if self.max_edit_words < 0:
            raise EditspecError("max edit words must be 0 (no guard) or more")
        if self.rounds < 1:
            raise EditspecError("rounds must be 1 or more")
        if not isinstance(self.levels, dict) or not isinstance(self.confidence, dict):
            raise EditspecError("levels and confidence must be JSON objects")
        for name, values in self.levels.items():
            if name not in LEVELS:
                raise EditspecError(f"unknown level {name!r} in levels; choose from {', '.join(LEVELS)}")
            if not isinstance(values, dict):
                raise EditspecError(f"levels.{name} must be a JSON object")
            try:
                Level(name, **values)
            except TypeError as e:
                raise EditspecError(f"levels.{name}: {e}") from None
        for kind, value in self.confidence.items():
            pair = isinstance(value, list) and len(value) == 2 and all(map(_number, value))
            if kind not in ("t5", "edit5") or not (pair or _calibration(value)):
                raise EditspecError(f"confidence.{kind} must be [scale, bias] or [[margin, confidence], ...] "
                                    f"(margins rising, confidences in [0, 1] not falling) of the t5 or edit5 model")
        self.level_settings(self.level)

    def level_settings(self, name: str | None = None) -> Level:
        """The settings of level ``name`` (None: ``level``); one line of error for a level that is
        unknown or that these models have no settings for."""
        name = self.level if name is None else name
        if name not in LEVELS:
            raise EditspecError(f"unknown level {name!r}; choose one of {', '.join(LEVELS)}")
        if name not in self.levels:
            if name == "default":
                return Level()
            raise EditspecError(f"level {name}: these models have no settings for it "
                                f"(corrector_config.json \"levels\" has {', '.join(self.levels) or 'none'})")
        return Level(name, **self.levels[name])

    def replace(self, **changes) -> CorrectorConfig:
        """A copy with the changes that are not None (unset arguments keep the stored value)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike) -> CorrectorConfig:
        """The settings saved in ``directory``, or the defaults when it has none."""
        path = Path(directory) / CONFIG_NAME
        if not path.is_file():
            return cls()
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise EditspecError(f"cannot read {path}: {e}") from e
        if not isinstance(values, dict):
            raise EditspecError(f"{path} must hold a JSON object, not {type(values).__name__}")
        unknown = sorted(set(values) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise EditspecError(f"{path}: unknown setting(s) {', '.join(unknown)}")
        try:
            return cls(**values)
        except EditspecError as e:
            raise EditspecError(f"{path}: {e}") from None

    def save_pretrained(self, directory: str | os.PathLike) -> Path:
        path = Path(directory) / CONFIG_NAME
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2) + "\n", encoding="utf-8")
        return path


def resolve_mode(mode: str | None, has_edit5: bool, has_t5: bool) -> str:
    """The mode a corrector runs: ``mode``, else speculative when both models are there, else the one there."""
    return mode or ("speculative" if has_edit5 and has_t5 else "edit5" if has_edit5 else "t5")


def check_models(mode: str, present: dict[str, bool], where: str | None = None) -> None:
    """One line of error when ``mode`` lacks a model it needs (``present``: kind -> loaded or found;
    ``where``: the model directory the error names)."""
    need = CORRECTOR[mode].needs
    missing = [k for k in need if not present.get(k)]
    if missing and where is not None:
        raise EditspecError(f"mode {mode} needs {'an EdiT5' if missing[0] == 'edit5' else 'a T5'} "
                            f"model, and {where} has none (pass --{missing[0]} DIR)")
    if missing:
        raise EditspecError(f"mode {mode} needs {' and '.join(need)} model(s); missing: {', '.join(missing)}")


def check_beams(num_beams: int, mode: str | None, nbest: int = 0) -> None:
    """Beam search is the T5's (mode None: not known yet), and lists at most its beams: one line of error."""
    if num_beams > 1 and mode == "edit5":
        raise EditspecError("beam search (--beam) is the T5's: --mode edit5 has none (use --mode t5 or speculative)")
    if nbest and num_beams < max(2, nbest):
        raise EditspecError(f"n-best lists are a beam search's: {nbest} of them need num_beams >= "
                            f"{max(2, nbest)}, not {num_beams}")


def check_level(level: Level, mode: str, num_beams: int) -> Level:
    """``level`` if ``mode`` can run it: a copy penalty needs the T5's greedy decode."""
    if level.copy_penalty and mode == "edit5":
        raise EditspecError(f"level {level.name} needs the T5 (mode t5 or speculative), not mode {mode}")
    if level.copy_penalty and num_beams > 1:
        raise EditspecError(f"level {level.name} decodes greedily: it cannot be used with beam search")
    return level


def check_batch_size(batch_size: int) -> int:
    if batch_size < 1:
        raise EditspecError("batch size must be at least 1")
    return batch_size


@dataclass(frozen=True)
class LoadOptions:
    """What ``Corrector.from_pretrained`` loads and how (one object, not 16 parameters; the CLI's
    model and correction flags build one: ``cli.model_options.corrector_options``).

    model           a bundle directory (``DIR/edit5``, ``DIR/t5``) or one checkpoint; None: the shipped bundle
    edit5, t5       a model of your own (a directory; a T5 may be a hub id), over ``model``'s
    settings        changes to the run-time settings (``CorrectorConfig``'s fields: mode, rounds,
                    level, ...; a None value: the bundle's ``corrector_config.json``)
    device          cpu, cuda, cuda:1, ...; None: cuda if available
    dtype           float32 or bfloat16; None: float32 (``modeling.precision``: faster as a whole process)
    quantize        "int8" (CPU linears; lossy)
    batch_size      units decoded together (the decoding core's slots)
    max_length      model input tokens with EOS; None: the models' training length
    num_beams       > 1: the T5's beam search

    Threads are the caller's (``editspec.threads.apply``: the CLI's choice), not the load's.
    """

    model: str | os.PathLike | None = None
    edit5: str | os.PathLike | None = None
    t5: str | os.PathLike | None = None
    settings: dict = field(default_factory=dict)
    device: object = None  # a str or a torch.device
    dtype: object = None  # a str or a torch.dtype
    quantize: str | None = None
    batch_size: int = 16
    max_length: int | None = None
    num_beams: int = 1

    def __post_init__(self) -> None:
        check_batch_size(self.batch_size)
        if self.max_length is not None and self.max_length < 3:
            raise EditspecError("max length must be at least 3 tokens (with EOS)")
        check_beams(self.num_beams, self.settings.get("mode"))

    def replace(self, **changes) -> LoadOptions:
        """A copy with ``changes``: names of the fields above, or of ``CorrectorConfig``'s (into
        ``settings``); a misspelt one is a TypeError."""
        mine, theirs = {f.name for f in dataclasses.fields(self)}, {f.name for f in dataclasses.fields(CorrectorConfig)}
        unknown = sorted(set(changes) - mine - theirs)
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(unknown)}; LoadOptions has {', '.join(sorted(mine))} "
                            f"and CorrectorConfig's {', '.join(sorted(theirs))}")
        settings = {**self.settings, **{k: v for k, v in changes.items() if k in theirs}}
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if k in mine and k != "settings"},
                                   settings={**settings, **changes.get("settings", {})})
