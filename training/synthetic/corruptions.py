"""The corruptions: one per ERRANT error type, each a rule that edits a sentence in place.

A corruption picks, at random, a place in the sentence where its error can happen, makes the
error there and returns True, or returns False when the sentence has no such place. They are
registered by type in ``CORRUPTIONS``; the Corruptor (``corruptor.py``) draws the types. For
example (``corruptor.py`` has the whole sentence)::

    M:PUNCT  drop_punct    "In 2013, the"        -> "In 2013 the"
    R:PREP   replace_prep  "amounted to 336.1"   -> "amounted for 336.1"
    R:SPELL  misspell      "housing"             -> "housnig"
    R:CONTR  contraction   "It was not easy."    -> "It wasn't easy." / "It wasnt easy."
    R:OTHER  rewrite       "a lot of friends"    -> "many friends"

Each rule aims at what ERRANT will call the resulting edit: a replaced preposition must come from
the preposition's confusion set (``words.py``), a typo must not be a word (``Lexicon.is_word``),
a word-choice slip must keep the word class, or ERRANT files it under another type.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from training.synthetic.lexicon import Lexicon
from training.synthetic.sentence import Sentence, capitalize, is_word_token, match_case
from training.synthetic.words import (
    ADVERBS, ARTICLES, AUX_CONTRACTIONS, AUX_SVA, AUX_TENSE, AUXILIARIES, BE, CLAUSE_OPENERS, COMMON_MISSPELLINGS,
    COMMON_PREPS, COMPOUND_HEADS, CONJUNCTIONS, CONTR_CONFUSIONS, CONTRACTION_STEMS, DET_CONFUSIONS, DETERMINERS,
    FILLER_BIGRAMS, HOMOPHONES, IRREGULAR_PLURALS, KEYBOARD, MODALS, NEGATABLE, PHRASES_BY_FIRST_WORD,
    PLURAL_SUBJECTS, PREP_CONFUSIONS, PREPOSITIONS, PRONOUNS, SG3_SUBJECTS, SUBJECT_PRONOUNS, UNCOUNTABLE, VOWELS,
)

Corruption = Callable[[Sentence, random.Random], bool]
CORRUPTIONS: dict[str, Corruption] = {}


def corruption(*types: str):
    def register(fn: Corruption) -> Corruption:
        for t in types:
            CORRUPTIONS[t] = fn
        return fn
    return register


def _pick(rng: random.Random, xs: Sequence):
    return xs[rng.randrange(len(xs))] if xs else None


def _pick_biased(rng: random.Random, xs: Sequence[str]) -> str:
    """Earlier alternatives in a confusion list are the likelier confusions."""
    return xs[min(int(rng.expovariate(1.0)), len(xs) - 1)]


def _confuse(s: Sentence, rng: random.Random, cands: Sequence[int], table: dict[str, Sequence[str]]) -> bool:
    """Replace one candidate word by a likely confusion from ``table`` (False: no candidate)."""
    i = _pick(rng, cands)
    if i is None:
        return False
    s.replace(i, _pick_biased(rng, table[s.low(i)]))
    return True


def _noun_like(s: Sentence, i: int) -> bool:
    w = s.w[i]
    return w.isalpha() and w.islower() and not s.lex.closed(w) and (
        w in s.lex.nouns or s.lex.singularize(w) is not None)


# -- determiners -------------------------------------------------------------------------------
_DROPPED_DETERMINERS = DETERMINERS - ARTICLES - {"no", "all", "both"}


@corruption("M:DET")
def drop_det(s: Sentence, rng: random.Random) -> bool:
    arts, other = s.cached("M:DET", lambda: (
        [i for i in range(len(s) - 1) if s.low(i) in ARTICLES and is_word_token(s.w[i + 1])],
        [i for i in range(len(s) - 1) if s.low(i) in _DROPPED_DETERMINERS and is_word_token(s.w[i + 1])]))
    i = _pick(rng, arts if arts and (not other or rng.random() < 0.85) else other)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:DET")
def insert_det(s: Sentence, rng: random.Random) -> bool:
    i = _pick(rng, s.cached("U:DET", lambda: tuple(_det_gaps(s))))
    if i is None:
        return False
    det = rng.choices(("the", "a", "this", "some"), (0.75, 0.15, 0.05, 0.05))[0]
    if det == "a" and s.low(i)[:1] in VOWELS:
        det = "an"
    s.insert(i, det)
    return True


def _det_gaps(s: Sentence) -> list[int]:
    """Where a determiner could wrongly go: before a noun after a preposition, "and", a comma."""
    cands = []
    for i in range(len(s)):
        w, prev = s.w[i], s.low(i - 1)
        if prev in DETERMINERS or (i > 0 and not is_word_token(s.w[i - 1]) and s.w[i - 1] != ","):
            continue
        if (i > 0 and w[:1].isupper() and w.isalpha() and prev in PREPOSITIONS) or \
                (_noun_like(s, i) and (i == 0 or prev in PREPOSITIONS or prev in ("and", "or", ",")
                                       or s.lex.analyses(prev))):
            cands.append(i)
    return cands


@corruption("R:DET")
def replace_det(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("R:DET", lambda: tuple(i for i in range(len(s) - 1) if s.low(i) in DET_CONFUSIONS and is_word_token(s.w[i + 1])))
    i = _pick(rng, cands)
    if i is None:
        return False
    new = _pick_biased(rng, DET_CONFUSIONS[s.low(i)])
    if s.low(i) == "a" and rng.random() < 0.3:
        new = "an"
    elif s.low(i) == "an" and rng.random() < 0.3:
        new = "a"
    s.replace(i, new)
    return True


# -- prepositions ------------------------------------------------------------------------------
def _infinitive_to(s: Sentence, i: int) -> bool:
    """Is token i the "to" of an infinitive? ("to buy a car" yes, "to school" and "to work" no.)"""
    nxt = s.low(i + 1)
    return s.low(i) == "to" and any(f == "base" for _, f in s.lex.analyses(nxt)) and (
        nxt not in s.lex.nouns or nxt in s.lex.irregular or s.low(i + 2) in DETERMINERS)


@corruption("R:PREP")
def replace_prep(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("R:PREP", lambda: tuple(i for i in range(len(s) - 1) if s.low(i) in PREP_CONFUSIONS and not _infinitive_to(s, i)))
    return _confuse(s, rng, cands, PREP_CONFUSIONS)


@corruption("M:PREP")
def drop_prep(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("M:PREP", lambda: tuple(i for i in range(1, len(s) - 1) if s.low(i) in COMMON_PREPS and is_word_token(s.w[i + 1])
             and not _infinitive_to(s, i)))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:PREP")
def insert_prep(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:PREP", lambda: tuple(i for i in range(1, len(s)) if s.low(i) in DETERMINERS and is_word_token(s.w[i - 1])
             and s.low(i - 1) not in PREPOSITIONS and s.low(i - 1) not in DETERMINERS))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, _pick_biased(rng, COMMON_PREPS))
    return True


@corruption("R:PART")
def replace_part(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("R:PART", lambda: tuple(
        [i for i in range(len(s) - 1) if _infinitive_to(s, i)]
        + [i for i in range(1, len(s)) if s.low(i) in ("up", "out", "off", "down") and s.lex.analyses(s.low(i - 1))]))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.replace(i, _pick_biased(rng, "for of with".split() if s.low(i) == "to" else
                              [p for p in "up out off down on".split() if p != s.low(i)]))
    return True


# -- verbs ---------------------------------------------------------------------------------------
def _verbs(s: Sentence, forms: tuple[str, ...]) -> tuple[tuple[int, str, str], ...]:
    """(position, lemma, form) of words that read as verbs in context, for the wanted forms: of
    each word, its first reading in one of them."""
    def find() -> tuple[tuple[int, str, str], ...]:
        wanted = set(forms)
        return tuple(next(((i, lemma, form) for lemma, form in readings if form in wanted), None) or ()
                     for i, readings in _verb_readings(s) if any(form in wanted for _, form in readings))

    return s.cached(("verbs", forms), find)


def _verb_readings(s: Sentence) -> tuple[tuple[int, tuple[tuple[str, str], ...]], ...]:
    """(position, its (lemma, form) verb readings that fit the context) of each word that has one."""
    return s.cached("verb readings", lambda: tuple(_find_verb_readings(s)))


def _find_verb_readings(s: Sentence) -> list[tuple[int, tuple[tuple[str, str], ...]]]:
    out = []
    for i, w in enumerate(s.w):
        if not (w.isalpha() and w.islower()):
            continue
        prev = s.low(i - 1)
        if prev in DETERMINERS or prev in ("'s",):
            continue  # "the building", "a record"
        readings = []
        for lemma, form in s.lex.analyses(w):
            if form == "base" and not (prev in MODALS or prev == "to" or prev in PLURAL_SUBJECTS
                                       or prev in ("do", "does", "did", "not", "don't", "didn't")):
                continue
            if form == "3sg" and not (prev in SG3_SUBJECTS or (i > 0 and w not in s.lex.nouns
                                                                and s.lex.singularize(w) is None)):
                continue
            if form == "ing" and w in s.lex.nouns and prev not in BE and prev not in CLAUSE_OPENERS:
                continue
            readings.append((lemma, form))
        if readings:
            out.append((i, tuple(readings)))
    return out


def _aux_before(s: Sentence, i: int) -> str:
    for j in (i - 1, i - 2):
        if s.low(j) in AUXILIARIES or s.low(j) in MODALS or s.low(j) in AUX_SVA:
            return s.low(j)
        if s.low(j) not in ADVERBS and s.low(j) != "not":
            break
    return ""


def _after_subject(s: Sentence, i: int) -> bool:
    """Does token i follow a subject-like word ("he", "Smith", "the river", "he later")? Verbs
    elsewhere are mostly participles ("the war followed by"), whose change ERRANT calls FORM."""
    j = i - 1 if s.low(i - 1) not in ADVERBS else i - 2
    prev = s.low(j)
    return j >= 0 and s.low(i + 1) != "by" and (
        prev in SUBJECT_PRONOUNS or prev in PLURAL_SUBJECTS or prev in ("who", "which", "that")
        or (j > 0 and s.w[j][:1].isupper() and s.w[j].isalpha()) or _noun_like(s, j))


@corruption("R:VERB:TENSE")
def change_tense(s: Sentence, rng: random.Random) -> bool:
    auxes, mains = s.cached("R:VERB:TENSE", lambda: (
        [i for i in range(len(s)) if s.low(i) in AUX_TENSE],
        [v for v in _verbs(s, ("past", "3sg", "base")) if not _aux_before(s, v[0]) and _after_subject(s, v[0])]))
    if mains and (not auxes or rng.random() < 0.5):
        i, lemma, form = _pick(rng, mains)
        if form == "past":
            new = s.lex.inflect(lemma, rng.choice(("base", "3sg")))
        else:
            new = s.lex.inflect(lemma, "past")
    elif auxes:
        i = _pick(rng, auxes)
        new = _pick_biased(rng, AUX_TENSE[s.low(i)])
    else:
        return False
    if new == s.low(i):
        return False
    s.replace(i, new)
    return True


@corruption("R:VERB:SVA")
def break_agreement(s: Sentence, rng: random.Random) -> bool:
    auxes, mains = s.cached("R:VERB:SVA", lambda: (
        [i for i in range(len(s)) if s.low(i) in AUX_SVA],
        [(i, lemma, f) for i, lemma, f in _verbs(s, ("3sg", "base")) if not _aux_before(s, i)
         and s.low(i - 1) not in MODALS and s.low(i - 1) != "to" and _after_subject(s, i)
         and (s.low(i) not in s.lex.nouns or s.low(i - 1) in SG3_SUBJECTS | PLURAL_SUBJECTS)]))
    if mains and (not auxes or rng.random() < 0.4):
        i, lemma, form = _pick(rng, mains)
        new = s.lex.inflect(lemma, "base" if form == "3sg" else "3sg")
    elif auxes:
        i = _pick(rng, auxes)
        new = AUX_SVA[s.low(i)]
    else:
        return False
    s.replace(i, new)
    return True


@corruption("R:VERB:FORM")
def change_form(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("R:VERB:FORM", lambda: tuple(_form_changes(s)))
    if not cands:
        return False
    i, lemma, forms = _pick(rng, cands)
    new = s.lex.inflect(lemma, _pick_biased(rng, forms))
    if new == s.low(i):
        return False
    s.replace(i, new)
    return True


def _form_changes(s: Sentence) -> list[tuple[int, str, list[str]]]:
    """(position, lemma, wrong forms) of verbs whose form the context sets."""
    cands = []
    for i, lemma, form in _verbs(s, ("base", "pp", "ing", "past")):
        aux = _aux_before(s, i)
        if form == "base" and (aux in MODALS or s.low(i - 1) == "to" or aux in ("do", "does", "did")):
            cands.append((i, lemma, "ing 3sg past".split()))
        elif form == "pp" and aux in ("has", "have", "had", "is", "are", "was", "were", "be", "been"):
            cands.append((i, lemma, "base ing past".split()))
        elif form == "ing":
            cands.append((i, lemma, "base pp".split()))
    return cands


@corruption("R:VERB:INFL")
def regularize_verb(s: Sentence, rng: random.Random) -> bool:
    cands = [(i, lemma, f) for i, lemma, f in _verbs(s, ("past", "pp")) if lemma in s.lex.irregular
             and s.lex.irregular[lemma][0] != s.lex.regularize(lemma)]
    if not cands:
        return False
    i, lemma, form = _pick(rng, cands)
    s.replace(i, s.lex.regularize(lemma))
    return True


@corruption("M:VERB:TENSE")
def drop_aux(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("M:VERB:TENSE", lambda: tuple(i for i in range(len(s) - 1) if s.low(i) in AUX_TENSE 
             and s.low(i) not in ("do", "does", "did")
             and (s.lex.analyses(s.low(i + 1)) or s.low(i + 1) in ("been", "being", "be"))))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:VERB:TENSE")
def insert_aux(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:VERB:TENSE", lambda: tuple((i, f) for i, _, f in _verbs(s, ("past", "3sg", "ing"))
                                                   if not _aux_before(s, i)))
    if not cands:
        return False
    i, form = _pick(rng, cands)
    aux = {"past": "was have had is did".split(), "3sg": "is has will does".split(),
           "ing": "is was are".split()}[form]
    s.insert(i, _pick_biased(rng, aux))
    return True


@corruption("M:VERB:FORM")
def drop_to(s: Sentence, rng: random.Random) -> bool:
    i = _pick(rng, [i for i in range(1, len(s) - 1) if _infinitive_to(s, i)])
    if i is None:
        return False
    s.delete(i)
    return True


_TO_BEFORE_BASE = MODALS | {"let", "make", "help"}


@corruption("U:VERB:FORM")
def insert_to(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i, _, f in _verbs(s, ("base",)) if s.low(i - 1) in _TO_BEFORE_BASE]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, "to")
    return True


def _confusion_or_neighbour(s: Sentence, rng: random.Random, i: int, word: str,
                            groups: dict[str, list[str]], pool: set[str]) -> str | None:
    if word in groups:
        return _pick_biased(rng, groups[word])
    return _real_word_neighbour(s.lex, rng, word, pool) if len(word) > 3 else None


@corruption("R:VERB")
def replace_verb(s: Sentence, rng: random.Random) -> bool:
    cands = list(_verbs(s, ("base", "3sg", "past", "pp", "ing")))
    rng.shuffle(cands)
    for i, lemma, form in cands[:4]:
        new = _confusion_or_neighbour(s, rng, i, lemma, s.lex.verb_confusions, s.lex.only_verbs)
        if new and new != lemma:
            s.replace(i, s.lex.inflect(new, form) if new in s.lex.verbs else new)
            return True
    return False


@corruption("M:VERB")
def drop_verb(s: Sentence, rng: random.Random) -> bool:
    # copular "be" ("It is big" -> "It big") and main verbs after an auxiliary
    cands = s.cached("M:VERB", lambda: tuple(
        [i for i in range(1, len(s) - 1) if s.low(i) in ("is", "are", "was", "were", "be")
         and not s.lex.analyses(s.low(i + 1)) and is_word_token(s.w[i + 1])]
        + [i for i, _, _ in _verbs(s, ("base",)) if s.low(i - 1) in MODALS | {"to"}]))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:VERB")
def insert_verb(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:VERB", lambda: tuple(
        i for i in range(1, len(s)) if is_word_token(s.w[i - 1]) and (s.low(i) in s.lex.adjs
        and s.low(i) not in s.lex.nouns) and s.low(i - 1) not in AUXILIARIES))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, rng.choice("is are be have get".split()))
    return True


# -- nouns -----------------------------------------------------------------------------------------
def _nouns(s: Sentence) -> tuple[tuple[int, str, bool], ...]:
    """(position, singular, is_plural) of words that read as nouns in context."""
    return s.cached("nouns", lambda: tuple(_find_nouns(s)))


def _find_nouns(s: Sentence) -> list[tuple[int, str, bool]]:
    out = []
    for i, w in enumerate(s.w):
        if not (w.isalpha() and w.islower()) or s.lex.closed(w) or len(w) < 3:
            continue
        prev = s.low(i - 1)
        sing = s.lex.singularize(w)
        if sing and prev not in SG3_SUBJECTS and not (w not in s.lex.nouns and s.lex.analyses(w)
                                                      and prev not in DETERMINERS):
            out.append((i, sing, True))
        elif w in s.lex.nouns and (prev in DETERMINERS or prev in s.lex.adjs or prev in PREPOSITIONS) \
                and not s.lex.analyses(w) and w not in s.lex.advs and s.low(i + 1) not in s.lex.nouns:
            # the head of the noun phrase, not a modifier: "the old library", "the city council"
            out.append((i, w, False))
    return out


@corruption("R:NOUN:NUM")
def change_number(s: Sentence, rng: random.Random) -> bool:
    cands = [c for c in _nouns(s) if c[1] not in UNCOUNTABLE or c[2]]
    if not cands:
        return False
    i, sing, plural = _pick(rng, cands)
    s.replace(i, sing if plural else s.lex.pluralize(sing))
    return True


_IRREGULAR_PLURAL_FORMS = set(IRREGULAR_PLURALS.values())


def _bad_plurals(s: Sentence) -> list[tuple[int, tuple[str, ...]]]:
    """(position, the wrong plurals a learner might write) of mass nouns and irregular plurals."""
    out = []
    for i, w in enumerate(s.w):
        if w in UNCOUNTABLE:
            out.append((i, (w + "s" if w.endswith("e") else s.lex.pluralize(w),)))
        elif w in _IRREGULAR_PLURAL_FORMS:
            out.append((i, (w + "s", s.lex.singular_of[w] + "s")))
    return out


@corruption("R:NOUN:INFL")
def bad_plural(s: Sentence, rng: random.Random) -> bool:
    """Plurals of mass nouns and regularized irregular plurals: "informations", "childs"."""
    cands = [(i, news[0] if len(news) == 1 else rng.choice(news))
             for i, news in s.cached("R:NOUN:INFL", lambda: tuple(_bad_plurals(s)))]
    cands = [(i, new) for i, new in cands if not s.lex.is_word(new)]
    if not cands:
        return False
    s.replace(*_pick(rng, cands))
    return True


@corruption("R:NOUN")
def replace_noun(s: Sentence, rng: random.Random) -> bool:
    cands = list(_nouns(s))
    rng.shuffle(cands)
    for i, sing, plural in cands[:4]:
        new = _confusion_or_neighbour(s, rng, i, sing, s.lex.noun_confusions, s.lex.only_nouns)
        if plural and new and not new.endswith("s") and new not in UNCOUNTABLE:
            new = s.lex.pluralize(new)
        if new and new != s.low(i):
            s.replace(i, new)
            return True
    return False


@corruption("M:NOUN")
def drop_noun(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("M:NOUN", lambda: tuple(i for i, _, _ in _nouns(s) if i + 1 < len(s) and (
        _noun_like(s, i + 1) or s.low(i - 1) in s.lex.adjs and s.low(i - 2) in DETERMINERS)))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:NOUN")
def insert_noun(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:NOUN", lambda: tuple(i for i, _, _ in _nouns(s) if s.low(i - 1) in DETERMINERS))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i + 1, rng.choice("people thing person things time way".split()))
    return True


def _possessives(s: Sentence) -> tuple[int, ...]:
    """Positions of "X's" words and of the apostrophe of plural possessives ("schools '")."""
    return s.cached("possessives", lambda: tuple(
        [i for i, w in enumerate(s.w) if w.lower().endswith(("'s", "’s")) and len(w) > 3
         and w.lower()[:-2] not in PRONOUNS and w.lower()[:-2] not in ("that", "what", "there")]
        + [i for i in range(1, len(s)) if s.w[i] in ("'", "’") and s.sp[i - 1] == ""
           and s.low(i - 1).endswith("s")]))


@corruption("M:NOUN:POSS")
def drop_possessive(s: Sentence, rng: random.Random) -> bool:
    i = _pick(rng, _possessives(s))
    if i is None:
        return False
    if s.w[i] in ("'", "’"):
        s.delete(i)
    else:
        s.replace(i, s.w[i][:-2])
    return True


@corruption("R:NOUN:POSS")
def garble_possessive(s: Sentence, rng: random.Random) -> bool:
    """Common nouns only: "the school's" -> "the schools" / "the schools'"."""
    i = _pick(rng, [i for i in _possessives(s) if s.w[i - (s.w[i] in "'’")][:1].islower()])
    if i is None:
        return False
    if s.w[i] in ("'", "’"):  # "schools '" -> "school's"
        sing = s.lex.singularize(s.low(i - 1))
        if not sing:
            return False
        s.set(i - 1, sing)
        s.set(i, "'s")
        s.merge(i - 1)
    else:
        s.replace(i, s.w[i][:-2] + rng.choice(("s", "s'")))
    return True


@corruption("U:NOUN:POSS")
def add_possessive(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:NOUN:POSS", lambda: tuple(i for i, _, plural in _nouns(s) if not plural and i + 1 < len(s) and _noun_like(s, i + 1)
             and s.sp[i] == " "))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.replace(i, s.w[i] + "'s")
    return True


# -- pronouns, adjectives, adverbs, conjunctions -------------------------------------------------
@corruption("R:PRON")
def replace_pron(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("R:PRON", lambda: tuple(i for i in range(len(s)) if s.low(i) in PRONOUNS and s.low(i) not in ("i", "one")))
    return _confuse(s, rng, cands, PRONOUNS)


@corruption("M:PRON")
def drop_pron(s: Sentence, rng: random.Random) -> bool:
    dropped = SUBJECT_PRONOUNS | set("them him us there me".split())
    cands = s.cached("M:PRON", lambda: tuple(i for i in range(len(s) - 1) if s.low(i) in dropped and is_word_token(s.w[i + 1])))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:PRON")
def insert_pron(s: Sentence, rng: random.Random) -> bool:
    subj, obj = s.cached("U:PRON", lambda: (
        [(i, f) for i, _, f in _verbs(s, ("past", "3sg")) if 1 < i and _noun_like(s, i - 1)],
        [(i + 1, "it") for i, _, f in _verbs(s, ("past", "3sg", "base")) if s.low(i + 1) in DETERMINERS]))
    subj = [(i, "it" if f == "3sg" else rng.choice(("they", "it", "he"))) for i, f in subj]
    pick = _pick(rng, subj + obj)
    if pick is None:
        return False
    s.insert(*pick)
    return True


@corruption("R:ADJ")
def replace_adj(s: Sentence, rng: random.Random) -> bool:
    cands = list(s.cached("R:ADJ", lambda: tuple(
        i for i in s.lower_words() if s.low(i) in s.lex.adj_confusions or
        (s.low(i) in s.lex.adjs and s.low(i) not in s.lex.nouns and not s.lex.closed(s.low(i))))))
    rng.shuffle(cands)
    for i in cands[:4]:
        new = _confusion_or_neighbour(s, rng, i, s.low(i), s.lex.adj_confusions, s.lex.only_adjs)
        if new:
            s.replace(i, new)
            return True
    return False


def _degrees(lex: Lexicon, adj: str) -> list[str]:
    """Positive, comparative and superlative of a short adjective: big, bigger, biggest."""
    if adj in ("good", "well"):
        return ["good", "better", "best"]
    if adj == "bad":
        return ["bad", "worse", "worst"]
    stem = adj[:-1] if adj.endswith("e") else adj[:-1] + "i" if adj.endswith("y") else adj
    if 3 <= len(adj) <= 4 and adj[-1] not in VOWELS | {"w", "x", "y"} and adj[-2] in VOWELS \
            and adj[-3] not in VOWELS:
        stem = adj + adj[-1]  # big -> bigger
    return [adj, stem + "er", stem + "est"]


@corruption("R:ADJ:FORM")
def change_degree(s: Sentence, rng: random.Random) -> bool:
    """ "the largest city" -> "the larger city" / "the large city"; "older" -> "more older"."""
    cands = s.cached("R:ADJ:FORM", lambda: tuple(_degree_changes(s)))
    if not cands:
        return False
    i, others = _pick(rng, cands)
    if s.low(i).endswith("er") and rng.random() < 0.2:
        s.insert(i, "more")
    else:
        s.replace(i, _pick(rng, others))
    return True


def _degree_changes(s: Sentence) -> list[tuple[int, list[str]]]:
    """(position, the adjective's other degrees) of comparable adjectives."""
    cands = []
    for i in s.lower_words():
        w = s.low(i)
        base = s.lex.adj_exc.get(w) or (w[:-2] if w.endswith("er") else
                                        w[:-3] if w.endswith("est") else None)
        for b in filter(None, (base, base and base + "e", w)):
            degrees = _degrees(s.lex, b)
            if b in s.lex.adjs and w in degrees and all(d in s.lex.words for d in degrees) and \
                    (b != w or s.low(i - 1) in DETERMINERS):
                cands.append((i, [d for d in degrees if d != w]))
                break
    return cands


@corruption("M:ADJ")
def drop_adj(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("M:ADJ", lambda: tuple(
        i for i in range(1, len(s) - 1) if s.low(i) in s.lex.adjs and s.low(i) not in s.lex.nouns
        and s.w[i].islower() and _noun_like(s, i + 1)))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:ADJ")
def insert_adj(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:ADJ", lambda: tuple(i for i in range(1, len(s)) if s.low(i - 1) in DETERMINERS
                                            and _noun_like(s, i)))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, rng.choice("good important new big different whole real other main same".split()))
    return True


