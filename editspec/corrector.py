"""Correct text: the ``Corrector`` API and the ``editspec correct`` command.

    from editspec import Corrector
    corrector = Corrector.from_pretrained()            # the shipped bundle, or a directory
    corrector.correct(["She go to school every days.  I like it."])
    # -> ["She goes to school every day.  I like it."]

What happens to a line::

    line       "  She go to school every days.  I like it."
    segment    (2, 31) "She go to school every days."    (2 spaces before, 2 between:
               (33, 43) "I like it."                       kept verbatim, never modelled)
    spelling   with ``spelling`` on, words no dictionary holds are respelled (or split: "infront"),
               capitals restored ("i", names, sentence starts) and a long last sentence given its
               full stop (``editspec.spelling``)
    batch      all units of all lines, longest first, ``batch_size`` at a time
    model      edit5        tags, pointers, insertions -> realize_aligned -> render
               t5           greedy ids -> render_ids (aligned to the source)
               speculative  T5 greedy ids, drafted by EdiT5 -> render_ids
    guard      a unit whose output rewrites more than ``max_edit_words`` words in one edit
               ("and a lot , but I think that ..." repeated) goes back to the unit as written
    words      with ``spelling`` on, an edit that writes a word no dictionary holds ("beingef")
               is undone (``real_words``)
    rescore    with ``rescore`` on, an edit the output model scores the unit better without is
               undone (``editspec.rescoring``)
    rounds     with ``rounds`` > 1, the units a round changed are corrected again
    rejoin     "  She goes to school every day.  I like it."
    edits      word-level diff of line and output: (6, 8) "go" -> "goes", (25, 29) "days" -> "day"

Rendering copies every kept token's characters from the input (``editspec.tokens``), so emoji,
CJK, tabs, unusual spaces survive wherever the model does not edit them.

Models: a bundle directory holds ``edit5/`` and/or ``t5/`` (and ``t5-draft/``, a small T5 that
``editspec profile`` may time as another drafter; ``Corrector`` does not use it), each the
``save_pretrained`` output of a model plus its tokenizer. A single checkpoint directory works
too; its ``config.json`` ``model_type`` says which model it is. The default mode is speculative
when both models are present (T5's output at a fraction of T5's decoder passes), else the one
present. Inputs are chunked to the model's training length (``training.json`` ``max_length``
from ``training/train.py``, else 128 tokens with EOS, the paper's sequence length).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from rapidfuzz.distance import Indel

from editspec.errors import EditspecError

if TYPE_CHECKING:
    import torch

    from editspec.text import segment
    from editspec.decoding import speculative

# torch, transformers and spaCy are imported where used: `editspec correct` reports a missing
# or undecodable input file at once, before those seconds of imports.

DEFAULT_MODEL = Path(__file__).parent / "models" / "default"
MODES = ("edit5", "t5", "speculative")
NEEDS = {"edit5": ("edit5",), "t5": ("t5",), "speculative": ("edit5", "t5")}
DEFAULT_MAX_LENGTH = 128  # model input tokens with EOS, when the checkpoint does not say
EDIT5_TYPES = {"edit5"}
T5_TYPES = {"t5"}

# -- results --


@dataclass(frozen=True)
class Edit:
    """One change: ``input[start:end]`` (character offsets) became ``correction``."""

    start: int
    end: int
    original: str
    correction: str


@dataclass(frozen=True)
class Correction:
    input: str
    output: str
    edits: list[Edit] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"input": self.input, "output": self.output, "edits": [asdict(e) for e in self.edits]}


_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def diff(source: str, target: str) -> list[Edit]:
    """Word-level edits turning ``source`` into ``target``, as source character offsets.

    Words, whitespace runs and single punctuation marks are the units of an exact LCS
    (rapidfuzz Indel); a run of consecutive changed units is one edit. Word units keep an
    edit readable ("go" -> "goes") where a character diff would give "" -> "es".
    """
    if source == target:
        return []
    src, tgt = _WORDS.findall(source), _WORDS.findall(target)
    src_at = [0]
    for w in src:
        src_at.append(src_at[-1] + len(w))
    edits: list[Edit] = []
    pending: list[int] | None = None  # [src_start, src_end, tgt_start, tgt_end] in units
    for op in Indel.opcodes(src, tgt):
        if op.tag == "equal":
            if pending:
                edits.append(_edit(src, tgt, src_at, pending))
                pending = None
        elif pending is None:
            pending = [op.src_start, op.src_end, op.dest_start, op.dest_end]
        else:
            pending[1], pending[3] = op.src_end, op.dest_end
    if pending:
        edits.append(_edit(src, tgt, src_at, pending))
    return edits


def apply(source: str, edits: Sequence[Edit]) -> str:
    """``source`` with ``edits`` (source offsets, in order, not overlapping) made: the inverse of
    ``diff`` (``apply(s, diff(s, t)) == t``), and with a subset of them, the text in between."""
    parts, cursor = [], 0
    for e in edits:
        parts += [source[cursor:e.start], e.correction]
        cursor = e.end
    return "".join(parts) + source[cursor:]


def _edit(src: list[str], tgt: list[str], src_at: list[int], span: list[int]) -> Edit:
    a, b, c, d = span
    return Edit(src_at[a], src_at[b], "".join(src[a:b]), "".join(tgt[c:d]))


def edit_size(edit: Edit) -> int:
    """Words and punctuation marks (``diff``'s units, spaces not counted) on the longer side of
    an edit ("go" -> "goes": 1)."""
    return max(sum(not u.isspace() for u in _WORDS.findall(side)) for side in (edit.original, edit.correction))


def guard(source: str, output: str, max_edit_words: int) -> str:
    """``output``, or ``source`` when one edit of ``diff(source, output)`` spans more than
    ``max_edit_words`` words (0: no guard).

    A small seq2seq model that loses its place in a sentence repeats a phrase until the length
    limit or skips half the sentence; the rest of such an output is unreliable too, so the
    whole sentence is kept as written. The limit is chosen on FCE dev by ``eval/tune_guard.py``
    and stored with the model; reports/models.md ("The guard") has what it does to the shipped T5's scores.
    """
    if max_edit_words and any(edit_size(e) > max_edit_words for e in diff(source, output)):
        return source
    return output


# ASCII letters, joined by apostrophes or hyphens, touching no other letter, digit, apostrophe or
# hyphen: "beingef", "doesn't", "well-known", "Lunds'" (not "café", "3rd")
LETTER_WORD = re.compile(r"(?<![\w'’-])[A-Za-z]+(?:['’-][A-Za-z]+)*['’]?(?![\w'’-])")
POSSESSIVE = re.compile(r"'s?$")


def real_words(source: str, output: str, knows: Callable[[str], bool]) -> str:
    """``output`` with each edit of ``diff(source, output)`` undone that writes a word which
    ``source`` does not hold and ``knows`` does not know ("beef" -> "beingef", "Candide" -> "Canide").

    A small model builds words from sub-word pieces and now and then glues a wrong piece to a
    right one; none of the shipped models' edits that wrote such a word was right on W&I dev, FCE
    test, CoNLL-2013 or JFLEG dev (reports/models.md, "Spelling"; ``eval/made_up_words.py``). A word is a
    ``LETTER_WORD`` of the output, so an edit of part of one ("don" -> "doesn" in "doesn't") is
    judged by the whole; one ``knows`` does not know whole is judged by its parts without a
    possessive ("Canide's" -> "Canide", "worldold-wide" -> "worldold", "wide").
    """
    unknown = made_up_words(source, output, knows)  # most outputs have none: no diff to make
    if not unknown:
        return output
    edits = diff(source, output)
    kept, shift = [], 0  # shift: where source offsets are in the output, edits before made
    for e in edits:
        start = e.start + shift
        end = start + len(e.correction)
        shift += len(e.correction) - (e.end - e.start)
        if not any(a <= end and b >= start for a, b in unknown):  # a word the edit wrote or touches
            kept.append(e)
    if len(kept) == len(edits):
        return output
    # the edits left can meet in a new made-up word ("is" + "'t"): judge again (fewer edits each time)
    return real_words(source, apply(source, kept), knows)


def made_up_words(source: str, text: str, knows: Callable[[str], bool]) -> list[tuple[int, int]]:
    """The spans of the ``LETTER_WORD`` of ``text`` that neither ``source`` holds nor ``knows``
    knows, whole or by its parts without a possessive (see ``real_words``)."""
    written = {w for word in LETTER_WORD.findall(source) for w in (_lower(word), *_parts(word))}

    def made_up(word: str) -> bool:
        return _lower(word) not in written and not knows(_lower(word)) and \
            not all(part in written or knows(part) for part in _parts(word))

    return [m.span() for m in LETTER_WORD.finditer(text) if made_up(m.group())]


def _lower(word: str) -> str:
    return word.replace("’", "'").lower()


def _parts(word: str) -> list[str]:
    """The words ``word`` joins, in lower case, without a possessive: "Lunds'" -> "lunds";
    "Well-known" -> "well", "known"."""
    return [p for p in POSSESSIVE.sub("", _lower(word)).split("-") if p]


# -- models --


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise EditspecError(f"cannot read {path}: {e}") from e


def model_type(path: str | os.PathLike) -> str:
    """``edit5`` or ``t5``: what the checkpoint directory's config.json says it is."""
    config = Path(path) / "config.json"
    if not config.is_file():
        raise EditspecError(f"{path} is not a model directory (no config.json)")
    kind = _read_json(config).get("model_type")
    if kind in EDIT5_TYPES:
        return "edit5"
    if kind in T5_TYPES:
        return "t5"
    raise EditspecError(f"{path} holds a {kind!r} model; editspec runs EdiT5 (edit5) and T5 (t5) models")


def resolve_models(
    model: str | os.PathLike | None = None, edit5: str | os.PathLike | None = None,
    t5: str | os.PathLike | None = None,
) -> tuple[str | None, str | None]:
    """(EdiT5 checkpoint, T5 checkpoint) of a bundle or single checkpoint, ``edit5``/``t5``
    overriding; the shipped bundle when nothing is given."""
    found: dict[str, str | None] = {"edit5": None, "t5": None}
    if model is None and edit5 is None and t5 is None:
        model = DEFAULT_MODEL
        if not any((model / k / "config.json").is_file() for k in found):
            raise EditspecError(
                f"no model installed: {model} holds no edit5/ or t5/ checkpoint; pass --model DIR "
                "(a bundle with edit5/ and/or t5/, or one checkpoint directory)")
    if model is not None:
        root = Path(model)
        if not root.exists():
            raise EditspecError(f"model directory {root} does not exist")
        if not root.is_dir():
            raise EditspecError(f"model path {root} is not a directory")
        if (root / "config.json").is_file():
            found[model_type(root)] = str(root)
        else:
            for kind in found:
                if (root / kind).is_dir():
                    found[kind] = str(root / kind)
            if not any(found.values()):
                raise EditspecError(f"{root} is neither a model directory (no config.json) nor a "
                                    "bundle (no edit5/ or t5/ inside)")
    for kind, path in (("edit5", edit5), ("t5", t5)):
        if path is None:
            continue
        if kind == "edit5" or Path(path).exists():  # a T5 may also be a hub id
            actual = model_type(path)
            if actual != kind:
                raise EditspecError(f"{path} is a{'n EdiT5' if actual == 'edit5' else ' T5'} model, "
                                    f"not {'an EdiT5' if kind == 'edit5' else 'a T5'} model")
        found[kind] = str(path)
    return found["edit5"], found["t5"]


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The torch device asked for (default: t5.default_device), or a one-line error."""
    import torch

    from editspec.modeling.t5 import default_device

    if device is None:
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise EditspecError(f"unknown device {device!r}") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise EditspecError(f"device {device!r} asked for, but CUDA is not available")
    return dev


def _trained_length(path: str | None) -> int | None:
    info = Path(path) / "training.json" if path else None
    if info is not None and info.is_file():
        value = _read_json(info).get("max_length")
        return int(value) if value else None
    return None


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """No "Loading weights" bars or advisory warnings while loading: a corrector's output is
    the text; real problems raise."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def load_edit5(path: str, device: torch.device):
    """An EdiT5 checkpoint in eval mode, and its tokenizer (a one-line error if it is broken)."""
    import torch

    from editspec.modeling.modeling_edit5 import EdiT5Model
    from editspec.tokenization.tokens import load_tokenizer, marker_ids

    model_type(path)
    try:
        model = EdiT5Model.from_pretrained(path, dtype=torch.float32)  # shipped bf16, computed fp32
    except Exception as e:  # missing/corrupt weights, wrong shapes
        raise EditspecError(f"cannot load an EdiT5 model from {path}: {str(e).splitlines()[0]}") from e
    tok = load_tokenizer(path)
    if len(tok) > model.config.vocab_size:
        raise EditspecError(f"tokenizer at {path} has {len(tok)} tokens but the model only "
                            f"{model.config.vocab_size}: they do not belong together")
    if not marker_ids(tok):
        raise EditspecError(f"tokenizer at {path} has no <extra_id_N> markers, which EdiT5 needs")
    if tok.eos_token_id != model.config.eos_token_id:
        raise EditspecError(f"tokenizer at {path} has EOS id {tok.eos_token_id}, the model "
                            f"{model.config.eos_token_id}")
    return model.to(device).eval(), tok


# -- the corrector --


class Corrector:
    """Corrects lines of text with EdiT5, T5, or speculative T5 (EdiT5 drafts, T5 verifies)."""

    def __init__(self, mode: str, edit5=None, edit5_tokenizer=None, t5=None, t5_tokenizer=None,
                 batch_size: int = 16, max_length: int | None = None, paths: dict | None = None,
                 max_edit_words: int = 0, rounds: int = 1, spelling: bool = False, rescore: bool = False):
        from editspec.tokenization.tokens import marker_ids

        if mode not in MODES:
            raise EditspecError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if batch_size < 1:
            raise EditspecError("batch size must be at least 1")
        if max_edit_words < 0:
            raise EditspecError("max edit words must be 0 (no guard) or more")
        if rounds < 1:
            raise EditspecError("rounds must be 1 or more")
        need = NEEDS[mode]
        have = {"edit5": edit5, "t5": t5}
        missing = [k for k in need if have[k] is None]
        if missing:
            raise EditspecError(f"mode {mode} needs {' and '.join(need)} model(s); "
                                f"missing: {', '.join(missing)}")
        self.mode, self.batch_size, self.paths = mode, batch_size, paths or {}
        self.max_edit_words, self.rounds, self.spelling = max_edit_words, rounds, spelling
        self.rescore = rescore
        self.guarded = 0  # units the guard has kept as written, over this corrector's life
        self.unreal = 0  # units with an edit undone for a made-up word (``real_words``), likewise
        self.edit5, self.edit5_tokenizer = (edit5, edit5_tokenizer) if "edit5" in need else (None, None)
        self.t5, self.t5_tokenizer = (t5, t5_tokenizer) if "t5" in need else (None, None)
        self.markers = marker_ids(self.edit5_tokenizer) if self.edit5 is not None else []
        # the models' own limits, then the training length (chunks never exceed any of them)
        self.limits: list[tuple[object, int]] = []  # (tokenizer, max ids without EOS)
        if self.t5 is not None:
            self.limits.append((self.t5_tokenizer, self._max_ids(max_length, "t5")))
        if self.edit5 is not None:
            self.limits.append((self.edit5_tokenizer, self._max_ids(max_length, "edit5")))
        # the drafter reads the verifier's ids when both share one vocabulary (the normal case)
        self.shared_vocab = (self.mode == "speculative" and
                             self.edit5_tokenizer.get_vocab() == self.t5_tokenizer.get_vocab())

    def _max_ids(self, max_length: int | None, kind: str) -> int:
        length = max_length or _trained_length(self.paths.get(kind)) or DEFAULT_MAX_LENGTH
        if kind == "edit5":
            # order positions 1..n+1 (EOS last), and a marker p for "after kept token p", p <= n
            length = min(length, self.edit5.config.max_order_positions - 1, len(self.markers))
        return max(2, length - 1)

    @classmethod
    def from_pretrained(
        cls, model: str | os.PathLike | None = None, mode: str | None = None,
        edit5: str | os.PathLike | None = None, t5: str | os.PathLike | None = None,
        device: str | torch.device | None = None, batch_size: int = 16, max_length: int | None = None,
        max_edit_words: int | None = None, rounds: int | None = None, spelling: bool | None = None,
        rescore: bool | None = None,
    ) -> "Corrector":
        """Load a bundle (``DIR/edit5``, ``DIR/t5``) or one checkpoint; default: the shipped bundle.

        ``mode`` defaults to ``speculative`` when both models are present, else the one present.
        ``max_length`` (model input tokens with EOS) overrides the checkpoint's training length.
        ``max_edit_words`` (see ``guard``; 0 turns it off) defaults to the ``max_edit_words`` in
        the config.json of the model whose output is returned (``eval/tune_guard.py --write``
        puts it there), else 0: a checkpoint of your own gives its raw output. ``rounds`` (see
        ``correct_rounds``), ``spelling`` (``editspec.spelling``, and ``real_words``) and ``rescore``
        (``editspec.rescoring``) default in the same way to that config's ``rounds``,
        ``spelling`` and ``rescore``, else 1, off and off.
        """
        if batch_size < 1:
            raise EditspecError("batch size must be at least 1")
        if max_length is not None and max_length < 3:
            raise EditspecError("max length must be at least 3 tokens (with EOS)")
        edit5_path, t5_path = resolve_models(model, edit5, t5)
        if mode is None:
            mode = "speculative" if edit5_path and t5_path else "edit5" if edit5_path else "t5"
        if mode not in MODES:
            raise EditspecError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        paths = {"edit5": edit5_path, "t5": t5_path}
        for kind in NEEDS[mode]:
            if paths[kind] is None:
                where = model if model is not None else DEFAULT_MODEL
                raise EditspecError(f"mode {mode} needs {'an EdiT5' if kind == 'edit5' else 'a T5'} "
                                    f"model, and {where} has none (pass --{kind} DIR)")
        dev = resolve_device(device)
        loaded: dict = {}
        with quiet_transformers():
            if "edit5" in NEEDS[mode]:
                loaded["edit5"], loaded["edit5_tokenizer"] = load_edit5(edit5_path, dev)
            if "t5" in NEEDS[mode]:
                from editspec.modeling.t5 import load_t5

                loaded["t5"], loaded["t5_tokenizer"] = load_t5(t5_path, device=dev)
        output_config = (loaded["t5"] if "t5" in loaded else loaded["edit5"]).config
        if max_edit_words is None:
            max_edit_words = getattr(output_config, "max_edit_words", 0)
        if rounds is None:
            rounds = getattr(output_config, "rounds", 1)
        if spelling is None:
            spelling = getattr(output_config, "spelling", False)
        if rescore is None:
            rescore = getattr(output_config, "rescore", False)
        return cls(mode, batch_size=batch_size, max_length=max_length, paths=paths,
                   max_edit_words=int(max_edit_words), rounds=int(rounds), spelling=bool(spelling),
                   rescore=bool(rescore), **loaded)

    @property
    def device(self) -> torch.device:
        return self.output_model.device

    @property
    def output_kind(self) -> str:
        """Which model's output is returned: "t5", except in edit5 mode ("edit5")."""
        return "t5" if self.t5 is not None else "edit5"

    @property
    def output_model(self):
        """The model whose output is returned."""
        return getattr(self, self.output_kind)

    @property
    def output_path(self) -> str | os.PathLike | None:
        """The directory of the output model (where the tuning scripts store a setting)."""
        return self.paths[self.output_kind]

    @property
    def tokenizer(self):
        """The tokenizer of the model whose output is returned."""
        return getattr(self, f"{self.output_kind}_tokenizer")

    # -- public API --

    def correct(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> list[str]:
        """Corrected texts, one per input text; spacing between and around sentences is kept."""
        from editspec.text import segment

        if isinstance(texts, str):
            raise TypeError("correct() takes a list of texts, not one string")
        spans = segment.segment_lines(texts, self.limits)
        units = segment.unit_texts(texts, spans)
        outputs = self.correct_units(units, progress, segment.places(texts, spans))
        return segment.rejoin_lines(texts, spans, outputs)

    def correct_detailed(self, texts: Sequence[str],
                         progress: Callable[[int], None] | None = None) -> list[Correction]:
        """Like ``correct``, with each change as character offsets into the input text."""
        outputs = self.correct(texts, progress)
        return [Correction(text, out, diff(text, out)) for text, out in zip(texts, outputs)]

    # -- batches --

    def correct_units(self, units: Sequence[str], progress: Callable[[int], None] | None = None,
                      places: Sequence[segment.Place] | None = None) -> list[str]:
        """The units after the last of ``rounds`` rounds (see ``correct_rounds``)."""
        out = list(units)
        for out in self.correct_rounds(units, progress, places):
            pass
        return out

    def correct_rounds(self, units: Sequence[str], progress: Callable[[int], None] | None = None,
                       places: Sequence[segment.Place] | None = None) -> Iterator[list[str]]:
        """All units after each of the ``rounds`` rounds (after spelling, if on; ``places`` as in
        ``spelling.respell_all``, from ``segment.places``).

        A round corrects again only the units the round before changed (so once none changed,
        the rest cost nothing): a one-pass model often fixes an error only once the one beside
        it is fixed. The guard applies in each round (a unit it keeps is that round's input,
        respelled if ``spelling``: the dictionary does not lose its place). ``progress`` counts
        the first round, which reads every unit.
        """
        if self.spelling:
            from editspec.text.spelling import respell_all

            units = respell_all(units, places)
        out = list(units)
        todo = list(range(len(units)))
        for round_ in range(self.rounds):
            fixed = self._correct_round([out[i] for i in todo], progress if round_ == 0 else None)
            out, changed = list(out), []  # a new list: the one yielded before stays as it was
            for i, text in zip(todo, fixed):
                if text != out[i]:
                    out[i] = text
                    changed.append(i)
            todo = changed
            yield out

    def _correct_round(self, units: Sequence[str], progress: Callable[[int], None] | None) -> list[str]:
        from editspec.tokenization.tokens import encode

        encoded = encode(self.tokenizer, units)
        out: list[str] = list(units)
        fits = [len(e.ids) <= self.limits[0][1] for e in encoded]
        for tok, max_ids in self.limits[1:]:
            fits = [f and len(e.ids) <= max_ids for f, e in zip(fits, encode(tok, units))]
        # longest first; a unit over the limit (one character that NFKC makes many tokens) stays
        order = sorted((i for i in range(len(units)) if fits[i]), key=lambda i: -len(encoded[i].ids))
        if self.spelling:
            from editspec.text.spelling import load_speller

            knows = load_speller().knows
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            for i, text in zip(batch, self._correct_batch([encoded[i] for i in batch])):
                out[i] = guard(units[i], text, self.max_edit_words)
                self.guarded += out[i] != text
                if self.spelling:  # the dictionary of the spelling step: no made-up words either
                    checked = real_words(units[i], out[i], knows)
                    self.unreal += checked != out[i]
                    out[i] = checked
            if progress is not None:
                progress(sum(len(units[i]) for i in batch))
        if self.rescore:  # the output model undoes the edits it scores lower than their absence
            from editspec.decoding.rescoring import rescore, scorer

            changed = [i for i in order if out[i] != units[i]]
            score = scorer(self.output_model, self.tokenizer, batch_size=4 * self.batch_size)
            for i, text in zip(changed, rescore([units[i] for i in changed], [out[i] for i in changed], score)):
                out[i] = text
        return out

    def _inputs(self, encoded, eos: int, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        rows = [e.ids + [eos] for e in encoded]
        width = max(map(len, rows))
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=self.device)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=self.device)
        return ids, mask

    def _edit5_ids(self, encoded) -> list[list[tuple[int, int | None]]]:
        """EdiT5's realized output per row: (token, source index or None)."""
        from editspec.tokenization.edits import realize_aligned

        tok = self.edit5_tokenizer
        ids, mask = self._inputs(encoded, tok.eos_token_id, tok.pad_token_id)
        longest = ids.shape[1]
        edits = self.edit5.generate_edits(ids, mask, max_insertion_tokens=max(32, longest + 16))
        return [realize_aligned(e.ids, ed, self.markers, tok.eos_token_id) for e, ed in zip(encoded, edits)]

    def _correct_batch(self, encoded) -> list[str]:
        import torch

        from editspec.decoding import speculative
        from editspec.modeling import t5
        from editspec.tokenization.tokens import render, render_ids

        with torch.inference_mode():
            if self.mode == "edit5":
                pairs = self._edit5_ids(encoded)
                return [render(self.edit5_tokenizer, e, p) for e, p in zip(encoded, pairs)]
            tok = self.t5_tokenizer
            ids, mask = self._inputs(encoded, tok.eos_token_id, tok.pad_token_id)
            max_new = 2 * ids.shape[1] + 16  # GEC output is about as long as its input
            if self.mode == "t5":
                outputs = t5.greedy(self.t5, ids, mask, max_new_tokens=max_new)
            else:
                outputs, _ = speculative.speculative_generate(
                    self.t5, ids, mask, self._drafter(encoded), max_new_tokens=max_new, tokenizer=tok)
        return [render_ids(tok, e, out) for e, out in zip(encoded, outputs)]

    def _drafter(self, encoded) -> speculative.Drafter:
        from editspec.decoding import speculative
        from editspec.tokenization.tokens import encode

        if self.shared_vocab:  # EdiT5 reads T5's input ids
            return speculative.EdiT5Drafter(self.edit5, tokenizer=self.t5_tokenizer, markers=self.markers)
        # another vocabulary: EdiT5 reads its own ids, and its drafts go text -> T5 ids
        texts = [e.text for e in encoded]
        drafts = [[t for t, _ in pairs] for pairs in self._edit5_ids(encode(self.edit5_tokenizer, texts))]
        drafts = speculative.retokenize_drafts(drafts, self.edit5_tokenizer, self.t5_tokenizer, sources=texts)
        return speculative.StaticDrafter(drafts, tokenizer=self.t5_tokenizer)


# -- the command --

BLOCK_LINES, BLOCK_CHARS = 1000, 200_000  # lines corrected together (bounded memory, good batches)
RED, GREEN, RESET = "\x1b[31m", "\x1b[32m", "\x1b[0m"


@dataclass
class _Line:
    text: str
    ending: str  # "\n", "\r\n" or "" (last line without newline)
    size: int  # bytes in the input


def _open_input(name: str) -> IO[bytes]:
    if name == "-":
        return sys.stdin.buffer
    path = Path(name)
    if path.is_dir():
        raise EditspecError(f"{name} is a directory, not a text file")
    try:
        return path.open("rb")
    except FileNotFoundError as e:
        raise EditspecError(f"{name}: no such file") from e
    except OSError as e:
        raise EditspecError(f"cannot read {name}: {e.strerror or e}") from e


def _blocks(stream: IO[bytes], name: str) -> Iterator[list[_Line]]:
    """Decoded lines in blocks; only ``\\n`` ends a line, ``\\r\\n`` is kept as the line's ending."""
    block: list[_Line] = []
    chars = 0
    for number, raw in enumerate(stream, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            where = "" if name == "-" else f"{name}: "
            raise EditspecError(f"{where}line {number} is not UTF-8 text (byte 0x{raw[e.start]:02x} "
                                f"at byte {e.start + 1} of the line)") from e
        ending = "\r\n" if text.endswith("\r\n") else "\n" if text.endswith("\n") else ""
        block.append(_Line(text[: len(text) - len(ending)], ending, len(raw)))
        chars += len(text)
        if len(block) >= BLOCK_LINES or chars >= BLOCK_CHARS:
            yield block
            block, chars = [], 0
    if block:
        yield block


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, a job scheduler) unwinds like Ctrl-C, so ``finally`` blocks run."""
    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def atomic_output(name: str) -> Iterator[IO[bytes]]:
    """stdout, or a file written in full or not at all: a temporary file in the same directory,
    renamed over ``name`` at the end; on any failure, Ctrl-C or SIGTERM the temporary file is
    removed."""
    with _sigterm_as_interrupt():
        if name == "-":
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
            return
        target = Path(name)
        if target.is_dir():
            raise EditspecError(f"output {name} is a directory")
        folder = target.parent
        if not folder.is_dir():
            raise EditspecError(f"output folder {folder} does not exist")
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        except OSError as e:
            raise EditspecError(f"cannot write in {folder}: {e.strerror or e}") from e
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            if target.exists():
                mode = target.stat().st_mode & 0o7777
            else:  # what open() would have created
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def format_diff(c: Correction, color: bool = False) -> str:
    """``input`` with edits marked ``[-old-]{+new+}`` (wdiff style), coloured if asked."""
    red, green, reset = (RED, GREEN, RESET) if color else ("", "", "")
    parts, cursor = [], 0
    for e in c.edits:
        parts.append(c.input[cursor:e.start])
        if e.original:
            parts.append(f"{red}[-{e.original}-]{reset}")
        if e.correction:
            parts.append(f"{green}{{+{e.correction}+}}{reset}")
        cursor = e.end
    parts.append(c.input[cursor:])
    return "".join(parts)


def _use_color(args) -> bool:
    if args.color != "auto":
        return args.color == "always"
    return args.output == "-" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def run_correct(args) -> int:
    from tqdm import tqdm

    stream = _open_input(args.input)
    try:
        blocks = _blocks(stream, args.input)
        first = next(blocks, None)  # a non-UTF-8 start fails before the model loads
        corrector = Corrector.from_pretrained(args.model, mode=args.mode, edit5=args.edit5, t5=args.t5,
                                              device=args.device, batch_size=args.batch_size,
                                              max_length=args.max_length,
                                              max_edit_words=args.max_edit_words, rounds=args.rounds,
                                              spelling=args.spelling, rescore=args.rescore)
        total = os.fstat(stream.fileno()).st_size if args.input != "-" and Path(args.input).is_file() else None
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="correcting", file=sys.stderr,
                   disable=args.no_progress or not sys.stderr.isatty(), dynamic_ncols=True)
        done = 0
        try:
            with atomic_output(args.output) as out, bar:
                color = _use_color(args)
                # a UTF-8 byte order mark is not text: keep it out of the model, write it back
                bom = first is not None and first[0].text.startswith("\ufeff")
                if bom:
                    first[0].text = first[0].text[1:]
                for block in _chain(first, blocks):
                    results = corrector.correct_detailed([line.text for line in block], progress=bar.update)
                    lines = []
                    for line, c in zip(block, results):
                        if args.format == "jsonl":
                            lines.append(json.dumps(c.as_dict(), ensure_ascii=False) + "\n")
                        elif args.format == "diff":
                            lines.append(format_diff(c, color) + line.ending)
                        else:
                            lines.append(c.output + line.ending)
                    if bom and done == 0 and args.format != "jsonl":
                        lines[0] = "\ufeff" + lines[0]
                    out.write("".join(lines).encode("utf-8"))
                    if args.output == "-":
                        out.flush()
                    done += sum(line.size for line in block)
                    bar.n = done  # progress counted characters; resync to bytes read
                    bar.refresh()
        except BrokenPipeError:  # `editspec correct f | head`: the reader left, not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 1
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    return 0


def _chain(first: list[_Line] | None, rest: Iterable[list[_Line]]) -> Iterator[list[_Line]]:
    if first is not None:
        yield first
    yield from rest
