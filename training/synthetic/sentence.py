"""A sentence as tokens with the whitespace after each, edited in place so the text stays natural.

The sentence is split into words and punctuation with the whitespace after each token kept, so
``str(sentence)`` is the text exactly, and every edit keeps it natural; nothing is ever
spaCy-tokenized::

    s = Sentence("In 2013, the total area grew.", lex)   # w: In 2013 , the total area grew .
    s.delete(2)           -> "In 2013 the total area grew."    (one space between "2013" and "the")
    s.delete(0)           -> "2013 the total area grew."
    Sentence("Cats sleep a lot.", lex).insert(0, "the")  -> "The cats sleep a lot."
                             (the capital moves; "Paris" would keep its own)

Each edit also records which tokens the current corruption touched (``mark``), so the Corruptor
can undo a corruption that would overlap an earlier one (``conflict``).
"""

from __future__ import annotations

import functools
import re

from training.synthetic.lexicon import Lexicon

# A word (with inner apostrophes and hyphens: "don't", "well-known"; numbers with separators:
# "336.1", "1,000") or a single mark, then the whitespace after it.
_TOKEN = re.compile(r"([^\W_]+(?:['’\-][^\W_]+)*(?:[.,:]\d+)*|\S)(\s*)")
OPENING = set("([{“‘")
CLOSING = set(",.;:!?)]}”’%")


@functools.lru_cache(maxsize=1 << 16)
def fold(tok: str) -> str:
    """A token lower-cased, except acronyms ("US" is not "us")."""
    return tok if len(tok) > 1 and tok.isupper() else tok.lower()


def split(text: str) -> tuple[str, list[str], list[str]]:
    """(the whitespace before the first token, the tokens, the whitespace after each)."""
    pairs = _TOKEN.findall(text)
    return text[: len(text) - len(text.lstrip())], [w for w, _ in pairs], [sp for _, sp in pairs]


def tokens(text: str) -> list[str]:
    """The tokens of a text as ``Sentence`` splits it, without the whitespace."""
    return [w for w, _ in _TOKEN.findall(text)]


def capitalize(w: str) -> str:
    return w[:1].upper() + w[1:]


def is_word_token(w: str) -> bool:
    return w[:1].isalpha()


def match_case(src: str, new: str) -> str:
    if src[:1].isupper() and not new[:1].isupper():
        return capitalize(new)
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
        self.lead, self.w, self.sp = split(text)
        self.mark = [0] * len(self.w)
        self.step = 1
        self.conflict = False
        self.edited = False
        self.memo: dict = {}  # what corruptions found in the unedited sentence (``cached``)

    @classmethod
    def of_tokens(cls, lead: str, w: list[str], sp: list[str], lex: Lexicon, memo: dict | None = None) -> "Sentence":
        """A Sentence of tokens another one split (copied: edits do not reach them); ``memo``: what
        corruptions found in it before (``cached``), shared."""
        s = cls.__new__(cls)
        s.lex, s.lead, s.w, s.sp = lex, lead, w[:], sp[:]
        s.mark = [0] * len(w)
        s.step, s.conflict, s.edited = 1, False, False
        s.memo = {} if memo is None else memo
        return s

    def cached(self, key, find):
        """``find()`` (a corruption's candidate places, a tuple), remembered while the sentence is
        unedited: the same sentence in the next pass, or the next corruption tried on it, finds
        them at once. A function of the tokens only, so what is drawn from it is the same either way."""
        if self.edited:
            return find()
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = find()
        return found

    def __str__(self) -> str:
        return self.lead + "".join(w + s for w, s in zip(self.w, self.sp))

    def __len__(self) -> int:
        return len(self.w)

    def low(self, i: int) -> str:
        """Token i lower-cased ("" out of range); acronyms stay as they are: "US" is not "us"."""
        return fold(self.w[i]) if 0 <= i < len(self.w) else ""

    # -- bookkeeping for the Corruptor ----------------------------------------------------------
    def snapshot(self) -> tuple:
        return self.w[:], self.sp[:], self.mark[:], self.edited

    def restore(self, snap: tuple) -> None:
        self.w, self.sp, self.mark = (x[:] for x in snap[:3])
        self.edited = snap[3]
        self.conflict = False

    def _touch(self, *idx: int, near: bool = False) -> None:
        """Mark tokens as edited by this step; near: only check and claim them (neighbours)."""
        self.edited = True
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
            self.w[0] = capitalize(self.w[0])
        if moved_to is not None and moved_to < len(self.w) and self.w[moved_to][:1].isupper() \
                and self.w[moved_to][1:].islower() and self.common(self.w[moved_to]):
            self.w[moved_to] = self.w[moved_to].lower()

    def set(self, i: int, word: str) -> None:
        """Token i becomes word, as given."""
        self._touch(i)
        self.w[i] = word

    def replace(self, i: int, word: str) -> None:
        """Token i becomes word, capitalized if it starts the sentence."""
        self.set(i, match_case(self.w[i], word) if i == 0 else word)

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

    def words(self) -> tuple[int, ...]:
        return self.cached("words", lambda: tuple(i for i, w in enumerate(self.w) if is_word_token(w)))

    def lower_words(self) -> tuple[int, ...]:
        """Positions of lower-case words, or the first word if an ordinary one."""
        return self.cached("lower words", lambda: tuple(
            i for i, w in enumerate(self.w) if w[:1].islower() and w.isalpha()
            or (i == 0 and w.isalpha() and w[1:].islower() and self.common(w))))