def _adverbs(s: Sentence) -> tuple[int, ...]:
    return s.cached("adverbs", lambda: tuple(i for i in s.lower_words() if s.low(i) in ADVERBS or (
        s.low(i).endswith("ly") and s.low(i) in s.lex.advs)))


@corruption("R:ADV")
def replace_adv(s: Sentence, rng: random.Random) -> bool:
    cands = list(_adverbs(s))
    rng.shuffle(cands)
    for i in cands[:4]:
        new = _confusion_or_neighbour(s, rng, i, s.low(i), s.lex.adv_confusions, s.lex.only_advs)
        if new:
            s.replace(i, new)
            return True
    return False


@corruption("M:ADV")
def drop_adv(s: Sentence, rng: random.Random) -> bool:
    i = _pick(rng, [i for i in _adverbs(s) if i + 1 < len(s)])
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:ADV")
def insert_adv(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:ADV", lambda: tuple(
        i for i in range(1, len(s)) if (s.low(i) in s.lex.adjs or s.lex.analyses(s.low(i)))
        and is_word_token(s.w[i - 1]) and s.low(i - 1) not in ADVERBS))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, rng.choice("very also just really so more too even only still".split()))
    return True


@corruption("R:CONJ")
def replace_conj(s: Sentence, rng: random.Random) -> bool:
    return _confuse(s, rng, [i for i in range(1, len(s)) if s.low(i) in CONJUNCTIONS], CONJUNCTIONS)


