"""Spelling: words no dictionary holds are respelled, and capitals restored, before the model
reads the text.

Our models learn spelling from 62k learner sentences and know few misspellings; symspellpy's
English frequency dictionary holds 82,765 words and its bigram list 242,342 word pairs, and
wordfreq knows how often a word is written. A word is respelled like this::

    text        "I recieve your leter becouse of the Tokyo meeting."
    words       runs of lower-case letters not touching an apostrophe, hyphen or digit, nor
                in a file name ("notes.txt"): "recieve", "your", "leter", ...
                (a capitalised word is more often a name)
    unknown     3 letters or more, not in the dictionary, and rarer than 3.3 on wordfreq's Zipf
                scale (which knows "favorite", "mom", "math": American spellings are not
                errors): "recieve" (2.75), "leter" (1.29), "becouse" (2.11); not an irregular
                verb written with -ed ("buyed", "goed": a grammar error the model corrects, where
                the nearest word is another one, "buoyed", "good"; ``lexicon.irregular_verbs``)
    plurals     a noun with an irregular plural written with -s becomes that plural: "childs" ->
                "children", "tooths" -> "teeth" (the nearest word, "child", loses the plural, and
                the model keeps what it is given; ``lexicon.irregular_plurals``), where writers use
                that plural ``PLURAL_MARGIN`` more often on the Zipf scale (not "curriculums", whose
                "curricula" is barely commoner); a word in -ss ("syllabuss") is its singular misspelt
    candidates  the dictionary words at the smallest Damerau-Levenshtein distance, 1, or 2 for a
                word of 6 letters or more: "leter" -> "later", "letter", "peter", "meter", ...
    context     the candidate seen most often after the word before plus before the word after
                (bigram counts + 1), ``slip_prior`` (4) times over when it differs from the word
                only by letters left out, added or swapped ("wich" -> "which" over "with"); ties by
                the word's own count: "your letter" wins
    split       a word that runs two dictionary words together is split instead when the bigram
                list holds the pair more often than the dictionary holds the best candidate:
                "videogames" -> "video games", "infront" -> "in front" (not "front"), but
                "belive" -> "believe" (not "be live"). Where a split exists, W&I train's
                respellings go from 38 right and 61 wrong to 88 and 52, FCE train's from 69 and
                50 to 99 and 45 (right: the corrected sentence holds the respelling)
    text        "I receive your letter because of the Tokyo meeting."

Capitals come back where English always has them (these are R:ORTH edits, and the models alone
leave many of them out):

    pronoun     a lone "i", or one before an apostrophe: "i think i'm late" -> "I think I'm late"
                (not "i.e.", "(i)" or "i-th"). W&I train + FCE train's annotators write 348 of 371
                lone "i" as "I" (the rest sit inside larger edits).
    names       days, months, languages, nationalities, countries, a few cities, holidays and
                religions (``PROPER``): "on monday we speak english" -> "on Monday we speak English";
                and a few acronyms (``ACRONYMS``: "tv" -> "TV"; 37 of 40 times in W&I + FCE train).
    sentences   a lower-case word after ". ", "! " or "? " (not after "e.g.", "etc.", "Mr.", "..." or
                one letter, nor an abbreviation itself), and the unit's first word when the unit
                begins its line:
                "how are you? are you ok" -> "How are you? Are you ok". A sentence that starts in
                lower case continues the one before (``editspec.pre.segment``), so only a unit that
                begins a line (its first, or one after a line break) can start one; a later unit
                starting in lower case is the rest of a long sentence cut in two, and keeps its
                case. W&I train's annotators capitalise 802 of 1,133 such words, FCE train's 163
                of 374 (its letters' "yours sincerely" and fragments that start with "and").

A full stop, "?" or "!" written without its space between two dictionary words gets one, and the
next word its capital ("it was late.we left" -> "It was late. We left"; ``GLUED``; not in links,
nor before a file extension or a domain's ending that is no common word, nor before "so", "and" and
"but", which annotators join with a comma): W&I train's annotators do that 64 of 106 times. So does
one whose next word has its capital already ("is it?Well" -> "is it? Well"; not after a full stop
and a capitalised word, "Math.Max", "Google.It"; W&I train + FCE train: 27 of 31), or whose space
stands before the mark, next to a capital ("home .The end" -> "home. The end"; 79 of 89; not
".profile").

Word pairs that English joins with a hyphen get it (``HYPHENATED``): compound numbers ("twenty one"
-> "twenty-one"; W&I train + FCE train: 27 of 30) and the pairs the annotators hyphenate most
(``PAIRS``: "so called" -> "so-called", "time consuming", "self driving", ...; 31 of 37). Words
written in two that the annotators join are joined (``JOINED``: "every thing" -> "everything", "my
self" -> "myself", "an other", "work place", ...; 193 of 211), not "every one of", "my self
esteem", a title's "Life Style", nor "a lot", "can not", "every day" or "may be", which annotators
mostly keep.

Contractions get their apostrophe back ("dont" -> "don't", "im" -> "I'm"; ``CONTRACTIONS``): W&I
train's and FCE train's annotators do that 62 of 71 times (not for "ill", "id", "lets", "youre").

A full stop ends a long sentence that ends its line with a word (the models alone never add one):

    stop        a unit of ``STOP_WORDS`` (10) words or more that ends its line with a letter or
                digit, and does not open like a question ("do", "can", "why", ...; ``QUESTION``):
                "I have lived in this town for most of my life and I love it" -> "... love it."
                W&I train's annotators end 235 of 369 such sentences with a stop, FCE train's 53
                of 126; of those with 5 to 9 words only 53 of 225 and 34 of 222 (titles,
                greetings, closings).

Everything else (other characters, spacing, capitalised words, and URLs, paths and e-mail
addresses) is copied as written, but for the space a split word or a glued sentence takes (or moves:
"home .The"), a contraction's apostrophe, a pair's hyphen or lost space, and the full stop. Written here rather than with symspellpy's ``lookup_compound``, which re-spaces and lower-cases the whole
text and drops its punctuation. reports/models.md ("Spelling") has what it does to each model's scores and
how its choices were made (on FCE dev).
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from editspec.pre import lexicon

WORD = re.compile(r"(?<![\w'’-])(?<!\w\.)[a-z]+(?![\w'’-]|\.\w)")  # not in a file name: "notes.txt"
SENTENCE_START = re.compile(r"(?:^|(?<=[.!?])\s+)([a-z]+)(?![\w'’/-]|\.\w)")
ABBREVIATIONS = ("etc|vs|cf|al|approx|incl|no|mr|mrs|ms|dr|st|fig|esp|min|max|dept|inc|ltd|co|jr|sr|ft|lbs?|"
                 "ca|mt|jan|feb|aug|sept?|oct|nov|dec|pp?|vol|ch|est|ave|rd|prof|gen|ibid|viz")
# what ends a text before a word that starts no sentence: one letter (not "I"), "e.g.", "...", "etc."
ABBREVIATION = re.compile(rf"(?:\b[a-zA-HJ-Z]|\.\w*|\.\.|\b(?i:{ABBREVIATIONS}))[.!?]$")
NOT_A_SENTENCE = re.compile(rf"(?i:{ABBREVIATIONS})\.")
TOKEN = re.compile(r"\S+")
DOMAIN = re.compile(r"\w\.\w")
# Words English always capitalises; not "may", "march", "august", "polish", "china", "turkey" or
# "japan", which are also common lower-case words.
PROPER = """i monday tuesday wednesday thursday friday saturday sunday january february april june july
september october november december english spanish french german italian portuguese chinese japanese
korean russian arabic greek turkish dutch swedish norwegian danish finnish irish scottish welsh swiss
austrian belgian czech hungarian ukrainian romanian bulgarian american british european african asian
australian canadian mexican brazilian argentinian colombian peruvian chilean egyptian moroccan indian
pakistani thai vietnamese indonesian persian hindi latin england scotland wales ireland britain europe
america africa asia australia canada mexico brazil argentina spain france germany italy portugal greece
russia india egypt korea vietnam london paris madrid rome berlin christmas easter christian muslim
jewish catholic islamic buddhist""".split()
# Contractions written without their apostrophe, where the annotators of W&I train + FCE train
# nearly always put it back (not "ill", "id", "lets", "youre", "whats": other words, or mostly
# corrected otherwise)
CONTRACTIONS = {w.replace("'", "").lower(): w for w in """don't didn't doesn't isn't wasn't couldn't
wouldn't shouldn't aren't weren't haven't hasn't hadn't can't won't I'm I've that's""".split()}
# a listed word or pair on its own: not in a link, a file name or an address ("dont.txt", "a/im")
_ALONE_BEFORE = r"(?<![\w'’.@/\\-])"
_ALONE_AFTER = r"(?![\w'’@/\\-]|\.\w)"
CONTRACTION = re.compile(rf"{_ALONE_BEFORE}(?i:{'|'.join(CONTRACTIONS)}){_ALONE_AFTER}")
# word pairs English writes with a hyphen: compound numbers, and the pairs W&I train's and FCE
# train's annotators hyphenate most (4 or more times, at least 80% of the time)
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
UNITS = ("one two three four five six seven eight nine "
         "first second third fourth fifth sixth seventh eighth ninth").split()
PAIRS = ["so called", "time consuming", "self driving", "eco friendly", "good looking", "single sex"]
HYPHENATED = re.compile(rf"{_ALONE_BEFORE}(?i:(?:{'|'.join(TENS)}) (?:{'|'.join(UNITS)})|{'|'.join(PAIRS)}){_ALONE_AFTER}")
# and words written in two that the annotators join (3 or more times, at least 75% of the time, and
# the rest of their families: "him self", "boy friend"); not "every one of" (each one), nor "your
# self esteem" (self-esteem)
JOINED = re.compile(
    rf"{_ALONE_BEFORE}(?i:every (?:thing|one(?! of\b)|body|where)|some (?:thing|times)|any (?:thing|where)|"
    r"an other|(?:my|your|him|her|it) self(?! (?:esteem|confidence|image|respect|control|discipline|"
    r"awareness|interest|development|defen[cs]e|care|help|made|taught|employed|centered|esteemed)\b)|"
    r"(?:our|your|them) selves|with out|what ever|life style|(?:girl|boy) friend|basket ball|class mates|"
    rf"work place|home work|good bye|out side){_ALONE_AFTER}")
# a full stop, "?" or "!" without its space, between two dictionary words: "late.we", "it?Well", or
# with the space before it: "home .The" (not a domain, a file name or code: "google.com", "notes.txt",
# "www.x.org", "Math.Max", ".filter()")
GLUED = re.compile(r"(?<![\w.@/:\\-])([A-Za-z]{2,})( ?)([.?!])([A-Za-z][a-z]+)\b(?![.@/\\(-])")
NOT_GLUED = set("""com org net edu gov info biz io co uk de fr ru jp cn nl au ca es ly pdf html htm php asp aspx
css js json xml csv tsv txt md doc docx xls xlsx ppt pptx png jpg jpeg gif svg zip rar gz exe dll py java sql sh
yml yaml ini cfg log mp3 mp4 wav avi mov so and but""".split())  # the last three: annotators join with a comma
STOP_WORDS = 10
SPLIT_LETTERS = 40  # a run-together word is no longer (and splitting stays linear in the text)
QUESTION = re.compile(r"(?i:do|does|did|can|could|would|will|shall|should|is|are|am|was|were|have|has|"
                      r"why|how|where|when|who|what|which)\b")
ACRONYMS = ["tv", "usa", "dvd", "cd", "pc"]


def _listed(words: Sequence[str]) -> re.Pattern:
    """One of ``words`` as a word of its own (not in "i.e.", "(i)", "i-th", "tvs")."""
    return re.compile(rf"(?<![\w'’.(-])(?:{'|'.join(words)})(?![\w)-]|\.\w)")


PROPER_WORD, ACRONYM = _listed(PROPER), _listed(ACRONYMS)


@dataclass
class Slot:
    """An unknown word at ``text[start:end]`` and its respellings, best first (``Speller.options``)."""
    start: int
    end: int
    options: list[str]


def fill(text: str, slots: Sequence[Slot], words: Sequence[str]) -> str:
    """``text`` with each slot's word replaced by the word given for it."""
    parts, cursor = [], 0
    for slot, word in zip(slots, words, strict=True):
        parts += [text[cursor:slot.start], word]
        cursor = slot.end
    return "".join(parts) + text[cursor:]


