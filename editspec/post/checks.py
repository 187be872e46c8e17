"""Checks on a model's output that undo its edits: the guard and the made-up-word check, each
taking a unit's ``Correction`` (its edits found once) and giving what it leaves of it.

    guard       "I like it and a lot , but I think that and a lot , but I think that ..." (a model
                that lost its place): one edit rewrites more than ``max_edit_words`` words, so the
                sentence is kept as written
    real_words  "The beef was good." -> "The beingef was good.": "beingef" is a word neither the
                source holds nor a dictionary knows, so that edit is undone
    keep_content_words
                "Can you tell me where is the park?" -> "Can you tell me where the park?": the
                edit removes a verb, a content word, so it is undone (the model's deletions of
                nouns, verbs, adjectives and adverbs were all wrong on FCE dev)
    keep_respelled
                "Hello wrold, how are you?" -> (spelling) "Hello world, how are you?" -> (model)
                "Hello, how are you?": the writer's "wrold" was a misspelling of a real word, so
                the edit that removes its word is undone
    keep_unreadable
                "こんにちは世界 Everything was dark." -> "こんにちは界 Everything was dark.": the
                edit's word holds characters the model reads as <unk>, so it is undone; and
                "She went  home." (spaces inserted) is no edit either
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Collection

from editspec.post.diff import Correction, diff, edit_size, output_starts


def guard(c: Correction, max_edit_words: int) -> Correction:
    """``c``, or none of its edits when one spans more than ``max_edit_words`` words (0: no guard).

    A small seq2seq model that loses its place in a sentence repeats a phrase until the length
    limit or skips half the sentence; the rest of such an output is unreliable too, so the
    whole sentence is kept as written. The limit is chosen on FCE dev by ``eval/tune_guard.py``
    and stored with the model; reports/models.md ("The guard") has what it does to the shipped T5's scores.
    """
    if max_edit_words and any(edit_size(e) > max_edit_words for e in c.edits):
        return c.keep([])
    return c


# ASCII letters, joined by apostrophes or hyphens, touching no other letter, digit, apostrophe or
# hyphen: "beingef", "doesn't", "well-known", "Lunds'" (not "café", "3rd")
LETTER_WORD = re.compile(r"(?<![\w'’-])[A-Za-z]+(?:['’-][A-Za-z]+)*['’]?(?![\w'’-])")
POSSESSIVE = re.compile(r"'s?$")


def real_words(c: Correction, knows: Callable[[str], bool]) -> Correction:
    """``c`` with each edit undone that writes a word which its input does not hold and ``knows``
    does not know ("beef" -> "beingef", "Candide" -> "Canide").

    A small model builds words from sub-word pieces and now and then glues a wrong piece to a
    right one; none of the shipped models' edits that wrote such a word was right on W&I dev, FCE
    test, CoNLL-2013 or JFLEG dev (reports/models.md, "Spelling"). A word is a
    ``LETTER_WORD`` of the output, so an edit of part of one ("don" -> "doesn" in "doesn't") is
    judged by the whole; one ``knows`` does not know whole is judged by its parts without a
    possessive ("Canide's" -> "Canide", "worldold-wide" -> "worldold", "wide").
    """
    unknown = made_up_words(c.input, c.output, knows)  # most outputs have none
    if not unknown:
        return c
    kept = []
    for e, start in zip(c.edits, output_starts(c.edits)):
        end = start + len(e.correction)
        if not any(a <= end and b >= start for a, b in unknown):  # a word the edit wrote or touches
            kept.append(e)
    if len(kept) == len(c.edits):
        return c
    # the edits left can meet in a new made-up word ("is" + "'t"): judge again (fewer edits each time)
    return real_words(c.keep(kept), knows)


def made_up_words(source: str, text: str, knows: Callable[[str], bool]) -> list[tuple[int, int]]:
    """The spans of the ``LETTER_WORD`` of ``text`` that neither ``source`` holds nor ``knows``
    knows, whole or by its parts without a possessive (see ``real_words``)."""
    written = {w for word in LETTER_WORD.findall(source) for w in (_lower(word), *_parts(word))}

    def made_up(word: str) -> bool:
        return _lower(word) not in written and not knows(_lower(word)) and \
            not all(part in written or knows(part) for part in _parts(word))

    return [m.span() for m in LETTER_WORD.finditer(text) if made_up(m.group())]


def _lower(word: str) -> str:
    return word.replace("’", "'").lower()


def _parts(word: str) -> list[str]:
    """The words ``word`` joins, in lower case, without a possessive: "Lunds'" -> "lunds";
    "Well-known" -> "well", "known"."""
    return [p for p in POSSESSIVE.sub("", _lower(word)).split("-") if p]


def keep_respelled(c: Correction, written: str, misspelt: Callable[[str], bool]) -> Correction:
    """``c`` with each edit undone that removes a word the writer wrote misspelt: a word of
    ``c.input`` that the spelling step respelled from ``written`` (the unit as written: "wrold" ->
    "world"), or one left as written that ``misspelt`` says is a misspelling of a real word (its
    dictionary has candidates for it: spelling off, or a capitalised word it leaves).

    The writer meant a word there; the model deleting it loses what they said (W&I dev, FCE test:
    reports/models.md, "Removed words"). An edit removes a word when its correction holds fewer
    words than its original and not that word; a replacement of it ("world" -> "earth") is the
    model's to make.
    """
    protected = _respelled(written, c.input, misspelt)
    return c.keep([e for e in c.edits if not any((a, b) in protected or misspelt(w) for a, b, w in _removed(e, c))])


# English's closed word classes (Universal Dependencies' DET, PRON, ADP, CCONJ, SCONJ, PART; not
# AUX, which ERRANT types as VERB): the words a deletion may remove. Written out rather than
# tagged: spaCy's tagger would load a model and parse each unit in the chain for a finite list.
FUNCTION_WORDS = frozenset("""a an the this that these those some any each every no neither either another other
such what which whatever whichever all both half several many much few little more most less least enough my your
his her its our their whose i me mine you yours he him she hers it we us ours they them theirs myself yourself
himself herself itself ourselves yourselves themselves one ones someone somebody something anyone anybody
anything everyone everybody everything nobody nothing none who whom there of in on at to for with from by about as
into onto over under between through during after before until till since than like up out off down upon within
without across along around among against behind beyond toward towards despite except via per near inside
outside above below beside besides and or but nor so yet because if although though while whereas unless
whether when where once not""".split())


def keep_content_words(c: Correction) -> Correction:
    """``c`` with each edit undone that removes a content word: a word of its input not in
    ``FUNCTION_WORDS`` (a noun, verb, adjective or adverb) that the edit's correction does not hold.

    On FCE dev every such deletion of the shipped models was wrong (ERRANT U:NOUN 0 of 6, U:VERB
    0 of 6, U:ADV 0 of 7, U:OTHER 0 of 2; the auxiliaries of U:VERB:TENSE 2 of 8), where the
    deletions of function words were right about half the time (U:DET 11 of 23, U:PREP 5 of 9):
    reports/models.md, "Removed words". A rewrite of the word ("world" -> "earth") is not judged.
    """
    return c.keep([e for e in c.edits if not any(_lower(w) not in FUNCTION_WORDS for _, _, w in _removed(e, c))])


def _removed(e, c: Correction) -> list[tuple[int, int, str]]:
    """The ``LETTER_WORD`` of ``e``'s original (input offsets, text) that ``e`` removes: its
    correction holds fewer words, and not that one, and the output holds it fewer times than the
    input (a word moved, "the music of Rock" -> "rock music", is not removed)."""
    words = [(m.start() + e.start, m.end() + e.start, m.group()) for m in LETTER_WORD.finditer(e.original)]
    left = {_lower(w) for w in LETTER_WORD.findall(e.correction)}
    if len(left) >= len(words):
        return []
    gone = [(a, b, w) for a, b, w in words if _lower(w) not in left]
    if not gone:
        return []
    before = Counter(_lower(w) for w in LETTER_WORD.findall(c.input))
    after = Counter(_lower(w) for w in LETTER_WORD.findall(c.output))
    return [(a, b, w) for a, b, w in gone if after[_lower(w)] < before[_lower(w)]]


def _respelled(written: str, spelled: str, misspelt: Callable[[str], bool]) -> set[tuple[int, int]]:
    """The spans in ``spelled`` of the ``LETTER_WORD`` that replace a misspelt word of ``written``."""
    if written == spelled:
        return set()
    spans = set()
    for e, start in zip(diff(written, spelled), output_starts(diff(written, spelled))):
        if any(misspelt(w) for w in LETTER_WORD.findall(e.original)):
            spans.update((start + m.start(), start + m.end()) for m in LETTER_WORD.finditer(e.correction))
    return spans


def keep_unreadable(c: Correction, unreadable: Collection[int]) -> Correction:
    """``c`` with each edit undone that deletes or rewrites a character of its input at an offset
    in ``unreadable`` (``tokens.unreadable``: characters the model reads as <unk> or as a plain
    space) or writes one of those characters, or that only inserts whitespace.

    A model cannot see such characters, so it cannot mean to change them: a T5 deletes parts of
    words of other scripts and emoji, and writes runs of spaces where it loses its place. The
    edit is the whole ``diff`` unit, so a word with one unknown character is never rewritten.
    """
    source = c.input
    unseen = {source[k] for k in unreadable if 0 <= k < len(source)}
    # nor writes one elsewhere (a deleted word's CR moved to another place is then there twice)
    return c.keep([e for e in c.edits if not (any(k in unreadable for k in range(e.start, e.end)) or
                                              unseen.intersection(e.correction) or
                                              (not e.original.strip() and e.correction.isspace()))])
