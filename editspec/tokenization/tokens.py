"""Text <-> tokens, keeping every source character: the tokenizer, its markers, and rendering.

Models see SentencePiece ids; users see text. Two things make that lossy, and this module
undoes both:

* characters the vocabulary cannot hold become ``<unk>`` (emoji, CJK, rare symbols), and
* normalisation rewrites characters (``ﬁ`` -> ``fi``) and whitespace (tab -> space).

So ``encode`` records, for every token, the exact source characters it covers and the
whitespace before it, and ``render`` builds the output text from (token, source index) pairs:
a token copied from the source reproduces its source characters byte for byte; only inserted
tokens are spelled from the vocabulary. Example::

    text   "Hello  wörld 😀"
    pieces ▁He  l  lo  ▁w  <unk>  r  l  d  ▁  <unk>
    chars  He   l  lo  w   ö      r  l  d     😀      ('▁' alone carries only the space)
    spaces ""   "" ""  "  " ""    "" "" "" " " ""

Where the provenance of output tokens is unknown (T5 writes the whole sentence), ``align``
from ``editspec.tokenization.edits`` recovers it: the longest common subsequence with the source, plus moves.

Special tokens in user text (a literal ``</s>`` or ``<extra_id_3>``) are encoded as plain text,
never as control tokens, by a copy of the tokenizer that reads them so (safe across threads): the
tokenizer's ``Codec``, made once with it where editspec loads a tokenizer (``load_tokenizer``,
``tokenization.fast.load``) and kept on it, so it lives and goes with its tokenizer.
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from tokenizers import Tokenizer

from editspec.tokenization.edits import align
from editspec.errors import EditspecError

if TYPE_CHECKING:  # transformers loads only where its tokenizer is used (training, a user's checkpoint)
    from transformers import PreTrainedTokenizerBase

SPACE = "\u2581"  # SentencePiece's word-boundary mark
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")  # what save_pretrained writes for ours
BUNDLE_TOKENIZER = "tokenizer"  # an older bundle's one tokenizer, beside its models (edit5/, t5/)


def train_tokenizer(
    texts: Iterable[str], out_dir: str | os.PathLike, vocab_size: int = 16000, extra_ids: int = 256
) -> "PreTrainedTokenizerBase":
    """Train a SentencePiece unigram model and save it as a T5 tokenizer in ``out_dir``.

    ``extra_ids`` T5 sentinels ``<extra_id_0..>`` are added; EdiT5 uses them as position
    markers, so they bound the number of kept tokens an insertion can follow.
    """
    import sentencepiece as spm
    from transformers import T5Tokenizer

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        with corpus.open("w", encoding="utf-8") as f:
            for line in texts:
                line = line.strip()
                if line:
                    f.write(line + "\n")
        spm.SentencePieceTrainer.train(
            input=str(corpus), model_prefix=str(Path(tmp) / "spiece"), vocab_size=vocab_size,
            model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
            character_coverage=1.0, input_sentence_size=2_000_000, shuffle_input_sentence=True,
            hard_vocab_limit=False, minloglevel=2,  # vocab_size is an upper bound on tiny corpora
        )
        tok = T5Tokenizer.from_pretrained(tmp, extra_ids=extra_ids)
        tok.save_pretrained(out)
    return load_tokenizer(out)


def tokenizer_path(path: str | os.PathLike) -> str | os.PathLike:
    """Where checkpoint ``path``'s tokenizer is: the directory itself when it holds tokenizer files
    (the shipped bundle's folders, a user's checkpoint, a training run), else its bundle's
    ``tokenizer/`` when there is one (an older bundle's one copy); a hub id as it is."""
    own = Path(path)
    shared = own.parent / BUNDLE_TOKENIZER
    holds_none = own.is_dir() and not any((own / f).is_file() for f in TOKENIZER_FILES)
    return shared if holds_none and (shared / TOKENIZER_FILES[0]).is_file() else path


def load_tokenizer(path: str | os.PathLike) -> "PreTrainedTokenizerBase":
    """A T5 tokenizer from a directory (ours or a user's checkpoint; ``tokenizer_path``) or a hub id
    (transformers'; inference reads a checkpoint's with ``tokenization.fast`` where it can)."""
    from transformers import AutoTokenizer

    path = tokenizer_path(path)
    try:
        tok = AutoTokenizer.from_pretrained(str(path))
    except Exception as e:  # transformers raises many types for a bad directory
        raise EditspecError(f"cannot load a tokenizer from {path}: {str(e).splitlines()[0]}") from e
    if not getattr(tok, "is_fast", False):
        raise EditspecError(f"tokenizer at {path} has no fast (tokenizers) backend; offsets are needed")
    if tok.eos_token_id is None:
        raise EditspecError(f"tokenizer at {path} has no EOS token")
    return Codec.attach(tok)


def marker_ids(tok: "PreTrainedTokenizerBase") -> list[int]:
    """Position markers: ``<extra_id_0>, <extra_id_1>, ...`` while the tokenizer has them."""
    vocab = tok.get_vocab()
    markers = []
    while f"<extra_id_{len(markers)}>" in vocab:
        markers.append(vocab[f"<extra_id_{len(markers)}>"])
    return markers


@dataclass(frozen=True)
class Encoded:
    """One text's tokens with the exact characters and preceding whitespace of each."""

    text: str
    ids: list[int]  # no EOS
    chars: list[str]
    spaces: list[str]
    tail: str  # after the last token: trailing whitespace, characters the normaliser dropped


CODEC = "editspec_codec"  # the attribute of a tokenizer that holds its ``Codec``


class Codec:
    """A tokenizer as inference reads user text with it: its backend reading special-token text
    as plain text, and its special ids (transformers rebuilds ``all_special_ids`` at every access).

    Made once per tokenizer and kept on it (``attach``: ``load_tokenizer``, ``fast.load``);
    ``Codec.of(tok)`` finds it, or makes one for a tokenizer loaded elsewhere. A copy of the
    backend, not ``encode_special_tokens`` flipped on the shared one for each call: that would
    change how another thread's call tokenizes ("</s>" as EOS) while it runs, and transformers'
    own calls set it back. A ``fast.FastTokenizer``'s backend reads them so already."""

    def __init__(self, tok: "PreTrainedTokenizerBase"):
        self.tok = tok
        if getattr(tok.backend_tokenizer, "encode_special_tokens", False):
            self.backend = tok.backend_tokenizer
        else:
            self.backend = Tokenizer.from_str(tok.backend_tokenizer.to_str())
            self.backend.encode_special_tokens = True  # user text never contains control tokens
        self.special = frozenset(tok.all_special_ids)

    @functools.cached_property
    def markers(self) -> tuple[int, ...]:
        """``marker_ids(tok)``, found once (it walks the whole vocabulary)."""
        return tuple(marker_ids(self.tok))

    @staticmethod
    def of(tok: "PreTrainedTokenizerBase | Codec") -> "Codec":
        """``tok``'s codec: ``tok`` itself if it is one, else the one kept on it, else a new one."""
        if isinstance(tok, Codec):
            return tok
        return getattr(tok, CODEC, None) or Codec(tok)

    @staticmethod
    def attach(tok: "PreTrainedTokenizerBase") -> "PreTrainedTokenizerBase":
        """``tok`` with its codec kept on it (``Codec.of`` finds it)."""
        setattr(tok, CODEC, Codec(tok))
        return tok

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        """Each text's ``Encoded``."""
        encodings = self.backend.encode_batch(list(texts), add_special_tokens=False)
        special, unk = self.special, self.tok.unk_token_id
        out = []
        for text, enc in zip(texts, encodings):
            chars, spaces, cursor = [], [], 0
            for piece, (a, b) in zip(enc.tokens, enc.offsets):
                if piece == SPACE:  # a bare word boundary: whitespace, no characters
                    b = a
                a = max(a, cursor)  # normalisation can make offsets overlap (ﬁ -> f + fi)
                b = max(b, a)
                spaces.append(text[cursor:a])
                chars.append(text[a:b])
                cursor = b
            # a literal "</s>" can match the control piece: make it <unk>, its characters stay
            ids = [unk if i in special else i for i in enc.ids]
            out.append(Encoded(text, ids, chars, spaces, text[cursor:]))
        return out

    def encode_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """``[e.ids for e in self.encode(texts)]`` without the characters of each token (scoring
        needs the ids alone)."""
        special, unk = self.special, self.tok.unk_token_id
        return [[unk if i in special else i for i in enc.ids]
                for enc in self.backend.encode_batch(list(texts), add_special_tokens=False)]


def special_ids(tok: "PreTrainedTokenizerBase | Codec") -> frozenset[int]:
    """``tok.all_special_ids``, as its ``Codec`` keeps them."""
    return Codec.of(tok).special


def encode(tok: "PreTrainedTokenizerBase | Codec", texts: Sequence[str], memo: dict | None = None) -> list[Encoded]:
    """Each text's ``Encoded``. ``memo`` (a dict one caller keeps for one input, e.g. a
    ``Corrector.correct`` call): texts encoded before with ``tok`` are not encoded again."""
    codec = Codec.of(tok)
    if memo is None:
        return codec.encode(texts)
    todo = list(dict.fromkeys(t for t in texts if (codec, t) not in memo))
    for text, enc in zip(todo, codec.encode(todo)):
        memo[(codec, text)] = enc
    return [memo[(codec, t)] for t in texts]


def encode_ids(tok: "PreTrainedTokenizerBase | Codec", texts: Sequence[str]) -> list[list[int]]:
    """``[e.ids for e in encode(tok, texts)]`` without the characters of each token."""
    return Codec.of(tok).encode_ids(texts)


def unreadable(tok: "PreTrainedTokenizerBase", source: Encoded) -> set[int]:
    """Offsets of the characters of ``source.text`` that the model cannot read or write: those
    of ``<unk>`` tokens (CJK, emoji, flags, Greek letters the vocabulary lacks) and those the
    normaliser turned into a plain space or dropped (tab, CR, NBSP, thin space, U+FEFF,
    zero-width space). A model edit must never delete or rewrite them (``checks.keep_unreadable``)."""
    out, cursor = set(), 0
    for tok_id, space, chars in zip(source.ids, source.spaces, source.chars):
        out.update(cursor + k for k, c in enumerate(space) if c != " ")
        cursor += len(space)
        if tok_id == tok.unk_token_id:
            out.update(range(cursor, cursor + len(chars)))
        cursor += len(chars)
    out.update(cursor + k for k, c in enumerate(source.tail) if c != " ")
    return out


def render(tok: "PreTrainedTokenizerBase", source: Encoded, output: Sequence[tuple[int, int | None]]) -> str:
    """Text of (token id, source index or None) pairs; see the module docstring.

    Whitespace is the source's wherever it can be: a kept token brings the whitespace before
    it; an inserted token's word boundary (``▁``) is one space, written only where none is
    already (so a run of inserted ``▁`` is one space at most, and none before a kept token's
    own); and whitespace other than plain spaces before a deleted token (tab, NBSP, CR, U+FEFF,
    zero-width space) is not the token's: it takes the place of the next boundary, so
    "to\twent home" with "went" -> "go" is "to\tgo home", not "to go home".
    """
    special = special_ids(tok)
    text = source.text
    if not text.strip():
        return text
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()):]
    low, high = len(lead), len(text) - len(trail)  # lead and trail are written as they are
    spaces, chars, tail = body_pieces(source, low, high)
    held_after = held_whitespace(spaces, {i for _, i in output if i is not None})
    parts: list[str] = []
    held = held_after.get(-1, "")  # waits for the next whitespace
    soft = False  # an inserted word boundary not yet written

    def write(space: str, body: str) -> None:
        nonlocal held, soft
        if held and (space or soft or not body):  # the first boundary after a deletion
            # the held whitespace replaces a plain boundary; zero-width characters add to it
            space = held if space == " " * len(space) and any(c.isspace() for c in held) else held + space
            held = ""
        elif not space and soft and parts and not parts[-1][-1:].isspace():
            space = " "
        soft = False
        parts.append(space + body)

    written: set[int] = set()
    for tok_id, i in output:
        if i is not None:
            space = spaces[i]
            if i in written:  # a token copied twice: its whitespace (a CR, a tab) was written once
                space = " " if space else ""
            if i == 0 and parts and not space and tok.convert_ids_to_tokens(tok_id).startswith(SPACE):
                space = " "  # the first token's word boundary is implicit in its piece
            write(space, chars[i])
            held += held_after.get(i, "") if i not in written else ""
            written.add(i)
        elif tok_id not in special:
            piece = tok.convert_ids_to_tokens(tok_id)
            soft = soft or piece.startswith(SPACE)
            body = piece.lstrip(SPACE).replace(SPACE, " ")
            if body:
                write("", body)
    if held:
        write("", "")
    return lead + ("".join(parts) + tail).strip(" ") + trail