# (the text as written, the text being respelled, its unknown words) -> one respelling per word:
# a model that reads the whole sentence could choose where the rule sees one word each side
# (``eval/tune_spelling.py --model``; the shipped models choose worse than the rule, reports/models.md "Spelling")
Choose = Callable[[str, str, list[Slot]], list[str]]

PLURAL_MARGIN = 1.5  # Zipf units (log10): an irregular plural ~30x as common as its -s form
_CONTEXT = 64  # characters looked at before a word (its neighbour, an abbreviation): linear time
NEIGHBOUR = re.compile(r"\w+")


class Speller:
    """symspellpy's dictionaries and wordfreq's counts, and the settings above (reports/models.md, "Spelling"
    has how each was chosen; ``eval/tune_spelling.py`` scores them). ``index``: read them from the
    on-disk index (``editspec.pre.lexicon``), else build them in memory."""

    def __init__(self, min_letters: int = 3, distance2_letters: int = 6, slip_prior: float = 4.0,
                 common_zipf: float = 3.3, choices: int = 6, index: bool = True):
        self.min_letters, self.distance2_letters, self.slip_prior = min_letters, distance2_letters, slip_prior
        self.common_zipf, self.choices = common_zipf, choices
        # the dictionaries from the on-disk index (``editspec.pre.lexicon``: milliseconds), or
        # built in memory (seconds) without one: the same lookups either way
        self.index = lexicon.open_index() if index else None
        self.symspell = self.index.symspell() if self.index is not None else lexicon.build_symspell()
        self.irregular_verbs = self.index.irregular_verbs if self.index is not None else \
            frozenset(lexicon.irregular_verbs())
        self.irregular_plurals = self.index.irregular_plurals if self.index is not None else \
            lexicon.irregular_plurals()

    def respell(self, text: str, starts_line: bool = True, ends_line: bool = True,
                choose: Choose | None = None) -> str:
        """``text`` with each unknown lower-case word replaced by its best candidate, capitals
        restored and a full stop added (see above): its first word only if it ``starts_line``, its
        stop only if it ``ends_line``. ``choose`` picks each word's respelling instead (see
        ``Choose``)."""
        original = text
        links = _links(text)

        def in_link(at: int) -> bool:
            return _inside(links, at)

        text = GLUED.sub(lambda m: m.group() if in_link(m.start()) else self._unglued(m), text)
        # capitals keep every character's place, so these spans hold until the respelling below
        links = _links(text)

        text = PROPER_WORD.sub(lambda m: m.group() if in_link(m.start()) else m.group().capitalize(), text)
        text = ACRONYM.sub(lambda m: m.group() if in_link(m.start()) else m.group().upper(), text)
        text = SENTENCE_START.sub(
            lambda m: m.group() if in_link(m.start(1)) else _capitalised(text, m, starts_line), text)
        slots: list[Slot] = []
        for match in WORD.finditer(text):
            word = match.group()
            if len(word) < self.min_letters or self.knows(word) or in_link(match.start()) or \
                    self.regular_past(word):
                continue
            before = NEIGHBOUR.findall(text, max(0, match.start() - _CONTEXT), match.start())[-1:]
            after = NEIGHBOUR.search(text, match.end())
            plural = self.irregular_plural(word)
            found = [plural] if plural else \
                self.options(word, before[0].lower() if before else None,
                             after.group().lower() if after else None, 1 if choose is None else self.choices)
            if found:
                slots.append(Slot(match.start(), match.end(), found))
        chosen = [slot.options[0] for slot in slots] if choose is None else choose(original, text, slots)
        text = fill(text, slots, chosen)
        links = _links(text)  # respelling moved them
        curly = "’" in text and "'" not in text
        text = CONTRACTION.sub(lambda m: m.group() if in_link(m.start()) else _contracted(m.group(), curly), text)
        text = HYPHENATED.sub(lambda m: m.group() if in_link(m.start()) else m.group().replace(" ", "-"), text)
        text = JOINED.sub(lambda m: m.group() if in_link(m.start()) else _joined(m.group()), text)
        return _stopped(text) if ends_line else text

    def _unglued(self, match: re.Match) -> str:
        """A ``GLUED`` match with its space ("late.we" -> "late. we", capitalised later)."""
        before, space, mark, after = match.groups()
        if after.lower() in NOT_GLUED or not (self.knows(before) and self.knows(after)):
            return match.group()
        if (space and after.islower()) or (mark == "." and before[0].isupper() and after[0].isupper()):
            return match.group()  # ".profile", "Math.Max", "Google.It": more often names than sentences
        return f"{before}{mark} {after}"

    def regular_past(self, word: str) -> bool:
        """``word`` is an irregular verb written with -ed ("buyed", "goed", "writed", "runned"): a
        grammar error the model corrects ("bought"), where the nearest dictionary word is another
        word ("buoyed", "good")."""
        if not word.endswith("ed"):
            return False
        stems = [word[:-2], word[:-1]] + ([word[:-3]] if len(word) > 4 and word[-3] == word[-4] else [])
        return any(stem in self.irregular_verbs for stem in stems)

    def irregular_plural(self, word: str) -> str | None:
        """The irregular plural ``word`` writes with -s, if it is ``PLURAL_MARGIN`` commoner (see above)."""
        if not word.endswith("s") or word.endswith("ss"):
            return None
        plural = self.irregular_plurals.get(word[:-1])
        return plural if plural and self.zipf(plural) - self.zipf(word) >= PLURAL_MARGIN else None

    def knows(self, word: str) -> bool:
        """A word of the dictionary, or one written often enough (``common``), in any case."""
        word = word.lower()
        return word in self.symspell.words or self.common(word)

    def misspelt(self, word: str) -> bool:
        """``word`` (any case) is a misspelling of a real word: the dictionary does not know it and
        has candidates for it ("wrold": "world", "wold"); what ``post.checks.keep_respelled`` protects."""
        lower = word.lower()
        return len(lower) >= self.min_letters and not self.knows(lower) and lexicon.ASCII_WORD.fullmatch(lower) \
            is not None and bool(self.options(lower, None, None, 1))

    def common(self, word: str) -> bool:
        """Written often enough to be a word (an American spelling, "mom", "math"), though not in
        symspellpy's dictionary: wordfreq's Zipf frequency (log10 per 10^9 words) at least
        ``common_zipf`` (0: off); a lower-case word's from the index, which holds wordfreq's values."""
        return self.common_zipf > 0 and self.zipf(word) >= self.common_zipf

    def zipf(self, word: str) -> float:
        """wordfreq's Zipf frequency of ``word``: a lower-case word's from the index, which holds
        wordfreq's values."""
        if self.index is not None and lexicon.ASCII_WORD.fullmatch(word):
            return self.index.zipf(word)
        from wordfreq import zipf_frequency  # deliberately lazy: other words only, rare

        return zipf_frequency(word, "en")

    def options(self, word: str, before: str | None, after: str | None, n: int) -> list[str]:
        """Up to ``n`` respellings of ``word``, best first by the rule above (the closest words by
        their fit between ``before`` and ``after``, or the split), then the rest within two edits
        (one for a short word) by distance and fit: what a model chooses among (``choose``)."""
        from symspellpy import Verbosity

        limit = 2 if len(word) >= self.distance2_letters else 1
        # the closest alone when only the rule's choice is asked for: ALL lists hundreds ("hais": 479)
        found = [s for s in self.symspell.lookup(word, Verbosity.CLOSEST if n == 1 else Verbosity.ALL,
                                                 max_edit_distance=2) if s.distance <= limit]
        bigrams = self.symspell.bigrams

        def seen(term: str) -> int:
            return (bigrams.get(f"{before} {term}", 0) if before else 0) + \
                (bigrams.get(f"{term} {after}", 0) if after else 0)

        def prior(term: str) -> float:
            return self.slip_prior if _slip(word, term) else 1.0

        ranked = [s.term for s in sorted(found, key=lambda s: (s.distance, -(seen(s.term) + 1) * prior(s.term),
                                                               -s.count))]
        count, pair = self.split(word)
        if pair is not None and (not ranked or count > self.symspell.words[ranked[0]]):
            ranked.insert(0, pair)
        elif pair is not None:
            ranked.insert(1, pair)
        return ranked[:n]

    def split(self, word: str) -> tuple[int, str | None]:
        """The two dictionary words ``word`` runs together that the bigram list holds most often
        ("videogames" -> "video games"), and that count; (0, None) if none."""
        words, bigrams = self.symspell.words, self.symspell.bigrams
        if len(word) > SPLIT_LETTERS:
            return 0, None
        pairs = [(word[:i], word[i:]) for i in range(1, len(word) - 1)]
        seen = [(bigrams.get(f"{a} {b}", 0), f"{a} {b}") for a, b in pairs
                if (len(a) > 1 or a == "a") and a in words and b in words]
        count, pair = max(seen, default=(0, None))
        return (count, pair) if count else (0, None)


