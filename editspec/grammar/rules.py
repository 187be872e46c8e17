"""Candidate corrections from a sentence's dependency parse (spaCy's en_core_web_sm): each rule
reads a head and what governs it, and proposes the form that agrees; the language model decides.

    "He go to school."      go (VBP) <-nsubj- He (3rd sg)           -> "goes"    VERB:SVA
    "two book"              book (NN) <-nummod- two                 -> "books"   NOUN:NUM
    "can goes"              goes (VBZ) <-aux- can (MD)              -> "go"      VERB:FORM
    "a apple"               a + vowel sound / "an" + consonant       -> "an"      DET
    "their is"              a confusable pair                        -> "there"   OTHER

Inflections come from lemminflect (a library of English inflection tables); a rule proposes only
where the form disagrees with its parsed head, so a form that agrees is never undone.
"""

from __future__ import annotations

from lemminflect import getInflection
from spacy.tokens import Doc, Token

from editspec.grammar import Candidate

SINGULAR_DET = {"a", "an", "one", "each", "every", "this", "that", "another", "either", "neither"}
PLURAL_DET = {"many", "several", "these", "those", "few", "both", "various", "numerous"}
PLURAL_PRON = {"we", "they", "you", "i"}  # take the plural (VBP) verb form
CONFUSABLE = [("their", "there"), ("there", "their"), ("than", "then"), ("then", "than"),
              ("its", "it's"), ("it's", "its"), ("your", "you're"), ("you're", "your"),
              ("whose", "who's"), ("who's", "whose"), ("lose", "loose"), ("loose", "lose"),
              ("affect", "effect"), ("effect", "affect"), ("too", "to"), ("to", "too")]
CONFUSABLES: dict[str, list[str]] = {}
for _a, _b in CONFUSABLE:
    CONFUSABLES.setdefault(_a, []).append(_b)
# a quantity whose "of" object decides the verb: "a lot of people are", "most of the time is"
OF_QUANTITY = {"lot", "lots", "plenty", "majority", "rest", "half", "most", "some", "all", "none",
               "bunch", "couple", "part", "many", "few", "both"}
BASE_AUX = {"to", "do", "does", "did"}  # with modals (tag MD): the bare infinitive follows


def lazy_lemmas(nlp) -> None:
    """``token._.lemma``: the pipeline's lemma, made when a rule asks for it where the parse ran
    without the lemmatizer (``parser.InProcess.parse``): the rules read a few tokens' lemmas, and
    lemmatizing every token took a fifth of the parse (0.8 s of 4.4 s for 500 W&I sentences)."""
    lemmatizer = nlp.get_pipe("lemmatizer")
    Token.set_extension("lemma", getter=lambda t: t.lemma_ or lemmatizer.lemmatize(t)[0], force=True)


def _case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _replace(tok: Token, word: str, pattern: str, etype: str, message: str) -> Candidate | None:
    if word.lower() == tok.lower_:  # a change of case is not this step's
        return None
    word = _case(word, tok.text)
    return Candidate(tok.idx, tok.idx + len(tok.text), word, pattern, etype, message)


def _number(tok: Token) -> str | None:
    """"sing" or "plur" of a subject head: "X, Y and Z" plural ("or"/"nor": unknown); "a lot of
    X", "most of X": X's number."""
    if tok.conjuncts:
        ccs = {t.lower_ for t in tok.subtree if t.dep_ == "cc"}
        return "plur" if ccs == {"and"} else None
    if tok.lower_ in OF_QUANTITY:
        obj = next((g for c in tok.children if c.dep_ == "prep" and c.lower_ == "of"
                    for g in c.children if g.dep_ == "pobj"), None)
        return _number(obj) if obj is not None else None
    low = tok.lower_
    if low in PLURAL_PRON:
        return "plur"
    if tok.tag_ in ("NNS", "NNPS"):
        return "plur"
    if tok.tag_ in ("NN", "NNP") or low in ("he", "she", "it", "this", "that"):
        return "sing"
    number = tok.morph.get("Number")
    return {"Sing": "sing", "Plur": "plur"}.get(number[0]) if number and tok.pos_ == "PRON" else None


