"""Hand-written word lists: closed word classes, confusion sets, irregular forms and typos.

Each list says what a learner confuses with what; the corruptions (``corruptions.py``) draw from
them and the lexicon (``lexicon.py``) builds its inflections on them. For example::

    PREP_CONFUSIONS["in"]     -> ["on", "at", "into", "to", "of", "during"]   (earlier: likelier)
    AUX_CONTRACTIONS["is"]    -> "'s"            "it is" -> "it's" (R:CONTR)
    IRREGULAR_VERBS_TABLE     "take took taken"  -> the lexicon's "took" and "taken"
    COMMON_MISSPELLINGS["receive"] -> "recieve"
    KEYBOARD["g"]             -> "tyfhvb"        neighbouring keys, for typos

The lists are English closed classes and frequent learner confusions, not measured rates: how
often each type of error is made comes from an M2 file (``profile.py``).
"""

from __future__ import annotations

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
# An auxiliary and the clitic it contracts to after a pronoun: "it is" -> "it's" (R:CONTR).
AUX_CONTRACTIONS = {"is": "'s", "are": "'re", "am": "'m", "will": "'ll", "would": "'d", "have": "'ve",
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
