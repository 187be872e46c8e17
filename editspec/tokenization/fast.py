"""A checkpoint's tokenizer read with the ``tokenizers`` library alone: what inference asks of a
tokenizer (ids, the special tokens, the vocabulary) without importing transformers, whose
tokenizer classes cost ~0.3 s to load a tokenizer and their import more.

``load(path)`` reads ``tokenizer.json`` and ``tokenizer_config.json`` (what ``save_pretrained`` of a
T5 tokenizer writes); ``tokens.load_tokenizer`` stays the transformers tokenizer that training and
anything else without these two files use. The ids are transformers': ``encode`` tokenizes with
the file's own backend (as transformers' tokenizer's, re-read, does), the special tokens are the
config's, and ``tests/tokenization/test_fast.py`` checks both against transformers on the shipped
tokenizer. A directory's tokenizer is read once per process (the bundle's models share one file's
content).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Sequence

from tokenizers import Tokenizer

from editspec.tokenization.tokens import Codec, tokenizer_path

SPECIAL_KEYS = ("eos_token", "unk_token", "pad_token", "bos_token", "sep_token", "cls_token", "mask_token")


class FastTokenizer:
    """The parts of a transformers ``PreTrainedTokenizerFast`` that editspec's inference reads."""

    is_fast = True

    def __init__(self, backend: Tokenizer, config: dict, name_or_path: str = ""):
        # user text never holds control tokens: a literal "</s>" is text (``tokens.encode``)
        backend.encode_special_tokens = True
        self.backend_tokenizer, self.name_or_path = backend, name_or_path
        self._vocab = backend.get_vocab(with_added_tokens=True)
        named = {k: _content(config.get(k)) for k in SPECIAL_KEYS}
        extra = config.get("extra_special_tokens", config.get("additional_special_tokens")) or []
        self.eos_token_id, self.unk_token_id, self.pad_token_id = (
            self._vocab.get(named[k]) for k in ("eos_token", "unk_token", "pad_token"))
        specials = [t for t in [*named.values(), *map(_content, extra)] if t is not None]
        self.all_special_ids = sorted({self._vocab[t] for t in specials if t in self._vocab})

    def __len__(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        if isinstance(ids, int):
            return self.backend_tokenizer.id_to_token(ids)
        return [self.backend_tokenizer.id_to_token(i) for i in ids]

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | list[int]:
        if isinstance(tokens, str):
            return self._vocab.get(tokens, self.unk_token_id)
        return [self._vocab.get(t, self.unk_token_id) for t in tokens]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return self.backend_tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)


def _content(token) -> str | None:
    """A special token as tokenizer_config.json writes it: a string, or an AddedToken's dict."""
    return token.get("content") if isinstance(token, dict) else token


def readable(path: str | os.PathLike) -> bool:
    """Whether ``path`` (or its bundle's tokenizer/: ``tokens.tokenizer_path``) holds the two files
    ``load`` reads."""
    path = Path(tokenizer_path(path))
    return (path / "tokenizer.json").is_file() and (path / "tokenizer_config.json").is_file()


_LOADED: dict[str, FastTokenizer] = {}  # sha256 of the two files -> their tokenizer
_LOCK = threading.Lock()


def load(path: str | os.PathLike) -> FastTokenizer:
    """The tokenizer of a checkpoint directory (``readable``); the same object for the same files."""
    path = Path(tokenizer_path(path))
    raw = (path / "tokenizer.json").read_bytes()
    config = (path / "tokenizer_config.json").read_bytes()
    key = hashlib.sha256(raw + b"\0" + config).hexdigest()
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = Codec.attach(FastTokenizer(Tokenizer.from_str(raw.decode("utf-8")), json.loads(config),
                                                      str(path)))
        return _LOADED[key]