def _subject(verb: Token) -> Token | None:
    """The subject head of a finite verb: its own nsubj, its head's when it is an auxiliary, the
    noun a relative clause modifies when the subject is who/which/that, the attribute after an
    expletive "there"."""
    clause = verb.head if verb.dep_ in ("aux", "auxpass") else verb
    subj = next((c for c in clause.children if c.dep_ in ("nsubj", "nsubjpass")), None)
    if subj is None and clause.dep_ == "conj":  # "they sing and dance"
        subj = next((c for c in clause.head.children if c.dep_ in ("nsubj", "nsubjpass")), None)
    if subj is None:
        expl = next((c for c in clause.children if c.dep_ == "expl"), None)
        if expl is not None:
            return next((c for c in clause.children if c.dep_ == "attr"), None)
        return None
    if subj.tag_ in ("WDT", "WP") and clause.dep_ == "relcl":
        return clause.head
    return subj


def _agreeing_form(verb: Token, subj: Token, number: str) -> str | None:
    low, lemma = verb.lower_, verb._.lemma.lower()
    if lemma == "be":
        if low in ("was", "were"):
            return "was" if subj.lower_ == "i" or (number == "sing" and subj.lower_ != "you") else "were"
        if low in ("is", "are", "am"):
            return "am" if subj.lower_ == "i" else ("are" if number == "plur" else "is")
        return None
    if verb.tag_ not in ("VBZ", "VBP") and not (verb.tag_ == "VB" and verb.dep_ in ("ROOT", "conj")):
        return None
    forms = getInflection(lemma, "VBZ" if number == "sing" else "VBP")
    return forms[0] if forms else None


def _past_context(doc: Doc, verb: Token) -> bool:
    """More past-tense finite verbs than present ones in the verb's sentence, besides it: a
    narrative, where annotators change the tense, not the agreement."""
    others = [t for t in verb.sent if t.i != verb.i and t.dep_ not in ("amod", "acl", "compound")]
    past = sum(t.tag_ == "VBD" for t in others)
    return past > sum(t.tag_ in ("VBZ", "VBP") for t in others)


def _past(verb: Token, subj: Token, number: str) -> Candidate | None:
    if verb._.lemma.lower() == "be":
        form = "was" if subj.lower_ == "i" or (number == "sing" and subj.lower_ != "you") else "were"
    else:
        form = next(iter(getInflection(verb._.lemma, "VBD")), None)
    return _replace(verb, form, "tense", "R:VERB:TENSE",
                    "the sentence's other verbs are in the past") if form else None


def sva(doc: Doc) -> list[Candidate]:
    out = []
    for verb in doc:
        if verb.tag_ not in ("VBZ", "VBP", "VBD", "VB") or (verb.tag_ == "VBD" and verb._.lemma != "be"):
            continue
        if any(c.tag_ == "MD" or c.lower_ in BASE_AUX for c in verb.children if c.dep_ == "aux"):
            continue
        subj = _subject(verb)
        if subj is None or any(c.lower_ in ("or", "nor") for c in subj.children):
            continue
        number = _number(subj)
        form = _agreeing_form(verb, subj, number) if number else None
        if form is not None and verb.tag_ != "VBD" and _past_context(doc, verb):
            c = _past(verb, subj, number)
            out += [c] if c else []
        elif form is not None:
            c = _replace(verb, form, "sva", "R:VERB:SVA",
                         f"the verb should agree with its subject '{subj.text}'")
            if c:
                out.append(c)
    return out


def noun_number(doc: Doc) -> list[Candidate]:
    out = []
    for noun in doc:
        if noun.tag_ not in ("NN", "NNS") or noun.dep_ == "compound":
            continue
        want, why = None, None
        for c in noun.children:
            low = c.lower_
            if c.dep_ == "det" and low in SINGULAR_DET and not (low == "a" and c.nbor(1).lower_ in ("few", "lot")):
                want, why = "sing", c.text
            elif (c.dep_ == "det" or c.dep_ == "amod") and low in PLURAL_DET:
                want, why = "plur", c.text
            elif c.dep_ == "nummod" and c.like_num:
                want, why = ("sing" if low in ("one", "1") else "plur"), c.text
        if want == "sing" and noun.tag_ == "NNS":
            form = noun._.lemma
        elif want == "plur" and noun.tag_ == "NN":
            forms = getInflection(noun._.lemma, "NNS")
            form = forms[0] if forms else None
        else:
            continue
        c = _replace(noun, form, "noun_num", "R:NOUN:NUM",
                     f"the noun should be {'singular' if want == 'sing' else 'plural'} after '{why}'") \
            if form else None
        if c:
            out.append(c)
    return out


