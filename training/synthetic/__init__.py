"""Synthetic grammatical errors: corrupt clean sentences the way English learners err.

Training-only (the ``editspec`` wheel does not ship it). Pre-training pairs are (source =
corrupted sentence, target = the clean sentence, untouched). Two generators share the rest:

* **patterns + rules** (``replay.Replayer``, when a pattern table is given): the edits learners
  made in W&I + FCE *train* (never dev or test), as (correct -> learner) rewrites with their rate
  per occurrence ("in" -> "on" in 2.8% of the corrected texts' "in"s), replayed on the Wikipedia
  sentences; the hand-written rules make what the patterns do not cover (most spelling slips,
  R:OTHER rewrites, word choice). The table is read from the M2 files once, by a command, and not
  committed (``python -m training.synthetic.patterns build``; reports/synthetic-errors.md).
* **rules** (``corruptor.Corruptor``): each error an ERRANT type drawn at the corpus's rate, made
  by that type's rule at a random place where it applies.

Either way the error mix follows ERRANT's types as annotated in W&I train: the rates are read
from its M2 file at run time (``profile.error_profile``), never stored here. One sentence, seed
fixed (patterns + rules)::

    target  He lived in Paris for three years, and he worked at a bank.
    sites   found once: in -> on / _ / of, for -> _ / to, "," -> _, at -> in, a -> _ / the, ...
    errors  pattern R:PREP "at" -> "in"; rules U:DET "in Paris" -> "in the Paris", R:NOUN
            "years" -> "ears"
    source  He lived in the Paris for three ears, and he worked in a bank.

The modules, in the order the data flows through them:

    words        hand-written word lists: closed classes, confusion sets, irregular forms, typos
    lexicon      open-class word lists from installed packages (WordNet lemmas, Hunspell) and
                 the inflection rules built on them ("take" -> "took", "taken", "takes")
    sentence     a sentence as tokens with the whitespace after each, edited in place; what a
                 rule finds in the unedited sentence is remembered (``Sentence.cached``)
    corruptions  one rule per ERRANT type (R:PREP, M:DET, R:SPELL, ...)
    profile      which ERRANT types, how often: measured from an M2 file
    patterns     the learners' (correct -> learner) patterns and their rates, read from train M2
    corruptor    the rules alone: how many errors a sentence gets and of which types
    replay       the patterns at their rates and the rules for the rest; each sentence's pattern
                 sites found once and reused pass after pass
    pairs        seeded streams of (corrupted, clean) pairs over the Wikipedia sentence shards
    measuring    ERRANT's view of generated pairs, to check them against the corpus

Why rules and tables and not spaCy's tagger: tagger + lemmatizer run at 300-600 sentences/s on
one core, below what a lent GPU's data workers need. ``python -m training.synthetic --measure N``
runs ERRANT on N pairs of both generators and prints their type distributions next to the
corpus's, with their total variation distance from it; ``--bench N`` times both.
"""