def _is_link(token: str) -> bool:
    """A URL, path or e-mail address (not "and/or" or "he/she"): copied as written."""
    return ("@" in token or "\\" in token or "://" in token or token.startswith(("www.", "/", "~/"))
            or ("/" in token and DOMAIN.search(token) is not None))


def _capitalised(text: str, match: re.Match, starts_line: bool) -> str:
    """A ``SENTENCE_START`` match, its word capitalised unless no sentence starts there."""
    if (match.start() == 0 and not starts_line) or NOT_A_SENTENCE.match(text, match.start(1)) or \
            ABBREVIATION.search(text[max(0, match.start() - _CONTEXT):match.start()]):
        return match.group()
    return match.group()[: match.start(1) - match.start()] + match.group(1).capitalize()


def _contracted(word: str, curly: bool) -> str:
    """A ``CONTRACTION`` match with its apostrophe (’ where the text writes only those), in the
    word's case ("Dont" -> "Don't")."""
    if word.isupper():
        return word  # "DONT", "IM": shouting, or an acronym
    full = CONTRACTIONS[word.lower()].replace("'", "’" if curly else "'")
    return full[0].upper() + full[1:] if word[0].isupper() else full


def _joined(pair: str) -> str:
    """A ``JOINED`` match written as one word, unless a word of it has more than a first capital
    ("Life Style Magazine", "EVERY thing": a title, or shouting)."""
    first, second = pair.split(" ")
    return first + second if second.islower() and first[1:].islower() else pair