@corruption("M:CONJ")
def drop_conj(s: Sentence, rng: random.Random) -> bool:
    i = _pick(rng, [i for i in range(1, len(s) - 1) if s.low(i) in ("and", "or", "but")])
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:CONJ")
def insert_conj(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("U:CONJ", lambda: tuple(i + 1 for i in range(1, len(s) - 1) if s.w[i] == "," and is_word_token(s.w[i + 1])
             and s.low(i + 1) not in CONJUNCTIONS))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, rng.choice(("and", "and", "but", "or")))
    return True


# -- contractions ----------------------------------------------------------------------------------
@corruption("R:CONTR")
def contraction(s: Sentence, rng: random.Random) -> bool:
    """Learners contract or mangle contractions: "was not" -> "wasn't"/"wasnt", "it is" -> "it's"."""
    cands = []
    for i, w in enumerate(s.w):
        lw = w.lower()
        if lw.endswith("n't") and len(lw) > 3:
            cands.append((i, "apostrophe"))
        elif "'" in lw and "'" + lw.split("'")[-1] in CONTR_CONFUSIONS and \
                lw.split("'")[0] in CONTRACTION_STEMS:
            cands.append((i, "swap"))
        elif lw == "not" and s.low(i - 1) in NEGATABLE:
            cands.append((i, "not"))
        elif lw in AUX_CONTRACTIONS and s.low(i - 1) in SUBJECT_PRONOUNS | {"i", "you", "that", "there"}:
            cands.append((i, "aux"))
    if not cands:
        return False
    i, kind = _pick(rng, cands)
    w = s.w[i]
    if kind == "apostrophe":
        s.replace(i, w.replace("'", "").replace("’", ""))
    elif kind == "swap":
        stem, suffix = w.rsplit("'", 1)
        new = _pick_biased(rng, CONTR_CONFUSIONS["'" + suffix.lower()])
        s.replace(i, stem + new if new.startswith("'") else stem + " " + new)
    else:
        suffix = "n't" if kind == "not" else AUX_CONTRACTIONS[w.lower()]
        if kind == "not" and rng.random() < 0.3:
            suffix = "nt"
        s.delete(i)
        s.set(i - 1, s.w[i - 1] + suffix)
    return True


