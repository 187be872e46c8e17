"""Synthetic grammatical errors: corrupt clean sentences the way English learners err.

Training-only (the ``editspec`` wheel does not ship it). Pre-training pairs are (source =
corrupted sentence, target = the clean sentence, untouched). The error mix follows ERRANT's error
types as annotated in a learner corpus (W&I train): the rates are read from its M2 file at run
time (``profile.error_profile``), never stored here. One sentence, seed fixed::

    target  In 2013, the total housing area in Kazakhstan amounted to 336.1 million square meters.
    errors  M:PUNCT "In 2013, the" -> "In 2013 the"; R:PREP "amounted to" -> "amounted for";
            R:SPELL "housing" -> "housnig"
    source  In 2013 the total housnig area in Kazakhstan amounted for 336.1 million square meters.

The modules, in the order the data flows through them:

    words        hand-written word lists: closed classes, confusion sets, irregular forms, typos
    lexicon      open-class word lists from installed packages (WordNet lemmas, Hunspell) and
                 the inflection rules built on them ("take" -> "took", "taken", "takes")
    sentence     a sentence as tokens with the whitespace after each, edited in place
    corruptions  one corruption per ERRANT type (R:PREP, M:DET, R:SPELL, ...)
    profile      which ERRANT types, how often: measured from an M2 file
    corruptor    how many errors a sentence gets and of which types
    pairs        seeded streams of (corrupted, clean) pairs over the Wikipedia sentence shards
    measuring    ERRANT's view of generated pairs, to check them against the corpus

Why rules and not spaCy's tagger: tagger + lemmatizer run at 300-600 sentences/s on one core,
below the 1000/s wanted of the whole generator (this one does ~2800/s). ``python -m
training.synthetic --measure N`` runs ERRANT on N generated pairs and prints the resulting type
distribution next to the corpus's, which is how the corruptions were checked.
"""