def _links(text: str) -> list[tuple[int, int]]:
    """The spans of the URLs, paths and e-mail addresses in ``text``, in order."""
    return [m.span() for m in TOKEN.finditer(text) if _is_link(m.group())]


def _inside(spans: list[tuple[int, int]], at: int) -> bool:
    """``at`` inside one of the ordered, disjoint ``spans`` (a binary search: linear time overall)."""
    i = bisect.bisect_right(spans, (at, sys.maxsize)) - 1
    return i >= 0 and spans[i][0] <= at < spans[i][1]


def _stopped(text: str) -> str:
    """``text`` with a full stop after its last word, if it is a long sentence without one."""
    body = text.rstrip()
    if not body or not body[-1].isalnum() or len(NEIGHBOUR.findall(body)) < STOP_WORDS or \
            QUESTION.match(body.lstrip()) or _is_link(body.split()[-1]):
        return text
    return body + "." + text[len(body):]


def _slip(word: str, term: str) -> bool:
    """Letters left out, added or swapped: a learner's usual slip."""
    return _within(word, term) or _within(term, word) or sorted(word) == sorted(term)


def _within(short: str, long: str) -> bool:
    """``short`` is ``long`` with letters left out ("wich" in "which")."""
    letters = iter(long)
    return all(c in letters for c in short)


@functools.lru_cache(maxsize=1)
def load_speller() -> Speller:
    """The one Speller of the process, made at its first use (its index opens in milliseconds once
    built: ``editspec.pre.lexicon``; ``editspec profile`` reports how long it took)."""
    return Speller()


def respell_all(texts: Iterable[str], places: Sequence[tuple[bool, bool]] | None = None) -> list[str]:
    """Each text after the spelling step, with the process's one Speller: how the Corrector, the
    training data (``respell: true``), distillation and the tuning scripts all respell.
    ``places``: whether each text begins and ends its line (``segment.places``; default: all do,
    as whole sentences do)."""
    speller = load_speller()
    if places is None:
        return [speller.respell(text) for text in texts]
    return [speller.respell(text, *place) for text, place in zip(texts, places, strict=True)]