# -- morphology, spelling, orthography, word order -----------------------------------------------
_DERIVATIONS = [("", "ly"), ("y", "ily"), ("le", "ly"), ("ic", "ically"), ("ly", ""), ("ily", "y"),
                ("", "al"), ("al", ""), ("", "ic"), ("ic", ""), ("ic", "ical"), ("ical", "ic"),
                ("", "ful"), ("ful", ""), ("", "ous"), ("ous", ""), ("y", "ic"), ("", "y"),
                ("", "ment"), ("ment", ""), ("e", "ation"), ("", "ation"), ("ation", "e"),
                ("", "ion"), ("ion", ""), ("e", "ion"), ("ion", "e"), ("", "ness"), ("ness", ""),
                ("ance", "ant"), ("ant", "ance"), ("ence", "ent"), ("ent", "ence"),
                ("", "ive"), ("ive", ""),
                ("ity", ""), ("", "ity"), ("y", "ies"), ("ize", "ization"), ("ise", "isation")]


@corruption("R:MORPH")
def derive(s: Sentence, rng: random.Random) -> bool:
    lex = s.lex
    cands = list(s.cached("R:MORPH", lambda: tuple(i for i in s.lower_words() if len(s.w[i]) > 4
                                                    and not lex.closed(s.low(i)))))
    rng.shuffle(cands)
    for i in cands[:6]:
        w = s.low(i)
        outs = [w[: len(w) - len(a)] + b for a, b in _DERIVATIONS
                if w.endswith(a) and len(w) - len(a) > 2]
        outs = [o for o in outs if o != w and o in lex.words and (o in lex.adjs or o in lex.advs
                                                                  or o in lex.nouns or o in lex.verbs)]
        if outs:
            s.replace(i, _pick(rng, outs))
            return True
    return False


