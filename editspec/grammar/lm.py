"""An n-gram language model of correct English, stupid backoff (Brants et al. 2007), read from
one memory-mapped file: the judge of the grammar step.

Hand-written because no installed library reads a compact n-gram store without a native build
(KenLM's PyPI module compiles C++ and its estimator ``lmplz`` needs Boost, absent here; see
reports/grammar.md). The store is small enough to ship: per order, the sorted upper 32 bits of a
64-bit hash of each kept n-gram and its count as ``round(8 ln count)`` in one byte.

    text "He goes home." -> tokens ["<s>", "he", "goes", "home", ".", "</s>"]
    score: sum over tokens of log S(w | up to 3 words before), S = c(ctx w) / c(ctx), else
           0.4 * S(w | shorter ctx); a word never seen gets S = 0.4^order / N

File layout (little-endian): MAGIC, a uint32 header length, a JSON header (order, total,
tables: [{n, size, keys_at, vals_at}], crc32 of everything after the header), then the arrays.
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from editspec.errors import EditspecError

MAGIC = b"EDITSPEC-NGRAM-1\n"
BOS, EOS = "<s>", "</s>"
BACKOFF = math.log(0.4)
QUANT = 8.0  # value byte = round(QUANT * ln count)
_MULT = np.uint64(0x9E3779B97F4A7C15)
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|\S")


def tokenize(text: str) -> list[str]:
    """Lower-cased words (letters/digits with inner apostrophes: "don't") and single symbols; the
    same for the Wikipedia lines the model was built from and the text it judges."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads an n-gram's rolling hash over all 64 bits."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def ngram_hashes(word_hashes: np.ndarray, n: int) -> np.ndarray:
    """The 64-bit hash of every n-gram of a sequence of word hashes (len - n + 1 of them)."""
    m = len(word_hashes) - n + 1
    if m <= 0:
        return np.zeros(0, np.uint64)
    with np.errstate(over="ignore"):
        h = word_hashes[:m].copy()
        for k in range(1, n):
            h = h * _MULT + word_hashes[k:k + m]
        return _mix(h + np.uint64(n))


def ngram_keys(word_hashes: np.ndarray, n: int) -> np.ndarray:
    """The stored 32-bit keys (upper half of ``ngram_hashes``)."""
    return (ngram_hashes(word_hashes, n) >> np.uint64(32)).astype(np.uint32)


@dataclass(frozen=True)
class Table:
    keys: np.ndarray  # sorted uint32
    vals: np.ndarray  # uint8, round(QUANT ln count)

    def log_counts(self, keys: np.ndarray) -> np.ndarray:
        """ln count of each key; -inf where absent."""
        if len(self.keys) == 0:
            return np.full(len(keys), -np.inf)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        hit = self.keys[at] == keys
        return np.where(hit, self.vals[at].astype(np.float64) / QUANT, -np.inf)


