"""ERRANT error types for the edits of a ``Correction``, with a plain message and a rule id per type.

    input    "She go to school every days."
    output   "She goes to school every day."
    edits    Edit(4, 6, "go", "goes"), Edit(23, 27, "days", "day")      (``editspec.post.diff``)
    parse    spaCy parses input and output once each (ERRANT's own pipeline)
    tokens   each edit's character span -> the token span it overlaps on each side:
             input tokens [1, 2) "go", output tokens [1, 2) "goes" (output offsets are input
             offsets shifted by the edits before)
    classify ERRANT's classifier on that token edit: R:VERB:SVA, R:NOUN:NUM
    message  "Possible subject–verb agreement error", rule id EDITSPEC_R_VERB_SVA

ERRANT's classifier reads part-of-speech tags, lemmas and dependencies, so classifying needs the
parse of both sides; only texts with edits are parsed. An edit of whitespace alone (no token on
either side) is R:ORTH, ERRANT's type for case and whitespace. Types are ``OP:MAIN`` with OP M
(missing), U (unnecessary) or R (replace); the message says which.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

from editspec.post.diff import Correction, Edit, output_starts
from editspec.data.tokenized import spacy_nlp

# the main type's plain name, as a noun phrase for "missing", "unnecessary", "wrong"
NOUNS = {
    "ADJ": "adjective", "ADJ:FORM": "adjective form", "ADV": "adverb", "CONJ": "conjunction",
    "CONTR": "contraction", "DET": "determiner", "MORPH": "word form", "NOUN": "noun",
    "NOUN:INFL": "noun form", "NOUN:NUM": "noun number", "NOUN:POSS": "possessive",
    "ORTH": "spelling or spacing", "OTHER": "wording", "PART": "particle", "PREP": "preposition",
    "PRON": "pronoun", "PUNCT": "punctuation", "SPELL": "spelling", "VERB": "verb",
    "VERB:FORM": "verb form", "VERB:INFL": "verb form", "VERB:SVA": "subject–verb agreement",
    "VERB:TENSE": "verb tense", "WO": "word order", "UNK": "word",
}
# types whose message reads better said outright than built from the noun
MESSAGES = {
    "R:VERB:SVA": ("Possible subject–verb agreement error", "Agreement error"),
    "R:SPELL": ("Possible spelling mistake", "Spelling mistake"),
    "R:ORTH": ("Possible capitalisation or spacing error", "Capitalisation or spacing"),
    "R:WO": ("The word order may be wrong", "Word order"),
    "R:NOUN:NUM": ("Possibly the wrong number (singular or plural) of the noun", "Noun number"),
    "R:VERB:TENSE": ("Possibly the wrong verb tense", "Verb tense"),
    "R:VERB:FORM": ("Possibly the wrong verb form", "Verb form"),
    "R:MORPH": ("Possibly the wrong form of the word", "Word form"),
    "R:OTHER": ("Possible wording error", "Wording"),
    "M:PUNCT": ("Punctuation may be missing", "Missing punctuation"),
    "U:PUNCT": ("This punctuation may be unnecessary", "Unnecessary punctuation"),
}
# LanguageTool's categories (id, name) and issue types
CATEGORIES = {"SPELL": ("TYPOS", "Possible Typo"), "PUNCT": ("PUNCTUATION", "Punctuation"),
              "ORTH": ("CASING", "Capitalization")}
GRAMMAR = ("GRAMMAR", "Grammar")
ISSUE_TYPES = {"SPELL": "misspelling", "PUNCT": "typographical", "ORTH": "typographical"}


def message(error_type: str) -> str:
    """A short plain sentence for an ERRANT type: M:DET -> "A determiner may be missing"."""
    return _messages(error_type)[0]


def short_message(error_type: str) -> str:
    """A few words for an ERRANT type: M:DET -> "Missing determiner"."""
    return _messages(error_type)[1]


def _messages(error_type: str) -> tuple[str, str]:
    if error_type in MESSAGES:
        return MESSAGES[error_type]
    op, _, main = error_type.partition(":")
    noun = NOUNS.get(main, "word")
    article = "An" if noun[0] in "aeiou" else "A"
    if op == "M":
        return f"{article} {noun} may be missing", f"Missing {noun}"
    if op == "U":
        return f"This {noun} may be unnecessary", f"Unnecessary {noun}"
    return f"Possibly the wrong {noun}", noun[0].upper() + noun[1:]


def rule_id(error_type: str) -> str:
    """The rule id of a type (LanguageTool style): R:VERB:SVA -> EDITSPEC_R_VERB_SVA."""
    return "EDITSPEC_" + error_type.replace(":", "_")


def main_type(error_type: str) -> str:
    return error_type.partition(":")[2]


def category(error_type: str) -> tuple[str, str]:
    """LanguageTool's (id, name) of the category: SPELL -> TYPOS, PUNCT, ORTH -> CASING, else GRAMMAR."""
    return CATEGORIES.get(main_type(error_type), GRAMMAR)


def issue_type(error_type: str) -> str:
    """LanguageTool's issue type: misspelling (SPELL), typographical (PUNCT, ORTH), else grammar."""
    return ISSUE_TYPES.get(main_type(error_type), "grammar")


@functools.lru_cache(maxsize=1)
def annotator():
    """ERRANT's English annotator on the project's spaCy pipeline (loads in about a second)."""
    import errant  # errant imports its resources on import: only when classification is asked for

    return errant.load("en", nlp=spacy_nlp())


def classify(corrections: Sequence[Correction]) -> list[list[str]]:
    """The ERRANT type of each edit of each correction (in edit order)."""
    todo = [c for c in corrections if c.edits]
    nlp = annotator().nlp
    texts = [t for c in todo for t in (c.input, c.output)]
    docs = iter(nlp.pipe(texts))
    parsed = {id(c): (next(docs), next(docs)) for c in todo}
    return [[_classify_edit(e, at, *parsed[id(c)]) for e, at in zip(c.edits, output_starts(c.edits))]
            if c.edits else [] for c in corrections]


def _classify_edit(edit: Edit, at: int, orig, cor) -> str:
    from errant.edit import Edit as ErrantEdit

    o_start, o_end = _token_span(orig, edit.start, edit.end)
    c_start, c_end = _token_span(cor, at, at + len(edit.correction))  # at: its start in the output
    e = ErrantEdit(orig, cor, [o_start, o_end, c_start, c_end])
    e.minimise()
    if not e.o_toks and not e.c_toks:  # whitespace alone (or a token split or joined the same)
        return "R:ORTH"
    return annotator().classify(e).type


def _token_span(doc, start: int, end: int) -> tuple[int, int]:
    """The tokens (not spaces) that overlap characters [start, end); where none does, the empty
    span before the first token that starts at or after ``start``."""
    inside = [t.i for t in doc if not t.is_space and t.idx < end and t.idx + len(t) > start]
    if inside:
        return inside[0], inside[-1] + 1
    at = next((t.i for t in doc if t.idx >= start), len(doc))
    return at, at


def typed(corrections: Sequence[Correction]) -> list[Correction]:
    """The corrections with each edit's ERRANT ``type`` and its ``message`` filled in."""
    return [dataclasses.replace(c, edits=[dataclasses.replace(e, type=t, message=message(t))
                                          for e, t in zip(c.edits, types)])
            for c, types in zip(corrections, classify(corrections))]