def _real_word_neighbour(lex: Lexicon, rng: random.Random, w: str, pool: set[str]) -> str | None:
    """A word one edit away from w (deletion, transposition, substitution, insertion) in pool."""
    if len(w) < 3 or not w.isalpha():
        return None
    key = (w, id(pool))  # the pools are the lexicon's own sets: alive as long as its memo
    hits = lex.memo.get(key)
    if hits is None:
        # Only the likelier slips (vowel for vowel, a neighbouring key, a dropped, added or swapped
        # letter), which also keeps this fast: ~10 candidates per letter instead of ~50.
        edits = {w[:k] + w[k + 1:] for k in range(len(w))}
        edits |= {w[:k] + w[k + 1] + w[k] + w[k + 2:] for k in range(len(w) - 1)}
        edits |= {w[:k] + c + w[k + 1:] for k in range(len(w))
                  for c in ("aeiou" if w[k] in VOWELS else KEYBOARD.get(w[k], ""))}
        edits |= {w[:k] + c + w[k:] for k in range(len(w) + 1) for c in "aeious"}
        hits = sorted(e for e in edits
                      if e in pool and len(e) > 2 and _spelling_variant(e) != _spelling_variant(w))
        if len(lex.memo) < 1 << 18:
            lex.memo[key] = hits
    return _pick(rng, hits)