class NgramLM:
    """Stupid-backoff scores of token sequences from a store written by ``write_store``."""

    def __init__(self, tables: Sequence[Table], total: int, path: str = "<memory>"):
        self.tables, self.order, self.path = list(tables), len(tables), path
        self.log_total = math.log(max(total, 1))
        self._hashes: dict[str, int] = {}

    @classmethod
    def load(cls, path: str | Path) -> "NgramLM":
        path = Path(path)
        try:
            with open(path, "rb") as f:
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise EditspecError(f"grammar language model {path}: cannot read it ({e})") from None
        try:
            header, body = _read_header(buf)
            if zlib.crc32(memoryview(buf)[body:]) != header["crc32"]:
                raise ValueError("checksum mismatch")
            tables = [Table(np.frombuffer(buf, np.uint32, t["size"], body + t["keys_at"]),
                            np.frombuffer(buf, np.uint8, t["size"], body + t["vals_at"]))
                      for t in header["tables"]]
        except (ValueError, KeyError, TypeError, struct.error) as e:
            raise EditspecError(f"grammar language model {path} is corrupt ({e}); rebuild it with "
                                "python -m training.grammar_lm") from None
        return cls(tables, header["total"], str(path))

    def hashes(self, tokens: Sequence[str]) -> np.ndarray:
        cache = self._hashes
        out = np.empty(len(tokens), np.uint64)
        for i, t in enumerate(tokens):
            h = cache.get(t)
            if h is None:
                h = cache[t] = word_hash(t)
            out[i] = h
        return out

    def token_logprobs(self, tokens: Sequence[str]) -> np.ndarray:
        """ln S(w_i | history) of each token after <s>, with </s> last (len(tokens) + 1 values)."""
        return self._flat([[BOS, *tokens, EOS]])[0][1:]

    def score(self, text: str) -> float:
        """Total ln score of one sentence's text (its tokens, then </s>)."""
        return self.scores([text])[0]

    def scores(self, texts: Sequence[str]) -> list[float]:
        """``score`` of each text, from one lookup per order over all of them (a grammar step judges
        ~4 texts a sentence: one lookup each cost ~2.7 ms a sentence)."""
        out, lengths = self._flat([[BOS, *tokenize(t), EOS] for t in texts])
        ends = np.cumsum(lengths)
        return [float(out[end - n + 1:end].sum()) for end, n in zip(ends, lengths)]

    def _flat(self, seqs: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """ln S of every word of ``seqs`` (each from <s> to </s>) laid end to end (NaN at each <s>),
        and the sequences' lengths. Stupid backoff: the longest n-gram seen, up to the word's
        sequence start, decides; an n-gram never reaches back over its sequence's start."""
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        if not len(lengths):
            return np.zeros(0), lengths
        h = self.hashes([w for s in seqs for w in s])  # [N] every sequence's words, end to end
        pos = np.arange(len(h)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # place in its sequence
        # counts[k][j]: ln count of the k-gram ending at flat position j, -inf if absent or if it
        # would reach back over its sequence's start
        counts = np.full((self.order + 1, len(h)), -np.inf)
        counts[0, :] = self.log_total
        for k in range(1, self.order + 1):
            keys = ngram_keys(h, k)  # n-grams ending at flat positions k-1 ..
            if len(keys):
                found = self.tables[k - 1].log_counts(keys)
                counts[k, k - 1:] = np.where(pos[k - 1:] >= k - 1, found, -np.inf)
        out = np.full(len(h), np.nan)
        for k in range(self.order, 0, -1):
            c = counts[k]
            ctx = np.full(len(h), self.log_total) if k == 1 else np.concatenate(([-np.inf], counts[k - 1, :-1]))
            ctx = np.where(ctx > -np.inf, ctx, c)
            now = np.isnan(out) & (pos >= 1) & (pos + 1 >= k) & (c > -np.inf)
            with np.errstate(invalid="ignore"):
                out = np.where(now, np.minimum(0.0, c - ctx) + (self.order - k) * BACKOFF, out)
        return np.where(np.isnan(out) & (pos >= 1), self.order * BACKOFF - self.log_total, out), lengths


def _read_header(buf) -> tuple[dict, int]:
    if buf[:len(MAGIC)] != MAGIC:
        raise ValueError("not an editspec n-gram store (bad magic)")
    (size,) = struct.unpack_from("<I", buf, len(MAGIC))
    start = len(MAGIC) + 4
    header = json.loads(bytes(buf[start:start + size]).decode("utf-8"))
    body = start + size
    body += (-body) % 8
    for t in header["tables"]:
        if body + t["vals_at"] + t["size"] > len(buf):
            raise ValueError("truncated")
    return header, body


def write_store(path: str | Path, tables: Sequence[tuple[np.ndarray, np.ndarray]], total: int,
                meta: dict | None = None) -> None:
    """Write (sorted uint32 keys, uint8 values) per order 1..N, atomically."""
    arrays, specs, at = [], [], 0
    for n, (keys, vals) in enumerate(tables, 1):
        keys, vals = np.ascontiguousarray(keys, np.uint32), np.ascontiguousarray(vals, np.uint8)
        pad = (-5 * len(keys)) % 8
        specs.append({"n": n, "size": len(keys), "keys_at": at, "vals_at": at + 4 * len(keys)})
        arrays += [keys.tobytes(), vals.tobytes(), b"\0" * pad]
        at += 5 * len(keys) + pad
    body = b"".join(arrays)
    header = {"order": len(tables), "total": int(total), "tables": specs, "crc32": zlib.crc32(body),
              **(meta or {})}
    raw = json.dumps(header).encode("utf-8")
    start = len(MAGIC) + 4 + len(raw)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(MAGIC + struct.pack("<I", len(raw)) + raw + b"\0" * ((-start) % 8) + body)
    tmp.replace(path)
