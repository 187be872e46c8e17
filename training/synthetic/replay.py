"""Replaying learners' edit patterns on clean sentences, with the rules for what they do not cover.

The pattern table (``patterns.py``) says, per word or phrase of correct text, what learners wrote
instead and how often per occurrence. One sentence, ``Replayer.corrupt(text, random.Random(6))``
with W&I train's profile and the W&I + FCE train table (rates as in the table)::

    target  He lived in Paris for three years, and he worked at a bank.
    sites   found once per sentence (``Sites``): in -> on 0.028, in -> _ 0.018, in -> of 0.013, ...;
            for -> _ 0.032, for -> to 0.027; years -> year 0.017; "," -> _ 0.177; worked -> work
            0.046; at -> in 0.086; a -> _ 0.086, a -> the 0.020; He -> he 0.038; ...
    source  He lived in the Paris for three ears, and he worked in a bank.
            (a pattern: R:PREP "at" -> "in"; rules: U:DET "in Paris" -> "in the Paris", R:NOUN
            "years" -> "ears")

A pass over a sentence: with probability ``clean_fraction`` it stays clean; else it gets k errors,
k as in ``corruptor.py`` but from its own sites: expected errors = (its sites' rates, each times
its type's factor) + n * (the rules' rate per token). Each error is a rule's (an ERRANT type drawn
by the rules' rates, ``corruptions.py``) or a site's (drawn by its rate). Each is made on a fresh
copy of the unedited sentence and kept as the span of tokens it changed, if that span stays apart
from the others'; the spans are then written into the sentence right to left. So every rule sees
the sentence as it is, and what it finds there is remembered (``Sentence.cached``) for the next
error and the next pass.

Scaling (``Replayer``): in the corpus the patterns make a share c_T of type T's edits (the
table's ``coverage``). For a profile of p_T edits per token (``ErrorProfile``, scaled by a
source's ``error_rate``), type T's patterns are replayed at factor f_T = p_T c_T / e_T times their
rates, e_T being what they make per token at their own rates on calibration sentences (the first
lines of the data), and at most ``MAX_FACTOR``; the rules make the rest of the type, p_T - f_T e_T.
Within a type the learners' rates keep their proportions (in -> on : at -> in stays 0.028 : 0.086
per occurrence); across types the factors bring the mix to the profile's. One factor for all
types instead kept the corpus's rates per word but not its mix: Wikipedia holds more articles and
prepositions per token than learners' essays, and the type distance to W&I train doubled
(reports/synthetic-errors.md).

A ``Sites`` is cached by the sentence's text (up to ``max_cached`` sentences, ~10 KB each with
what the rules found), so the next pass over a shard draws new errors without looking the
sentence up again. The pair is a function of the text and the RNG only, cached or not.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import random
from collections.abc import Callable, Sequence

from training.synthetic.corruptions import CORRUPTIONS, drop_punct, misspell
from training.synthetic.corruptor import poisson
from training.synthetic.lexicon import Lexicon, lexicon
from training.synthetic.patterns import Pattern, PatternTable, word_class
from training.synthetic.profile import FALLBACK_PROFILE, ErrorProfile
from training.synthetic.sentence import CLOSING, OPENING, Sentence, fold, match_case, split

PUNCT_GLUED = set(",.;:!?%)]}")
MAX_CACHED = 100_000  # sentences whose sites a Replayer keeps (~10 KB each, with the rules' finds)
MAX_FACTOR = 2.0  # a pattern is replayed at most at twice its rate in the corpus; the rules make the rest


class Group:
    """The patterns of one key (a word or phrase of correct text): the learners' alternatives
    for it and their rates per occurrence, cumulated for drawing one."""

    __slots__ = ("patterns", "cum", "rate", "by_type")

    def __init__(self, patterns: list[Pattern]) -> None:
        self.patterns = patterns
        self.cum = list(itertools.accumulate(p.rate for p in patterns))
        self.rate = self.cum[-1]
        self.by_type: dict[str, float] = {}
        for p in patterns:
            self.by_type[p.type] = self.by_type.get(p.type, 0.0) + p.rate

    def draw(self, rng: random.Random) -> Pattern:
        return self.patterns[bisect.bisect_right(self.cum, rng.random() * self.rate)]


class Key:
    """The patterns of one key. Most keys have one Group; a key with insertion patterns has one
    per context, since an insertion fits only beside a token of its class (``word_class``)."""

    __slots__ = ("patterns", "group", "variants")

    def __init__(self, patterns: list[Pattern]) -> None:
        self.patterns = patterns
        self.group = None if any(p.start == p.end for p in patterns) else Group(patterns)
        self.variants: dict[tuple[str, str], Group | None] = {}

    def at(self, w: list[str], i: int, m: int) -> Group | None:
        """The Group for the key at tokens [i, i + m) of w."""
        if self.group is not None:
            return self.group
        context = (word_class(w[i - 1] if i else None), word_class(w[i + m] if i + m < len(w) else None))
        g = self.variants.get(context, False)
        if g is False:  # an insertion before the key fits after its class, one after it before
            fits = [p for p in self.patterns if p.start < p.end or p.context == context[p.start]]
            g = self.variants[context] = Group(fits) if fits else None
        return g


class Sites:
    """A sentence's tokens and where pattern keys occur in it, found once (``Replayer.sites``):
    ``at[j]`` is (token position, Group); ``cum`` their rates cumulated, ``mass`` the sum."""

    __slots__ = ("lead", "w", "sp", "at", "cum", "mass", "memo")

    def __init__(self, lead: str, w: list[str], sp: list[str], at: list[tuple[int, Group]]) -> None:
        self.lead, self.w, self.sp, self.at = lead, w, sp, at
        self.cum = list(itertools.accumulate(g.rate for _, g in at))
        self.mass = self.cum[-1] if self.cum else 0.0
        self.memo: dict = {}  # the rules' finds in the unedited sentence (Sentence.cached)

    def sentence(self, lex: Lexicon) -> Sentence:
        """A fresh Sentence of the tokens (no re-tokenizing), with what the rules found in it before."""
        return Sentence.of_tokens(self.lead, self.w, self.sp, lex, self.memo)


class Replayer:
    """Corrupts sentences by the pattern table and the rules (the module docstring)."""

    def __init__(self, table: PatternTable, profile: ErrorProfile = FALLBACK_PROFILE, lex: Lexicon | None = None,
                 calibration: Sequence[str] = (), max_cached: int = MAX_CACHED) -> None:
        self.table, self.profile, self.lex = table, profile, lex or lexicon()
        self.max_cached, self.cache = max_cached, {}
        # each type's patterns scaled by one factor, so that they make the profile's share of the
        # type that the corpus's patterns make; the rules make the rest
        self._index(table.patterns)
        rates = profile.rates
        found = self.pattern_rate(calibration, by_type=True) if calibration else {}
        self.factors = {t: min(MAX_FACTOR, rates.get(t, 0.0) * table.coverage.get(t, 0.0) / found[t]) if t in found
                        else (1.0 if rates.get(t, 0.0) > 0 else 0.0) for t in {p.type for p in table.patterns}}
        self._index([p._replace(rate=p.rate * self.factors[p.type]) for p in table.patterns
                     if self.factors[p.type] > 0])
        made = {t: min(rates.get(t, 0.0) * table.coverage.get(t, 0.0), MAX_FACTOR * e) for t, e in found.items()}
        self.beta = sum(made.values()) / sum(found.values()) if found else 1.0  # the factors' mean, by weight
        self.rule_rates = {t: r - made.get(t, 0.0) for t, r in rates.items() if t in CORRUPTIONS and r > 0}
        self.rule_types = [t for t, r in self.rule_rates.items() if r > 0]
        self.rule_rate = sum(self.rule_rates.values())
        applicability = {t: self._applicability(t, calibration) if calibration else 1.0 for t in self.rule_types}
        self.rule_cum = list(itertools.accumulate(self.rule_rates[t] / max(applicability[t], 0.05)
                                                  for t in self.rule_types))

    def _index(self, patterns: Sequence[Pattern]) -> None:
        """Pattern keys -> Key: one-token keys by the token (folded, or exact for case patterns),
        longer ones by their tuple, looked up only where a longer key starts."""
        by_key: dict[tuple[bool, tuple[str, ...]], list[Pattern]] = {}
        for p in patterns:
            by_key.setdefault((p.exact, p.key), []).append(p)
        self.one: tuple[dict[str, Key], dict[str, Key]] = ({}, {})  # (folded, exact)
        self.longer: tuple[dict[tuple[str, ...], Key], dict[tuple[str, ...], Key]] = ({}, {})
        # the tokens that start a longer key, and every prefix of one (a lookup stops at a non-prefix)
        self.starts: tuple[set[str], set[str]] = (set(), set())
        self.prefixes: tuple[set[tuple[str, ...]], set[tuple[str, ...]]] = (set(), set())
        for (exact, key), ps in by_key.items():
            entry = Key(ps)
            if len(key) == 1:
                self.one[exact][key[0]] = entry
            else:
                self.longer[exact][key] = entry
                self.starts[exact].add(key[0])
                self.prefixes[exact].update(key[:m] for m in range(2, len(key) + 1))
        self.max_len = max((len(k) for _, k in by_key), default=1)

    def _applicability(self, t: str, sentences: Sequence[str]) -> float:
        hits = sum(CORRUPTIONS[t](Sentence(x, self.lex), random.Random(f"calibrate/{t}/{j}"))
                   for j, x in enumerate(sentences))
        return hits / len(sentences)

    def pattern_rate(self, sentences: Sequence[str], by_type: bool = False) -> float | dict[str, float]:
        """The patterns' expected edits per token on ``sentences`` at the rates they are replayed
        at (during ``__init__``, first the table's own); by_type: per ERRANT type."""
        mass: dict[str, float] = {}
        n = 0
        for text in sentences:
            found = self._find(text)
            n += len(found.w)
            for _, g in found.at:
                for t, r in g.by_type.items():
                    mass[t] = mass.get(t, 0.0) + r
        if by_type:
            return {t: m / max(n, 1) for t, m in mass.items()}
        return sum(mass.values()) / max(n, 1)

    # -- sites ------------------------------------------------------------------------------------
    def _find(self, text: str) -> Sites:
        lead, w, sp = split(text)
        n = len(w)
        folded = [fold(t) for t in w]
        at: list[tuple[int, Group]] = []
        for exact, seq in ((False, folded), (True, w)):
            one, longer, starts, prefixes = self.one[exact], self.longer[exact], self.starts[exact], self.prefixes[exact]
            for i, tok in enumerate(seq):
                entry = one.get(tok)
                if entry is not None:
                    g = entry.group or entry.at(w, i, 1)
                    if g is not None:
                        at.append((i, g))
                if tok in starts:
                    for m in range(2, min(self.max_len, n - i) + 1):
                        key = tuple(seq[i:i + m])
                        if key not in prefixes:
                            break
                        entry = longer.get(key)
                        if entry is not None:
                            g = entry.group or entry.at(w, i, m)
                            if g is not None:
                                at.append((i, g))
        return Sites(lead, w, sp, at)

    def sites(self, text: str) -> Sites:
        """The sentence's sites, cached by its text."""
        found = self.cache.get(text)
        if found is None:
            found = self._find(text)
            if len(self.cache) < self.max_cached:
                self.cache[text] = found
        return found

    # -- one pass ---------------------------------------------------------------------------------
    def corrupt(self, text: str, rng: random.Random) -> str:
        if rng.random() < self.profile.clean_fraction:
            return text
        found = self.sites(text)
        n = len(found.w)
        if not n:
            return text
        pattern_mass = found.mass
        rule_mass = self.rule_rate * n
        wanted = (pattern_mass + rule_mass) / max(1e-6, 1 - self.profile.clean_fraction)
        k = min(1 + poisson(rng, wanted - 1), max(1, n // 4))  # no word salad
        share = pattern_mass / (pattern_mass + rule_mass) if pattern_mass + rule_mass > 0 else 0.0
        n_patterns, rules = 0, []
        for _ in range(k):
            if rng.random() < share:
                n_patterns += 1
            elif self.rule_types:
                rules.append(self._rule_type(rng))
        edits: list[Edit] = []
        redraws = 4 * len(rules) + 4
        while rules:  # a rule with no place, or whose edit touches an earlier one, is redrawn
            t = rules.pop()
            if not _edit(found, self.lex, edits, lambda s: CORRUPTIONS[t](s, rng)) and redraws:
                redraws -= 1
                rules.append(self._rule_type(rng))
        tries, done = 0, 0
        while done < n_patterns and tries < 4 * n_patterns + 6:
            tries += 1
            i, group = found.at[bisect.bisect_right(found.cum, rng.random() * found.mass)]
            p = group.draw(rng)
            span = _quick_span(found, i + p.start, i + p.end, p)
            done += _keep(edits, span) if span is not False else \
                _edit(found, self.lex, edits, lambda s: apply_pattern(s, i + p.start, i + p.end, p))
        if not edits:  # nothing applied: one typo instead
            _edit(found, self.lex, edits, lambda s: misspell(s, rng) or drop_punct(s, rng))
        w, sp = found.w[:], found.sp[:]
        for lo, hi, new_w, new_sp in sorted(edits, key=lambda e: -e[0]):  # right to left: positions hold
            w[lo:hi], sp[lo:hi] = new_w, new_sp
        out = found.lead + "".join(map(operator.add, w, sp))
        return out if out.strip() else text

    def _rule_type(self, rng: random.Random) -> str:
        return self.rule_types[bisect.bisect_right(self.rule_cum, rng.random() * self.rule_cum[-1])]

    def pair(self, text: str, rng: random.Random) -> dict[str, str]:
        return {"source": self.corrupt(text, rng), "target": text}


Edit = tuple[int, int, list[str], list[str]]  # tokens [lo, hi) of the text -> these tokens, these spaces after


def _edit(found: Sites, lex: Lexicon, edits: list[Edit], corrupt: Callable[[Sentence], object]) -> bool:
    """Make one error on a fresh copy of the unedited sentence (so what a rule finds in it is
    remembered across errors and passes: ``Sentence.cached``), and keep it as the span of tokens it
    changed, if that span stays apart from the earlier errors' (an untouched token between)."""
    s = found.sentence(lex)
    if not corrupt(s):
        return False
    w0, sp0, w1, sp1 = found.w, found.sp, s.w, s.sp
    n0, n1 = len(w0), len(w1)
    # the tokens one corruption touched are marked (1), and the space before them may change: the
    # first and last marked token bound the search for the changed span
    mark = s.mark
    try:
        lo = max(mark.index(1) - 1, 0)
        k = max(mark[::-1].index(1) - 1, 0)
    except ValueError:  # nothing marked: compare all
        lo = k = 0
    while lo < n0 and lo < n1 and w0[lo] == w1[lo] and sp0[lo] == sp1[lo]:
        lo += 1
    while k < n0 - lo and k < n1 - lo and w0[n0 - 1 - k] == w1[n1 - 1 - k] and sp0[n0 - 1 - k] == sp1[n1 - 1 - k]:
        k += 1
    hi = n0 - k
    if lo == hi and lo == n1 - k:  # nothing changed
        return False
    return _keep(edits, (lo, hi, w1[lo:n1 - k], sp1[lo:n1 - k]))


def _keep(edits: list[Edit], span: Edit | None) -> bool:
    """Keep an error's span if it stays apart from the earlier errors' (an untouched token between)."""
    if span is None:
        return False
    lo, hi = span[0], span[1]
    if any(not (hi < a or b < lo) for a, b, _, _ in edits):
        return False
    edits.append(span)
    return True


def _quick_span(found: Sites, lo: int, hi: int, p: Pattern) -> Edit | None | bool:
    """The span ``_edit`` would find for the commonest patterns, one word for another or one
    token dropped, without a Sentence (None: no change); False for the others."""
    w, sp, learner = found.w, found.sp, p.learner
    if hi - lo != 1 or lo == 0 or len(learner) > 1:
        return False
    old = w[lo]
    if learner:  # "in" -> "on", "are" -> "is", "," -> "."
        new = learner[0] if p.exact else match_case(old, learner[0])
        if _glues(old) != _glues(new):
            return False
        return (lo, hi, [new], [sp[lo]]) if new != old else None
    # dropped, as Sentence.delete drops it: the space before it becomes the space after it
    prev = w[lo - 1]
    if prev in OPENING or prev in "\"'" and (lo == 1 or sp[lo - 2] != ""):
        return (lo, hi, [], [])
    if sp[lo - 1] == "" or sp[lo] == "":
        return (lo - 1, hi, [prev], [sp[lo]]) if sp[lo] != sp[lo - 1] else (lo, hi, [], [])
    return (lo, hi, [], [])


def _glues(tok: str) -> bool:
    """Does the token attach to the one before it ("word," "word.")?"""
    return tok in PUNCT_GLUED or tok in CLOSING


def _put(s: Sentence, i: int, new: str) -> None:
    """Token i becomes ``new``, with the space before it right for what it now is."""
    old = s.w[i]
    s.set(i, new)
    if i > 0 and _glues(old) != _glues(new):
        s.sp[i - 1] = "" if _glues(new) else " "


def _insert(s: Sentence, i: int, tok: str) -> None:
    if _glues(tok):
        s.insert_punct(i, tok)
    else:
        s.insert(i, tok)


def apply_pattern(s: Sentence, lo: int, hi: int, p: Pattern) -> bool:
    """Rewrite tokens [lo, hi) of ``s`` as the pattern's learner tokens (case follows the text's:
    "In" -> "On"; a case pattern writes its own); True."""
    learner = p.learner
    if learner and lo < hi and not p.exact:
        learner = (match_case(s.w[lo], learner[0]), *learner[1:])
    common = min(hi - lo, len(learner))
    for j in range(common):
        if s.w[lo + j] != learner[j]:
            _put(s, lo + j, learner[j])
    for _ in range(hi - lo - common):  # the correct text's extra tokens: gone
        s.delete(lo + common)
    for j in range(common, len(learner)):  # the learner's extra tokens
        _insert(s, lo + j, learner[j])
    return True