def _spelling_variant(w: str) -> str:
    """British and American spellings of a word ("organisation", "organization") map to one."""
    return w.replace("s", "z").replace("our", "or").replace("ium", "um").replace("tre", "ter")


def _typo(lex: Lexicon, rng: random.Random, w: str) -> str | None:
    lw = w.lower()
    if lw in COMMON_MISSPELLINGS and rng.random() < 0.7:
        return match_case(w, COMMON_MISSPELLINGS[lw])
    if lw in HOMOPHONES and rng.random() < 0.3:
        return match_case(w, HOMOPHONES[lw])
    for _ in range(6):
        k = rng.randrange(len(w))
        c = w[k].lower()
        op = rng.random()
        if op < 0.25 and c in KEYBOARD:  # substitute a neighbouring key
            t = w[:k] + rng.choice(KEYBOARD[c]) + w[k + 1:]
        elif op < 0.45:  # delete (or undouble)
            t = w[:k] + w[k + 1:]
        elif op < 0.6 and k + 1 < len(w):  # transpose
            t = w[:k] + w[k + 1] + w[k] + w[k + 2:]
        elif op < 0.75 and c in KEYBOARD:  # insert a neighbouring key
            t = w[:k] + rng.choice(KEYBOARD[c]) + w[k:]
        elif op < 0.85:  # double a letter
            t = w[:k] + w[k] + w[k:]
        elif c in VOWELS:  # vowel confusion: "seperate", "definately"
            t = w[:k] + rng.choice(sorted(VOWELS - {c})) + w[k + 1:]
        else:
            continue
        if k == 0 and w[0].isupper():
            t = capitalize(t.lower()) if w[1:].islower() else t
        if t and t != w and not lex.is_word(t):
            return t
    return None