def body_pieces(source: Encoded, low: int, high: int) -> tuple[list[str], list[str], str]:
    """Each token's whitespace and characters, and the text after the last token, inside the
    body ``source.text[low:high]`` (``render`` writes the lead and trail as they are)."""
    text = source.text

    def clip(a: int, b: int) -> str:
        return text[max(a, low):min(b, high)]

    spaces, chars, cursor = [], [], 0
    for space, char in zip(source.spaces, source.chars):
        spaces.append(clip(cursor, cursor + len(space)))
        chars.append(clip(cursor + len(space), cursor + len(space) + len(char)))
        cursor += len(space) + len(char)
    return spaces, chars, clip(cursor, len(text))


def held_whitespace(spaces: Sequence[str], kept: set[int]) -> dict[int, str]:
    """Kept source index (-1: the start) -> the odd whitespace (not plain spaces) of the deleted
    tokens after it, which ``render`` writes at the next boundary."""
    held_after: dict[int, str] = {}
    last = -1
    for i, space in enumerate(spaces):
        if i in kept:
            last = i
        elif space.strip(" "):
            held_after[last] = held_after.get(last, "") + space
    return held_after


def render_ids(tok: "PreTrainedTokenizerBase", source: Encoded, output_ids: Sequence[int]) -> str:
    """Text of a whole output sentence (T5): provenance from aligning it with the source."""
    ids = [i for i in output_ids if i not in (tok.eos_token_id, tok.pad_token_id)]
    return render(tok, source, list(zip(ids, align(source.ids, ids))))