def verb_form(doc: Doc) -> list[Candidate]:
    """The base form after a modal, "to" or "do"; the past participle after "have"; -ing or the
    past participle after "be" (both proposed: the language model chooses)."""
    out = []
    for verb in doc:
        if verb.pos_ not in ("VERB", "AUX") or verb.dep_ in ("aux", "auxpass"):
            continue
        auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i < verb.i]
        if not auxes:
            continue
        aux = auxes[-1]
        low, lemma = aux.lower_, aux._.lemma.lower()
        if aux.tag_ == "MD" or low in BASE_AUX:
            tags, why = ["VB"], f"after '{aux.text}' the verb takes its base form"
        elif lemma == "have":
            tags, why = ["VBN"], f"after '{aux.text}' the verb takes its past participle"
        elif lemma == "be" and verb.tag_ in ("VB", "VBZ", "VBP", "VBD"):
            tags, why = ["VBG", "VBN"], f"after '{aux.text}' the verb takes -ing or a past participle"
        else:
            continue
        if any(verb.lower_ in getInflection(verb._.lemma, t) for t in tags):
            continue  # the tagger calls "went" VBN after "has": read the form, not the tag
        for tag in tags:
            for form in getInflection(verb._.lemma, tag)[:1]:
                c = _replace(verb, form, "verb_form", "R:VERB:FORM", why)
                if c:
                    out.append(c)
    return out


def _an(word: str) -> bool:
    """A vowel sound by spelling, with the usual exceptions (hour, honest; university, one, euro)."""
    w = word.lower()
    if w.startswith(("hour", "honest", "honour", "honor", "heir")):
        return True
    if w.startswith(("uni", "use", "usu", "uti", "ure", "eu", "one", "once", "ewe", "uk", "us")):
        return False
    return w[:1] in "aeiou" and not w.isupper() or (w.isupper() and w[:1] in "aefhilmnorsx")


def article_sound(doc: Doc) -> list[Candidate]:
    out = []
    for tok in doc[:-1]:
        nxt = tok.nbor(1)
        if tok.lower_ not in ("a", "an") or not nxt.is_alpha:
            continue
        want = "an" if _an(nxt.text) else "a"
        c = _replace(tok, want, "an", "R:DET", f"'{want}' before the sound of '{nxt.text}'")
        if c:
            out.append(c)
    return out


def _np_start(noun: Token) -> Token:
    left = [c for c in noun.lefts if c.dep_ in ("amod", "compound", "advmod", "nummod")]
    return min([noun, *left, *[t for c in left for t in c.subtree]], key=lambda t: t.i)


def articles(doc: Doc) -> list[Candidate]:
    """A singular countable-looking common noun with no determiner: "the" or "a/an" before its
    phrase; "the" before a plural noun used generically: its removal."""
    out = []
    for noun in doc:
        if noun.tag_ not in ("NN", "NNS") or noun.dep_ in ("compound", "npadvmod") or not noun.is_alpha:
            continue
        dets = [c for c in noun.children if c.dep_ in ("det", "poss", "nummod", "predet")]
        if noun.tag_ == "NN" and not dets:
            start = _np_start(noun)
            if start.i > 0 and doc[start.i - 1].tag_ in ("DT", "PRP$", "POS", "CD"):
                continue
            for art in ("the", "an" if _an(start.text) else "a"):
                out.append(Candidate(start.idx, start.idx, art + " ", "det_missing", "M:DET",
                                     f"'{noun.text}' needs an article here"))
        for d in dets:
            if d.lower_ == "the" and noun.tag_ == "NNS" and d.i + 1 < len(doc):
                out.append(Candidate(d.idx, doc[d.i + 1].idx, "", "det_unneeded", "U:DET",
                                     f"'{noun.text}' reads as general: no article"))
    return out


def confusables(doc: Doc) -> list[Candidate]:
    out = []
    for tok in doc:
        for alt in CONFUSABLES.get(tok.lower_, []):
            c = _replace(tok, alt, "confusable", "R:OTHER", f"'{alt}', not '{tok.text}', fits here")
            if c:
                out.append(c)
    return out


RULES = [sva, noun_number, verb_form, article_sound, articles, confusables]
PATTERNS = ("sva", "tense", "noun_num", "verb_form", "an", "det_missing", "det_unneeded", "confusable")


def candidates(doc: Doc, patterns: set[str] | None = None) -> list[Candidate]:
    """Every rule's candidates whose pattern is in ``patterns`` (None: all of ``PATTERNS``)."""
    return [c for rule in RULES for c in rule(doc) if patterns is None or c.pattern in patterns]