@corruption("R:SPELL")
def misspell(s: Sentence, rng: random.Random) -> bool:
    cands = list(s.cached("R:SPELL", lambda: tuple(i for i in s.lower_words() if len(s.w[i]) >= 3)))
    rng.shuffle(cands)
    for i in cands[:4]:
        t = _typo(s.lex, rng, s.w[i])
        if t:
            s.set(i, t)
            return True
    return False


def _whitespace_slips(s: Sentence) -> tuple[list[int], list[tuple[int, int]]]:
    """Words to merge ("every day" -> "everyday") and compounds to split (position, where)."""
    merges = [i for i in range(len(s) - 1) if s.sp[i] == " " and s.w[i].isalpha()
              and s.w[i + 1].isalpha() and (s.low(i) + s.low(i + 1)) in s.lex.words]
    splits = []
    for i in s.lower_words():
        w = s.w[i]
        for k in range(3, len(w) - 2):
            if w[:k] in COMPOUND_HEADS and w[k:] in s.lex.words:
                splits.append((i, k))
                break
    return merges, splits


@corruption("R:ORTH")
def orthography(s: Sentence, rng: random.Random) -> bool:
    lex = s.lex
    kind = rng.random()
    words = s.words()
    if kind < 0.3 and s.w and s.w[0][:1].isupper() and s.w[0][1:].islower():
        s.set(0, s.w[0].lower())
        return True
    if kind < 0.5:
        proper = [i for i in words if i > 0 and s.w[i][:1].isupper() and s.w[i][1:].islower()]
        common = [i for i in words if i > 0 and s.w[i].islower() and s.w[i].isalpha()]
        if proper and rng.random() < 0.6:
            i = _pick(rng, proper)
            s.set(i, s.w[i].lower())
            return True
        if common:
            i = _pick(rng, common)
            s.set(i, capitalize(s.w[i]))
            return True
        return False
    if kind < 0.55 and "I" in s.w:
        s.set(s.w.index("I"), "i")
        return True
    # whitespace: merge two words into one ("every day" -> "everyday"), or split a compound
    merges, splits = s.cached("R:ORTH", lambda: _whitespace_slips(s))
    if merges and (not splits or rng.random() < 0.5):
        i = _pick(rng, merges)
        s.set(i + 1, s.w[i + 1].lower())
        s.merge(i)
        return True
    if splits:
        i, k = _pick(rng, splits)
        s.split(i, k)
        return True
    if any(c.isalpha() for c in "".join(s.w)):
        i = _pick(rng, [i for i in words if i > 0 and s.w[i].isalpha()])
        if i is not None:
            w = s.w[i]
            s.set(i, w.upper() if rng.random() < 0.2 else capitalize(w) if w.islower() else w.lower())
            return True
    return False


def _swaps(s: Sentence) -> tuple[list[int], list[int]]:
    """Neighbouring words to swap, and among them the likelier (an adverb, adjective + noun)."""
    cands = [i for i in range(len(s) - 1) if is_word_token(s.w[i]) and is_word_token(s.w[i + 1])
             and s.sp[i] == " " and s.low(i) != s.low(i + 1)]
    return cands, [i for i in cands if s.low(i) in ADVERBS or s.low(i + 1) in ADVERBS
                   or s.low(i) in s.lex.adjs and _noun_like(s, i + 1)]


@corruption("R:WO")
def swap_words(s: Sentence, rng: random.Random) -> bool:
    cands, preferred = s.cached("R:WO", lambda: _swaps(s))
    i = _pick(rng, preferred if preferred and rng.random() < 0.7 else cands)
    if i is None:
        return False
    s.swap(i)
    return True


# -- punctuation -----------------------------------------------------------------------------------
@corruption("M:PUNCT")
def drop_punct(s: Sentence, rng: random.Random) -> bool:
    """Mostly a missing comma; else a missing full stop, or a hyphen ("well known")."""
    commas, final, hyphens = s.cached("M:PUNCT", lambda: (
        [i for i in range(1, len(s) - 1) if s.w[i] in (",", ";", ":")],
        [len(s) - 1] if len(s) > 1 and s.w[-1] in ".!?" else [],
        [i for i, w in enumerate(s.w) if "-" in w and w[:1].isalpha()]))
    r = rng.random()
    if commas and (r < 0.8 or not (final or hyphens)):
        s.delete(_pick(rng, commas))
    elif final and (r < 0.95 or not hyphens):
        s.delete(final[0])
    elif hyphens:
        i = _pick(rng, hyphens)
        s.set(i, s.w[i].replace("-", " ", 1))
    else:
        return False
    return True


def _comma_gaps(s: Sentence) -> tuple[list[int], list[int]]:
    """Gaps between two words, and among them the likelier places for a wrong comma."""
    gaps = [i for i in range(2, len(s) - 1) if is_word_token(s.w[i - 1]) and is_word_token(s.w[i])
            and s.sp[i - 1] == " "]
    return gaps, [i for i in gaps if s.low(i) in CONJUNCTIONS or s.low(i) in PREPOSITIONS
                  or s.low(i) in ("that", "which", "because", "who")]


@corruption("U:PUNCT")
def insert_punct(s: Sentence, rng: random.Random) -> bool:
    gaps, preferred = s.cached("U:PUNCT", lambda: _comma_gaps(s))
    i = _pick(rng, preferred if preferred and rng.random() < 0.6 else gaps)
    if i is None:
        return False
    s.insert_punct(i, "," if rng.random() < 0.9 else rng.choice(";:."))
    return True


@corruption("R:PUNCT")
def replace_punct(s: Sentence, rng: random.Random) -> bool:
    marks = {",": ".;:", ";": ",.", ":": ",;", ".": ",!?", "!": ".", "?": ".", "\"": "'", "-": ","}
    cands = s.cached("R:PUNCT", lambda: tuple(i for i, w in enumerate(s.w) if w in marks and not (w == "." and i < len(s) - 2)))
    i = _pick(rng, cands)
    if i is None:
        return False
    new = rng.choice(marks[s.w[i]]) if s.w[i] != "," else rng.choices(".;:", (0.6, 0.25, 0.15))[0]
    s.set(i, new)
    if new == "." and i + 1 < len(s) and s.w[i + 1][:1].islower():
        s.set(i + 1, capitalize(s.w[i + 1]))  # a learner's run-on sentence: ", the" -> ". The"
    return True


# -- multi-word rewrites -------------------------------------------------------------------------
def _rewrites(s: Sentence) -> tuple[list[str], list, list, list]:
    """The folded tokens, the clauses to rewrite, the longer and the one-word phrases to swap."""
    text = [s.low(i) for i in range(len(s))]
    phrases = [(i, o, alternatives) for i, w in enumerate(text)
               for o, alternatives in PHRASES_BY_FIRST_WORD.get(w, ()) if text[i: i + len(o)] == o]
    clauses = [(i, lemma, "participle") for i, lemma, _ in _verbs(s, ("ing",)) if i > 0 and (
        text[i - 1] in CLAUSE_OPENERS or (_noun_like(s, i - 1) and text[i - 2] in DETERMINERS))]
    clauses += [(i, lemma, "relative") for i, lemma, _ in _verbs(s, ("3sg", "past"))
                if i > 1 and text[i - 1] in ("who", "which", "that") and _noun_like(s, i - 2)]
    return text, clauses, [p for p in phrases if len(p[1]) > 1], [p for p in phrases if len(p[1]) == 1]


@corruption("R:OTHER")
def rewrite(s: Sentence, rng: random.Random) -> bool:
    """Rewrites of several words, or of a word into another class, which ERRANT calls R:OTHER:
    a confused phrase ("many" -> "a lot of", "but" -> "however"), a participle clause spelled out
    ("before joining" -> "before he joined", "the river flowing" -> "the river which flows") or a
    relative clause cut short ("the man who lived" -> "the man living")."""
    text, clauses, longer, words = s.cached("R:OTHER", lambda: _rewrites(s))
    kinds = [k for k, xs in (("longer", longer), ("clause", clauses)) if xs]
    # one-word swaps ("and" -> "also") apply almost everywhere: only when nothing else does
    if kinds and (not words or rng.random() < 0.85):
        kind = _pick(rng, kinds)
    elif words:
        kind = "word"
    else:
        return False
    if kind == "clause":
        i, lemma, kind = _pick(rng, clauses)
        if kind == "relative":  # "the man who lived" -> "the man living"
            s.replace(i, s.lex.inflect(lemma, "ing"))
            s.delete(i - 1)
        elif text[i - 1] in CLAUSE_OPENERS:  # "before joining" -> "before he joined"
            s.replace(i, s.lex.inflect(lemma, "past"))
            s.insert(i, rng.choice("he they it she we".split()))
        else:  # "the river flowing" -> "the river which flows"
            s.replace(i, s.lex.inflect(lemma, rng.choice(("3sg", "past"))))
            s.insert(i, "which")
        return True
    i, o, alternatives = _pick(rng, longer if kind == "longer" else words)
    first = s.w[i]
    for _ in o:
        s.delete(i)
    for k, part in enumerate(_pick(rng, alternatives).split()):
        s.insert(i + k, part)
    if i == 0:
        s.set(0, match_case(first, s.w[0]))
    return True


@corruption("M:OTHER")
def drop_span(s: Sentence, rng: random.Random) -> bool:
    cands = s.cached("M:OTHER", lambda: tuple(i for i in range(1, len(s) - 2)
             if is_word_token(s.w[i]) and (is_word_token(s.w[i + 1]) or s.w[i + 1] == ",")
             and (s.lex.closed(s.low(i)) or s.lex.closed(s.low(i + 1)))))
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    s.delete(i)
    return True


@corruption("U:OTHER")
def insert_span(s: Sentence, rng: random.Random) -> bool:
    gaps = s.cached("U:OTHER", lambda: tuple(i for i in range(1, len(s)) if is_word_token(s.w[i]) and is_word_token(s.w[i - 1])))
    i = _pick(rng, gaps)
    if i is None:
        return False
    for k, w in enumerate(_pick(rng, FILLER_BIGRAMS)):
        s.insert(i + k, w)
    return True
